"""The small amount of machinery every reproduction notebook shares.

A notebook's first cell creates a :class:`Session`, which prints the library
versions in a Markdown block with a display id. The block is *updated in place*
as the notebook runs (IPython's ``update_display``; papermill/nbclient record the
update in the first cell's saved output), so after a run the first cell says which
mode ran, with which parameters, which checkpoints produced the outputs (name,
where it came from, its training steps and a hash of the file) and how long the
run took::

    S = Session("02_hib_embeddings")            # cell 1: versions, the last measured full-mode run time
    FAST = False; SEED = 0; REPORT_DIR = ""; DEVICE = "auto"     # the `parameters` cell (literals only)
    report = S.configure(fast=FAST, seed=SEED, report_dir=REPORT_DIR, device=DEVICE)   # derived values
    model = S.model(Spec(kind="hib", preset=S.preset))            # load-or-train (on DEVICE), recorded
    ...
    S.finish()                                  # last cell: run time into the header and the report

How long full mode takes is never typed: the header quotes the run time `python -m hedgekit reproduce`
measured and recorded for the notebook in the committed report (``notebooks/report/run.json``,
`measured_full_mode`), and the run's own time once `Session.finish` is called.

Outside IPython the same calls print plain text.
"""
from __future__ import annotations

import hashlib
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

import hedgekit
from hedgekit.checks import MAX_SEED, MAX_SEEDS, MAX_STEPS, MAX_THREADS, check_count, count_arg, resolve_device
from hedgekit.errors import InputError
from hedgekit.interactive.models import load_model
from hedgekit.paths import REPO_DIR
from hedgekit.repro.report import Report, precision_note
from hedgekit.repro.catalog import notebook_models
from hedgekit.repro.measured import measure_of
from hedgekit.zoo import find_checkpoint, ledger, prototype_head

__all__ = ["Session", "CheckpointRecord", "versions_table", "file_hash", "measured_full_mode", "own_full_mode",
           "tour_sentence", "restate_header", "RUN_RECORD",
           "FAST_RECORD", "fast_times", "fast_time_text"]

RUN_RECORD = Path("notebooks") / "report" / "run.json"  # relative to the repository: the committed report's record
# the run record of a FAST run of every notebook (`python -m hedgekit reproduce --fast --out DIR`, DIR/run.json copied
# here): what Run All takes, with the machine's load beside it
FAST_RECORD = Path("notebooks") / "report" / "fast.json"


def file_hash(path: str | Path, n: int = 12) -> str:
    """First ``n`` hex digits of the SHA-256 of a file (identifies a checkpoint exactly)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:n]


def versions_table() -> dict[str, str]:
    """Versions of everything that can change a number or a figure. The packages' versions are read from their
    installed metadata, not by importing them: the first cell must not wait for matplotlib, pandas, seaborn, plotly,
    scikit-learn, scipy and papermill, which later cells import when they need them."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"hedgekit": hedgekit.__version__, "python": sys.version.split()[0], "torch": torch.__version__,
           "numpy": np.__version__, "matplotlib": version("matplotlib")}
    for mod, dist in (("pandas", "pandas"), ("seaborn", "seaborn"), ("plotly", "plotly"), ("sklearn", "scikit-learn"),
                      ("scipy", "scipy"), ("papermill", "papermill")):
        try:
            out[mod] = version(dist)
        except PackageNotFoundError:  # pragma: no cover - optional
            pass
    out["platform"] = platform.platform()
    out["torch threads"] = str(torch.get_num_threads())
    return out


@dataclass
class CheckpointRecord:
    """Where one model of a notebook came from."""

    name: str
    source: str  # "shipped", "cache" or "trained now" (meta["source"] of `hedgekit.zoo.load_or_train`), or "ledger"
    path: str
    sha256: str
    preset: str
    steps: int
    train_seconds: float
    k: int | None = None  # HIB's samples per input (eq. 5) the model trained with; None for other kinds
    precision: str = "float32"  # the trainer's precision (`hedgekit.training.fit.body_autocast`)
    device: str = ""  # where it trained (meta["device"], `hedgekit.zoo.train_spec`); "" where not recorded


def fast_times(record: str | Path | None = None) -> dict[str, dict]:
    """notebook stem -> {"seconds", "load" ([start, end] 1-minute load averages, or None), "date"} of each notebook's
    recorded FAST run (`FAST_RECORD` by default): the quick tour's times are read from there, never typed. A
    missing or unreadable record, or one that is not a FAST run, gives {}."""
    import json

    path = Path(record) if record is not None else REPO_DIR / FAST_RECORD
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("fast") is not True:
        return {}
    return {Path(r["notebook"]).stem: {"seconds": float(r["seconds"]), "load": r.get("load"), "date": r.get("date")}
            for r in data.get("runs", []) if isinstance(r, dict) and r.get("status") == "ok"}


def fast_time_text(seconds: float, load=None) -> str:
    """A recorded FAST time as the README and notebook 00 show it: "NN s" (or "N.N min" from 2 minutes), with the
    load the run met ("; load 1.9-2.4") where it was recorded."""
    t = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
    if isinstance(load, (list, tuple)) and len(load) == 2:
        lo, hi = sorted(float(x) for x in load)
        t += f" (load {lo:.1f})" if f"{lo:.1f}" == f"{hi:.1f}" else f" (load {lo:.1f}-{hi:.1f})"
    return t


def _pretrain_hint(notebook: str) -> str:
    """How a fresh clone gets the models ``notebook``'s full mode needs."""
    name = notebook if notebook.endswith(".ipynb") else f"{notebook}.ipynb"
    try:
        zoo_models = bool(notebook_models(name))
    except InputError:  # not a registered notebook
        zoo_models = False
    return (f"on a fresh clone it first trains the `paper` models it does not find: `python -m hedgekit reproduce "
            f"--only {name.split('_')[0]} --train-missing --jobs 2` trains them beforehand" if zoo_models else
            "on a fresh clone it trains what it needs as it runs")


def measured_full_mode(notebook: str, record: str | Path | None = None) -> str:
    """How long ``notebook``'s last full-mode run took, as `python -m hedgekit reproduce` recorded it in
    ``record`` (default: the committed report's `RUN_RECORD`), and how to pre-train its models; a notebook with no
    full-mode record says so. Nothing here is typed by hand."""
    import json

    path = Path(record) if record is not None else REPO_DIR / RUN_RECORD
    name = notebook if notebook.endswith(".ipynb") else f"{notebook}.ipynb"
    train = _pretrain_hint(name)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    runs = [r for r in data.get("runs", []) if isinstance(r, dict) and r.get("notebook") == name
            and r.get("status") == "ok"] if isinstance(data, dict) and data.get("fast") is False else []
    if not runs:
        return f"no full-mode run recorded yet in {RUN_RECORD.as_posix()}; {train}"
    r = runs[-1]
    seconds, trained = float(r["seconds"]), float(r.get("train_seconds") or 0.0)
    if trained:
        return (f"about {seconds - trained:.0f} s with every checkpoint cached: the run on {r.get('date', '?')} "
                f"(`python -m hedgekit reproduce`, {RUN_RECORD.as_posix()}) took {seconds:.0f} s, {trained:.0f} s of "
                f"them training the {r.get('trained', '?')} model(s) it did not find (their recorded training time, "
                f"subtracted); {train}")
    return (f"measured {seconds:.0f} s on {r.get('date', '?')} (`python -m hedgekit reproduce`, "
            f"{RUN_RECORD.as_posix()}; with the checkpoints it found cached); {train}")


def own_full_mode(notebook: str, seconds: float) -> str:
    """Full mode's time as a full-mode run states it once it is over: its own run time (the header's "run time"
    line), and how a fresh clone pre-trains what it needs."""
    return f"this full-mode run took {seconds:.0f} s (its run time, below); {_pretrain_hint(notebook)}"


def tour_sentence(full_mode: str) -> str:
    """The header's sentence on the two modes: where the quick tour's recorded Run All time lives (`FAST_RECORD`,
    which the README's table reads; a header quotes no time but its own run's) and ``full_mode``
    (`measured_full_mode`, or `own_full_mode` once a full-mode run is over)."""
    return ("Run All plays the quick tour (`FAST = True`, the default: shipped `paper` models where they exist, else "
            f"small `fast` ones; its recorded Run All time is in {FAST_RECORD.as_posix()} and the README). Full mode, "
            f"the paper's set-up: set `FAST = False` in the parameters cell: {full_mode}.")


def restate_header(markdown: str, notebook: str) -> str:
    """A committed header (``markdown``, the text of `Session.markdown`) with its sentence on the two modes
    restated (`tour_sentence`): a full-mode header quotes its own run time line as full mode's, since a header
    written before its run ended could only quote an earlier run's. Other lines stay."""
    lines = markdown.split("\n")
    runtime = next((line for line in lines if line.startswith("run time: ")), None)
    full = any(line.startswith("mode: **FULL") for line in lines)
    for i, line in enumerate(lines):
        if line.startswith("Run All plays the quick tour") and "in the parameters cell: " in line:
            own = line.split("in the parameters cell: ", 1)[1].removesuffix(".")
            if full and runtime:
                own = own_full_mode(notebook, float(runtime.removeprefix("run time: ").removesuffix(" s")))
            lines[i] = tour_sentence(own)
    return "\n".join(lines)


class Session:
    """Versions, mode, checkpoints and run time of one notebook run (see the module docstring)."""

    def __init__(self, notebook: str):
        """The header's full-mode timing is measured (`measured_full_mode`), never typed."""
        self.notebook = notebook
        self.full_mode = measured_full_mode(notebook)
        self.t0 = time.perf_counter()
        self.started = time.strftime("%Y-%m-%d %H:%M:%S")
        self.fast: bool | None = None
        self.device = "cpu"  # where `model` trains a missing model (`configure`)
        self.params: dict = {}
        self.checkpoints: list[CheckpointRecord] = []
        self.report = Report("", notebook)
        self.runtime: float | None = None
        self._models: dict = {}
        self._ledger: dict = {}  # name -> metadata of a model the ledger stood in for (`cached_meta`)
        self._display_id = f"hedgekit-session-{notebook}-{id(self)}"
        self._shown = False
        self._show()

    # ---------------------------------------------------------------- display
    def markdown(self) -> str:
        v = versions_table()
        lines = [f"**{self.notebook}** — started {self.started}", "",
                 "versions: " + ", ".join(f"{k} {val}" for k, val in v.items() if k != "platform"),
                 f"platform: {v['platform']}", ""]
        if self.full_mode:
            lines += [tour_sentence(self.full_mode), ""]
        if self.fast is None:
            lines.append("mode: (set by the parameters cell below)")
        else:
            mode = ("FAST (CI; shipped `paper` models where they exist, else `fast` preset models)" if self.fast
                    else "FULL (`paper` preset models)")
            # a parameter left at None takes the notebook's default (e.g. RUNS: the paper's 5 in full mode)
            extra = ", ".join(f"{k}={'default' if val is None else repr(val)}" for k, val in self.params.items())
            lines.append(f"mode: **{mode}**" + (f"; parameters: {extra}" if extra else ""))
        if self.checkpoints:
            lines += ["", "checkpoints that produced the outputs:", ""]
            for c in self.checkpoints:
                lines.append(f"- `{c.name}` — {c.source}, {c.steps} steps ({c.preset} preset{precision_note(c.precision)}, "
                             f"trained in {c.train_seconds:.0f} s), sha256 {c.sha256}")
        if self.runtime is not None:
            lines += ["", f"run time: {self.runtime:.0f} s"]
        return "\n".join(lines)

    def _show(self) -> None:
        text = self.markdown()
        try:
            if "IPython" not in sys.modules:  # no IPython shell runs (a kernel has imported it): skip its 0.2 s import
                raise ImportError
            from IPython import get_ipython
            from IPython.display import Markdown, display, update_display

            if get_ipython() is None:
                raise ImportError
        except ImportError:
            print(text)
            return
        if self._shown:
            update_display(Markdown(text), display_id=self._display_id)
        else:
            display(Markdown(text), display_id=self._display_id)
            self._shown = True

    # ---------------------------------------------------------------- setup
    def configure(self, fast: bool, report_dir: str = "", threads: int = 1, device: str = "auto", **params) -> Report:
        """Check the parameters, record the mode and parameters, set torch threads, the device and plot defaults;
        returns the `Report`.

        The values the notebooks' parameters cells pass are checked before anything is set, with the bounds of
        the command line's flags (`_checked_device`): an InputError names the parameter, its value and what is
        expected. ``device`` (the notebook's ``DEVICE``; "auto": `hedgekit.checks.resolve_device`, an InputError
        for "cuda" without CUDA) is where `model` trains the models it does not find.
        """
        self.device = str(_checked_device(fast, report_dir, threads, device, params))
        torch.set_num_threads(int(threads))  # an integer type: numpy's too
        self.fast = bool(fast)
        self.params = dict(params)
        self.report = Report(report_dir, self.notebook)
        from hedgekit.viz.style import use_paper_style  # matplotlib: 0.9 s the first cell saves

        use_paper_style()
        try:
            import plotly.io as pio

            # JSON only (JupyterLab's plotly extension renders it; no 3.5 MB of JS in each notebook)
            pio.renderers.default = "plotly_mimetype"
        except ImportError:  # pragma: no cover
            pass
        self._show()
        return self.report

    @property
    def preset(self) -> str:
        """"fast" in FAST mode, else "paper"."""
        if self.fast is None:
            raise RuntimeError("call Session.configure(fast=...) first")
        return "fast" if self.fast else "paper"

    def model(self, spec, progress: bool = True):
        """Load or train the zoo model ``spec`` (`hedgekit.zoo.load_or_train`, cached per session) and record
        where its checkpoint came from in the header. A missing model trains on `device`; the model is returned
        on the CPU, where the notebooks' cells evaluate it. The measures its checkpoint recorded must agree with
        the ledger's record of it, where there is one (`hedgekit.zoo.ledger.check_checkpoint`: else
        `hedgekit.zoo.ledger.LedgerConflict`)."""
        if spec.name in self._models:
            return self._models[spec.name][0]

        model, meta = load_model(spec, progress=progress, device=self.device)
        ledger.check_checkpoint(spec, meta)
        model = model.cpu()
        path = meta.get("path") or ""
        self._record(spec, meta, _short_path(path or None), file_hash(path) if path else "—")
        self._models[spec.name] = (model, meta)
        self._show()
        return model

    def _record(self, spec, meta: dict, path: str, sha256: str) -> None:
        """List where ``spec``'s measures came from in the header (`CheckpointRecord`)."""
        config = meta.get("train_config", {})
        self.checkpoints.append(CheckpointRecord(
            spec.name, meta["source"], path, sha256, spec.preset, int(config.get("steps", spec.steps or 0)),
            float(meta.get("train_seconds", 0.0)), config.get("k") if spec.kind == "hib" else None,
            config.get("precision", "float32"), meta.get("device", "")))

    def meta(self, spec) -> dict:
        """The checkpoint metadata of ``spec`` (training history, recipe, head parameters), loaded via `model`."""
        self.model(spec)
        return self._models[spec.name][1]

    def cached_meta(self, spec) -> dict | None:
        """`meta` of ``spec`` where its checkpoint is shipped or cached (recorded in the header as `model` records
        it); else the ledger's record of its measures as a checkpoint's metadata (`hedgekit.zoo.ledger.ledger_meta`,
        source "ledger", listed in the header as such); else None. Nothing trains. For models a notebook decides on
        only if they were trained, e.g. notebook 04's extra seeds
        (`hedgekit.papers.hib.experiments.recorded_table1_seeds`)."""
        if spec.name in self._models or find_checkpoint(spec) is not None:
            return self.meta(spec)
        if spec.name not in self._ledger:
            meta = ledger.ledger_meta(spec)
            if meta is None:
                return None
            self._ledger[spec.name] = meta
            self._record(spec, meta, _short_path(meta["path"]), meta["sha256"][:12])
            self._show()
        return self._ledger[spec.name]

    def measures(self, spec, group: str, train: bool = True) -> dict | None:
        """The measures ``group`` of the zoo model ``spec`` that a notebook takes from it beyond its trainer's
        (`hedgekit.repro.measured`; e.g. notebook 03's ``number_line``): name -> number, plus ``source`` and
        ``device`` (and ``date`` for a ledger record: what `hedgekit.zoo.ledger.seed_sources` reads). Measured on
        the model where its checkpoint is shipped or cached here, and checked against the ledger's record of the
        group where it holds one (`hedgekit.zoo.ledger.check`: else `hedgekit.zoo.ledger.LedgerConflict`); else
        the ledger's record (its model listed in the header from the ledger, `cached_meta`); else measured on the
        model trained now (`model`), or None where not ``train``. InputError for a group the catalog does not name
        for ``spec``."""
        measure = measure_of(spec, group)
        if spec.name not in self._models and find_checkpoint(spec) is None:
            held = ledger.held(spec, group)
            if held is not None:
                self.cached_meta(spec)
                return {**ledger.measures(spec.name, group), "source": "ledger", "device": held["device"],
                        "date": held["date"]}
            if not train:
                return None
        model = self.model(spec)
        meta = self._models[spec.name][1]
        values = measure(model, meta)
        if meta.get("path"):
            ledger.check(ledger.build_record(spec, group, values, meta, meta["path"]))
        return {**values, "source": meta["source"], "device": meta.get("device", "cpu")}

    def head(self, spec):
        """The PN / SPE head of the prototype model ``spec`` (`hedgekit.zoo.prototype_head`), loaded via `model`."""
        self.model(spec)
        return prototype_head(self._models[spec.name][1])

    def finish(self) -> float:
        """Record the run time in the header and the report; returns seconds since the first cell. A full-mode run's
        header then states its own time as full mode's (`own_full_mode`), not an earlier run's record."""
        self.runtime = time.perf_counter() - self.t0
        if self.fast is False:
            self.full_mode = own_full_mode(self.notebook, self.runtime)
        self._show()
        self.report.meta(mode="fast" if self.fast else "full", params=self.params, device=self.device,
                         runtime_s=round(self.runtime, 1),
                         checkpoints=[asdict(c) for c in self.checkpoints], versions=versions_table())
        return self.runtime


def _checked_device(fast, report_dir, threads, device, params: dict) -> torch.device:
    """The device `Session.configure` trains on, once its arguments hold what the notebooks' parameters cells and
    the command line accept: ``fast`` True or False, ``report_dir`` a folder path, ``threads``, ``seed``, ``steps``
    and ``seeds`` integers within the bounds of the flags ``--threads``, ``--seed``, ``--steps`` and
    url-benchmark's ``--seeds`` (`hedgekit.checks.count_arg`), ``repeats`` and ``runs`` integers >= 1 (``runs``
    also None, the mode's default), ``device`` "auto" or a device this machine has (``--device``). Other keywords
    pass unchecked. Raises an InputError naming the first parameter that does not (`_refusal`)."""
    if not isinstance(fast, (bool, np.bool_)):
        raise InputError(_refusal("fast", fast, "True (the quick tour) or False (full mode)"))
    if not isinstance(report_dir, (str, os.PathLike)):
        raise InputError(_refusal("report_dir", report_dir, 'a folder path (a str; "" for no report files)'))
    # keyword -> (minimum, maximum, what is expected); count_arg's name is its bounds in the command line's words
    counts = {"threads": (1, MAX_THREADS, f"{count_arg(1, MAX_THREADS).__name__} (torch threads, as the command "
                                          "line's --threads)"),
              "seed": (0, MAX_SEED, f"{count_arg(0, MAX_SEED, ' = 2^63 - 1').__name__} (as the command line's "
                                    "--seed)"),
              "steps": (0, MAX_STEPS, f"0 (the preset's steps) or {count_arg(1, MAX_STEPS).__name__} (as the "
                                      "command line's --steps)"),
              "repeats": (1, None, f"{count_arg(1).__name__} (evaluations per model)"),
              "runs": (1, None, f"None (the mode's default) or {count_arg(1).__name__} (training runs per row)")}
    if "seeds" in params:
        counts["seeds"] = (1, MAX_SEEDS, f"{count_arg(1, MAX_SEEDS).__name__} (as python -m hedgekit "
                                         "url-benchmark --seeds)")
    for name, value in {"threads": threads, **params}.items():
        if name in counts and not (name == "runs" and value is None):
            minimum, maximum, expected = counts[name]
            try:
                check_count(value, name, minimum, maximum)
            except InputError:
                raise InputError(_refusal(name, value, expected)) from None
    expected = ('"auto" or a device this machine has: "cpu", "cuda", "cuda:N" or "mps" (as the command line\'s '
                "--device)")
    if not isinstance(device, (str, torch.device)):
        raise InputError(_refusal("device", device, expected))
    try:
        return resolve_device(device)
    except InputError as exc:
        raise InputError(f"{_refusal('device', device, expected)}; {exc}") from None


def _refusal(name: str, value, expected: str) -> str:
    """One paragraph: the parameter ``name`` of `Session.configure` as the parameters cell spells it (upper
    case), its ``value`` and what is ``expected``."""
    return (f"{name.upper()} = {value!r} in the notebook's parameters cell (Session.configure's {name}): "
            f"expected {expected}")


def _short_path(path) -> str:
    if path is None:
        return ""

    try:
        return str(Path(path).resolve().relative_to(REPO_DIR))
    except ValueError:
        return str(path)
