"""Resource limits, clean interrupts, image and box edge cases.

Oracles: the parameter count of a built network (the memory estimate counts the same parameters without
building anything), the refusals happen before anything is allocated or trained (the allocating functions
are replaced by ones that fail the test), every CLI flag against every kind (`cli.kind_flags`, from the method records),
the exit code and the single line of an interrupted command, a URL run interrupted between its two files,
and images built here with PIL whose right reading is known (a rotated JPEG, a GIF with a blank first frame,
blank images of several sizes, an inverted array whose analysis must equal the original's).
"""
from __future__ import annotations

import io
import time
import warnings

import numpy as np
import pytest
import torch

from hedgekit import checks, cli
from hedgekit.errors import InputError
from hedgekit.interactive.inputs import PolarityWarning, check_boxes, decode_upload, image_from_bytes, looks_inverted
from hedgekit.interactive.occlusion import analyse
from hedgekit.nets import embedder
from hedgekit.nets.embedder import MAX_COMPONENTS, MAX_DIM, build_conv_model, build_model, parameter_count


# ---------------------------------------------------------------------------------------------- size limits
@pytest.mark.parametrize("build, kwargs", [
    (build_model, dict(kind="point", dim=2)),
    (build_model, dict(kind="hib", dim=3, components=2, n_digits=3)),
    (build_model, dict(kind="hib", dim=1, components=5, n_digits=1)),
    (build_model, dict(kind="het", dim=7, n_digits=2)),
    (build_conv_model, dict(kind="hib", dim=2, in_channels=1, height=28, width=28, blocks=3, channels=8)),
    (build_conv_model, dict(kind="point", dim=4, channels=4)),
    (build_conv_model, dict(kind="het", dim=3, in_channels=3, height=20, width=36, blocks=2, channels=5)),
])
def test_parameter_count_is_the_built_networks(build, kwargs):
    model = build(**kwargs)
    assert parameter_count(model.config) == sum(p.numel() for p in model.parameters())


def test_memory_estimate_refuses_before_allocating(monkeypatch):
    """The network's training memory (4 float32 copies of every parameter) is checked before any layer exists."""
    n = parameter_count(build_model("hib", dim=2, components=2).config)

    def no_allocation(*args, **kwargs):
        raise AssertionError("a layer was built before the size check")

    monkeypatch.setattr(checks, "memory_budget", lambda: embedder.TRAINING_COPIES * 4 * n)  # exactly fits
    build_model("hib", dim=2, components=2)
    monkeypatch.setattr(checks, "memory_budget", lambda: embedder.TRAINING_COPIES * 4 * n - 1)
    monkeypatch.setattr(embedder, "LeNetBody", no_allocation)
    monkeypatch.setattr(embedder, "ConvBody", no_allocation)
    with pytest.raises(InputError, match=f"{n:,} parameters.*use a smaller D, C or input"):
        build_model("hib", dim=2, components=2)
    monkeypatch.undo()
    monkeypatch.setattr(embedder, "LeNetBody", no_allocation)
    monkeypatch.setattr(embedder, "ConvBody", no_allocation)
    t0 = time.perf_counter()
    for kwargs, said in ((dict(dim=10_000_000), "dim must be at most 4096"),
                         (dict(components=1_000_000), "components must be at most 64"),
                         (dict(kind="point", components=3), "exactly one component"),
                         (dict(width=10_000_000), "would take .* GB"),
                         (dict(dim=True), "dim must be an integer"), (dict(kind="mog"), "kind must be one of")):
        with pytest.raises(InputError, match=said):
            build_model(**kwargs)
    with pytest.raises(InputError, match="channels must be an integer"):
        build_conv_model(channels=0)
    with pytest.raises(InputError, match="would take"):
        build_conv_model(channels=100_000)
    assert time.perf_counter() - t0 < 2.0  # nothing big was allocated (a loaded machine: generous)
    assert build_model.__module__ == embedder.__name__ and MAX_DIM == 4096 and MAX_COMPONENTS == 64


def test_spec_bounds_and_seeds():
    from hedgekit.zoo import Spec

    assert Spec(seed=checks.MAX_SEED).seed == 2**63 - 1
    assert Spec(seed=np.int64(3)).name == Spec(seed=3).name
    for kwargs, said in ((dict(seed=2**63), "Spec.seed must be at most 9223372036854775807"),
                         (dict(seed=-1), "Spec.seed must be an integer >= 0"),
                         (dict(seed=10**23), "signed 64-bit"),
                         (dict(components=1_000_000), "Spec.components must be at most 64"),
                         (dict(dim=10_000_000), "Spec.dim must be at most 4096"),
                         (dict(n_digits=7), "Spec.n_digits must be at most 6"),
                         (dict(steps=10**8), "Spec.steps must be at most 10000000"),
                         (dict(kind="point", components=3), "one component")):
        with pytest.raises(InputError, match=said):
            Spec(**kwargs)
    with pytest.raises(InputError, match="seed must be at most"):
        checks.check_seed(2**64)


@pytest.fixture
def no_training(monkeypatch):
    """`load_or_train` replaced where the command line calls it: records the specs asked for, trains nothing."""
    asked = []
    monkeypatch.setattr(cli, "load_or_train", lambda spec, **kw: asked.append(spec) or (
        None, {"source": "cache", "train_seconds": 0.0, "path": "x.pt", "metrics": {}}))
    return asked


@pytest.mark.parametrize("argv, said", [
    (["train", "--components", "1000000"], "argument --components/-c: expected an integer >= 1 and <= 64"),
    (["train", "--dim", "10000000"], "argument --dim/-d: expected an integer >= 1 and <= 4096"),
    (["train", "--seed", "99999999999999999999999"],
     "argument --seed: expected an integer >= 0 and <= 9223372036854775807"),
    (["train", "--steps", "100000000"], "argument --steps: expected an integer >= 1 and <= 10000000"),
    (["train", "--n-digits", "7"], "argument --n-digits/-n: expected an integer >= 1 and <= 6"),
    (["evaluate", "--eval-seed", str(2**63)], "argument --eval-seed"),
    (["bench", "--threads", "100000"], "argument --threads"),
    (["url-benchmark", "--seeds", "1000000"], "--seeds must be in 1..1000"),
])
def test_cli_size_limits_are_usage_errors(no_training, capsys, argv, said):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2 and not no_training  # refused while parsing: nothing loaded, built or trained
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "--help` lists the options" in err  # one line, no usage block


# A valid value for every option of `train` (None: a switch); every option the parser has must be here.
SAMPLE = {"--kind": None, "--data": None, "--n-digits": "3", "--dim": "3", "--components": "2", "--beta": "0.01",
          "--preset": "fast", "--seed": "5", "--steps": "10", "--init-var": "eps", "--device": "cpu",
          "--retrain": None, "--precision": "bfloat16", "--samples": "3", "--recipe": "main", "--sampler": "naive",
          "--loss": "hard", "--margin": "1"}
DATA = {"point": "ndigit", "hib": "ndigit", "pn": "lshapes", "spe": "lshapes", "triplet": "ndigit", "het": "ndigit"}
FIELD = {"--data": ("data", "lshapes"), "--n-digits": ("n_digits", 3), "--dim": ("dim", 3),
         "--components": ("components", 2), "--beta": ("beta", 0.01), "--preset": ("preset", "fast"),
         "--seed": ("seed", 5), "--steps": ("steps", 10), "--init-var": ("init_var", "eps"),
         "--samples": ("samples", 3),
         "--recipe": ("recipe", "main"), "--sampler": ("sampler", "naive"), "--loss": ("loss", "hard"),
         "--margin": ("margin", 1.0)}


def _train_options() -> set[str]:
    import argparse

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {a.option_strings[0] for a in sub.choices["train"]._actions if a.option_strings and a.dest != "help"}


def test_the_flag_table_covers_every_flag_and_kind():
    from hedgekit.zoo import METHODS

    assert _train_options() == set(SAMPLE) == set().union(*map(cli.kind_flags, METHODS))
    assert set(DATA) == set(METHODS)


@pytest.mark.parametrize("kind", list(DATA))
@pytest.mark.parametrize("flag", [f for f in SAMPLE if f != "--kind"])
def test_every_flag_against_every_kind(no_training, capsys, kind, flag):
    """A flag is accepted (and reaches the Spec) exactly when `kind_flags` says it applies to the kind."""
    value = DATA[kind] if flag == "--data" else SAMPLE[flag]
    argv = ["train", "--kind", kind, flag] + ([value] if value is not None else [])
    rc = cli.main(argv)
    err = capsys.readouterr().err
    if flag in cli.kind_flags(kind):
        assert rc == 0, err
        spec = no_training[-1]
        if flag in FIELD and flag != "--data":
            field, want = FIELD[flag]
            assert getattr(spec, field) == want
        if flag == "--data":
            assert spec.data == DATA[kind]
    else:
        assert rc == 2 and not no_training
        assert f"{flag} does not apply to {kind} models" in err and "leave it out" in err
        assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("kind, data", [("pn", "lshapes"), ("spe", "lshapes"), ("triplet", "fashion"),
                                        ("het", "fashion")])
def test_n_digits_applies_to_n_digit_mnist_only(no_training, capsys, kind, data):
    assert cli.main(["train", "--kind", kind, "--data", data, "-n", "3"]) == 2
    assert f"--n-digits does not apply to {kind} models on {data}" in capsys.readouterr().err
    assert cli.main(["train", "--kind", kind, "--data", "ndigit", "-n", "3"]) == 0
    assert no_training[-1].n_digits == 3


def test_the_issue_reproductions_of_flags(no_training, capsys):
    assert cli.main(["train", "--kind", "point", "--components", "3"]) == 2
    assert "--components does not apply to point models" in capsys.readouterr().err
    assert cli.main(["train", "--kind", "spe", "--beta", "0.1", "--components", "2"]) == 2
    assert "--beta, --components do not apply to spe models" in capsys.readouterr().err
    assert cli.main(["train", "--kind", "hib", "--init-var", "unit"]) == 2
    assert not no_training
    assert cli.main(["train", "--kind", "hib", "-c", "2", "--beta", "0"]) == 0  # the flags of the kind: a spec
    assert no_training[-1].name == "hib-n2-d2-c2-beta0-paper-s0"


# ---------------------------------------------------------------------------------------------- interrupts
def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def test_ctrl_c_while_python_m_hedgekit_starts_up_is_one_line_and_exit_130(monkeypatch, capsys):
    """Ctrl-C during `python -m hedgekit`'s imports (torch takes seconds): one line, exit 130, no traceback."""
    import runpy
    import sys

    class Interrupting:  # a meta-path finder that interrupts the import of the command line
        def find_spec(self, name, path=None, target=None):
            if name == "hedgekit.cli":
                raise KeyboardInterrupt
            return None

    monkeypatch.delitem(sys.modules, "hedgekit.cli", raising=False)
    monkeypatch.delitem(sys.modules, "hedgekit.__main__", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Interrupting(), *sys.meta_path])
    try:
        runpy.run_module("hedgekit", run_name="__main__")
    except KeyboardInterrupt:
        pytest.fail("the KeyboardInterrupt escaped as a traceback")
    except SystemExit as stop:
        assert stop.code == 130
    else:
        pytest.fail("python -m hedgekit did not exit")
    err = capsys.readouterr().err
    assert err.strip() == "interrupted while starting up; nothing was run or written" and "Traceback" not in err


@pytest.mark.parametrize("argv, where", [
    (["train", "--kind", "point", "--preset", "fast"], (cli, "cmd_train")),
    (["evaluate", "--kind", "hib"], (cli, "cmd_evaluate")),
    (["table1"], (cli, "cmd_table1")),
    (["bench", "--steps", "3"], (cli, "cmd_bench")),
    (["reproduce", "--fast"], ("hedgekit.repro.reproduce", "_cmd")),
    (["url-benchmark", "--fast", "--methods", "ce"], ("hedgekit.papers.url.benchmark", "cmd_url_benchmark")),
])
def test_ctrl_c_in_any_command_is_one_line_and_exit_130(monkeypatch, capsys, argv, where):
    import importlib

    module = importlib.import_module(where[0]) if isinstance(where[0], str) else where[0]
    monkeypatch.setattr(module, where[1], _interrupt)
    assert cli.main(argv) == 130
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in captured.err and not captured.out
    assert lines[0].startswith("interrupted: ") and f"`python -m hedgekit {' '.join(argv)}` again to " in lines[0]
    assert {"train": "not saved", "url-benchmark": "every finished run is cached", "table1": "nothing was written",
            "reproduce": "notebooks that finished"}.get(argv[0], "") in lines[0]
    assert "resume" in lines[0] if argv[0] == "url-benchmark" else "from the start" in lines[0] if argv[0] == "train" \
        else True


def test_interrupted_training_leaves_no_partial_checkpoint(monkeypatch, tmp_path, capsys):
    """Ctrl-C while the checkpoint is being written: exit 130 and no file (complete or partial) in the cache."""
    import hedgekit.zoo as zoo
    from hedgekit.zoo import store

    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    spec = zoo.Spec(kind="point", preset="fast")
    monkeypatch.setattr(store, "find_checkpoint", lambda spec: None)
    monkeypatch.setattr(store, "train_spec", lambda spec, **kw: (spec.build(), {"name": spec.name, "metrics": {}}))

    def half_written(obj, f, *args, **kwargs):
        if hasattr(f, "write"):
            f.write(b"PK\x03\x04 half")
        else:
            with open(f, "wb") as out:
                out.write(b"PK\x03\x04 half")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", half_written)
    assert cli.main(["train", "--kind", "point", "--preset", "fast"]) == 130
    assert "not saved" in capsys.readouterr().err
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    assert spec.name.startswith("point-n2-d2")


# ---------------------------------------------------------------------------------------------- images
def _digits() -> np.ndarray:
    """A 28 x 56 white-on-black image with two bars, not symmetric under any flip or rotation."""
    img = np.zeros((28, 56), np.uint8)
    img[4:24, 8:12] = 255
    img[4:8, 8:20] = 255
    img[6:22, 36:40] = 200
    return img


def _save(frames, fmt: str, **kw) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    ims = [Image.fromarray(f) for f in frames]
    ims[0].save(buf, format=fmt, **({"save_all": True, "append_images": ims[1:]} if len(ims) > 1 else {}), **kw)
    return buf.getvalue()


def _jpeg_with_orientation(stored: np.ndarray, orientation: int) -> bytes:
    from PIL import Image

    exif = Image.Exif()
    exif[0x0112] = orientation
    buf = io.BytesIO()
    Image.fromarray(stored).save(buf, format="JPEG", quality=100, exif=exif.tobytes())
    return buf.getvalue()


def test_exif_orientation_comes_before_the_size_check():
    """A JPEG stored 28 wide x 56 high with orientation 6 (turn 90 degrees clockwise) is shown 56 x 28: accepted,
    and read the way it is shown; stored 56 x 28 with the same tag it is shown 28 x 56: refused as such."""
    shown = 255 - _digits()  # dark on white, as a photo of paper
    stored = np.rot90(shown, 1).copy()  # 90 degrees counter-clockwise: the tag turns it back
    got = image_from_bytes(_jpeg_with_orientation(stored, 6))
    assert got.shape == (28, 56)
    assert np.abs(got.astype(int) - _digits()).mean() < 4  # JPEG noise only; a wrong turn differs by ~50
    with pytest.raises(InputError, match="the image is 28 x 56 pixels"):
        image_from_bytes(_jpeg_with_orientation(shown, 6))


def test_an_animated_gif_uses_its_first_frame_that_is_not_blank():
    blank = np.zeros((28, 56), np.uint8)  # (two equal frames in a row would be merged into one by the GIF writer)
    up = decode_upload(_save([blank, blank + 10, _digits(), blank], "GIF", duration=100))
    np.testing.assert_array_equal(up.image, np.where(_digits() > 0, _digits(), 0))
    assert any("of 4 frames (an animated GIF, ...): frame 3 is used (the first 2 are blank)" in n for n in up.notes)
    up = decode_upload(_save([_digits(), blank], "GIF", duration=100))
    assert any("of 2 frames (an animated GIF, ...): frame 1 is used" in n for n in up.notes)
    with pytest.raises(InputError, match=r"blank \(all 3 frames\)"):
        image_from_bytes(_save([blank, blank + 255, blank], "GIF", duration=100))
    assert decode_upload(_save([_digits()], "PNG")).notes == ()  # one frame, white on black: nothing to say


@pytest.mark.parametrize("size", [(28, 56), (30, 60), (56, 112), (280, 560)])
@pytest.mark.parametrize("level", [0, 255, 128])
@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_blank_images_are_refused_whatever_their_size(size, level, fmt):
    data = _save([np.full(size, level, np.uint8)], fmt)
    with pytest.raises(InputError, match="the image is blank"):
        image_from_bytes(data)


def test_a_faint_digit_is_not_blank_and_a_light_background_is_inverted_with_a_note():
    faint = np.where(_digits() > 0, 60, 20).astype(np.uint8)  # 40 gray levels of contrast
    assert image_from_bytes(_save([faint], "PNG")).max() == 60
    up = decode_upload(_save([255 - _digits()], "PNG"))
    np.testing.assert_array_equal(up.image, _digits())
    assert len(up.notes) == 1 and up.notes[0].startswith("inverted")
    assert decode_upload(_save([255 - _digits()], "PNG"), invert=False).image.max() == 255


def test_an_inverted_array_is_analysed_like_the_original(untrained):
    """The array path checks polarity too: black digits on white are inverted (a note and a PolarityWarning),
    so the analysis equals that of the white-on-black image; ``invert=False`` takes the array as given."""
    model = untrained()
    img = _digits()
    box = [[0, 0, 10, 10]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ref = analyse(model, img, box)
    assert ref.note == ""
    with pytest.warns(PolarityWarning, match="inverted"):
        inv = analyse(model, 255 - img, box)
    assert inv.note.startswith("inverted")
    np.testing.assert_array_equal(inv.image, ref.image)  # inverted first, then the box blacked out
    assert inv.eta == ref.eta
    np.testing.assert_array_equal(inv.means, ref.means)
    with pytest.warns(PolarityWarning):  # float pixels in [0, 1] too
        assert analyse(model, 1.0 - img / 255.0, box).eta == pytest.approx(ref.eta, abs=1e-6)
    given = analyse(model, 255 - img, box, invert=False)
    assert given.note == "" and given.image.max() == 255 and given.image[0, 0] == 0  # the box, on white


def test_mnist_test_images_never_look_inverted(tiny_ndigit):
    ds = tiny_ndigit(2, "test_seen", 200)
    assert not any(looks_inverted(im) for im in ds.images)
    assert all(looks_inverted(255 - im) for im in ds.images)


# ---------------------------------------------------------------------------------------------- episodes, boxes
def _embedded(labels) -> "EmbeddedSet":
    from hedgekit.embedding import Embedding
    from hedgekit.evaluation.embedded import EmbeddedSet

    labels = np.asarray(labels)
    return EmbeddedSet(Embedding.point(torch.randn(len(labels), 2, generator=torch.Generator().manual_seed(0))),
                       None, labels)


def test_degenerate_episodes_are_refused():
    from hedgekit.evaluation.episodes import evaluate_episodes

    data = _embedded(np.repeat([3, 7, 9], 6))
    mean, _, _ = evaluate_episodes(None, None, data, n_episodes=3, n_classes=2, k_support=2, query_per_class=2)
    assert 0 <= mean <= 1
    for kwargs, said in ((dict(n_classes=1), "at least 2 classes.*accuracy 1.0"),
                         (dict(n_classes=0), "n_classes must be an integer >= 1"),
                         (dict(n_classes=True), "n_classes must be an integer"),
                         (dict(query_per_class=0), "query_per_class must be an integer >= 1"),
                         (dict(k_support=0), "k_support must be an integer >= 1")):
        with pytest.raises(InputError, match=said):
            evaluate_episodes(None, None, data, **{"n_episodes": 3, "k_support": 2, "query_per_class": 2, **kwargs})
    with pytest.raises(InputError, match=r"at least 2 classes to classify between; got the data set's classes .* = 1,"):
        evaluate_episodes(None, None, _embedded(np.full(10, 4)), n_episodes=3, k_support=2, query_per_class=2)


@pytest.mark.parametrize("boxes, said", [
    ([True] * 4, "not True / False"),
    ([[True, 0, 3, 3]], "not True / False"),
    (np.ones((1, 4), bool), "not True / False"),
    (torch.ones(4, dtype=torch.bool), "not True / False"),
    ([0, 0, -5, -5], "negative height or width"),
    ([[2, 2, 3, -1]], "negative height or width"),
    ([[np.nan, 0, 3, 3]], "whole pixel numbers"),
    ([[0, 0, 3, np.inf]], "whole pixel numbers"),
    ([[0, 50, 3, 10]], "reaches outside the 28 x 56 image"),
    ([[0, 0, 0, 4]], "zero area"),
])
def test_bad_boxes_get_clear_errors(boxes, said):
    with pytest.raises(InputError, match=said):
        check_boxes(boxes)


def test_bool_boxes_are_refused_by_the_occlusion_functions_too():
    from hedgekit.data import clip_box, occlude

    with pytest.raises(InputError, match="not True / False"):
        clip_box([True] * 4, (28, 56))
    with pytest.raises(InputError, match="not True / False"):
        occlude(np.zeros((28, 56), np.uint8), [[True, 0, 3, 3]])
    np.testing.assert_array_equal(clip_box([5, 5, -3, -3], (28, 56)), [2, 2, 3, 3])  # a drag up-left: ordered


# ---------------------------------------------------------------------------------------------- batch sizes
@pytest.mark.parametrize("make,over,at,formula", [
    ("hedgekit.training.fit:TrainConfig", dict(classes_per_batch=128, per_class=129),  # the hard loss, since the
     dict(classes_per_batch=128, per_class=128, loss="hard"), "classes_per_batch x per_class"),  # soft one's all
    # (BK)^2 sample pairs at 16,384 images are refused for memory first (methods.hib.check_pair_memory)
    ("hedgekit.training.fit:TrainConfig", dict(pairs_per_batch=8193), dict(pairs_per_batch=8192), "2 x pairs_per_batch"),
    ("hedgekit.training.episodic:EpisodicConfig", dict(n_classes=1024, k_support=8, query_per_class=9),
     dict(n_classes=1024, k_support=8, query_per_class=8), r"n_classes x \(k_support \+ query_per_class\)"),
    ("hedgekit.training.triplets:TripletConfig", dict(P=4097, K=4), dict(P=4096, K=4), "P x K"),
    ("hedgekit.training.upstream:UpstreamConfig", dict(classes_per_batch=64, per_class=257),
     dict(classes_per_batch=64, per_class=256), "classes_per_batch x per_class"),
])
def test_every_trainer_refuses_a_batch_beyond_the_bound_and_takes_one_at_it(make, over, at, formula):
    """One step of every trainer is bounded by checks.MAX_BATCH_IMAGES (16,384) images; the error names the fields."""
    import importlib

    module, name = make.split(":")
    config = getattr(importlib.import_module(module), name)
    with pytest.raises(InputError, match=rf"{formula} = [\d,]+ images per step, more than the 16,384 allowed"):
        config(**over)
    config(**at)  # exactly 16,384 images per step: accepted
