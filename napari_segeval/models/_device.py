"""Pick the compute device and the matching autocast context."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from napari_segeval._errors import SegEvalError

if TYPE_CHECKING:  # pragma: no cover
    import torch

DEVICE_CHOICES: tuple[str, ...] = ("auto", "cpu", "cuda", "mps")


def pick_device(preference: str | None = None) -> torch.device:
    """Return a :class:`torch.device`: CUDA when available, else MPS, else CPU."""
    import torch

    pref = (preference or "auto").lower()
    mps = getattr(torch.backends, "mps", None)
    has_mps = mps is not None and mps.is_available()
    if pref == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu")
    try:
        dev = torch.device(pref)
    except RuntimeError as exc:
        raise SegEvalError(
            f"unknown device {preference!r}: use one of {', '.join(DEVICE_CHOICES)}"
        ) from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise SegEvalError("device 'cuda' requested but CUDA is not available")
    if dev.type == "mps" and not has_mps:
        raise SegEvalError("device 'mps' requested but MPS is not available")
    return dev


def autocast_context(device: Any, enabled: bool = True) -> contextlib.AbstractContextManager:
    """bf16 autocast on CUDA (when ``enabled``), a no-op context elsewhere."""
    import torch

    dev = torch.device(device)
    if enabled and dev.type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()
