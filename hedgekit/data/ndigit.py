"""N-digit MNIST with random occlusion (HIB paper, Oh et al. 2019, Appendix A, Table 3).

An image is N MNIST digits side by side (28 x 28N pixels); its class is the integer
the digits spell, leading zeros included: digits (0, 4) are class 4, (4, 7) class 47
(the convention of github.com/google/n-digit-mnist). 70% of the 10^N classes are
*seen* (training and "test seen"), the rest *unseen* ("test unseen", zero-shot).
Training digits come only from MNIST-train and test digits only from MNIST-test, so
no digit image is shared between training and test.

| split       | images  | classes                                | occlusion            |
|-------------|---------|----------------------------------------|----------------------|
| train       | 100,000 | all seen (N=2: 70, N=3: 700)           | each digit w.p. 0.2  |
| test_seen   | 10,000  | seen, at most 100 (N=3: 100 of 700)    | clean + corrupt twin |
| test_unseen | 10,000  | unseen, at most 100 (N=3: 100 of 300)  | clean + corrupt twin |

The cap of 100 test classes is google/n-digit-mnist's rule of at least 100 test images
per class (10,000 / 100). Class counts are balanced (they differ by at most one).
google/n-digit-mnist's "number" split (the one HIB and SPE used) follows the same rules:
a uniformly random 70% of the 10^N numbers are the training and test-seen classes, the
rest test-unseen, each test split keeps a random subset of its classes with at least
100 images each, and digits come from MNIST-train or MNIST-test. Its exact numbers are
stored only in binary `.npz` files of that repository, so `class_split` draws its own.

How digit images are drawn (``digit_draw``, `DIGIT_DRAWS`):

* "with_replacement" (the default): every digit of every image is an independent uniform
  draw from the MNIST images of that digit value. The cached datasets and the shipped
  checkpoints were made this way.
* "unique_per_class": google/n-digit-mnist's generator draws, for each class and digit
  position, that class's images without replacement, so no MNIST image repeats at one
  position within a class; different classes and positions share images. Neither HIB
  (App. A: "we respect the training and test splits") nor SPE (App. A.3, Sec. 4.3: "the
  same train and test data splits as Oh et al.") states a rule in the text.

Using every MNIST image at most once per split is impossible at Table 3's sizes
(100,000 x N digit slots from 60,000 MNIST-train images, 10,000 x N from 10,000
MNIST-test images), so it is not offered.

Each split is deterministic in (n_digits, split, seed, digit_draw, occlusion_sides) and the
MNIST it is drawn from, and cached as `.npz` under `cache_path('ndigit')`. The cache records
that MNIST (`hedgekit.data.provenance.Source`: fingerprint and origin) and is not reused for
another one (rebuilt, with a warning that says why). A cache written before sources were
recorded is reused only with the real MNIST and only if its digits look like MNIST
(`hedgekit.data.provenance.check_looks_like`); it then gets its source recorded (once).
"""
from __future__ import annotations

import json
import warnings
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from hedgekit.checks import load_checked_npz, save_checked_npz
from hedgekit.data.mnist import load_mnist, mnist_source
from hedgekit.data.occlusion import DIGIT_SIZE, SIDES, occlude, sample_digit_boxes
from hedgekit.data.provenance import Source, check_looks_like, matches
from hedgekit.errors import InputError, StorageError
from hedgekit.paths import cache_path

SPLITS = ("train", "test_seen", "test_unseen")
SEEN_FRACTION = 0.7  # Table 3: 70 of 100 (N=2), 700 of 1000 (N=3) classes are seen
N_IMAGES = {"train": 100_000, "test_seen": 10_000, "test_unseen": 10_000}
MAX_TEST_CLASSES = 100  # Appendix A: N=3 tests use 100 seen and 100 unseen classes
P_OCCLUDE = {"train": 0.2, "test_seen": 1.0, "test_unseen": 1.0}  # test: corrupt twin
MAX_DIGITS = 6  # 10^6 classes; beyond that class_split alone would need gigabytes
DIGIT_DRAWS = ("with_replacement", "unique_per_class")  # the first is the default; module docstring
# Independent random streams per purpose, so that e.g. the test splits do not
# change when the training split's recipe does.
_STREAMS = {"classes": 0, "train": 1, "test_seen": 2, "test_unseen": 3}


@dataclass(frozen=True, eq=False)
class NDigitSet:
    """One split of N-digit MNIST.

    images: uint8 (M, 28, 28N), clean (no occlusion) in every split.
    corrupt: uint8 (M, 28, 28N), the occluded twin: `images` with `boxes` applied.
        Test splits occlude every digit (App. A's corrupt test set); "train"
        occludes each digit with probability 0.2 (App. A's training images).
        Identical to `images` outside `boxes`. None only for user-built sets.
    labels: int64 (M,) the integer the digits spell.
    digits: int64 (M, N) digit values, left to right.
    boxes: int64 (M, N, 4) occlusion boxes (top, left, height, width) in image
        coordinates, applied to `corrupt` (zero-area where a digit is not occluded).
    """

    images: np.ndarray
    corrupt: np.ndarray | None
    labels: np.ndarray
    digits: np.ndarray
    boxes: np.ndarray
    n_digits: int
    split: str

    def __post_init__(self):
        m, n = len(self.labels), self.n_digits
        expected = {
            "images": (self.images, np.uint8, (m, DIGIT_SIZE, DIGIT_SIZE * n)),
            "labels": (self.labels, np.int64, (m,)),
            "digits": (self.digits, np.int64, (m, n)),
            "boxes": (self.boxes, np.int64, (m, n, 4)),
        }
        if self.corrupt is not None:
            expected["corrupt"] = (self.corrupt, np.uint8, (m, DIGIT_SIZE, DIGIT_SIZE * n))
        for name, (array, dtype, shape) in expected.items():
            if array.dtype != dtype or array.shape != shape:
                raise InputError(
                    f"NDigitSet.{name} must be {np.dtype(dtype)} {shape}, got {array.dtype} {array.shape}."
                )
        if not np.array_equal(self.labels, spelled_number(self.digits)):
            raise InputError("NDigitSet.labels do not equal the numbers spelled by NDigitSet.digits.")

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, indices) -> "NDigitSet":
        """The images at `indices` (integers in -M..M-1, a slice or a boolean mask of M), as a new set.

        InputError for an index out of range, a non-integer index or a mask of another length.
        """
        try:
            idx = np.atleast_1d(np.arange(len(self))[indices])
        except IndexError as err:
            raise InputError(f"NDigitSet.subset takes integer indices in -{len(self)}..{len(self) - 1}, a slice or "
                             f"a boolean mask of {len(self)}; got {_describe(indices)} ({err})") from err
        return NDigitSet(
            images=self.images[idx],
            corrupt=None if self.corrupt is None else self.corrupt[idx],
            labels=self.labels[idx],
            digits=self.digits[idx],
            boxes=self.boxes[idx],
            n_digits=self.n_digits,
            split=self.split,
        )

    def tensors(self, corrupt: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """(x, y): x float32 (M, 1, 28, 28N) in [0, 1], y int64 (M,) labels."""
        images = self.corrupt if corrupt else self.images
        if images is None:
            raise InputError(f"this {self.split!r} set has no corrupt twin; build it with load_ndigit.")
        x = torch.from_numpy(images).unsqueeze(1).float().div_(255.0)
        return x, torch.tensor(self.labels)


def spelled_number(digits: np.ndarray) -> np.ndarray:
    """The integers spelled by rows of digits: (4, 7) -> 47, (0, 4) -> 4."""
    digits = np.asarray(digits, dtype=np.int64)
    return digits @ 10 ** np.arange(digits.shape[-1] - 1, -1, -1, dtype=np.int64)


def class_split(n_digits: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(seen, unseen) sorted int64 arrays partitioning the 10^N classes 70% / 30%.

    N=2: 70 / 30 of 100; N=3: 700 / 300 of 1000 (Table 3). Deterministic for the seed.
    """
    _check_args(n_digits, seed)
    n_classes = 10**n_digits
    order = _rng(seed, n_digits, "classes").permutation(n_classes)
    n_seen = round(SEEN_FRACTION * n_classes)
    return np.sort(order[:n_seen]), np.sort(order[n_seen:])


def load_ndigit(
    n_digits: int,
    split: str,
    seed: int = 0,
    mnist_root=None,
    *,
    digit_draw: str = "with_replacement",
    occlusion_sides: str = "inclusive",
) -> NDigitSet:
    """Load (from the cache) or build one split of N-digit MNIST; see the module docstring.

    split: "train", "test_seen" or "test_unseen". `mnist_root` is passed to
    `load_mnist` when the split has to be built. ``digit_draw``: "with_replacement"
    (default) or "unique_per_class" (google/n-digit-mnist's rule; InputError when a class
    needs more images of a digit than its MNIST split holds, e.g. for N = 1).
    ``occlusion_sides``: the box sides of `hedgekit.data.occlusion.sample_digit_boxes`,
    "inclusive" (default, the papers') or "positive" (every occluded digit loses pixels).
    The cache file is `cache_path('ndigit', f'n{N}_{split}_s{seed}.npz')` for the
    defaults and the real MNIST; each non-default option adds its name and value to the
    file name (e.g. ``n2_train_s0_draw-unique_per_class.npz``), another MNIST its
    fingerprint (``n2_train_s0_mnist-<fingerprint>.npz``), so no option or MNIST reads or
    overwrites another's file. The file holds a checksum of its arrays and the MNIST it
    was drawn from (`hedgekit.checks.save_checked_npz`, module docstring); an unreadable,
    inconsistent or edited cache file, or one drawn from another MNIST, is rebuilt with a
    warning.
    """
    _check_args(n_digits, seed)
    if split not in SPLITS:
        raise InputError(f"split must be one of {SPLITS}, got {split!r}.")
    if not isinstance(digit_draw, str) or digit_draw not in DIGIT_DRAWS:
        raise InputError(f"digit_draw must be one of {DIGIT_DRAWS}, got {digit_draw!r}.")
    if not isinstance(occlusion_sides, str) or occlusion_sides not in SIDES:
        raise InputError(f"occlusion_sides must be one of {SIDES}, got {occlusion_sides!r}.")
    source = mnist_source(mnist_root)
    path = cache_path("ndigit", _cache_name(n_digits, split, seed, digit_draw, occlusion_sides, source))
    if path.is_file():
        try:
            dataset, recorded = _read_cache(path, n_digits, split, source)
            if not recorded:
                _write_cache(path, dataset, source, quiet=True)  # the one-time migration: record its source
            return dataset
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as err:
            warnings.warn(f"rebuilding the N-digit MNIST cache {path}: {err}", stacklevel=2)
    dataset = _build(n_digits, split, seed, mnist_root, digit_draw, occlusion_sides)
    _write_cache(path, dataset, source)
    return dataset


def _cache_name(n_digits: int, split: str, seed: int, digit_draw: str, occlusion_sides: str,
                source: Source) -> str:
    """The defaults keep the name the caches had before the options existed; other values are appended."""
    options = [f"draw-{digit_draw}"] if digit_draw != DIGIT_DRAWS[0] else []
    options += [f"sides-{occlusion_sides}"] if occlusion_sides != SIDES[0] else []
    options += [] if source.real else [f"mnist-{source.fingerprint}"]
    return "_".join([f"n{n_digits}", split, f"s{seed}", *options]) + ".npz"


def _build(n_digits: int, split: str, seed: int, mnist_root, digit_draw: str, occlusion_sides: str) -> NDigitSet:
    mnist = load_mnist(mnist_root)
    rng = _rng(seed, n_digits, split)
    seen, unseen = class_split(n_digits, seed)
    classes = unseen if split == "test_unseen" else seen
    if split == "train":
        source_images, source_labels = mnist.train_images, mnist.train_labels
    else:
        source_images, source_labels = mnist.test_images, mnist.test_labels
        if len(classes) > MAX_TEST_CLASSES:
            classes = np.sort(rng.choice(classes, MAX_TEST_CLASSES, replace=False))

    n_images = N_IMAGES[split]
    # Balanced: every class appears n_images // K times, a random n_images % K of them once more.
    labels = rng.permutation(rng.permutation(classes)[np.arange(n_images) % len(classes)])
    digits = labels[:, None] // 10 ** np.arange(n_digits - 1, -1, -1) % 10
    clean = _compose(rng, digits, source_images, source_labels, digit_draw)
    boxes = sample_digit_boxes(rng, n_images, n_digits, P_OCCLUDE[split], occlusion_sides)
    return NDigitSet(clean, occlude(clean, boxes), labels, digits, boxes, n_digits, split)


def _compose(
    rng: np.random.Generator, digits: np.ndarray, images: np.ndarray, labels: np.ndarray, digit_draw: str
) -> np.ndarray:
    """Concatenate, for each digit value, a random MNIST image of that value (drawn as ``digit_draw`` says)."""
    counts = np.bincount(labels, minlength=10)
    if (counts == 0).any():
        raise InputError(f"MNIST has no images of digit(s) {np.flatnonzero(counts == 0).tolist()}.")
    by_digit = np.argsort(labels, kind="stable")  # indices of 0s, then 1s, ...
    starts = np.cumsum(counts) - counts
    if digit_draw == "with_replacement":
        ranks = rng.integers(0, counts[digits])  # (M, N): which image of its digit value each digit is
    else:
        ranks = _unique_per_class_ranks(rng, digits, counts)
    picks = by_digit[starts[digits] + ranks]  # (M, N)
    m, n = digits.shape
    return images[picks].transpose(0, 2, 1, 3).reshape(m, DIGIT_SIZE, DIGIT_SIZE * n)


def _unique_per_class_ranks(rng: np.random.Generator, digits: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(M, N) ranks among the images of each digit value, distinct within every (class, digit position)."""
    numbers = spelled_number(digits)
    order = np.argsort(numbers, kind="stable")
    starts = np.flatnonzero(np.diff(numbers[order], prepend=-1))  # first row of each class in `order`
    ranks = np.empty_like(digits)
    for rows in np.split(order, starts[1:]):
        for position, digit in enumerate(digits[rows[0]]):
            if len(rows) > counts[digit]:
                raise InputError(
                    f"digit_draw='unique_per_class' needs {len(rows)} different MNIST images of digit {digit} "
                    f"for class {numbers[rows[0]]}, but this MNIST split has only {counts[digit]}; "
                    "use digit_draw='with_replacement' (e.g. for N = 1, whose classes are large)."
                )
            ranks[rows, position] = rng.choice(counts[digit], len(rows), replace=False)
    return ranks


_CACHE_KEYS = ("images", "labels", "digits", "boxes")


def _read_cache(path: Path, n_digits: int, split: str, source: Source) -> tuple[NDigitSet, dict | None]:
    """The split stored at ``path`` and the source it records (None: written before sources were recorded);
    InputError if its checksum (`hedgekit.checks`) or size is wrong, or it was drawn from another MNIST than
    ``source`` (`hedgekit.data.provenance.matches`, module docstring)."""
    with np.load(path) as f:
        keys = _CACHE_KEYS + (("source",) if "source" in f.files else ())
    arrays = load_checked_npz(path, keys)
    recorded = json.loads(str(arrays.pop("source"))) if "source" in arrays else None
    reason = matches(recorded, source)
    if reason is not None:
        raise InputError(f"not reused: {reason}")
    images, labels, digits, boxes = arrays.values()
    if len(labels) != N_IMAGES[split]:
        raise InputError(f"it holds {len(labels)} images instead of {N_IMAGES[split]}")
    if recorded is None:
        check_looks_like("mnist", images, f"the N-digit MNIST cache {path}")
    # The corrupt twin is not stored: it is the clean images with the boxes applied.
    corrupt = occlude(images, boxes)
    return NDigitSet(images, corrupt, labels, digits, boxes, n_digits, split), recorded


def _write_cache(path: Path, dataset: NDigitSet, source: Source, quiet: bool = False) -> None:
    """Write atomically with a checksum and the MNIST ``source`` (`hedgekit.checks.save_checked_npz`): readers
    never see half a file.

    A cache is only a shortcut: when it cannot be written (read-only folder, full disk) the data set is used
    from memory, with a warning that says why and where (`hedgekit.errors.StorageError`; ``quiet``: none).
    """
    try:
        save_checked_npz(path, images=dataset.images, labels=dataset.labels, digits=dataset.digits,
                         boxes=dataset.boxes, source=np.array(json.dumps(source.record())))
    except StorageError as err:
        if not quiet:
            warnings.warn(f"the N-digit MNIST set is used from memory, not cached: {err}", stacklevel=3)


def _check_args(n_digits, seed) -> None:
    """InputError unless 1 <= n_digits <= MAX_DIGITS and seed >= 0 are integers (a bool is not: True is no count)."""
    if not _is_int(n_digits) or not 1 <= n_digits <= MAX_DIGITS:
        raise InputError(f"n_digits must be an integer in 1..{MAX_DIGITS}, got {n_digits!r}.")
    _check_seed(seed)


def _check_seed(seed) -> None:
    if not _is_int(seed) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}.")


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _describe(indices) -> str:
    """``indices`` for a message: a scalar as itself, an array by its dtype and shape."""
    a = np.asarray(indices) if not isinstance(indices, slice) else None
    return repr(indices) if a is None or a.ndim == 0 else f"an array of {a.dtype}, shape {a.shape}"


def _rng(seed: int, n_digits: int, purpose: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(n_digits), _STREAMS[purpose]])


def per_class_subset(dataset, per_class: int, seed: int = 0):
    """At most ``per_class`` random images of every class (keeps FAST evaluation cheap; `NDigitSet.subset`).

    InputError unless ``per_class`` is an integer >= 1 and ``seed`` one >= 0 (-1 would drop one
    image per class, 0 would give an empty set).
    """
    if not _is_int(per_class) or per_class < 1:
        raise InputError(f"per_class must be an integer >= 1 (the images kept of each class), got {per_class!r}.")
    _check_seed(seed)
    labels = np.asarray(dataset.labels)
    rng = np.random.default_rng(seed)
    keep = [rng.permutation(np.flatnonzero(labels == c))[:per_class] for c in np.unique(labels)]
    return dataset.subset(np.sort(np.concatenate(keep)))
