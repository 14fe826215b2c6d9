"""hedgekit's command line: ``python -m hedgekit {train,evaluate,table1,bench,reproduce}``.

* ``train``    — load-or-train one zoo model of any kind (`hedgekit.zoo`), print where it lives.
* ``evaluate`` — print a HIB Table-1-style block: our numbers beside the paper's.
* ``table1``   — HIB Tables 1, 2 and 4 from the metrics recorded in every trained paper checkpoint.
* ``bench``    — training throughput (point; HIB with the preset's K and the paper's K = 8; in float32 and
                 with a bfloat16 body, `hedgekit.training.fit.TrainConfig.precision`) beside a plain loop and the
                 matmul ceiling, on ``--device`` cpu or cuda (`hedgekit.bench`), and inference
                 throughput (embeddings + eta per second); ``--app`` adds the
                 playground's per-update latency.
* ``reproduce`` — run the reproduction notebooks into ``reports/`` with one summary; ``--device cuda
                 --train-missing`` trains their checkpoints on a GPU first (`hedgekit.repro.reproduce`).
* ``url-benchmark`` — the URL benchmark at kit scale, cached and resumable, on ``--device``
                 (`hedgekit.papers.url.benchmark`).
* ``students``  — the student versions of the notebooks, solutions removed (`hedgekit.repro.students`).
* ``grade``     — run each exercise's check against students' notebooks: a table and JSON (`hedgekit.repro.grade`).
* ``results``   — docs/results.md from the notebooks' recorded verdicts and tables (`hedgekit.repro.results`).
* ``site``      — the notebooks with their committed outputs as a static HTML site (`hedgekit.repro.site`).

Every command answers bad input with one ``error:`` line and exit status 2, and Ctrl-C (SIGTERM, SIGHUP) with one line
saying what was kept and how to resume, exit status 130 (143, 129) (`run_command`). A model flag that does not apply to
the kind is refused (`kind_flags`: the kind's method record says which it takes); sizes and seeds are bounded
(`hedgekit.checks.MAX_SEED`, `hedgekit.nets.embedder.MAX_DIM`, ...) before anything is built.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import torch

from hedgekit.checks import (MAX_SEED, MAX_STEPS, MAX_THREADS, NO_SPACE, STORAGE_ERRNOS, count_arg, device_arg,
                             resolve_device, storage_error)
from hedgekit.commands import run_command
from hedgekit.data import load_ndigit
from hedgekit.data.ndigit import MAX_DIGITS
from hedgekit.errors import HedgekitError, InputError, StorageError
from hedgekit.evaluation.retrieval import table1_metrics
from hedgekit.hardware import cpu_summary, native_bfloat16
from hedgekit.nets import build_model
from hedgekit.nets.embedder import MAX_DIM
from hedgekit.paths import is_within, moved_by
from hedgekit.repro import grade, reproduce, results, site, students
from hedgekit.repro.report import dataframe_markdown
from hedgekit.training.distributed import init_from_env
from hedgekit.training.fit import PRECISIONS
from hedgekit.uncertainty import self_mismatch
from hedgekit.zoo import METHODS, PRESETS, Flag, Spec, every_flag, load_or_train, load_plugins, method


# The flags of `train` / `evaluate` every kind takes; a kind takes these and its method record's ``flags``
# (`kind_flags`). A flag given for a kind that does not take it is refused (`_spec`), not ignored; --n-digits only
# applies to N-digit MNIST (`DATA_FLAGS`).
_EVERY_KIND = ("--kind", "--dim", "--n-digits", "--preset", "--seed", "--steps", "--device", "--retrain",
               "--precision")
DATA_FLAGS = {"ndigit": frozenset(("--n-digits",)), "lshapes": frozenset(), "fashion": frozenset()}
_N_DIGITS = Flag("n_digits", "N, the digits per N-digit MNIST image", aliases=("-n",),
                 type=count_arg(1, MAX_DIGITS), help="digits per image, N-digit MNIST only (default 2)")


def kind_flags(kind: str) -> frozenset[str]:
    """Every flag of `train` / `evaluate` that ``kind`` takes: those of every kind and its record's."""
    return frozenset(_EVERY_KIND + tuple(method(kind).flags))


def _flags() -> dict[str, Flag]:
    """Flag -> `Flag` of every spec field a flag sets beside the ones every spec has: --n-digits and the records'."""
    return {"--n-digits": _N_DIGITS, **every_flag()}


def _spec_args(p: argparse.ArgumentParser) -> None:
    given = argparse.SUPPRESS  # kind-specific flags are absent from the namespace unless given (`_spec`)
    p.add_argument("--kind", choices=tuple(METHODS), default="hib")
    p.add_argument("--dim", "-d", type=count_arg(1, MAX_DIM, " (the embedding dimension D)"), default=2)
    for name, flag in _flags().items():
        p.add_argument(name, *flag.aliases, dest=flag.field, type=flag.type, choices=flag.choices, default=given,
                       help=flag.help)
    p.add_argument("--preset", choices=tuple(PRESETS), default="paper")
    p.add_argument("--seed", type=count_arg(0, MAX_SEED, " = 2^63 - 1"), default=0)
    p.add_argument("--steps", type=count_arg(1, MAX_STEPS), default=None,
                   help="override the preset's number of steps")
    p.add_argument("--device", type=device_arg, default="cpu", help="cpu, cuda, cuda:N, mps or auto")
    p.add_argument("--retrain", action="store_true", help="train even if a checkpoint exists")
    p.add_argument("--precision", choices=PRECISIONS, default="float32",
                   help="how a missing model is trained: bfloat16 runs the network's body in bfloat16, faster on CPUs "
                        "with AVX512-BF16 (docs/speed.md)")


def _spec(a):
    """The `Spec` the flags name; InputError for a flag that does not apply to the kind (`kind_flags`)."""
    flags = _flags()
    given = {name for name, flag in flags.items() if hasattr(a, flag.field)}
    data = getattr(a, "data", "ndigit")
    allowed = kind_flags(a.kind) - (frozenset(("--n-digits",)) - DATA_FLAGS[data])
    refused = sorted(given - allowed)
    if refused:
        what = "; ".join(f"{name} sets {flags[name].sets}" for name in refused)
        on = "" if data == "ndigit" else f" on {data}"
        raise InputError(f"{', '.join(refused)} {'does' if len(refused) == 1 else 'do'} not apply to {a.kind} models"
                         f"{on} ({what}); leave {'it' if len(refused) == 1 else 'them'} out. {a.kind} models{on} "
                         f"take {', '.join(sorted(allowed - {'--kind'}))}")
    fields = {flag.field: getattr(a, flag.field) for flag in flags.values() if hasattr(a, flag.field)}
    return Spec(kind=a.kind, dim=a.dim, preset=a.preset, seed=a.seed, steps=a.steps, **fields)


def cmd_train(a) -> int:
    spec = _spec(a)
    if not init_from_env(a.device).is_main:  # under torchrun: train with the others, rank 0 reports and saves
        load_or_train(spec, progress=False, device=a.device, retrain=a.retrain, precision=a.precision)
        return 0
    _, meta = load_or_train(spec, device=a.device, retrain=a.retrain, precision=a.precision)
    how = "trained now" if meta["source"] == "trained now" else f"loaded ({meta['source']})"
    print(f"{spec.name}: {how}; training took {meta['train_seconds']:.0f} s; checkpoint {meta['path'] or '(not saved)'}")
    print(json.dumps({k: _json_number(v) for k, v in meta["metrics"].items()}, indent=1, allow_nan=False))
    return 0


def _json_number(value: float | None) -> float | None:
    """A metric as JSON has it: rounded to 4 decimals, ``null`` where it is missing or not finite (JSON has no NaN;
    e.g. a tau of a metric that is constant over the test set)."""
    return None if value is None or not math.isfinite(value) else round(value, 4)


def cmd_evaluate(a) -> int:
    from hedgekit.papers.hib import numbers, protocol  # a paper's parts: only in the command that needs them

    spec = _spec(a)
    if spec.family != "pairs":
        raise InputError(f"evaluate prints HIB's Table 1 for point / hib models; {spec.kind} models are evaluated "
                         f"in notebooks 06-07 (`python -m hedgekit train --kind {spec.kind}` prints their quick check)")
    model, meta = load_or_train(spec, device=a.device, retrain=a.retrain, precision=a.precision)
    test = load_ndigit(spec.n_digits, "test_seen")
    t0 = time.perf_counter()
    ours = table1_metrics(model, test, seed=a.eval_seed, progress=True)  # on --device; a tqdm bar: MoG-C takes minutes
    ref1 = numbers.HIB_TABLE1.get((spec.n_digits, spec.dim), {}).get(spec.label, {})
    ref2 = numbers.HIB_TABLE2.get((spec.n_digits, spec.dim), {}).get(spec.label, {})
    how = "trained now" if meta["source"] == "trained now" else f"loaded ({meta['source']})"
    print(f"{spec.name}  (N={spec.n_digits}, D={spec.dim}, {spec.label}; {how}, "
          f"evaluated on {len(test)} seen-class test images in {time.perf_counter() - t0:.0f} s)")
    print(protocol.side_by_side(ours, ref1, numbers.TABLE1_ROWS, "HIB Table 1 (verification AP, KNN majority K=5)"))
    if spec.kind == "hib":
        print(protocol.side_by_side(ours, ref2, numbers.TABLE2_ROWS, "HIB Table 2 (Kendall tau, eta bins)"))
    if spec.kind == "hib":
        print(f"mean variance clean {ours['var_clean']:.4g}, corrupt {ours['var_corrupt']:.4g} "
              f"(ratio {ours['var_ratio']:.2f})")
    print(f"mean eta clean {ours['eta_clean']:.3f}, corrupt {ours['eta_corrupt']:.3f}")
    return 0


def cmd_table1(a) -> int:
    # a paper's parts: only in the command that needs them (tests/test_imports.py)
    from hedgekit.papers.hib.experiments import TABLE4_SETTING, recorded_table1
    from hedgekit.papers.hib.protocol import table1_frame, table2_frame, table4_frame

    results, missing = recorded_table1(a.preset, a.seed)
    table4, missing4 = recorded_table1(a.preset, a.seed, settings=(TABLE4_SETTING,))
    if not results and not table4:
        print(f"no {a.preset} checkpoints of the Table 1 grid yet; train them with `python -m hedgekit train ...`")
        return 1
    tables = [("HIB Table 1 (AP, KNN majority K=5)", table1_frame, results),
              ("HIB Table 2 (Kendall tau)", table2_frame, results),
              ("HIB Table 4 (N=3, D=4: AP, KNN majority K=5, Kendall tau)", table4_frame, table4)]
    for title, frame, res in tables:
        if not res:
            continue
        print(f"### {title}: ours (as recorded at training time) beside Oh et al. 2019\n")
        df = frame(res)
        print(dataframe_markdown(df[[c for c in df.columns if not c.endswith("±")]]), "\n")
    missing += missing4
    ratios = ", ".join(f"N={n} D={d} {lab}: {r.var_ratio:.1f}x" for (n, d, lab), r in {**results, **table4}.items()
                       if lab != "point")
    print(f"mean variance corrupt / clean: {ratios}")
    if missing:
        print("not trained yet: " + ", ".join(missing))
    return 0


def _bench_ops(dev: torch.device) -> int:
    """`bench --ops`: one `hedgekit.bench.ops_line` per trainer."""
    from hedgekit.bench import OPS_TRAINERS, ops_line, ops_per_step  # see cmd_bench

    print(f"hedgekit bench --ops — torch {torch.__version__}, device {dev}: ATen ops per training step that launch a "
          "kernel (views excluded) and host synchronisations, counted over steps 4-8 of each run"
          + (", the step as a GPU runs it (hedgekit.hardware.as_launch_bound)" if dev.type == "cpu" else ""))
    for trainer in OPS_TRAINERS:
        print(ops_line(trainer, *ops_per_step(trainer, dev)), flush=True)
    return 0


def _bench_seeds(n_seeds: int, images: torch.Tensor, labels: torch.Tensor, steps: int, dev: torch.device) -> int:
    """`bench --seeds S`: S MoG-1 seeds as one model (`hedgekit.training.seeds.fit_seeds`) beside one seed trained
    by `hedgekit.training.fit.fit`."""
    from hedgekit.bench import seeds_step  # see cmd_bench

    one = seeds_step(1, images, labels, steps, device=dev)
    many = seeds_step(n_seeds, images, labels, steps, device=dev)
    print(f"seeds {n_seeds} vmapped (MoG-1, K=8, batch 256 each, {dev}): {many * 1000:.2f} ms/step, one seed by fit "
          f"{one * 1000:.2f} ms/step; {n_seeds} seeds / one {many / one:.2f}x the time "
          f"({n_seeds * one / many:.2f}x the seeds per second)")
    return 0


def _bench_layers(precisions, repeats: int, dev: torch.device) -> None:
    """`bench --layers`: every layer of the point model timed alone (`hedgekit.bench.layer_times`)."""
    from hedgekit.bench import layer_times  # see cmd_bench

    for precision in precisions:
        rows = layer_times(build_model("point", 2, 2), repeats=repeats, precision=precision, device=dev)
        total = sum(r["seconds"] for r in rows)
        print(f"layers of the point model alone on the {dev.type}, {precision}, forward + backward of 256 images "
              f"(medians of {repeats}): sum {total * 1000:.1f} ms = {256 / total:.0f} images/s at most from "
              "these layers")
        for r in rows:
            print(f"  {r['name']:<32} {r['seconds'] * 1000:7.2f} ms  {r['seconds'] / total:4.0%}  "
                  f"{r['flops'] / 256 / 1e6:5.2f} MFLOP/image  {r['gflops']:6.1f} GFLOP/s")


def cmd_bench(a) -> int:
    # hedgekit.bench loads torch.utils.flop_counter, statistics and every trainer: 80 ms of `hedgekit --help`
    from hedgekit.bench import MATMUL_N, captured_step, compare, train_flops_per_image

    torch.set_num_threads(a.threads)
    dev = resolve_device(a.device)
    if a.ops:
        return _bench_ops(dev)
    test = load_ndigit(2, "test_seen")
    x, y = test.tensors()
    if a.seeds:
        return _bench_seeds(a.seeds, torch.from_numpy(test.images), y, a.steps, dev)
    print(f"hedgekit bench — torch {torch.__version__}, {torch.get_num_threads()} thread(s), N=2 (28x56 images), "
          f"device {dev}")
    print(cpu_summary())
    if dev.type == "cuda":
        print(f"GPU {torch.cuda.get_device_name(dev)}; CUDA {torch.version.cuda}; the ceiling's matmuls are "
              f"{MATMUL_N['cuda']}x{MATMUL_N['cuda']} in IEEE float32 with TF32 off; the loops keep PyTorch's "
              f"defaults (cuDNN TF32 convolutions {'on' if torch.backends.cudnn.allow_tf32 else 'off'})")
    print(f"LeNet training FLOPs per image: point {train_flops_per_image(build_model('point', 2, 2)) / 1e6:.2f} M, "
          f"MoG-1 {train_flops_per_image(build_model('hib', 2, 2)) / 1e6:.2f} M; medians of {a.repeats} interleaved "
          f"runs of {a.steps} steps; plain = the same network and loss in a minimal torch loop (data, batch indices "
          f"and occlusion on the {dev.type}); ceiling = the {dev.type}'s float32 matmul GFLOP/s (measured between "
          "the runs) / FLOPs per image")
    images = torch.from_numpy(test.images)
    paper = {kind: Spec(kind=kind, preset="paper").train_config() for kind in ("point", "hib")}
    precisions = PRECISIONS if a.precision == "both" else (a.precision,)
    if a.precision == "both" and not native_bfloat16(dev):
        precisions = ("float32",)  # emulated bfloat16 runs ~7x slower: timing it would take most of the run
        print(f"bfloat16 not timed: this {dev.type} emulates it (ask for it with --precision bfloat16)")
    for kind, k in (("point", 1), ("hib", paper["hib"].k), ("hib", 8)):  # the preset's K, then the paper's K = 8
        rates = {}
        for precision in precisions:
            r = compare(kind, k, images, y, steps=a.steps, repeats=a.repeats, precision=precision, device=dev)
            rates[precision] = r.hedgekit
            ms = 256 / r.hedgekit * 1000
            line = (f"train {kind:<5} (K={k}, batch 256, all pairs, {precision}): {ms:7.1f} ms/step  "
                    f"{r.hedgekit:8.0f} images/s | plain {r.plain:6.0f} /s, ceiling {r.ceiling:6.0f} /s "
                    f"({r.gflops:.1f} GFLOP/s) | hedgekit/plain {r.vs_plain:.2f}, "
                    f"hedgekit/ceiling {r.vs_ceiling:.2f}, plain/ceiling {r.plain / r.ceiling:.2f}")
            if kind == "point" or k == paper["hib"].k:
                steps = paper[kind].steps
                line += f"  -> paper preset: {steps} steps = {steps * ms / 60000:.1f} min"
            print(line)
            if dev.type == "cuda" and precision == "float32":
                try:
                    s = captured_step(kind, k, images, y, steps=a.steps, device=dev)
                except RuntimeError as exc:  # a capture CUDA refuses is a finding of the bench, not its end
                    print(f"captured {kind:<5} (K={k}): could not capture the step: {exc}")
                    continue
                print(f"captured {kind:<5} (K={k}, one CUDA graph per step): {s * 1000:7.2f} ms/step "
                      f"{256 / s:8.0f} images/s | captured/plain {256 / s / r.plain:.2f}")
        if len(rates) == 2:
            print(f"  bfloat16 / float32: {rates['bfloat16'] / rates['float32']:.2f}x")
    if a.layers:
        _bench_layers(precisions, a.repeats, dev)
    model = build_model("hib", 2, 2).eval()
    t0 = time.perf_counter()
    emb = model.embed(x)
    t_embed = time.perf_counter() - t0
    t0 = time.perf_counter()
    self_mismatch(emb, model.match)
    t_eta = time.perf_counter() - t0
    n = len(x)
    print(f"inference{' (on the CPU)' if dev.type != 'cpu' else ''}: embeddings {n / t_embed:9.0f} /s; "
          f"eta {n / t_eta:9.0f} /s; both {n / (t_embed + t_eta):9.0f} /s")
    if a.app:
        from hedgekit.interactive.latency import benchmark_update  # the app's maths: 40 ms of `hedgekit --help`

        for comps in (1, 2):
            r = benchmark_update(Spec(kind="hib", components=comps, preset=a.preset))
            print(f"app update (MoG-{comps}): p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line: the message and where the options are listed (no usage block);
    the subcommands' parsers are of this class too."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m hedgekit", description=__doc__.split("\n\n")[0],
                epilog="Run `python -m hedgekit COMMAND --help` for one command's options.")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="load or train a zoo model")
    _spec_args(t)
    t.set_defaults(fn=cmd_train)
    e = sub.add_parser("evaluate", help="Table-1-style evaluation beside the paper")
    _spec_args(e)
    e.add_argument("--eval-seed", type=count_arg(0, MAX_SEED), default=0, help="seed of the verification pairs")
    e.set_defaults(fn=cmd_evaluate)
    t1 = sub.add_parser("table1", help="HIB Tables 1, 2 and 4 from the recorded metrics of every trained checkpoint")
    t1.add_argument("--preset", choices=("fast", "paper"), default="paper")
    t1.add_argument("--seed", type=count_arg(0, MAX_SEED), default=0)
    t1.set_defaults(fn=cmd_table1)
    b = sub.add_parser("bench", help="training and inference throughput")
    b.add_argument("--steps", type=count_arg(1, MAX_STEPS), default=30)
    b.add_argument("--threads", type=count_arg(1, MAX_THREADS), default=2)
    b.add_argument("--repeats", type=count_arg(1, 1000), default=3,
                   help="interleaved runs per loop; medians are printed")
    b.add_argument("--app", action="store_true", help="also time one playground update")
    b.add_argument("--layers", action="store_true", help="also time every layer of the point model alone")
    b.add_argument("--ops", action="store_true",
                   help="instead of timing, count each trainer's kernel launches and host synchronisations per step "
                        "beside the plain loop's (hedgekit.opcount); on the CPU the step is counted as a GPU runs it")
    b.add_argument("--seeds", type=count_arg(2, 64), default=None, metavar="S",
                   help="instead of the loops, time S MoG-1 seeds trained as one model (hedgekit.training.seeds) "
                        "beside one seed")
    b.add_argument("--preset", choices=("fast", "paper"), default="paper")
    b.add_argument("--precision", choices=PRECISIONS + ("both",), default="both",
                   help="training precision of hedgekit's step (TrainConfig.precision); the plain loop is float32")
    b.add_argument("--device", type=device_arg, default="cpu",
                   help="where both loops and the matmul ceiling run: cpu (default), cuda, cuda:N or auto (the best "
                        "available); inference and --app stay on the CPU")
    b.set_defaults(fn=cmd_bench)
    reproduce.add_subcommand(sub)
    # A paper's parts are imported inside the function that needs them (tests/test_imports.py): here, the URL
    # paper's command line and the papers' list of unjudged claims, which `results` prints.
    from hedgekit.papers.unjudged import UNJUDGED
    from hedgekit.papers.url.benchmark import add_subcommand as add_url_benchmark

    add_url_benchmark(sub)
    students.add_subcommand(sub)
    grade.add_subcommand(sub)
    results.add_subcommand(sub, UNJUDGED)
    site.add_subcommand(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:  # the modules of HEDGEKIT_PLUGINS register their methods: their kinds and flags join the parser
        load_plugins()
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    return run_command(_answering_storage_errors(args.fn), args, argv)


def _answering_storage_errors(fn):
    """``fn`` whose file-system errors (`hedgekit.checks.STORAGE_ERRNOS`: a read-only place, a file in the way, a
    folder where a file must be, no space) end as one `StorageError` paragraph that names the path and the flag or
    variable that moves it (`_moved_by`), which `run_command` prints with exit status 2. A
    `StorageError` raised inside is worded again the same way. Any other OSError passes unchanged, and so does one
    without a file name unless it is a full disk (an EPERM of ``os.kill`` is not a read-only folder)."""
    def run(a):
        try:
            return fn(a)
        except OSError as exc:
            name = exc.path if isinstance(exc, StorageError) else exc.filename
            path = Path(os.fsdecode(name)) if isinstance(name, (str, bytes, os.PathLike)) else None
            ours = isinstance(exc, HedgekitError) and not isinstance(exc, StorageError)  # e.g. DataNotFoundError
            if ours or exc.errno not in STORAGE_ERRNOS or (path is None and exc.errno not in NO_SPACE):
                raise
            out = getattr(a, "out", None)
            example = Path(out).name if out else _OUT_NAMES.get(a.cmd, f"hedgekit-{a.cmd}")
            raise storage_error(path, exc, getattr(exc, "need", None), _moved_by(a, path), example) from exc

    return run


_OUT_NAMES = {"results": "results.md"}  # the example --out of a command whose --out names a file, not a folder


def _moved_by(a, path: Path | None) -> str | None:
    """The flag or variable that puts ``path`` elsewhere: ``--out`` for a path under the command's ``--out`` or one
    of the folders above it (being created for it); ``HEDGEKIT_DATA`` for one in the data cache
    (`hedgekit.paths.moved_by`); else ``--out`` for a command that has one (its default place, e.g.
    notebooks/students, is what --out moves), except under ``--inplace`` (which writes into notebooks/ whatever
    --out says); else None. A path that is not known (an OSError without a file name): ``--out`` if the command
    has one, else ``HEDGEKIT_DATA``."""
    out, has_out = getattr(a, "out", None), hasattr(a, "out") and not getattr(a, "inplace", False)
    if path is None:
        return "--out" if has_out else "HEDGEKIT_DATA"
    if out and (is_within(path, out) or is_within(out, path)):
        return "--out"
    return moved_by(path) or ("--out" if has_out else None)
