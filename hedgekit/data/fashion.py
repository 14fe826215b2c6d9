"""Fashion-MNIST (Xiao et al. 2017), read offline from its four IDX files.

Fashion-MNIST is a drop-in replacement for MNIST: 28 x 28 grey-scale images of
clothing in ten classes (`CLASS_NAMES`), 60,000 for training and 10,000 for testing,
6,000 / 1,000 per class, stored in MNIST's IDX format under MNIST's file names.
`load_fashion(split)` reads them from the first source that exists:

1. `root=` or the environment variable `HEDGEKIT_FASHION_DIR`: a folder with the IDX
   files (`train-images-idx3-ubyte`, `train-labels-idx1-ubyte`, `t10k-images-idx3-ubyte`,
   `t10k-labels-idx1-ubyte`), each optionally `.gz`, directly in the folder or in its
   `FashionMNIST/raw/` subfolder (torchvision's cache layout). A folder given this way
   must hold the requested split's files: we never silently fall back to Debian's copy.
   Any number of images is accepted, so small test files work.
2. Debian's package `dataset-fashion-mnist` (`/usr/share/datasets/fashion-mnist`),
   which must hold exactly 60,000 / 10,000 images.

Decoded splits are cached as `.npz` under `cache_path('fashion-mnist')`, named by a
hash of the source files' bytes, so changed or different files never reuse a stale
cache; an unreadable or edited cache file (its arrays no longer match the checksum stored
inside, `hedgekit.checks.save_checked_npz`) is rebuilt with a warning.

Files that look like MNIST (same format, same names) are refused with an InputError naming what was
found (`hedgekit.data.provenance.check_looks_like`); `fashion_source` identifies the data a model was
trained on (`hedgekit.data.provenance.Source`).
"""
from __future__ import annotations

import hashlib
import os
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from hedgekit.checks import load_checked_npz, save_checked_npz
from hedgekit.data.mnist import IDX_FILES, check_images_and_labels, find_idx_file, read_idx
from hedgekit.data.provenance import Source, check_looks_like, content_checks_on, identify, known_source
from hedgekit.errors import DataNotFoundError, InputError, StorageError
from hedgekit.paths import cache_path

ENV_VAR = "HEDGEKIT_FASHION_DIR"
DEBIAN_DIR = Path("/usr/share/datasets/fashion-mnist")  # `dpkg -L dataset-fashion-mnist`
CLASS_NAMES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)
SPLITS = ("train", "test")
DEBIAN_COUNTS = {"train": 60_000, "test": 10_000}
_SPLIT_FILES = {"train": IDX_FILES[:2], "test": IDX_FILES[2:]}  # (images, labels) per split

NOT_FOUND_MESSAGE = (
    "Get Fashion-MNIST either from Debian with\n"
    "    apt-get install dataset-fashion-mnist\n"
    f"(files in {DEBIAN_DIR}), or pass root=/set {ENV_VAR} to a folder with the IDX files "
    + ", ".join(IDX_FILES)
    + " (each optionally .gz)."
)


@dataclass(frozen=True, eq=False)
class FashionSet:
    """One split of Fashion-MNIST, in the original order.

    Attributes:
        images: uint8 (n, 28, 28), 0 = black background.
        labels: int64 (n,) class indices into `CLASS_NAMES`.
        split: "train" or "test".
    """

    images: np.ndarray
    labels: np.ndarray
    split: str

    def __len__(self) -> int:
        return len(self.labels)

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (x, y): x float32 (n, 1, 28, 28) in [0, 1], y int64 (n,) labels."""
        x = torch.from_numpy(self.images).unsqueeze(1).float().div_(255.0)
        return x, torch.from_numpy(self.labels)


def load_fashion(split: str = "train", root: str | os.PathLike | None = None) -> FashionSet:
    """Load one split of Fashion-MNIST from `root`, `$HEDGEKIT_FASHION_DIR` or Debian's copy.

    See the module docstring for the lookup order and the cache.

    Args:
        split: "train" (60,000 images) or "test" (10,000 images).
        root: Folder with the IDX files; defaults to `$HEDGEKIT_FASHION_DIR`, then Debian's copy.

    Returns:
        The split as a FashionSet with writable arrays of its own.

    Raises:
        InputError: If `split` is unknown, or an IDX file is corrupt, truncated, does not
            match its partner, holds labels outside 0..9, or holds images that look like MNIST.
        DataNotFoundError: If no source holds the split's files; the message says how to get them.
    """
    if split not in SPLITS:
        raise InputError(f"split must be one of {SPLITS}, got {split!r}.")
    files, expected_count, origin = _resolve(split, root)
    path = cache_path("fashion-mnist", f"{split}_{_content_key(files)}.npz")
    dataset = None
    if path.is_file():
        try:
            dataset = _read_cache(path, split, expected_count)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            warnings.warn(f"rebuilding the unreadable Fashion-MNIST cache {path}: {err}", stacklevel=2)
    fresh = dataset is None
    if fresh:
        images, labels = (read_idx(f) for f in files)
        dataset = _checked(images, labels, split, expected_count, f"Fashion-MNIST {split} ({files[0].parent})")
    check_looks_like("fashion-mnist", dataset.images, origin)  # also a cache made before this check existed
    if fresh:
        _write_cache(path, dataset)
    return dataset


def fashion_source(root: str | os.PathLike | None = None) -> Source:
    """The `Source` (fingerprint, origin) of both splits `load_fashion` reads from ``root``: cheap for Debian's
    files (a hash of their bytes), else from the loaded arrays, which must then pass the content checks (sizes,
    labels, MNIST-like images: `hedgekit.data.provenance.check_content`); the same errors as `load_fashion`."""
    (train, _, origin), (test, _, _) = (_resolve(split, root) for split in SPLITS)
    known = known_source("fashion-mnist", train + test, origin)
    if known is not None:
        return known
    train_set, test_set = (load_fashion(split, root) for split in SPLITS)
    arrays = (train_set.images, train_set.labels, test_set.images, test_set.labels)
    return identify("fashion-mnist", arrays, origin, content_checks_on())


def _resolve(split: str, root) -> tuple[tuple[Path, Path], int | None, str]:
    """The split's (images, labels) files, the image count they must hold (None: any) and where they are."""
    if root is None:
        root = os.environ.get(ENV_VAR) or None
    if root is not None:
        folder = Path(root).expanduser().resolve()
        files = _find_split_files((folder, folder / "FashionMNIST" / "raw"), split, f"The root=/{ENV_VAR} folder")
        return files, None, f"the Fashion-MNIST folder {folder}"
    files = _find_split_files((DEBIAN_DIR,), split, f"{ENV_VAR} is not set and Debian's folder")
    return files, DEBIAN_COUNTS[split], f"Debian's {DEBIAN_DIR}"


def _find_split_files(folders: tuple[Path, ...], split: str, source: str) -> tuple[Path, Path]:
    """The split's (images, labels) IDX files, each from the first of `folders` that holds it.

    Raises:
        DataNotFoundError: If one is missing; the message opens with `source`, then `folders[0]`.
    """
    names = _SPLIT_FILES[split]
    found = [find_idx_file(folders, name) for name in names]
    missing = [name for name, path in zip(names, found) if path is None]
    if missing:
        problem = f"lacks {', '.join(missing)}" if folders[0].is_dir() else "does not exist"
        raise DataNotFoundError(f"{source} {folders[0]} {problem} (Fashion-MNIST {split}).\n{NOT_FOUND_MESSAGE}")
    return found[0], found[1]


def _content_key(files: tuple[Path, Path]) -> str:
    """16 hex digits of a SHA-256 over the files' bytes: equal only for identical sources."""
    digest = hashlib.sha256()
    for file in files:
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _checked(images: np.ndarray, labels: np.ndarray, split: str, expected_count: int | None, what: str) -> FashionSet:
    """A FashionSet of writable uint8 images and int64 labels, after checking shapes, labels and the count."""
    check_images_and_labels(images, labels, what)
    if expected_count is not None and len(labels) != expected_count:
        raise InputError(
            f"{what} has {len(labels)} images, expected {expected_count}; "
            "reinstall it with `apt-get install --reinstall dataset-fashion-mnist`."
        )
    return FashionSet(np.require(images, np.uint8, "W"), np.require(labels, np.int64, "W"), split)


def _read_cache(path: Path, split: str, expected_count: int | None) -> FashionSet:
    """The FashionSet stored at `path` by `_write_cache`; raises (e.g. InputError, OSError) if it is unusable."""
    images, labels = load_checked_npz(path, ("images", "labels")).values()
    if images.dtype != np.uint8 or labels.dtype != np.int64:
        raise InputError(f"it holds {images.dtype} images and {labels.dtype} labels, expected uint8 and int64")
    return _checked(images, labels, split, expected_count, "the cache")


def _write_cache(path: Path, dataset: FashionSet) -> None:
    """Write atomically with a checksum (`hedgekit.checks.save_checked_npz`): readers never see half a file.

    A cache is only a shortcut: when it cannot be written (read-only folder, full disk) the data set is used
    from memory, with a warning that says why and where (`hedgekit.errors.StorageError`).
    """
    try:
        save_checked_npz(path, compressed=False, images=dataset.images, labels=dataset.labels)
    except StorageError as err:
        warnings.warn(f"the Fashion-MNIST set is used from memory, not cached: {err}", stacklevel=3)
