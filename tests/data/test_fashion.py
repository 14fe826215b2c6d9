"""Tests of hedgekit.data.fashion: the offline Fashion-MNIST loader, its errors and its cache."""
import gzip
import re
import struct

import numpy as np
import pytest
import torch

from hedgekit.checks import save_checked_npz
from hedgekit.data import FashionSet, load_fashion
from hedgekit.data import fashion as fashion_module
from hedgekit.data.fashion import CLASS_NAMES, DEBIAN_COUNTS, DEBIAN_DIR, ENV_VAR
from hedgekit.data.mnist import IDX_FILES
from hedgekit.errors import DataNotFoundError, InputError

TRAIN_IMAGES, TRAIN_LABELS, TEST_IMAGES, TEST_LABELS = IDX_FILES


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """A private cache, no HEDGEKIT_FASHION_DIR, and no Debian copy unless a test sets one."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "cache"))
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(fashion_module, "DEBIAN_DIR", tmp_path / "no-debian-copy")


# ---------------------------------------------------------------- helpers (oracles)


def idx_bytes(array, magic=None):
    """Hand-written IDX: big-endian magic (2051 images / 2049 labels), one uint32 per dim, then the bytes."""
    magic = {3: 2051, 1: 2049}[array.ndim] if magic is None else magic
    return struct.pack(f">I{array.ndim}I", magic, *array.shape) + np.asarray(array, dtype=np.uint8).tobytes()


def write_idx(folder, name, array, gz=False):
    raw = idx_bytes(array)
    path = folder / (name + ".gz" if gz else name)
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


def write_tiny_fashion(folder, gz=False, seed=0, n_train=5, n_test=3):
    """Write the four IDX files of a tiny random Fashion-MNIST; return {split: (images, labels)}."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    data = {}
    for split, n, (images_name, labels_name) in (
        ("train", n_train, (TRAIN_IMAGES, TRAIN_LABELS)),
        ("test", n_test, (TEST_IMAGES, TEST_LABELS)),
    ):
        images, labels = rng.integers(0, 256, (n, 28, 28)), rng.integers(0, 10, n)
        write_idx(folder, images_name, images, gz=gz)
        write_idx(folder, labels_name, labels, gz=gz)
        data[split] = (images, labels)
    return data


def cache_files(tmp_path):
    return sorted((tmp_path / "cache" / "fashion-mnist").glob("*.npz"))


def assert_set_equal(got, images, labels, split):
    assert isinstance(got, FashionSet) and got.split == split and len(got) == len(labels)
    assert got.images.dtype == np.uint8 and got.labels.dtype == np.int64
    np.testing.assert_array_equal(got.images, images)
    np.testing.assert_array_equal(got.labels, labels)


# ---------------------------------------------------------------- loading


@pytest.mark.parametrize("gz", [False, True])
def test_env_folder_roundtrip(tmp_path, monkeypatch, gz):
    data = write_tiny_fashion(tmp_path / "fashion", gz=gz)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "fashion"))
    for split in ("train", "test"):
        got = load_fashion(split)
        assert_set_equal(got, *data[split], split)
        assert got.images.flags.writeable and got.labels.flags.writeable
    x, y = load_fashion("test").tensors()
    assert x.dtype == torch.float32 and x.shape == (3, 1, 28, 28) and y.dtype == torch.int64
    torch.testing.assert_close(x[:, 0] * 255, torch.tensor(data["test"][0], dtype=torch.float32))
    torch.testing.assert_close(y, torch.tensor(data["test"][1]))


def test_root_argument_and_torchvision_layout(tmp_path):
    data = write_tiny_fashion(tmp_path / "FashionMNIST" / "raw", gz=True)
    assert_set_equal(load_fashion("train", root=tmp_path), *data["train"], "train")


def test_env_folder_wins_over_debian_copy(tmp_path, monkeypatch):
    write_tiny_fashion(tmp_path / "debian", seed=1)
    data = write_tiny_fashion(tmp_path / "mine", seed=2)
    monkeypatch.setattr(fashion_module, "DEBIAN_DIR", tmp_path / "debian")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "mine"))
    assert_set_equal(load_fashion("train"), *data["train"], "train")


def test_debian_copy_must_be_complete(tmp_path, monkeypatch):
    """Without HEDGEKIT_FASHION_DIR the Debian folder is read, and it must hold the full 60000 / 10000."""
    write_tiny_fashion(tmp_path / "debian", gz=True)
    monkeypatch.setattr(fashion_module, "DEBIAN_DIR", tmp_path / "debian")
    with pytest.raises(InputError, match="has 3 images, expected 10000.*apt-get install --reinstall"):
        load_fashion("test")


def test_class_names():
    assert CLASS_NAMES == (
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
    )


def test_unknown_split():
    with pytest.raises(InputError, match=re.escape("split must be one of ('train', 'test'), got 'valid'")):
        load_fashion("valid")


# ---------------------------------------------------------------- missing data


def assert_says_how_to_get_it(message):
    assert "apt-get install dataset-fashion-mnist" in message and str(DEBIAN_DIR) in message
    assert ENV_VAR in message and all(name in message for name in IDX_FILES)


def test_missing_everywhere_says_how_to_get_it(tmp_path):
    with pytest.raises(DataNotFoundError, match=f"{ENV_VAR} is not set and Debian's folder .* does not exist") as err:
        load_fashion()
    assert_says_how_to_get_it(str(err.value))


def test_env_folder_that_does_not_exist(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(DataNotFoundError, match=re.escape(f"{tmp_path / 'nowhere'} does not exist")) as err:
        load_fashion()
    assert_says_how_to_get_it(str(err.value))


def test_env_folder_missing_a_file_names_it(tmp_path, monkeypatch):
    write_tiny_fashion(tmp_path)
    (tmp_path / TEST_LABELS).unlink()
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert len(load_fashion("train")) == 5  # the train split does not need the test files
    with pytest.raises(DataNotFoundError, match=f"lacks {TEST_LABELS} \\(Fashion-MNIST test\\)") as err:
        load_fashion("test")
    assert_says_how_to_get_it(str(err.value))


# ---------------------------------------------------------------- corrupt, truncated, mismatched files


@pytest.mark.parametrize(
    "name, damage, match",
    [
        (TRAIN_IMAGES, lambda raw: raw[:-10], "truncated or corrupt"),
        (TRAIN_LABELS, lambda raw: raw + b"\x00", "truncated or corrupt"),
        (TRAIN_IMAGES, lambda raw: raw[:10], "truncated inside its header"),
        (TRAIN_LABELS, lambda raw: b"\x00\x00\x08\x02" + raw[4:], "magic number 2050"),
        (TRAIN_IMAGES, lambda raw: b"", "magic number"),
    ],
)
def test_corrupt_file_raw(tmp_path, monkeypatch, name, damage, match):
    write_tiny_fashion(tmp_path)
    path = tmp_path / name
    path.write_bytes(damage(path.read_bytes()))
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(InputError, match=match):
        load_fashion("train")


def test_truncated_gzip(tmp_path, monkeypatch):
    write_tiny_fashion(tmp_path, gz=True)
    path = tmp_path / (TEST_IMAGES + ".gz")
    path.write_bytes(path.read_bytes()[:-12])  # a cut-off copy
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(InputError, match="not a valid gzip file"):
        load_fashion("test")


@pytest.mark.parametrize(
    "images, labels",
    [
        (np.zeros((5, 28, 28)), np.zeros(4)),  # different counts
        (np.zeros((5, 28, 27)), np.zeros(5)),  # not 28 x 28
        (np.zeros(5), np.zeros((5, 28, 28))),  # images and labels swapped
    ],
)
def test_mismatched_files(tmp_path, monkeypatch, images, labels):
    write_idx(tmp_path, TRAIN_IMAGES, images)
    write_idx(tmp_path, TRAIN_LABELS, labels)
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(InputError, match=re.escape(f"Fashion-MNIST train ({tmp_path}) files do not match")) as err:
        load_fashion("train")
    assert "expected (n, 28, 28) and (n,)" in str(err.value)


def test_labels_out_of_range(tmp_path, monkeypatch):
    write_idx(tmp_path, TRAIN_IMAGES, np.zeros((3, 28, 28)))
    write_idx(tmp_path, TRAIN_LABELS, np.array([0, 10, 9]))
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(InputError, match="labels contain 10, expected labels 0..9"):
        load_fashion("train")


# ---------------------------------------------------------------- cache


def test_cache_is_reused(tmp_path, monkeypatch):
    data = write_tiny_fashion(tmp_path / "fashion")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "fashion"))
    load_fashion("train")
    [cached] = cache_files(tmp_path)
    assert cached.name.startswith("train_")

    def no_parsing(path):
        raise AssertionError(f"parsed {path} although it is cached")

    monkeypatch.setattr(fashion_module, "read_idx", no_parsing)
    assert_set_equal(load_fashion("train"), *data["train"], "train")
    assert cache_files(tmp_path) == [cached]


def test_cache_follows_the_files(tmp_path, monkeypatch):
    """Changed files or another folder with other files never get a stale cache; identical files share one."""
    first = write_tiny_fashion(tmp_path / "a", seed=1)
    other = write_tiny_fashion(tmp_path / "b", seed=2)
    write_tiny_fashion(tmp_path / "a_copy", seed=1)
    assert_set_equal(load_fashion("train", root=tmp_path / "a"), *first["train"], "train")
    assert_set_equal(load_fashion("train", root=tmp_path / "b"), *other["train"], "train")
    assert_set_equal(load_fashion("train", root=tmp_path / "a_copy"), *first["train"], "train")
    assert len(cache_files(tmp_path)) == 2

    changed = np.array(first["train"][1])
    changed[0] = (changed[0] + 1) % 10  # same size, same folder, one label differs
    write_idx(tmp_path / "a", TRAIN_LABELS, changed)
    assert_set_equal(load_fashion("train", root=tmp_path / "a"), first["train"][0], changed, "train")
    assert len(cache_files(tmp_path)) == 3


def _tamper(path):
    """Well-formed edit: one label changed, every array and the stored checksum rewritten as they were."""
    with np.load(path) as f:
        arrays = {k: f[k].copy() for k in f.files}
    arrays["labels"][0] = (arrays["labels"][0] + 1) % 10
    np.savez(path, **arrays)


@pytest.mark.parametrize(
    "corrupt, match",
    [
        (lambda path: path.write_bytes(b"not a zip file"), "rebuilding the unreadable Fashion-MNIST cache"),
        (lambda path: path.write_bytes(path.read_bytes()[:100]), "rebuilding"),
        (lambda path: save_checked_npz(path, images=np.zeros((5, 28, 28), np.uint8)), "labels"),
        (lambda path: save_checked_npz(path, images=np.zeros((5, 28, 28)), labels=np.zeros(5, np.int64)),
         "float64 images"),
        (
            lambda path: save_checked_npz(path, images=np.zeros((5, 28, 28), np.uint8), labels=np.full(5, 12)),
            "the cache labels contain 12",
        ),
        (lambda path: np.savez(path, images=np.zeros((5, 28, 28), np.uint8), labels=np.zeros(5, np.int64)),
         "no checksum"),
        (lambda path: _tamper(path), "do not match their checksum"),
    ],
)
def test_corrupt_cache_is_rebuilt(tmp_path, monkeypatch, corrupt, match):
    data = write_tiny_fashion(tmp_path / "fashion")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "fashion"))
    load_fashion("train")
    [cached] = cache_files(tmp_path)
    corrupt(cached)
    with pytest.warns(UserWarning, match=match):
        assert_set_equal(load_fashion("train"), *data["train"], "train")
    with np.load(cached) as f:  # rewritten
        np.testing.assert_array_equal(f["labels"], data["train"][1])


# ---------------------------------------------------------------- the real data


@pytest.mark.skipif(
    not all((DEBIAN_DIR / (name + ".gz")).is_file() for name in IDX_FILES),
    reason=f"Debian's Fashion-MNIST is not installed ({DEBIAN_DIR}); `apt-get install dataset-fashion-mnist`",
)
def test_real_debian_files(monkeypatch):
    monkeypatch.setattr(fashion_module, "DEBIAN_DIR", DEBIAN_DIR)
    train, test = load_fashion("train"), load_fashion("test")
    for dataset, split in ((train, "train"), (test, "test")):
        n = DEBIAN_COUNTS[split]
        assert dataset.images.shape == (n, 28, 28) and dataset.images.dtype == np.uint8
        assert dataset.labels.shape == (n,) and dataset.labels.dtype == np.int64
        assert np.bincount(dataset.labels).tolist() == [n // 10] * 10
    assert (DEBIAN_COUNTS["train"], DEBIAN_COUNTS["test"]) == (60_000, 10_000)
    # The published first labels (Ankle boot, T-shirt/top, ...): the original order.
    assert train.labels[:10].tolist() == [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]
    assert test.labels[:10].tolist() == [9, 2, 1, 1, 6, 1, 4, 6, 5, 7]
    assert CLASS_NAMES[train.labels[0]] == "Ankle boot"
    cached = load_fashion("test")  # from the cache now
    np.testing.assert_array_equal(cached.images, test.images)
    np.testing.assert_array_equal(cached.labels, test.labels)
