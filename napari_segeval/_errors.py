"""Project exceptions: a :class:`SegEvalError`'s message names the file and what is wrong."""

from __future__ import annotations


class SegEvalError(Exception):
    """Base class for errors caused by input a person can fix."""


class ReadError(SegEvalError):
    """A file could not be read: missing, unreadable, truncated, corrupt or unsupported."""


class WriteError(SegEvalError):
    """A file could not be written, or would overwrite an existing file."""


class InvalidImageError(SegEvalError):
    """An image is unusable: NaN/inf values, wrong dimensionality, wrong dtype."""


class InvalidLabelsError(SegEvalError):
    """A label map is unusable: non-integer values, negative ids, wrong shape."""


class InvalidPromptError(SegEvalError):
    """A prompt or prompts file is unusable: outside the image, on a missing slice, malformed."""


class GeometryMismatchError(SegEvalError):
    """Two arrays that must share one grid do not (shape, spacing, origin or direction)."""


class MissingDependencyError(SegEvalError):
    """An optional dependency (an extra) is needed but not installed."""

    def __init__(self, package: str, extra: str, purpose: str, hint: str | None = None) -> None:
        self.package = package
        self.extra = extra
        how = hint or f"pip install 'napari-segeval[{extra}]'"
        super().__init__(f"{purpose} needs the optional package '{package}': {how}")
