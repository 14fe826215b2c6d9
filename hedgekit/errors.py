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
    """A file could not be written: the folder is read-only or the disk is full; nothing was corrupted."""
