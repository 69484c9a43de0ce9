"""Strict JSON for every file and ``--json`` output: NaN and infinity made explicit."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def json_safe(obj: Any) -> Any:
    """Convert ``obj`` to plain JSON types: NaN -> None, +-inf -> "inf"/"-inf".

    numpy values become Python numbers and lists, tuples lists, paths strings, dict keys
    strings."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, np.generic):  # numpy scalars as Python's bool, int, float
        obj = obj.item()
    if isinstance(obj, float):
        if math.isnan(obj):
            return None
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
    if hasattr(obj, "__fspath__"):
        return str(obj)
    return obj
