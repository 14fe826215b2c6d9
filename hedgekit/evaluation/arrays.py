"""The one input check of the evaluation metrics: every metric reads its arrays through
`checked_array` (a non-empty, finite float / int / 0-1 array of a given rank, numpy or torch on any device), and
`same_length` says which lengths differ. Bad input raises `hedgekit.errors.InputError` saying what was expected.
"""
from __future__ import annotations

import numpy as np
import torch

from hedgekit.errors import InputError

__all__ = ["to_numpy", "checked_array", "same_length"]


def to_numpy(x, name: str) -> np.ndarray:
    """``x`` (a torch tensor on any device, or anything numpy reads) as a numeric numpy array, unchecked."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.is_floating_point() and x.dtype not in (torch.float32, torch.float64):
            x = x.float()  # float16/bfloat16 have no (or no exact) numpy twin
        return x.numpy()
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as err:  # ragged lists and the like
        raise InputError(f"{name} could not be read as an array: {err}") from err
    if arr.dtype == object:
        raise InputError(f"{name} must be a numeric array, got dtype=object")
    return arr


def checked_array(x, name: str, kind: type, ndim: int = 1) -> np.ndarray:
    """A non-empty ``ndim``-D array of ``kind``: float (finite float64), int (int64 class ids / indices) or
    bool (bool, or numbers that are all 0/1)."""
    arr = to_numpy(x, name)
    if arr.ndim != ndim:
        raise InputError(f"{name} must be {ndim}-D, got shape {tuple(arr.shape)}")
    if arr.size == 0:
        raise InputError(f"{name} is empty")
    if kind is int:
        if not np.issubdtype(arr.dtype, np.integer):
            raise InputError(f"{name} must hold integers (class ids / indices), got dtype {arr.dtype}")
        return arr.astype(np.int64)
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise InputError(f"{name} must be {'numeric' if kind is float else 'boolean (or 0/1)'}, got dtype {arr.dtype}")
    if kind is bool:
        if not np.all((arr == 0) | (arr == 1)):
            raise InputError(f"{name} must be boolean (or 0/1); found other values")
        return arr == 1
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name} contains NaN or inf ({int(np.sum(~np.isfinite(arr)))} entries)")
    return arr


def same_length(**arrays: np.ndarray) -> None:
    """InputError naming every length when the keyword ``arrays`` are not all of one length."""
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{name}={n}" for name, n in lengths.items())
        raise InputError(f"length mismatch: {desc} (they must be equal)")
