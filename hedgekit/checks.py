"""The checks every public entry point shares: images, counts, memory budgets, atomic files.

Each raises :class:`hedgekit.errors.InputError` with a message that says what was expected.

* `check_images`: a batch of images is a tensor of uint8 or float pixels in [0, 1], of the expected
  shape, non-empty; one min/max pass per batch (a NaN or inf fails the same comparison).
* `check_count`: K, n_samples, n_points, top_k, batch sizes ...: a true integer (not a bool, not
  8.0) within bounds.
* `check_memory`: refuse a tensor that would not fit `memory_budget()` (a quarter of this
  machine's RAM) before allocating it, e.g. HIB's (BK) x (BK) pair matrix for a huge K.
* `atomic_write`: write a file through a temporary twin that is renamed into place, or removed
  if anything fails; a path that is a directory is refused up front. A read-only folder, a file where a
  folder must be, or a full disk is a `StorageError` saying where, how much was needed, that nothing was
  corrupted and what moves the path (`storage_error`, `STORAGE_ERRNOS`; `write_bytes_atomic`;
  `check_writable` asks before an expensive result is computed).
* `array_checksum`: SHA-256 of named arrays (name, dtype, shape, bytes), stored inside dataset
  caches so that a well-formed but edited cache is detected and rebuilt.
* `check_margin`: a margin > 0 (a config's m of a triplet or contrastive loss).
* `check_device`; `count_arg`, `number_arg`, `device_arg`: the same checks as argparse types for the
  command line, whose errors name the flag.
* `deferred_value_checks`, `values_checked`: inside a training step the checks that read tensor values (NaN,
  signs, label ranges) wait for the next log step, because on a GPU each one makes the host wait for the device.
* `MAX_SEED`, `MAX_STEPS`, `MAX_THREADS`, `check_seed`: the bounds every seed, step count and thread count is
  checked against (the network's size: `hedgekit.nets.embedder.check_model_size`).
"""
from __future__ import annotations

import argparse
import contextlib
import contextvars
import errno
import hashlib
import io
import math
import numbers
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from hedgekit.errors import InputError, StorageError
from hedgekit.paths import existing_parent, moved_by as default_moved_by, writable_fallback

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

_VALUE_CHECKS = contextvars.ContextVar("hedgekit_value_checks", default=True)


@contextlib.contextmanager
def deferred_value_checks(defer: bool = True) -> Iterator[None]:
    """Within the block (if ``defer``), skip the checks that read tensor values; shapes and dtypes are still checked.

    A value check (``torch.isfinite(t).all()``, ``(var < 0).any()``, ``int(labels.max())``) turns a tensor into a
    Python bool, which on a GPU makes the host wait until the device has computed it: a training step with a
    dozen of them cannot queue the next step's work while this one runs. `hedgekit.training.loop.optimise` runs
    every step but the log steps (step 0, every ``log_every``-th, the last) inside this block; at the log steps
    every check runs, and a non-finite loss or weight is caught there. The checked functions ask
    `values_checked`. Public entry points outside training always check.
    """
    token = _VALUE_CHECKS.set(not defer and _VALUE_CHECKS.get())
    try:
        yield
    finally:
        _VALUE_CHECKS.reset(token)


def values_checked() -> bool:
    """False inside `deferred_value_checks`: the caller skips its checks of tensor values."""
    return _VALUE_CHECKS.get()


def check_images(x, shape: tuple[int, ...] | None = None, name: str = "images", convert: bool = True) -> Tensor:
    """A batch of images as float32 (B, C, H, W) in [0, 1].

    Args:
        x: a torch.Tensor of uint8 pixels (0..255, divided by 255 here) or float pixels in [0, 1],
            of shape (B, C, H, W), or (B, H, W) for one channel.
        shape: the expected (C, H, W); None accepts any.
        name: names ``x`` in the error messages.
        convert: False only validates and returns ``x`` itself (no float copy of a whole data set).
    """
    if not isinstance(x, Tensor):
        raise InputError(f"expected a torch.Tensor of {name}, shape (B, C, H, W); got {type(x).__name__}")
    want = "(B, " + ", ".join(map(str, shape)) + ")" if shape is not None else "(B, C, H, W)"
    if x.dtype != torch.uint8 and x.dtype not in FLOAT_DTYPES:
        raise InputError(f"{name} must be float in [0, 1] or uint8 (0..255); got dtype {x.dtype}")
    if x.ndim == 3 and (shape is None or shape[0] == 1):
        x = x.unsqueeze(1)
    if x.ndim != 4 or (shape is not None and tuple(x.shape[1:]) != tuple(shape)):
        raise InputError(f"expected {name} of shape {want}; got {tuple(x.shape)}")
    if len(x) == 0:
        raise InputError(f"{name} is an empty batch (0 images); pass at least one image of shape {want}")
    if x.dtype == torch.uint8:
        return x.float().div_(255.0) if convert else x
    if not values_checked():
        return x.float() if convert else x
    lo, hi = torch.aminmax(x.detach().float() if x.dtype in (torch.float16, torch.bfloat16) else x.detach())
    if not (lo >= 0 and hi <= 1):  # also False for NaN
        if not torch.isfinite(x).all():
            raise InputError(f"{name} contain NaN or inf pixels; expected float pixels in [0, 1]")
        hint = " (0..255 pixels? divide by 255 or pass uint8)" if hi <= 255 and lo >= 0 else ""
        raise InputError(f"{name} must be float pixels in [0, 1]; got values in [{lo.item():.4g}, {hi.item():.4g}]{hint}")
    return x.float() if convert else x


def check_training_set(images, labels, model=None) -> None:
    """The one check of every trainer (`fit`, `fit_episodic`, `fit_triplets`): ``images`` pass `check_images`
    (shaped like ``model.input_shape`` if the model has one) and there is one label per image."""
    check_images(images, getattr(model, "input_shape", None), "training images", convert=False)
    if getattr(labels, "ndim", 1) != 1 or not hasattr(labels, "__len__"):
        raise InputError(f"labels must be one class label per image, shape (N,); got {getattr(labels, 'shape', labels)!r}")
    if len(labels) != len(images):
        raise InputError(f"{len(images)} images but {len(labels)} labels; need one label per image")


def check_count(value, name: str, minimum: int = 1, maximum: int | None = None, why: str = "") -> int:
    """``value`` as an int, if it is an integer (not bool, not float) in [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(f"{name} must be an integer >= {minimum}; got {value!r} ({type(value).__name__})")
    value = int(value)
    if value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}; got {value}")
    if maximum is not None and value > maximum:
        raise InputError(f"{name} must be at most {maximum}{why}; got {value}")
    return value


def check_number(value, name: str, minimum: float | None = None, maximum: float | None = None,
                 above: bool = False) -> float:
    """``value`` as a float, if it is a finite real number (not a bool) >= ``minimum`` (> if ``above``), <= ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise InputError(f"{name} must be a finite number; got {value!r}")
    if minimum is not None and (value <= minimum if above else value < minimum):
        raise InputError(f"{name} must be {'>' if above else '>='} {minimum:g}; got {value!r}")
    if maximum is not None and value > maximum:
        raise InputError(f"{name} must be <= {maximum:g}; got {value!r}")
    return float(value)


def check_fields(config, counts: Mapping[str, int] = {}, positive: tuple[str, ...] = (),
                 non_negative: tuple[str, ...] = (), fractions: tuple[str, ...] = (),
                 choices: Mapping[str, tuple] = {}) -> None:
    """Check a config dataclass field by field; the error names the field, e.g. ``TrainConfig.k must be ...``.

    counts: field -> minimum integer; positive / non_negative: finite numbers > 0 / >= 0; fractions: in [0, 1];
    choices: field -> allowed values.
    """
    cls = type(config).__name__
    for name, allowed in choices.items():
        if getattr(config, name) not in allowed:
            raise InputError(f"{cls}.{name} must be one of {allowed}; got {getattr(config, name)!r}")
    for name, minimum in counts.items():
        check_count(getattr(config, name), f"{cls}.{name}", minimum)
    for name in positive:
        check_number(getattr(config, name), f"{cls}.{name}", 0.0, above=True)
    for name in non_negative:
        check_number(getattr(config, name), f"{cls}.{name}", 0.0)
    for name in fractions:
        check_number(getattr(config, name), f"{cls}.{name}", 0.0, 1.0)


def check_episode_labels(labels, n_items: int, n_classes: int | None, what: str = "support") -> tuple[Tensor, int]:
    """(``labels`` as a long tensor, n_classes) if they are episode classes 0..n_classes-1 (n_classes: one more than
    the largest label when None), one per item, and, for a support set, every class has an item. Checked by the
    prototype heads' entry points (`hedgekit.methods.pn.PN`, `hedgekit.methods.fast.spe.SPE`); inside a training step
    with ``n_classes`` given (`deferred_value_checks`) the values are not read: the episode sampler made them."""
    labels = torch.as_tensor(labels)
    if labels.ndim != 1 or len(labels) != n_items:
        raise InputError(f"{what} labels must have shape ({n_items},); got {tuple(labels.shape)}")
    if labels.is_floating_point() or labels.dtype == torch.bool:
        raise InputError(f"{what} labels must be integers 0..n_classes-1; got dtype {labels.dtype}")
    labels = labels.long()
    if n_items == 0:
        raise InputError(f"need at least one {what} item")
    if n_classes is not None and not values_checked():
        return labels, int(n_classes)
    if labels.min() < 0:
        raise InputError(f"{what} labels must be episode classes 0..n_classes-1; got {int(labels.min())}")
    n = int(labels.max()) + 1 if n_classes is None else int(n_classes)
    if int(labels.max()) >= n:
        raise InputError(f"{what} label {int(labels.max())} is out of range for n_classes = {n}")
    counts = torch.bincount(labels, minlength=n)
    if what == "support" and (counts == 0).any():
        missing = torch.nonzero(counts == 0).flatten().tolist()
        raise InputError(f"every class needs at least one support item; classes {missing[:10]} have none")
    return labels, n


def check_margin(margin, name: str = "margin", hint: str = "") -> float:
    """``margin`` if it is a finite number > 0 (not a bool); ``hint`` ends the error message."""
    if isinstance(margin, bool) or not isinstance(margin, numbers.Real) or not (math.isfinite(margin) and margin > 0):
        raise InputError(f"{name} must be a finite number > 0{hint}; got {margin!r}")
    return margin


def memory_budget() -> int:
    """Bytes one tensor may take: a quarter of the physical RAM (4 GiB if it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError, AttributeError):
        return 4 * 2**30


def check_memory(n_elements: int, what: str, hint: str, element_size: int = 4) -> None:
    """InputError if ``n_elements`` values of ``element_size`` bytes exceed `memory_budget`."""
    need, budget = n_elements * element_size, memory_budget()
    if need > budget:
        raise InputError(f"{what} would take {_human(need)}, more than the {_human(budget)} allowed "
                         f"(a quarter of this machine's RAM); {hint}")


# Images one training step may take: 64x the papers' 256. A LeNet step on 2-digit images keeps about 21k floats
# of activations per image for the backward pass (input 1,568, conv1 9,408, pool 2,352, conv2 6,272, pool 1,568,
# fc 120), ~85 KB, so the bound is ~1.4 GB of activations, before the HIB sample pairs (checked on their own).
MAX_BATCH_IMAGES = 16_384


def check_batch(config, n_images: int, formula: str) -> None:
    """InputError if one training step of ``config`` would take more than `MAX_BATCH_IMAGES` images
    (``formula`` says how the config's fields give ``n_images``, e.g. "classes_per_batch x per_class")."""
    if n_images > MAX_BATCH_IMAGES:
        raise InputError(f"{type(config).__name__}: {formula} = {n_images:,} images per step, more than the "
                         f"{MAX_BATCH_IMAGES:,} allowed (about {_human(n_images * 85_000)} of activations); "
                         "use a smaller batch")


def _human(n_bytes: float) -> str:
    units = ("B", "KB", "MB", "GB", "TB", "PB", "EB")
    i = min(len(units) - 1, int(math.log(max(n_bytes, 1), 1024)))
    value = n_bytes / 1024**i
    return f"{n_bytes} B" if i == 0 else f"{value:.3g} {units[i]}" if value < 1000 else f"{value:.0f} {units[i]}"


# errno values that mean "this folder cannot take the file": read-only, no permission, disk or quota full, a file
# where a folder must be (ENOTDIR: a folder of the path is a file; EEXIST: mkdir of a path that is a file), a folder
# where the file must be
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_NOT_A_FOLDER = (errno.ENOTDIR, errno.EEXIST)
STORAGE_ERRNOS = _READ_ONLY + NO_SPACE + _NOT_A_FOLDER + (errno.EISDIR,)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, need: int | None = None) -> Iterator[Path]:
    """``with atomic_write(path) as tmp: write(tmp)``: ``tmp`` replaces ``path`` only if the block succeeds.

    The folder is created if missing. The temporary file (``<name>.<pid>.tmp`` beside ``path``) is removed on
    any failure, so no ``.tmp`` is left behind; a failure of that cleanup never hides the first error. A
    read-only folder, a file where a folder must be, or a full disk raises `StorageError` (`storage_error`;
    ``need``: the bytes the file takes, for its message). A ``path`` that is a directory is refused with an
    InputError before anything is written.
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a directory; remove it or choose a file path")
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):  # e.g. EROFS again: the first error is the one to report
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and not isinstance(exc, StorageError) and exc.errno in STORAGE_ERRNOS:
            raise storage_error(path, exc, need) from exc
        raise


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through `atomic_write`: all of it or nothing; `StorageError` if it cannot.

    Serialising to bytes first (`torch.save` / `np.savez` into a buffer) means a full disk shows up as the
    OS's ENOSPC here, with the size it needed, not as an error deep inside a zip writer.
    """
    with atomic_write(path, need=len(data)) as tmp:
        _write_file(tmp, data)
    return Path(path)


def _write_file(path: Path, data: bytes) -> None:
    """The one place that writes file bytes (tests replace it to simulate EROFS / ENOSPC)."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def check_writable(path: str | os.PathLike, need: int = 0, moved_by: str | None = None) -> None:
    """`StorageError` unless ``path``'s folder (created if missing) takes a new file of ``need`` bytes: call it
    before an expensive result is computed, so that a read-only or full disk, or a file where a folder must be
    (``HEDGEKIT_DATA=<a file>``, ``--out <a file>``), is reported before the work. ``moved_by``: as in
    `storage_error`."""
    path = Path(path)
    probe = path.with_name(f".hedgekit-write-test.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_file(probe, b"")
        probe.unlink()
    except OSError as exc:
        if exc.errno in STORAGE_ERRNOS:
            raise storage_error(path, exc, need, moved_by) from exc
        raise
    if free_bytes(path.parent) < need:
        raise storage_error(path, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), need, moved_by)


def free_bytes(folder: Path) -> int:
    """Bytes free for this user on ``folder``'s file system."""
    return shutil.disk_usage(folder).free


def storage_error(path: str | os.PathLike | None, exc: OSError, need: int | None = None,
                  moved_by: str | None = None, example: str = "hedgekit-out") -> StorageError:
    """The `StorageError` for an OSError raised while writing ``path``, as one paragraph: what
    happened and where (read-only, no space, a file where a folder must be, a folder where the file must be), what
    was needed, that nothing was corrupted, and the fix: what moves the path (``moved_by``: a flag such as
    ``--out`` or a variable such as ``HEDGEKIT_DATA``; default `hedgekit.paths.moved_by`), with another folder as
    an example only if it is checked writable (`hedgekit.paths.writable_fallback`; ``example``: the name a flag's
    example folder or file gets there). ``path`` None: unknown (an OSError without a file name, e.g. ENOSPC from a
    write).

    The error keeps ``errno``, ``path``, ``need`` and ``reason`` (the OS's words), so that the command line can
    word it again with the flag that moves the path (`hedgekit.cli`)."""
    path = Path(path) if path is not None else None
    reason = getattr(exc, "reason", None) or exc.strerror or os.strerror(exc.errno or 0)
    moved_by = moved_by or (default_moved_by(path) if path is not None else None)
    if path is None:
        what, unchanged = f"a write failed: {reason.lower()}", ""  # which file, and what it holds now, is unknown
    else:
        unchanged = (f"nothing was corrupted: {path} is unchanged" if path.exists()
                     else f"nothing was corrupted: {path.name} was not written") + " and no partial file was left"
    if exc.errno in NO_SPACE:
        if path is not None:
            try:
                free = f", {_human(free_bytes(existing_parent(path)))} free"
            except OSError:
                free = ""
            needed = f"writing {path.name} needs {_human(need)}{free}" if need is not None else f"{reason}{free}"
            what = f"no space left on device at {path.parent}: {needed}"
        move = _move(moved_by, example, full=True, avoid=path)
        fix = "Free some space" + (f", or {move[0].lower()}{move[1:]}" if move else "")
    else:
        if path is not None and exc.errno in _NOT_A_FOLDER:
            blocker = _file_in_the_way(path)
            what = (f"cannot write into {path}: it is a file, not a folder" if blocker == path else
                    f"cannot write {path}: {blocker} is a file, not a folder" if blocker is not None else
                    f"cannot write {path}: part of it is a file, not a folder")
        elif path is not None and exc.errno == errno.EISDIR:
            what = f"cannot write {path}: it is a folder, not a file"
        elif path is not None:
            what = f"cannot write to {path.parent}: the folder is read-only ({reason})"
        fix = _move(moved_by, example, full=False, avoid=None)
    err = StorageError(what + (f"; {unchanged}." if unchanged else ".") + (f" {fix}" if fix else ""))
    err.errno, err.path, err.need, err.reason = exc.errno, path, need, reason
    return err


# what each flag or variable is for, in the fix of `storage_error`; the fallback folder's name for an example
_MOVES = {"HEDGEKIT_DATA": ("for hedgekit's caches and trained models", "hedgekit-data")}


def _move(moved_by: str | None, name: str, full: bool, avoid: Path | None) -> str:
    """The sentence that moves the path: "Set HEDGEKIT_DATA to a writable folder (e.g. HEDGEKIT_DATA=/tmp/x) ...",
    "Choose a writable place with --out (e.g. --out ~/<name>)"; ``full``: a disk with room is what is needed. The
    example only if `writable_fallback` finds one (on another disk than ``avoid``, the full one); "" when nothing
    is known to move the path."""
    if moved_by is None:
        return ""
    if moved_by.startswith("-"):  # a flag of the command
        example = writable_fallback(name, avoid=avoid)
        return (f"Choose {'a place on a disk with room' if full else 'a writable place'} with {moved_by}"
                + (f" (e.g. {moved_by} {example})" if example else ""))
    purpose, name = _MOVES.get(moved_by, ("", None))
    example = writable_fallback(name, avoid=avoid) if name else None
    return (f"Set {moved_by} to {'a folder on a disk with room' if full else 'a writable folder'}"
            + (f" (e.g. {moved_by}={example})" if example else "") + (f" {purpose}" if purpose else ""))


def _file_in_the_way(path: Path) -> Path | None:
    """The file (not a folder) that stands where ``path`` or one of its folders must be, if there is one."""
    for p in (path, *path.parents):
        if (p.exists() or p.is_symlink()) and not p.is_dir():
            return p
    return None


def array_checksum(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 hex digest of named arrays: each name, dtype, shape and bytes, in sorted name order."""
    h = hashlib.sha256()
    for key in sorted(arrays):
        a = np.ascontiguousarray(arrays[key])
        h.update(f"{key}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_checked_npz(path: str | os.PathLike, compressed: bool = True, **arrays: np.ndarray) -> None:
    """Write ``arrays`` to an ``.npz`` cache atomically, with their `array_checksum` stored inside."""
    save, buffer = np.savez_compressed if compressed else np.savez, io.BytesIO()
    save(buffer, checksum=np.array(array_checksum(arrays)), **arrays)
    write_bytes_atomic(path, buffer.getvalue())


def load_checked_npz(path: str | os.PathLike, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of a cache written by `save_checked_npz`; InputError if its checksum does not match
    (the file was edited, or written by an older version without a checksum)."""
    with np.load(path) as f:
        arrays = {k: f[k] for k in keys}
        stored = str(f["checksum"]) if "checksum" in f.files else None
    if stored is None:
        raise InputError("it has no checksum (written by an older version)")
    if stored != array_checksum(arrays):
        raise InputError("its contents do not match their checksum (the file was modified)")
    return arrays


def check_device(device) -> torch.device:
    """``device`` ("cpu", "cuda", "cuda:1", "mps", a torch.device) as a torch.device that exists on this machine."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise InputError(f"{device!r} is not a device; use cpu, cuda, cuda:N, mps or auto") from exc
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError(f"device {device!r}: CUDA is not available on this machine (no NVIDIA GPU, or a CPU-only "
                             "torch build); use cpu (or auto, which picks the best available)")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise InputError(f"device {device!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type == "mps":
        if getattr(torch.backends, "mps", None) is None or not torch.backends.mps.is_available():
            raise InputError(f"device {device!r}: Apple's MPS is not available on this machine; use cpu or auto")
    elif dev.type != "cpu":
        raise InputError(f"device {device!r} is not supported; use cpu, cuda, cuda:N, mps or auto")
    return dev


def count_arg(minimum: int = 1, maximum: int | None = None, why: str = ""):
    """An argparse ``type=``: an integer >= ``minimum`` (and <= ``maximum``, ``why`` says why); argparse names the
    flag in its error."""
    want = f"an integer >= {minimum}" + (f" and <= {maximum}{why}" if maximum is not None else "")

    def parse(text: str) -> int:
        try:
            return check_count(int(text), "the value", minimum, maximum)
        except ValueError as exc:  # int("1.5"), int("x"), and InputError (a ValueError) out of bounds
            raise argparse.ArgumentTypeError(f"expected {want}; got {text!r}") from exc

    parse.__name__ = want
    return parse


def number_arg(minimum: float = 0.0):
    """An argparse ``type=``: a finite number >= ``minimum`` (not nan, not inf)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expected a number; got {text!r}") from exc
        if not math.isfinite(value) or value < minimum:
            raise argparse.ArgumentTypeError(f"expected a finite number >= {minimum:g}; got {text!r}")
        return value

    parse.__name__ = f"number >= {minimum:g}"
    return parse


def device_arg(text: str) -> str:
    """An argparse ``type=``: "auto" or a device that exists here (`check_device`)."""
    if text != "auto":
        try:
            check_device(text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc
    return text


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """The one place a device name becomes a device: "auto" (or None) picks cuda if available, else Apple's mps if
    available (it counts: an Apple laptop trains there rather than on its CPU), else cpu; any other name must
    exist here (`check_device`: "cuda" without CUDA, or an unknown name, is an InputError saying what is expected)."""
    if device in (None, "auto"):
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    return check_device(device)


# ------------------------------------------------------------------ resource limits
MAX_SEEDS = 1000  # seeds per URL method: 3 in the paper's protocol; 1000 x 11 methods would train for days
MAX_SEED = 2**63 - 1  # torch.manual_seed overflows beyond a 64-bit integer; a signed one is portable everywhere
MAX_STEPS = 10_000_000  # every recipe of the kit trains <= 12,000 steps; 10^7 steps of 50 ms would take 6 days
MAX_THREADS = 1024  # torch threads / worker processes; more than any machine the kit runs on has cores


def check_seed(seed, name: str = "seed") -> int:
    """``seed`` as an int, if it is an integer in 0..`MAX_SEED` (InputError otherwise)."""
    return check_count(seed, name, 0, MAX_SEED, " (a seed is a signed 64-bit integer, 0..2^63 - 1)")
