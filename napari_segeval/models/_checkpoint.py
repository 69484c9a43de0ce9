"""The one checkpoint reader: weight files are read as data (``weights_only``), never as code.

Every failure is one :class:`~napari_segeval.ReadError` line (pickled objects are told
apart by their opcodes); torch's own error text is never shown (it advises running the code).
"""

from __future__ import annotations

import os
import pickle
import pickletools
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from napari_segeval._errors import MissingDependencyError, ReadError, SegEvalError

#: Oldest torch whose ``weights_only`` unpickler has no known code-execution hole.
MIN_TORCH = (2, 10)
#: Bytes of a non-zip file scanned for pickled objects (legacy torch files keep their
#: pickles before the tensor data, so the start is enough).
_SCAN_BYTES = 64 << 20
#: Pickle opcodes that name a Python object to import (a class or a function).
_IMPORTING_OPCODES = frozenset({"GLOBAL", "STACK_GLOBAL", "INST"})


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def check_torch(version: str | None = None) -> Any:
    """Import torch, refuse versions older than :data:`MIN_TORCH`; return the module."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is a core dependency
        raise MissingDependencyError("torch", "models", "Reading model weights") from exc
    found = torch.__version__ if version is None else version
    if _version_tuple(found) < MIN_TORCH:
        raise SegEvalError(
            f"reading checkpoints safely needs torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]} (older "
            f"versions can run code hidden in a file); found torch {found}: "
            f"pip install 'torch>={MIN_TORCH[0]}.{MIN_TORCH[1]}'"
        )
    return torch


def _pickle_streams(path: Path) -> list[bytes]:
    """The pickle byte streams torch would unpickle: ``*/data.pkl`` of a zip, else the file."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                return [zf.read(n) for n in zf.namelist() if n.endswith("data.pkl")]
        with open(path, "rb") as fh:
            return [fh.read(_SCAN_BYTES)]
    except (OSError, zipfile.BadZipFile, RuntimeError, ValueError):
        return []


def _imports_objects(data: bytes) -> bool:
    """Whether ``data`` starts with well-formed pickles that import Python objects."""
    pos, found = 0, False
    while pos < len(data):
        names = set()
        try:
            for op, _arg, at in pickletools.genops(data[pos:]):
                names.add(op.name)
                end = at or 0
        except (ValueError, pickle.UnpicklingError, IndexError, KeyError):
            break
        if "STOP" not in names:
            break
        found |= bool(names & _IMPORTING_OPCODES)
        pos += end + 1
    return found


def contains_code(path: str | Path) -> bool:
    """Whether a file that torch refused holds pickled Python objects (read, never run)."""
    return any(_imports_objects(s) for s in _pickle_streams(Path(path)))


def content_error(path: str | os.PathLike, what: str, detail: str) -> ReadError:
    """The one-line error for a readable file whose content is not a ``what``."""
    return ReadError(f"{path}: not a {what}: {detail}")


def read_checkpoint(path: str | os.PathLike, what: str) -> Any:
    """Read a ``torch.save`` file as data: tensors, numbers, strings, lists and dicts."""
    torch = check_torch()
    path = Path(path)
    if path.is_dir():
        raise ReadError(f"{path}: is a folder, not a {what}")
    if not path.is_file():
        raise ReadError(f"{path}: {what} not found")
    try:
        with warnings.catch_warnings():  # torch's warnings about odd pickles cite options
            warnings.filterwarnings("ignore", category=UserWarning, module="torch")
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - a bad file raises many types; none is shown
        if isinstance(exc, pickle.UnpicklingError) and contains_code(path):
            raise ReadError(
                f"{path}: refused: this {what} contains Python code (pickled objects), which "
                "napari-segeval never runs; re-save its state dict with "
                "torch.save(model.state_dict(), ...)"
            ) from None
        raise ReadError(
            f"{path}: not a readable {what} (truncated, corrupt, or not a PyTorch file)"
        ) from None


def load_state_strict(module: Any, state: Any, path: str | Path, what: str, model: str) -> None:
    """``module.load_state_dict(state, strict=True)`` with a one-line error on any mismatch."""
    torch = check_torch()
    if not isinstance(state, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise content_error(path, what, "expected a state dict (names to tensors)")
    own = module.state_dict()
    keys = {
        "missing": [k for k in own if k not in state],
        "unexpected": [k for k in state if k not in own],
    }
    problems = [
        f"{len(ks)} {kind} keys (e.g. {', '.join(ks[:3])})" for kind, ks in keys.items() if ks
    ]
    if not problems:
        wrong = [
            f"{k}: {tuple(state[k].shape)} in the file, {tuple(v.shape)} in the model"
            for k, v in own.items()
            if tuple(state[k].shape) != tuple(v.shape)
        ]
        if wrong:
            problems.append(
                f"{len(wrong)} tensors have the wrong shape (e.g. {'; '.join(wrong[:3])})"
            )
    if problems:
        raise ReadError(f"{path}: this {what} does not fit {model}: {', '.join(problems)}")
    try:
        module.load_state_dict(dict(state), strict=True)
    except (RuntimeError, TypeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise ReadError(f"{path}: this {what} does not fit {model}: {first}") from None
