"""Typed exceptions: every bad input gets one of these with a message that says what to do."""


class HedgekitError(Exception):
    """Base class of all hedgekit errors."""


class InputError(HedgekitError, ValueError):
    """An argument has the wrong shape, dtype, range, or contains NaN/inf."""


class DataNotFoundError(HedgekitError, FileNotFoundError):
    """A dataset (e.g. MNIST) is not available locally; the message says how to get it."""


class CheckpointError(HedgekitError):
    """A checkpoint file is missing, truncated, corrupt or does not match the model."""


class StorageError(HedgekitError, OSError):
    """A file could not be written: the folder is read-only, a file stands where a folder must be, or the disk is
    full; nothing was corrupted (`hedgekit.checks.storage_error` words it)."""


class DivergedError(HedgekitError, FloatingPointError):
    """A training diverged: a non-finite loss or weight, or a model whose outputs are NaN or inf at evaluation.

    ``step``: the training step at which it was seen (None if unknown); the URL benchmark shows it in the method's
    leaderboard row (`hedgekit.papers.url.benchmark.run_one`).
    """

    def __init__(self, message: str, step: int | None = None):
        super().__init__(message)
        self.step = step
