"""The arithmetic a model runs in: ``--precision auto|fp32|bf16|openvino``, resolved once per load.

A backend declares ``precisions`` and the measured ``auto_precisions`` (per-structure Dice
>= 0.99 against fp32) in its capabilities; :func:`resolve_precision` picks what runs here
or refuses in one line. bf16 needs a CUDA GPU with bf16 or a oneDNN CPU with AVX512-BF16
or AMX; ``openvino`` needs a CPU and the ``openvino`` extra (found, not imported, here).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

from napari_segeval._errors import SegEvalError
from napari_segeval.models._device import pick_device


class Precision(Enum):
    """A model's arithmetic: ``AUTO`` (the fastest that keeps the masks), ``FP32``, ``BF16``, ``OPENVINO``.

    Examples
    --------
    >>> Precision("bf16"), str(Precision.FP32)
    (<Precision.BF16: 'bf16'>, 'fp32')
    """

    AUTO = "auto"
    FP32 = "fp32"
    BF16 = "bf16"
    OPENVINO = "openvino"

    def __str__(self) -> str:
        return self.value


#: What people can type (``--precision``), in this order.
PRECISION_CHOICES = tuple(p.value for p in Precision)


def parse_precision(value: str | Precision | None) -> Precision:
    """``"bf16"`` -> :attr:`Precision.BF16` (None: ``AUTO``); one line for anything else."""
    if value is None:
        return Precision.AUTO
    if isinstance(value, Precision):
        return value
    try:
        return Precision(str(value).strip().lower())
    except ValueError:
        raise SegEvalError(
            f"unknown precision {value!r}: use one of {', '.join(PRECISION_CHOICES)}"
        ) from None


def _device_type(device: Any) -> str:
    return pick_device(None if device in (None, "auto") else str(device)).type


def bf16_reason(device: Any = None) -> str | None:
    """None when ``device`` (None/``"auto"``: a model's pick) runs bf16 fast, else why not."""
    import torch

    kind = _device_type(device)
    if kind == "cuda":
        return None if torch.cuda.is_bf16_supported() else "this CUDA GPU has no bf16"
    if kind == "cpu":
        if torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported():
            return None
        return "bf16 needs a CPU with AVX512-BF16 or AMX (or a CUDA GPU), and this one has neither"
    return f"bf16 is not offered on {kind}"


#: The extra that installs OpenVINO (``--precision openvino``).
OPENVINO_EXTRA = "openvino"


def openvino_reason(device: Any = None) -> str | None:
    """None when ``device`` can run ``--precision openvino``, else why not."""
    import importlib.util

    kind = _device_type(device)
    if kind != "cpu":
        return f"openvino runs on a CPU only, not on {kind}"
    if importlib.util.find_spec("openvino") is None:
        return (
            "openvino needs the optional package 'openvino', which is not installed: "
            f"pip install 'napari-segeval[{OPENVINO_EXTRA}]'"
        )
    return None


def precision_reason(precision: Precision, device: Any = None) -> str | None:
    """None when this machine runs ``precision`` on ``device`` (FP32: always), else why not."""
    reason = {Precision.BF16: bf16_reason, Precision.OPENVINO: openvino_reason}.get(precision)
    return None if reason is None else reason(device)


def resolve_precision(
    requested: str | Precision | None,
    offered: Sequence[Precision] = (Precision.FP32,),
    device: Any = None,
    model: str = "this model",
    auto: Sequence[Precision] = (Precision.FP32,),
) -> Precision:
    """The precision a model runs in: ``auto`` -> the first of ``auto`` this machine runs.

    Parameters
    ----------
    requested : str, Precision or None
        What was asked (None: ``auto``).
    offered : sequence of Precision
        The model's ``Capabilities.precisions`` (FP32 always runs).
    device : str or torch.device, optional
        Where the model runs (None/``"auto"``: CUDA, then MPS, then CPU).
    model : str
        Its name, for the message.
    auto : sequence of Precision
        The model's ``Capabilities.auto_precisions``, fastest first.

    Raises
    ------
    napari_segeval.SegEvalError
        The model or the machine cannot run it (the line says what ``auto`` would choose).
    """
    asked = parse_precision(requested)
    choices = [p for p in offered if p is not Precision.AUTO]
    if Precision.FP32 not in choices:
        choices.append(Precision.FP32)
    here = (p for p in auto if p in choices and precision_reason(p, device) is None)
    chosen = next(here, Precision.FP32)
    if asked is Precision.AUTO:
        return chosen
    if asked not in choices:
        runs = ", ".join(str(p) for p in choices)
        raise SegEvalError(
            f"--precision {asked}: {model} runs in {runs} only; --precision auto chooses {chosen}"
        )
    reason = precision_reason(asked, device)
    if reason is not None:
        raise SegEvalError(f"--precision {asked}: {reason}; --precision auto chooses {chosen}")
    return asked


def model_precision(
    requested: str | Precision | None, capabilities: Any, device: Any, model: str
) -> Precision:
    """:func:`resolve_precision` for a backend's declared capabilities (None: fp32 only)."""
    caps = capabilities
    offered, auto = (caps.precisions, caps.auto_precisions) if caps else ((Precision.FP32,),) * 2
    return resolve_precision(requested, offered, device, model, auto)


__all__ = [
    "OPENVINO_EXTRA",
    "PRECISION_CHOICES",
    "Precision",
    "bf16_reason",
    "model_precision",
    "openvino_reason",
    "parse_precision",
    "precision_reason",
    "resolve_precision",
]
