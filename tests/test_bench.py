"""Tests of hedgekit.bench: the FLOP count against a hand count, the plain loop's contract, the ratios."""
import numpy as np
import pytest
import torch

from hedgekit import bench
from hedgekit.errors import InputError
from hedgekit.nets import build_model


def _lenet_flops(width: int, dim: int) -> tuple[int, int]:
    """Hand count (2 FLOPs per multiply-add) of LeNetBody + point head on a 28 x width image:
    (forward FLOPs, FLOPs of the first convolution)."""
    conv1 = 6 * 28 * width * (1 * 5 * 5) * 2
    conv2 = 16 * 14 * (width // 2) * (6 * 5 * 5) * 2
    fc = 16 * 7 * (width // 4) * 120 * 2
    return conv1 + conv2 + fc + 120 * dim * 2, conv1


@pytest.mark.parametrize("n_digits", [1, 2])
def test_training_flops_are_three_forward_passes_minus_the_image_gradient(n_digits):
    """Backward = gradient of every layer's input and of its weights (2x the forward each), except the
    input gradient of the first convolution: the images need none."""
    flops = bench.train_flops_per_image(build_model("point", n_digits, 2))
    forward, conv1 = _lenet_flops(28 * n_digits, 2)
    assert flops == 3 * forward - conv1  # 7.716 MFLOP for 2-digit images
    # per image: the batch size used for counting does not matter
    assert bench.train_flops_per_image(build_model("point", n_digits, 2), batch=4) == flops


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu"), "auto"])
def test_matmul_rate_is_positive_and_finite(device):
    if device == "auto" and torch.cuda.is_available():
        pytest.skip("auto picks the GPU here: test_bench_prints_rates_and_ratios[cuda] covers it")
    rate = bench.matmul_gflops(n=64, seconds=0.01, device=device)
    assert np.isfinite(rate) and rate > 0


def test_matmul_ceiling_refuses_bad_devices_and_sizes():
    with pytest.raises(InputError, match="is not a device"):
        bench.matmul_gflops(device="banana")
    with pytest.raises(InputError, match="need n >= 1"):
        bench.matmul_gflops(n=-4)
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="CUDA is not available"):
            bench.matmul_gflops(device="cuda")


def _digits(n_classes=4, per_class=6):
    g = torch.Generator().manual_seed(0)
    return torch.randint(0, 256, (n_classes * per_class, 28, 56), dtype=torch.uint8, generator=g), \
        torch.arange(n_classes).repeat_interleave(per_class)


@pytest.mark.parametrize("kind, k, p_occlude", [("point", 1, 0.2), ("hib", 3, 1.0), ("hib", 3, 0.0)])
def test_plain_step_trains_the_same_network(kind, k, p_occlude):
    images, labels = _digits()
    model = build_model(kind, 2, 2)
    before = [p.detach().clone() for p in model.parameters()]
    seconds = bench.plain_step(model, images, labels, batch=8, k=k, steps=2, p_occlude=p_occlude)
    assert seconds > 0
    body_changed = [not torch.equal(b, p) for b, p in zip(before, model.parameters())]
    assert all(body_changed[:4])  # both convolutions were updated


def test_plain_step_refuses_mixtures():
    images, labels = _digits()
    with pytest.raises(InputError, match="point and MoG-1"):
        bench.plain_step(build_model("hib", 2, 2, components=2), images, labels, 8, 2, 1)


@pytest.mark.parametrize("images, labels, said", [
    (_digits()[0].float() / 255, _digits()[1], "uint8 images"),  # floats: the loop converts uint8 itself
    (_digits()[0].unsqueeze(1), _digits()[1], "uint8 images"),  # (N, 1, H, W)
    (_digits()[0][:, :, :50], _digits()[1], "uint8 images"),  # not whole digit cells
    (_digits()[0][:0], _digits()[1][:0], "uint8 images"),  # empty
    (_digits()[0].numpy(), _digits()[1], "uint8 images"),
    (_digits()[0], _digits()[1][:-1], "labels must be an integer tensor"),
    (_digits()[0], _digits()[1].float(), "labels must be an integer tensor"),
    (_digits()[0], _digits()[1].tolist(), "labels must be an integer tensor"),
])
def test_plain_step_refuses_data_it_cannot_train_on(images, labels, said):
    with pytest.raises(InputError, match=said):
        bench.plain_step(build_model("point", 2, 2), images, labels, 8, 1, 1)


def _brute_force_mask(boxes, height, width):
    """Pixel by pixel: covered iff some box (top, left, h, w) has top <= r < top + h and left <= c < left + w."""
    mask = torch.zeros(len(boxes), height, width, dtype=torch.bool)
    for b, image_boxes in enumerate(boxes.tolist()):
        for r in range(height):
            for c in range(width):
                mask[b, r, c] = any(t <= r < t + h and lft <= c < lft + w for t, lft, h, w in image_boxes)
    return mask


def test_box_mask_is_the_brute_force_mask_of_its_boxes():
    """Drawn boxes (empty, full-cell and partial ones, p = 0.7) and hand-made edge cases: the whole image, boxes
    touching every border, overlapping boxes, a 1-pixel box, zero height with nonzero width."""
    gen = torch.Generator().manual_seed(3)
    drawn = bench.occlusion_boxes(40, 2, 0.7, gen)
    hand = torch.tensor([[[0, 0, 28, 28], [0, 28, 28, 28]], [[27, 55, 1, 1], [0, 0, 0, 5]],
                         [[3, 4, 10, 20], [5, 10, 10, 30]], [[0, 27, 28, 2], [14, 0, 14, 56]]])
    for boxes in (drawn, hand):
        assert torch.equal(bench.box_mask(boxes, 28, 56), _brute_force_mask(boxes, 28, 56))
    assert bench.box_mask(hand, 28, 56)[0].all() and bench.box_mask(hand, 28, 56)[1].sum() == 1


def test_occlusion_boxes_follow_hib_appendix_a():
    """The plain loop's boxes have `sample_digit_boxes`'s distribution: each box inside its digit's cell, sides in
    {0..28} (all 29 values drawn), p = 0 gives only the empty boxes (0, 28 j, 0, 0), and the share of digits that
    lose pixels is p (28/29)^2 (within 4 standard errors)."""
    n, p = 20000, 0.3
    boxes = bench.occlusion_boxes(n, 3, p, torch.Generator().manual_seed(0))
    assert boxes.shape == (n, 3, 4) and boxes.dtype == torch.int64
    top, left, h, w = boxes.unbind(-1)
    cell = 28 * torch.arange(3)
    assert (top >= 0).all() and (top + h <= 28).all() and (left >= cell).all() and (left + w <= cell + 28).all()
    assert set(h[h > 0].tolist()) == set(range(1, 29)) and set(w[w > 0].tolist()) == set(range(1, 29))
    share, expected = ((h > 0) & (w > 0)).float().mean().item(), p * (28 / 29) ** 2
    assert abs(share - expected) < 4 * (expected * (1 - expected) / (3 * n)) ** 0.5
    corner = top[(h == 5) & (w > 0)]  # given its height, the corner is uniform on 0..23
    assert set(corner.tolist()) == set(range(24))
    empty = bench.occlusion_boxes(5, 3, 0.0, torch.Generator().manual_seed(0))
    assert torch.equal(empty, torch.stack([torch.zeros(5, 3), cell.expand(5, 3), torch.zeros(5, 3),
                                           torch.zeros(5, 3)], -1).long())


def test_plain_batch_blacks_out_exactly_its_boxes():
    """Image i is the constant labels[i] + 1: the batch is that constant / 255 outside the brute-force mask of the
    boxes it returns and 0 inside, so indices, labels, boxes and mask all belong together."""
    labels = torch.arange(30) * 7 % 250
    images = (labels + 1).to(torch.uint8)[:, None, None].expand(30, 28, 56).contiguous()
    x, y, boxes = bench.plain_batch(images, labels, 64, 0.8, torch.Generator().manual_seed(1))
    assert x.shape == (64, 1, 28, 56) and x.dtype == torch.float32
    expected = torch.where(_brute_force_mask(boxes, 28, 56), 0.0, (y + 1).float()[:, None, None] / 255.0)
    assert torch.equal(x[:, 0], expected)
    assert _brute_force_mask(boxes, 28, 56).any()  # p = 0.8: some pixels were blacked out


def test_plain_step_and_the_ceiling_synchronise_around_every_clock_read(monkeypatch):
    """The loops' clocks are read after `synchronize` (a no-op on the CPU, `torch.cuda.synchronize` on CUDA):
    plain_step before its first and after its last step, matmul_gflops after every product."""
    calls = []
    monkeypatch.setattr(bench, "synchronize", lambda dev: calls.append(dev))
    images, labels = _digits()
    bench.plain_step(build_model("point", 2, 2), images, labels, 8, 1, steps=3)
    assert calls == [torch.device("cpu")] * 2
    calls.clear()
    bench.matmul_gflops(n=8, seconds=0.0)
    assert calls == [torch.device("cpu")] * 4  # the warm-up, then 3 products (the minimum)


def test_compare_reports_medians_and_ratios():
    images, labels = _digits()
    r = bench.compare("point", 1, images, labels, steps=1, repeats=1, classes_per_batch=2, per_class=3)
    assert len(r.hedgekit_all) == len(r.plain_all) == 1
    assert r.hedgekit == r.hedgekit_all[0] > 0 and r.plain == r.plain_all[0] > 0 and r.gflops > 0
    assert r.vs_plain == pytest.approx(r.hedgekit / r.plain)
    assert r.vs_ceiling == pytest.approx(r.hedgekit / r.ceiling)
    assert r.ceiling == pytest.approx(r.gflops * 1e9 / bench.train_flops_per_image(build_model("point", 2, 2)))


def test_layer_times_cover_every_layer_and_their_flops_sum_to_the_training_count():
    """One row per leaf layer of body and head, in order; FLOPs per layer add up to `train_flops_per_image`
    (the first convolution needs no input gradient), pooling and ReLU count none."""
    model = build_model("point", 2, 2)
    rows = bench.layer_times(model, batch=4, repeats=1)
    names = [r["name"].split(" ")[0] for r in rows]
    assert names == ["Conv2d", "MaxPool2d", "ReLU", "Conv2d", "MaxPool2d", "ReLU", "Flatten", "Linear", "ReLU",
                     "Linear"]
    assert rows[0]["name"].endswith("(6, 28, 56)") and rows[-1]["name"].endswith("(2,)")
    assert sum(r["flops"] for r in rows) / 4 == bench.train_flops_per_image(build_model("point", 2, 2))
    assert all(r["flops"] == 0 for r in rows if r["name"].startswith(("MaxPool2d", "ReLU", "Flatten")))
    assert all(r["seconds"] > 0 for r in rows)
    assert not any(p.grad is not None for p in model.parameters())  # gradients of the timing runs are dropped


@pytest.mark.parametrize("kwargs", [dict(batch=0), dict(repeats=0)])
def test_layer_times_refuses_empty_runs(kwargs):
    with pytest.raises(InputError, match=">= 1"):
        bench.layer_times(build_model("point", 2, 2), **kwargs)


def test_layer_times_in_bfloat16_cover_the_same_layers_and_flops():
    """With a bfloat16 body every layer is still timed once, with the same FLOP count; unknown precisions fail."""
    rows32 = bench.layer_times(build_model("point", 2, 2), batch=4, repeats=1)
    rows16 = bench.layer_times(build_model("point", 2, 2), batch=4, repeats=1, precision="bfloat16")
    assert [(r["name"], r["flops"]) for r in rows16] == [(r["name"], r["flops"]) for r in rows32]
    assert all(r["seconds"] > 0 for r in rows16)
    with pytest.raises(InputError, match="precision must be one of"):
        bench.layer_times(build_model("point", 2, 2), batch=4, repeats=1, precision="float16")


def test_compare_times_the_precision_it_is_given(monkeypatch):
    """compare hands its precision to `fit` (the runs it times), not only to the result it returns."""
    used, real_fit = [], bench.fit
    monkeypatch.setattr(bench, "fit", lambda model, x, y, cfg, **kw: used.append(cfg.precision) or
                        real_fit(model, x, y, cfg, **kw))
    images, labels = _digits()
    r = bench.compare("hib", 2, images, labels, steps=1, repeats=1, classes_per_batch=2, per_class=3,
                      precision="bfloat16")
    assert used == ["bfloat16", "bfloat16"]  # the warm-up and the timed repeat
    assert r.precision == "bfloat16" and r.hedgekit > 0


def test_compare_runs_fit_on_the_device_it_is_given(monkeypatch):
    """compare hands its device (resolved: "auto" is the best available) to `fit` and reports it."""
    from hedgekit.checks import resolve_device

    used, real_fit = [], bench.fit
    monkeypatch.setattr(bench, "fit", lambda model, x, y, cfg, **kw: used.append(kw["device"]) or
                        real_fit(model, x, y, cfg, **kw))
    images, labels = _digits()
    r = bench.compare("point", 1, images, labels, steps=1, repeats=1, classes_per_batch=2, per_class=3, device="auto")
    assert used == [resolve_device("auto")] * 2 and r.device == str(resolve_device("auto"))


@pytest.mark.parametrize("argv", [["--device", "banana"], ["--device", "cuda:x"], ["--device", "tpu"]])
def test_bench_refuses_unknown_devices_without_a_traceback(capsys, argv):
    from hedgekit.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["bench", *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "argument --device" in err and "is not a device" in err and "Traceback" not in err


def test_bench_on_cuda_without_cuda_says_so(capsys, monkeypatch):
    from hedgekit.cli import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--device", "cuda"])
    assert exc.value.code == 2
    assert "argument --device: device 'cuda': CUDA is not available on this machine" in capsys.readouterr().err


_LINE = (r"train (point|hib  ) \(K=(\d), batch 256, all pairs, float32\): +([\d.]+) ms/step +(\d+) images/s \| "
         r"plain +(\d+) /s, ceiling +(\d+) /s \(([\d.]+) GFLOP/s\) \| hedgekit/plain ([\d.]+), "
         r"hedgekit/ceiling ([\d.]+), plain/ceiling ([\d.]+)")


def _bench_lines(out: str) -> list[tuple]:
    """The training lines of `bench`'s output, parsed: (kind, K, ms/step, hedgekit, plain, ceiling, GFLOP/s,
    hedgekit/plain, hedgekit/ceiling, plain/ceiling)."""
    import re

    return [(m[1].strip(), int(m[2]), *map(float, m.groups()[2:])) for m in re.finditer(_LINE, out)]


@pytest.mark.parametrize("device", [pytest.param("cpu", marks=pytest.mark.slow),
                                    pytest.param("cuda", marks=pytest.mark.gpu)])
def test_bench_prints_rates_and_ratios(capsys, monkeypatch, tiny_ndigit, device):
    """`bench --device D` prints, for point, HIB MoG-1 K = 4 (the paper preset's) and K = 8: hedgekit's rate, the
    plain loop's and the ceiling, and ratios that are their quotients (of the printed, rounded rates); ms/step is
    256 images over hedgekit's rate. Small synthetic data, 1 step, 1 repeat: the format and the arithmetic."""
    from hedgekit import cli
    from hedgekit.cli import main

    monkeypatch.setattr(cli, "load_ndigit", lambda n, split: tiny_ndigit(n, split, 400))
    assert main(["bench", "--device", device, "--steps", "1", "--repeats", "1", "--precision", "float32",
                 "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert f"device {device}" in out and ("GPU " in out) == (device == "cuda")
    rows = _bench_lines(out)
    assert [(kind, k) for kind, k, *_ in rows] == [("point", 1), ("hib", 4), ("hib", 8)]
    for _, _, ms, ours, plain, ceiling, gflops, vs_plain, vs_ceiling, plain_vs_ceiling in rows:
        assert min(ours, plain, ceiling, gflops) > 0
        assert ms == pytest.approx(256e3 / ours, rel=0.01, abs=0.1)
        assert vs_plain == pytest.approx(ours / plain, rel=0.02, abs=0.01)
        assert vs_ceiling == pytest.approx(ours / ceiling, rel=0.02, abs=0.01)
        assert plain_vs_ceiling == pytest.approx(plain / ceiling, rel=0.02, abs=0.01)


def test_compare_warms_up_briefly_then_times_every_repeat_in_full(monkeypatch):
    """The untimed first repeat runs min(steps, WARMUP_STEPS) steps of both loops; each timed repeat runs ``steps``,
    and the rates count only the timed repeats."""
    fit_steps, plain_steps, real_fit, real_plain = [], [], bench.fit, bench.plain_step
    monkeypatch.setattr(bench, "fit", lambda model, x, y, cfg, **kw: fit_steps.append(cfg.steps) or
                        real_fit(model, x, y, cfg, **kw))
    monkeypatch.setattr(bench, "plain_step", lambda *args, **kw: plain_steps.append(args[5]) or real_plain(*args, **kw))
    images, labels = _digits()
    r = bench.compare("point", 1, images, labels, steps=7, repeats=2, classes_per_batch=2, per_class=3)
    assert fit_steps == plain_steps == [bench.WARMUP_STEPS, 7, 7] and len(r.hedgekit_all) == 2
    fit_steps.clear(), plain_steps.clear()
    bench.compare("point", 1, images, labels, steps=2, repeats=1, classes_per_batch=2, per_class=3)
    assert fit_steps == plain_steps == [2, 2]


# Ceilings of `bench --ops`: launches per step at most 1.2x the plain loop's where one exists, else
# about 10% above today's count (point 141, HIB 190, PN 85, SPE 242, triplet 184, semi-hard triplet 187: where a
# step is launch-bound the miners' masked forms, `hedgekit.methods.het_triplet.batch_hard_masked` and
# `semi_hard_masked`, cost a few launches more than selecting did, and wait for nothing), and no host
# synchronisation inside any trainer's step.
OPS_CEILINGS = {"pn": 95, "spe": 265, "triplet": 208, "triplet-semihard": 211}


@pytest.mark.slow
@pytest.mark.parametrize("trainer", bench.OPS_TRAINERS)
def test_a_training_step_launches_few_kernels_and_never_waits_for_the_device(trainer):
    ours, plain = bench.ops_per_step(trainer, n_images=600)
    if plain is not None:
        assert ours.launches <= 1.2 * plain.launches, bench.ops_line(trainer, ours, plain)
    else:
        assert ours.launches <= OPS_CEILINGS[trainer], bench.ops_line(trainer, ours, plain)
    assert ours.syncs == 0, ours.sync_ops


def test_ops_line_is_the_format_scripts_read():
    from hedgekit.opcount import StepCounts

    ours, plain = StepCounts(150, 40, 0, {}, {}), StepCounts(200, 50, 0, {}, {})
    assert bench.ops_line("hib-k4", ours, plain) == \
        "ops hib-k4: hedgekit 150/step, plain 200/step, hedgekit/plain 0.75; host syncs 0"
    ours = StepCounts(176, 89, 1, {}, {"aten.nonzero": 1.0})
    assert bench.ops_line("triplet", ours, None) == \
        "ops triplet: hedgekit 176/step, plain -, hedgekit/plain -; host syncs 1 (aten.nonzero 1)"


def test_ops_per_step_refuses_an_unknown_trainer():
    with pytest.raises(InputError, match="one of"):
        bench.ops_per_step("hib K=4")


@pytest.mark.parametrize("kind, k", [("point", 1), ("hib", 4)])
def test_the_gpu_path_computes_the_cpu_paths_loss_and_gradients_to_float_rounding(kind, k):
    """The launch-bound path's loss (the pair matrix in one block, masked sums instead of selections) and its
    gradients equal the CPU path's on the same batch and samples, to float rounding (summation order differs)."""
    from hedgekit.hardware import as_launch_bound
    from hedgekit.methods import hib_batch_loss

    gen = torch.Generator().manual_seed(3)
    x = torch.rand(32, 1, 28, 56, generator=gen)
    y = torch.arange(32) % 8
    torch.manual_seed(0)
    model = build_model(kind, 2, 2)
    results = []
    for path in (torch.enable_grad, as_launch_bound):
        model.zero_grad()
        with path():
            loss, _ = hib_batch_loss(model(x), y, model.match, k, 1e-4, torch.Generator().manual_seed(1))
            loss.backward()
        results.append((loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}))
    (loss_cpu, g_cpu), (loss_gpu, g_gpu) = results
    torch.testing.assert_close(loss_gpu, loss_cpu, rtol=1e-6, atol=0)
    for name in g_cpu:  # measured: differences up to 6e-6 of a tensor's largest gradient, 3.3e-7 at most
        scale = float(g_cpu[name].abs().max())  # (a point head's bias has gradient ~0: distances ignore shifts)
        torch.testing.assert_close(g_gpu[name], g_cpu[name], rtol=0, atol=max(1e-4 * scale, 1e-6), msg=name)


def test_fused_adam_on_the_gpu_path_takes_the_cpu_paths_steps():
    """`optimise` uses fused Adam where a step is launch-bound and foreach Adam on the CPU: on the same gradients
    they take the same steps, to float rounding."""
    from hedgekit.hardware import as_launch_bound
    from hedgekit.training.fit import TrainConfig, optimise

    target = torch.randn(50, generator=torch.Generator().manual_seed(0))
    weights = []
    for path in (torch.enable_grad, as_launch_bound):
        w = torch.nn.Parameter(torch.zeros(50))
        with path():
            optimise([w], TrainConfig(steps=20, log_every=5), lambda step: (((w - target) ** 2).sum(), {}),
                     lambda stats: {}, "adam", progress=False)
        weights.append(w.detach())
    torch.testing.assert_close(weights[1], weights[0], rtol=1e-6, atol=1e-7)
    assert not torch.equal(weights[0], torch.zeros(50))


def test_per_step_time_is_the_extra_steps_cost():
    """Set-up (here 5 s) occurs in both runs and cancels; a long run 10 steps longer at 0.25 s a step gives 0.25."""
    assert bench._per_step(lambda n: 5.0 + 0.25 * n, 2, 12) == pytest.approx(0.25)
    # a long run timed shorter than the short one (a busy machine's noise) reads 0, never a negative time
    assert bench._per_step(lambda n: 5.0 - 0.25 * n, 2, 3) == 0.0


def test_bench_seeds_prints_both_times_and_their_ratio(capsys, monkeypatch, tiny_ndigit):
    """`bench --seeds S` times S stacked seeds and one seed by `fit`; the line's ratio and seeds per second are their
    quotients (times stood in: 12 ms for 4 seeds, 6 ms for one)."""
    from hedgekit import cli
    from hedgekit.cli import main

    monkeypatch.setattr(cli, "load_ndigit", lambda n, split: tiny_ndigit(n, split, 100))
    monkeypatch.setattr(bench, "seeds_step", lambda s, *args, **kw: 0.006 if s == 1 else 0.003 * s)
    assert main(["bench", "--seeds", "4", "--threads", "1"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("seeds 4 vmapped") and "12.00 ms/step, one seed by fit 6.00 ms/step" in line
    assert "2.00x the time (2.00x the seeds per second)" in line


@pytest.mark.slow
def test_seeds_step_times_stacked_seeds_and_one_fit_on_the_cpu(tiny_ndigit):
    """Both paths run (one seed by `fit`, two stacked by `fit_seeds`) and give a time per step. One step beyond the
    short run is within a loaded machine's noise, so the time may read 0 (`_per_step`; a full test run at load 3.6-3.9
    gave 0.0): the contract checked is a finite time, not below 0."""
    images, labels = tiny_ndigit(2, "train", 400).tensors()
    for n_seeds in (1, 2):
        seconds = bench.seeds_step(n_seeds, images, labels, steps=1, k=2)
        assert np.isfinite(seconds) and seconds >= 0


@pytest.mark.gpu
def test_captured_step_times_the_cuda_graph(tiny_ndigit):
    images, labels = tiny_ndigit(2, "train", 400).tensors()
    assert bench.captured_step("hib", 4, images, labels, steps=2, device="cuda") > 0
