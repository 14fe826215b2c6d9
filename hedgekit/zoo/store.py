"""The store: checkpoint I/O, provenance and staleness, and `load_or_train` for every model.

`load_or_train` looks for a spec's name among the checkpoints shipped with the package (``hedgekit/checkpoints/``),
then in the cache (``data/checkpoints/``); if absent it trains the model (`train_spec`, with the trainer of its
family, `hedgekit.zoo.recipes.TRAINERS`) and saves it with its spec whole, network config, training config, seed,
library versions, training history, metrics and the data it was trained on (`data_source`: the MNIST /
Fashion-MNIST fingerprint and where it was read from). A checkpoint is refused (`CheckpointError` naming the
mismatch) when it was saved for another spec (`check_matches`, against the spec it records: `recorded_spec`), and
passed over (retrained) when the preset's training recipe has changed since (`is_stale`) or it was trained on
other data than the current one (with a warning that says why, `hedgekit.data.provenance.matches`). The shipped
checkpoints, trained before the data was recorded, carry it in a sidecar ``<name>.json`` (`write_provenance`), so
their bytes are unchanged. URL runs (`hedgekit.zoo.url_runs.URLSpec`) are found, judged and loaded or trained by
the same three functions, in their own format (`hedgekit.zoo.url_runs`).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import platform
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Mapping

import numpy as np
import torch

import hedgekit
from hedgekit.checks import check_writable, resolve_device, write_bytes_atomic
from hedgekit.data.fashion import fashion_source
from hedgekit.data.mnist import mnist_source
from hedgekit.data.provenance import Source, matches
from hedgekit.errors import CheckpointError, DataNotFoundError, InputError
from hedgekit.hardware import device_description, resolve_precision
from hedgekit.methods.pn import PN
from hedgekit.methods.fast.spe import SPE
from hedgekit.nets import EmbeddingNet, model_from_config
from hedgekit.paths import PACKAGE_DIR, cache_path
from hedgekit.training import distributed
from hedgekit.zoo.recipes import TRAINERS, eval_set
from hedgekit.zoo.methods import METHODS
from hedgekit.zoo.specs import ModelSpec, Spec
from hedgekit.zoo.url_runs import URLSpec, find_url_run, load_or_train_url, url_run_is_stale, url_run_path

SHIPPED_DIR = PACKAGE_DIR / "checkpoints"
FORMAT = "hedgekit-checkpoint-v2"  # v2: the SHA-256 covers config and metadata too, not only the weights
_LEGACY_FORMAT = "hedgekit-checkpoint-v1"  # still read (caches of earlier versions): its hash covers the weights only
# Values of TrainConfig.loss (and of the flat spec of earlier checkpoints) written by earlier versions of the kit,
# and what they are called now.
_LEGACY_LOSS = {"vib": "soft", "contrastive": "hard"}


def versions() -> dict:
    """The library versions, Python and platform a checkpoint records it was trained with."""
    return {"hedgekit": hedgekit.__version__, "torch": str(torch.__version__), "numpy": str(np.__version__),
            "python": sys.version.split()[0], "platform": platform.platform()}


def processor_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (``/proc/cpuinfo``'s "model name" line, e.g. "Intel(R) Xeon(R) Processor"; else
    ``platform.processor()`` or the architecture): CPU training repeats bit for bit on one processor, not across
    processors, whose kernels sum float32 in another order (docs/ledger.md)."""
    try:
        lines = cpuinfo.read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    names = [value.strip() for key, _, value in (line.partition(":") for line in lines) if key.strip() == "model name"]
    return (names[0] if names else "") or platform.processor() or platform.machine() or "unknown"


def trained_on(device: str | torch.device) -> dict:
    """What a checkpoint's metadata records of where it trained: ``device``
    (`hedgekit.hardware.device_description`) and, on the CPU, ``processor`` (`processor_name`)."""
    where = {"device": device_description(device)}
    if torch.device(device).type == "cpu":
        where["processor"] = processor_name()
    return where


# ------------------------------------------------------------------ checkpoints
def save_checkpoint(path: str | Path, model: EmbeddingNet, meta: dict) -> Path:
    """Save weights + config + metadata; written atomically, with a SHA-256 over all three (`_payload_hash`).

    A read-only folder or a full disk raises `hedgekit.errors.StorageError` (`hedgekit.checks.write_bytes_atomic`).

    Non-finite weights are refused (CheckpointError): a diverged model is never cached.
    """
    path = Path(path)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    _check_finite_weights(state, path)
    payload = {"format": FORMAT, "config": model.config, "meta": meta, "state_dict": state}
    payload["sha256"] = _payload_hash(payload)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return write_bytes_atomic(path, buffer.getvalue())  # StorageError (read-only, disk full): nothing half-written


def _state_hash(state: dict) -> str:
    """SHA-256 of the weights alone (names and bytes): the whole hash of legacy v1 checkpoints."""
    h = hashlib.sha256()
    for k in sorted(state):
        h.update(k.encode())
        h.update(state[k].numpy().tobytes())
    return h.hexdigest()


def _payload_hash(payload: dict) -> str:
    """SHA-256 of a v2 checkpoint: format, config and metadata as canonical JSON, then the weights' hash,
    so that an edited name, spec or metric is detected as surely as an edited weight."""
    def canonical(obj):  # dict keys of any type, in one order; tuples as lists
        if isinstance(obj, Mapping):
            return [[repr(k), canonical(v)] for k, v in sorted(obj.items(), key=lambda kv: repr(kv[0]))]
        return [canonical(v) for v in obj] if isinstance(obj, (list, tuple)) else obj

    header = json.dumps(canonical({k: payload[k] for k in ("format", "config", "meta")}), default=repr)
    return hashlib.sha256(header.encode() + _state_hash(payload["state_dict"]).encode()).hexdigest()


def _check_finite_weights(state: dict, path: Path) -> None:
    bad = [k for k, v in state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise CheckpointError(f"{path}: weights {', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''} hold NaN or inf "
                              "(the training diverged or the file was altered); delete it to retrain")


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> tuple[EmbeddingNet, dict]:
    """Load a checkpoint written by `save_checkpoint`; CheckpointError if missing, corrupt, altered (hash),
    holding NaN/inf weights, or saved under a model name whose network it does not have (`check_matches`)."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # truncated zip, random bytes, pickle errors...
        first = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
        raise CheckpointError(f"{path} is not a readable hedgekit checkpoint (corrupt or truncated: "
                              f"{type(exc).__name__}: {first}); delete it to retrain") from exc
    if not isinstance(payload, dict) or payload.get("format") not in (FORMAT, _LEGACY_FORMAT):
        raise CheckpointError(f"{path} is not a {FORMAT} file; delete it to retrain")
    if not isinstance(payload.get("state_dict"), dict) or not isinstance(payload.get("meta"), dict) \
            or not isinstance(payload.get("config"), dict) \
            or not all(isinstance(v, torch.Tensor) for v in payload["state_dict"].values()):
        raise CheckpointError(f"{path} lacks its weights, config or metadata (incomplete file); delete it to retrain")
    state = payload["state_dict"]
    legacy = payload["format"] == _LEGACY_FORMAT
    if (_state_hash(state) if legacy else _payload_hash(payload)) != payload.get("sha256"):
        what = "weights" if legacy else "weights, config or metadata"
        raise CheckpointError(f"{path}: {what} do not match their recorded SHA-256 (file corrupted or edited); "
                              "delete it to retrain")
    _check_finite_weights(state, path)
    try:
        model = model_from_config(payload["config"])
        model.load_state_dict(state)
    except Exception as exc:
        raise CheckpointError(f"{path}: weights do not fit the recorded model config ({exc})") from exc
    meta = payload["meta"]
    if "data" not in meta and path.with_suffix(".json").is_file():
        meta = dict(meta, data=_sidecar_data(path))
    spec = recorded_spec(meta, path)
    if spec is not None:
        check_matches(spec, model, meta, path)
    return model.to(device).eval(), meta


def recorded_spec(meta: Mapping, path: str | Path = "") -> ModelSpec | None:
    """The spec a checkpoint was saved for, read whole from its metadata (``meta["spec"]``, `train_spec`), never
    parsed from its name. Checkpoints of earlier versions (the shipped ones among them) recorded one flat spec
    with every kind's fields: the fields the kind's type does not have are dropped and an old ``loss`` name is
    read as today's (`_LEGACY_LOSS`). None for a checkpoint that records no spec, or one that is not a zoo
    model's (no kind of `hedgekit.zoo.methods.METHODS`, fields its type refuses); CheckpointError if the spec is
    not the one its recorded name names."""
    fields = meta.get("spec")
    if not isinstance(fields, Mapping) or fields.get("kind") not in METHODS:
        return None
    own = {f.name for f in dataclasses.fields(METHODS[fields["kind"]].spec_type)}
    fields = {k: _LEGACY_LOSS.get(v, v) if k == "loss" else v for k, v in fields.items() if k in own}
    try:
        spec = Spec(**fields)
    except InputError:
        return None
    if spec.name != meta.get("name"):
        raise CheckpointError(f"{path}: the checkpoint records the spec of {spec.name!r} under the name "
                              f"{meta.get('name')!r}; delete it to retrain")
    return spec


def find_checkpoint(spec: ModelSpec) -> Path | None:
    """The shipped checkpoint named like ``spec``, else the cached one, else None. Reads only.

    A checkpoint trained with another recipe than the one the preset now names (`is_stale`) is passed
    over, so a changed preset retrains instead of reusing old weights; so is one trained on other data than
    the current (`data_source`, `hedgekit.data.provenance.matches`), with a warning that says why.

    A URL run (`URLSpec`; none ship) is found in the cache by `hedgekit.zoo.url_runs.find_url_run`.
    """
    if isinstance(spec, URLSpec):
        return find_url_run(spec)
    current = data_source(spec)
    for p in (SHIPPED_DIR / f"{spec.name}.pt", cache_checkpoint_path(spec, current)):
        if p.is_file() and not is_stale(p, spec):
            st = p.stat()
            reason = matches(_recorded(str(p), st.st_mtime_ns, st.st_size).get("data"), current)
            if reason is None:
                return p
            warnings.warn(f"not reusing {p}: {reason}", stacklevel=2)
    return None


def data_source(spec: ModelSpec) -> Source | None:
    """The data ``spec`` trains on now (`hedgekit.data.mnist.mnist_source`, `hedgekit.data.fashion.fashion_source`),
    None for the generated L-shapes or when the data is not installed (nothing to compare a checkpoint with).
    InputError when the data is not what it is named (e.g. Fashion-MNIST given as MNIST)."""
    try:
        return {"ndigit": mnist_source, "fashion": fashion_source}.get(spec.data, lambda: None)()
    except DataNotFoundError:
        return None


def cache_checkpoint_path(spec: ModelSpec | URLSpec, source: Source | None) -> Path:
    """``<cache>/checkpoints/<name>.pt``; for data other than the real MNIST / Fashion-MNIST the name gains its
    fingerprint (``<name>.mnist-<fingerprint>.pt``), so models of different data never overwrite each other.

    A URL run (`URLSpec`) lives where the benchmark has always kept its runs (`hedgekit.zoo.url_runs.url_run_path`);
    ``source`` is not used: the data's code is in the run's code key (`URLSpec.run_config`)."""
    if isinstance(spec, URLSpec):
        return url_run_path(spec)
    other = "" if source is None or source.real else f".{source.dataset}-{source.fingerprint}"
    return cache_path("checkpoints", f"{spec.name}{other}.pt")


def write_provenance(path: str | Path, source: Source) -> Path:
    """Record the data a checkpoint was trained on beside it, in ``<name>.json``, leaving its bytes (and so its
    weights) unchanged: the one-time migration of the shipped checkpoints, trained before the data was recorded.
    The sidecar names the SHA-256 of the file it describes; `load_checkpoint` adds its ``data`` to the meta."""
    path = Path(path)
    sidecar = {"checkpoint": path.name, "file_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
               "data": source.record()}
    return write_bytes_atomic(path.with_suffix(".json"), (json.dumps(sidecar, indent=1) + "\n").encode())


def _sidecar_data(path: Path) -> dict:
    """The ``data`` of ``path``'s sidecar (`write_provenance`); CheckpointError if it describes other bytes."""
    sidecar = path.with_suffix(".json")
    try:
        info = json.loads(sidecar.read_text())
        ok = info["file_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest() and isinstance(info["data"], dict)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{sidecar} is not a readable provenance sidecar ({exc}); delete it") from exc
    if not ok:
        raise CheckpointError(f"{sidecar} describes other bytes than {path} (the checkpoint was replaced); delete "
                              "the sidecar, or both to retrain")
    return info["data"]


def is_stale(path: str | Path, spec: ModelSpec | URLSpec) -> bool:
    """True if the checkpoint at ``path`` was trained otherwise than ``spec`` now says: the one staleness rule of
    the store. What is compared depends on the kind:

    * point, hib, pn, spe, triplet, het (`ModelSpec`): the recorded ``train_config`` against
      ``spec.train_config()``, the preset's recipe. Fields the checkpoint does not record (added to the config
      later) count as their defaults. The code is not compared: these checkpoints ship with the package and are
      retrained only when their recipe changes (their metrics are re-measured by `refresh_metrics`, and
      tests/test_shipped.py checks them against the current code).
    * url (`URLSpec`): the record's ``config`` against `URLSpec.run_config`, the budget's settings and the hash
      of the code the run executes (`hedgekit.zoo.url_runs.url_run_is_stale` says why the code counts there).

    For every kind ``precision`` and the device (``meta["device"]``, the record's ``device``) are not compared:
    they say how the model was trained, not what it is (`train_spec`). An unreadable file is not stale: loading
    it raises the `CheckpointError` that says what is wrong (a URL run that does not parse is not found,
    `find_checkpoint`). The recorded config is read once per file version (the app asks on every rerun).
    """
    if isinstance(spec, URLSpec):
        return url_run_is_stale(path, spec)
    st = Path(path).stat()
    stored = _recorded(str(path), st.st_mtime_ns, st.st_size).get("train_config")
    if not isinstance(stored, dict):
        return False
    current_cfg = spec.train_config()
    defaults, current = asdict(type(current_cfg)()), asdict(current_cfg)
    stored = dict(stored)
    if "loss" in stored:
        stored["loss"] = _LEGACY_LOSS.get(stored["loss"], stored["loss"])
    return any(stored.get(k, defaults[k]) != v for k, v in current.items() if k != "precision")


@functools.lru_cache(maxsize=256)
def _recorded(path: str, mtime_ns: int, size: int) -> dict:
    """The ``train_config`` and ``data`` a checkpoint file records (the latter also from its sidecar,
    `write_provenance`), {} if unreadable; keyed by the file's modification time and size so that a
    rewritten file is read again. Read-only: loading the file raises what is wrong with it."""
    try:
        meta = torch.load(path, map_location="cpu", weights_only=True).get("meta", {})
        if "data" not in meta and Path(path).with_suffix(".json").is_file():
            meta = dict(meta, data=_sidecar_data(Path(path)))
        return {k: meta[k] for k in ("train_config", "data") if k in meta}
    except Exception:
        return {}


def check_matches(spec: ModelSpec, model: EmbeddingNet, meta: Mapping, path: str | Path = "") -> None:
    """`CheckpointError` unless a loaded checkpoint was saved for ``spec``: same name, same network config."""
    where = f"{path}: " if path else ""
    recorded = meta.get("name")
    if recorded != spec.name:
        raise CheckpointError(f"{where}checkpoint was saved for {recorded!r}, not {spec.name!r}; "
                              "delete it (or rename it to its own name) to retrain")
    expected = spec.net_config()
    diff = {k: (model.config.get(k), v) for k, v in expected.items() if model.config.get(k) != v}
    got_shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    want_shapes = {k: tuple(v.shape) for k, v in spec.build().state_dict().items()}
    shapes = [f"{k} {got_shapes.get(k)} (expected {want_shapes.get(k)})"
              for k in sorted(set(got_shapes) | set(want_shapes)) if got_shapes.get(k) != want_shapes.get(k)]
    if diff or shapes:
        said = ", ".join([f"{k}={got!r} (expected {want!r})" for k, (got, want) in diff.items()] + shapes[:3])
        raise CheckpointError(f"{where}network of the checkpoint does not match {spec.name!r} (D={spec.dim}, "
                              f"C={spec.components}): {said}; delete it to retrain")


def prototype_head(meta: Mapping) -> SPE | PN:
    """The PN / SPE head recorded in a prototype checkpoint's metadata (`CheckpointError` if there is none)."""
    info = meta.get("head")
    if not isinstance(info, Mapping):
        raise CheckpointError(f"{meta.get('name', 'this checkpoint')!r} has no prototype-head metadata "
                              "(not a PN / SPE checkpoint)")
    if info.get("kind") == "pn":
        return PN(info.get("scale", 1.0))
    head = SPE(1, int(info["dim"]), train_sampler=info["train_sampler"], train_samples=int(info["train_samples"]),
               eval_sampler=info.get("eval_sampler", "naive"), eval_samples=int(info.get("eval_samples", 200)))
    with torch.no_grad():
        head.gamma.fill_(float(info["gamma"]))
    return head.eval()


def train_spec(spec: ModelSpec, progress: bool = True, device: str = "cpu", callback=None,
               precision: str = "float32") -> tuple[EmbeddingNet, dict]:
    """Train the model ``spec`` names and evaluate it; returns (model, meta), model on the CPU.

    ``callback(step, row)`` is forwarded to the trainer (e.g. the app's progress bar). ``precision`` is the
    trainer's (`hedgekit.training.fit.body_autocast`): like ``device`` it says how to train, not what, so it is
    not part of the name; the checkpoint records it in ``meta["train_config"]``. ``"bfloat16"`` on a device that
    only emulates it trains in float32, with a warning (`hedgekit.hardware.resolve_precision`). ``device`` ("auto":
    `hedgekit.checks.resolve_device`) is recorded in ``meta["device"]`` (`hedgekit.hardware.device_description`,
    e.g. "cpu" or "cuda:0 (NVIDIA H100 80GB HBM3)"), and on the CPU its processor in ``meta["processor"]``
    (`trained_on`); `is_stale` never reads them.
    """
    t0 = time.perf_counter()
    dev = resolve_device(device)
    model, cfg, hist, extra = TRAINERS[spec.family](spec, resolve_precision(precision, dev), progress, str(dev),
                                                    callback)
    meta = {"spec": asdict(spec), "name": spec.name, "train_config": asdict(cfg), **trained_on(dev),
            "seed": spec.seed,
            "train_seconds": round(hist.seconds, 1), "total_seconds": round(time.perf_counter() - t0, 1),
            **extra, "history": hist.rows, "versions": versions(), "data": data_record(spec)}
    return model, meta


def data_record(spec: ModelSpec) -> dict:
    """What a checkpoint records of its training data (`data_source`; L-shapes: the generator)."""
    source = data_source(spec)
    if source is None:
        return {"dataset": spec.data, "origin": "generated by hedgekit.data.lshapes" if spec.data == "lshapes"
                else "not installed"}
    return source.record()


def load_or_train(spec: ModelSpec, progress: bool = True, device: str = "cpu", retrain: bool = False,
                  save: bool = True, callback=None, precision: str = "float32") -> tuple[EmbeddingNet, dict]:
    """The model named by ``spec``: loaded if a checkpoint exists, else trained (and cached).

    ``device`` and ``precision`` say how a missing model is trained (`train_spec`); a checkpoint trained on
    another device or in another precision serves the name all the same (`is_stale` ignores both). The model is
    returned on ``device`` ("auto": `hedgekit.checks.resolve_device`).

    Loading needs no write access. A model that has to be trained and saved needs a writable cache with room
    for it: a read-only or full one is refused before training (`hedgekit.errors.StorageError` naming the
    folder and ``HEDGEKIT_DATA``, the fix); ``save=False`` trains in memory instead.

    Returns (model, meta); ``meta["source"]`` says "shipped", "cache" or "trained now" and ``meta["path"]``
    where the checkpoint is ("" if not saved). Prototype models carry their head in ``meta["head"]``
    (`prototype_head`). For a URL run (`URLSpec`; ``callback`` and ``precision`` do not apply) ``meta`` is the
    run's record (`hedgekit.zoo.url_runs.url_record`) and the model an `hedgekit.training.upstream.UpstreamModel`.
    """
    if isinstance(spec, URLSpec):
        return load_or_train_url(spec, progress, device, retrain, save)
    device = resolve_device(device)
    path = None if retrain else find_checkpoint(spec)
    if path is not None:
        model, meta = load_checkpoint(path, device)
        check_matches(spec, model, meta, path)
        return model, dict(meta, source="shipped" if path.parent == SHIPPED_DIR else "cache", path=str(path))
    save = save and distributed.context().is_main  # under torchrun only rank 0 writes
    out = cache_checkpoint_path(spec, data_source(spec))
    if save:  # a read-only or full cache is refused before minutes of training, not after
        check_writable(out, need=checkpoint_bytes(spec))
    model, meta = train_spec(spec, progress=progress, device=device, callback=callback, precision=precision)
    out = save_checkpoint(out, model, meta) if save else None
    return model.to(device), dict(meta, source="trained now", path=str(out or ""))


def checkpoint_bytes(spec: ModelSpec) -> int:
    """Roughly the size of ``spec``'s checkpoint: its weights plus 256 KB of metadata (the history)."""
    return sum(t.numel() * t.element_size() for t in spec.build().state_dict().values()) + 2**18


def refresh_metrics(path: str | Path) -> dict:
    """Re-evaluate a pair-trained checkpoint with the current evaluation code and store the metrics in it.

    Used after a change to `hedgekit.evaluation.retrieval` so that shipped checkpoints record what
    the code computes today (tests/test_shipped.py checks exactly that). A provenance sidecar
    (`write_provenance`) keeps the data record and is rewritten for the new bytes.
    """
    # scipy and scikit-learn (through the metrics): 2.4 s of a notebook's first cell, which imports this module
    from hedgekit.evaluation.retrieval import table1_metrics

    model, meta = load_checkpoint(path)
    spec = recorded_spec(meta, path)
    if spec is None:
        raise CheckpointError(f"{path} records no spec of a zoo model: its evaluation set is unknown")
    sidecar_data = meta.pop("data") if Path(path).with_suffix(".json").is_file() else None
    meta["metrics"] = table1_metrics(model, eval_set(spec))
    save_checkpoint(path, model, meta)
    if sidecar_data is not None:
        write_provenance(path, Source(**sidecar_data))
    return meta["metrics"]


def shipped_names() -> list[str]:
    return sorted(p.stem for p in SHIPPED_DIR.glob("*.pt"))


def shipped_specs() -> list[ModelSpec]:
    """The spec each shipped checkpoint records (`recorded_spec`), in the order of `shipped_names`: a model's spec
    is read from its metadata, never parsed from its file name."""
    return [recorded_spec(torch.load(SHIPPED_DIR / f"{name}.pt", map_location="cpu", weights_only=True)["meta"])
            for name in shipped_names()]


def shipped_or_fast(paper: list[ModelSpec], fast: list[ModelSpec]) -> list[ModelSpec]:
    """FAST mode's models for one figure or table: ``paper`` if every one of them ships with the package
    (`shipped_names`), else ``fast``. All or none, so a figure never sets a `paper` model beside a `fast`
    one. The notebooks' FAST mode uses it where a `fast` model would not show the effect a figure is about
    (`hedgekit.papers.hib.experiments`, `hedgekit.papers.spe.experiments`)."""
    shipped = set(shipped_names())
    return list(paper) if all(s.name in shipped for s in paper) else list(fast)
