"""Tests of hedgekit.checks: the one image / count / memory / file checker every public entry point uses."""
import numpy as np
import pytest
import torch

from hedgekit import checks
from hedgekit.checks import (array_checksum, atomic_write, check_count, check_images, check_memory,
                             check_training_set, load_checked_npz, save_checked_npz)
from hedgekit.errors import InputError

BAD_COUNTS = [0, -1, -(2**40), 2.5, 8.0, np.float32(3), True, False, None, "8", [8], torch.tensor(8.0)]


def test_good_images_are_float32_in_unit_range():
    x = torch.rand(4, 1, 28, 56, generator=torch.Generator().manual_seed(0))
    as_uint8 = (x * 255).round().to(torch.uint8)
    torch.testing.assert_close(check_images(as_uint8, (1, 28, 56)), as_uint8.float() / 255)  # 0..255 -> [0, 1]
    assert check_images(x.double()).dtype == torch.float32
    assert check_images(x[:, 0], (1, 28, 56)).shape == (4, 1, 28, 56)  # (B, H, W) for one channel
    assert check_images(torch.zeros(1, 3, 2, 2)).shape == (1, 3, 2, 2)  # edges 0 and 1 are inside
    assert check_images(torch.ones(1, 3, 2, 2)).max() == 1
    assert check_images(as_uint8, convert=False) is as_uint8  # validate only: no copy of a data set


def test_every_kind_of_bad_image_batch_is_refused_with_what_was_expected(bad_images):
    for name, _what, x, match in bad_images((1, 28, 56)):
        with pytest.raises(InputError, match=match):
            check_images(x, (1, 28, 56))
        if _what != "shape":
            with pytest.raises(InputError, match=match):  # also without an expected shape
                check_images(x)


def test_training_set_needs_one_label_per_image():
    x = torch.rand(5, 1, 4, 4)
    check_training_set(x, torch.zeros(5))
    with pytest.raises(InputError, match="5 images but 4 labels"):
        check_training_set(x, torch.zeros(4))
    with pytest.raises(InputError, match=r"shape \(N,\)"):
        check_training_set(x, torch.zeros(5, 1))
    with pytest.raises(InputError, match=r"shape \(N,\)"):
        check_training_set(x, 5)


@pytest.mark.parametrize("value", BAD_COUNTS, ids=repr)
def test_bad_counts_are_refused(value):
    with pytest.raises(InputError, match="K must be an integer >= 1; got"):
        check_count(value, "K")


def test_counts_accept_integers_and_enforce_bounds():
    assert check_count(np.int64(3), "K") == 3 and type(check_count(np.int64(3), "K")) is int
    assert check_count(0, "seed", minimum=0) == 0
    with pytest.raises(InputError, match=r"top_k must be at most 10 \(a table of 10\); got 11"):
        check_count(11, "top_k", maximum=10, why=" (a table of 10)")


def test_memory_limit_is_a_quarter_of_ram_and_named_in_the_error(monkeypatch):
    assert checks.memory_budget() >= 2**28  # any machine that runs the tests has > 1 GB
    monkeypatch.setattr(checks, "memory_budget", lambda: 1000)
    check_memory(250, "a tensor", "hint")  # exactly 1000 bytes: fits
    with pytest.raises(InputError, match=r"a tensor would take 1\.01 KB, more than the 1000 B allowed.*; use less"):
        check_memory(251 + 8, "a tensor", "use less")  # 1036 bytes
    monkeypatch.undo()
    with pytest.raises(InputError, match=r"the pair matrix would take 355 PB"):
        check_memory(10**17, "the pair matrix", "lower K")


def test_atomic_write_leaves_the_old_file_and_no_tmp_when_writing_fails(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    with pytest.raises(ZeroDivisionError), atomic_write(target) as tmp:
        tmp.write_bytes(b"half")
        1 / 0
    assert target.read_bytes() == b"old" and sorted(tmp_path.iterdir()) == [target]
    with atomic_write(target) as tmp:
        tmp.write_bytes(b"new")
    assert target.read_bytes() == b"new" and sorted(tmp_path.iterdir()) == [target]


def test_atomic_write_refuses_a_directory(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="it is a directory"), atomic_write(tmp_path / "d"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_checksum_sees_names_dtypes_shapes_and_values():
    a = {"x": np.arange(6, dtype=np.int64), "y": np.zeros(2)}
    ref = array_checksum(a)
    assert array_checksum(dict(a)) == ref
    for changed in ({**a, "x": a["x"].astype(np.int32)}, {**a, "x": a["x"].reshape(2, 3)},
                    {**a, "x": a["x"] + np.eye(1, 6, 5, dtype=np.int64)[0]}, {"z": a["x"], "y": a["y"]}):
        assert array_checksum(changed) != ref


def test_checked_npz_roundtrip_and_tamper_detection(tmp_path):
    path = tmp_path / "c.npz"
    save_checked_npz(path, images=np.arange(12, dtype=np.uint8).reshape(3, 4), labels=np.arange(3))
    got = load_checked_npz(path, ("images", "labels"))
    np.testing.assert_array_equal(got["labels"], np.arange(3))
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    np.savez(path, **{**arrays, "labels": np.array([0, 2, 1])})  # well-formed, checksum kept
    with pytest.raises(InputError, match="do not match their checksum"):
        load_checked_npz(path, ("images", "labels"))
    np.savez(path, images=arrays["images"], labels=arrays["labels"])  # no checksum at all
    with pytest.raises(InputError, match="no checksum"):
        load_checked_npz(path, ("images", "labels"))


@pytest.mark.parametrize("cuda, mps, expected", [(True, True, "cuda"), (False, True, "mps"), (False, False, "cpu"),
                                                 (True, False, "cuda")])
def test_auto_picks_cuda_then_mps_then_cpu(monkeypatch, cuda, mps, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert checks.resolve_device("auto") == checks.resolve_device(None) == torch.device(expected)
    assert checks.resolve_device("cpu") == torch.device("cpu")  # a named device is taken as named


def test_a_device_this_machine_lacks_or_an_unknown_name_is_an_input_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    for device, match in (("cuda", "CUDA is not available on this machine"), ("cuda:0", "CUDA is not available"),
                          ("mps", "MPS is not available"), ("gpu", "'gpu' is not a device; use cpu, cuda"),
                          ("xla", "not supported; use cpu, cuda"), ("", "is not a device")):
        with pytest.raises(InputError, match=match):
            checks.resolve_device(device)
