"""MSD / nnU-Net ``dataset.json``: structure names and modality hints."""

from __future__ import annotations

import json
from pathlib import Path

from napari_segeval._errors import ReadError

_MR_NAMES = {"MR", "MRI", "T1", "T1W", "T1GD", "T1C", "T2", "T2W", "FLAIR", "ADC", "DWI", "PD"}
_NAMES = {"CT": "CT", "US": "US", "ULTRASOUND": "US", "PET": "PET", "PT": "PET"}


def load_dataset_json(path: str | Path) -> dict:
    """Load an MSD/nnU-Net ``dataset.json`` (a file, or a folder containing one).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "dataset.json").write_text(json.dumps({"labels": {"0": "bg", "1": "liver"}}))
    >>> load_dataset_json(d)["labels"]
    {'0': 'bg', '1': 'liver'}
    """
    p = Path(path)
    if p.is_dir():
        p = p / "dataset.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ReadError(f"{p}: dataset.json not found") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReadError(f"{p}: cannot read dataset.json ({exc})") from exc
    if not isinstance(data, dict):
        raise ReadError(f"{p}: dataset.json must hold a JSON object, not {type(data).__name__}")
    return data


def structure_names(dataset_json: dict) -> dict[int, str]:
    """Label id -> name from ``dataset_json["labels"]``, background (0) left out.

    Accepts the MSD form ``{"0": "background", "1": "liver"}`` and the nnU-Net v2
    form ``{"background": 0, "liver": 1}``; nnU-Net region entries (lists of ids)
    are not single labels and are skipped.

    Examples
    --------
    >>> structure_names({"labels": {"0": "background", "1": "liver", "2": "cancer"}})
    {1: 'liver', 2: 'cancer'}
    >>> structure_names({"labels": {"background": 0, "liver": 1, "whole": [1, 2]}})
    {1: 'liver'}
    """
    labels = dataset_json.get("labels") or {}
    if not isinstance(labels, dict):
        raise ReadError(f"dataset.json 'labels' must be an object, got {type(labels).__name__}")
    out: dict[int, str] = {}
    for key, value in labels.items():
        if str(key).strip().lstrip("-").isdigit() and isinstance(value, str):
            out[int(key)] = value
        elif isinstance(value, int) and not isinstance(value, bool):
            out[int(value)] = str(key)
        elif isinstance(value, str) and value.strip().isdigit():
            out[int(value)] = str(key)
    out.pop(0, None)
    return dict(sorted(out.items()))


def dataset_modality(dataset_json: dict) -> str | None:
    """Modality of channel 0 from ``"modality"`` (MSD) or ``"channel_names"`` (nnU-Net v2).

    Examples
    --------
    >>> dataset_modality({"modality": {"0": "CT"}}), dataset_modality({"modality": {"0": "FLAIR"}})
    ('CT', 'MR')
    """
    entry = dataset_json.get("modality") or dataset_json.get("channel_names")
    if isinstance(entry, dict) and entry:
        entry = entry.get("0", next(iter(entry.values())))
    if not isinstance(entry, str):
        return None
    name = entry.strip().upper()
    if name in _NAMES:
        return _NAMES[name]
    if name in _MR_NAMES or name.startswith(("T1", "T2", "MR")):
        return "MR"
    return "other"


def find_dataset_json(path: str | Path, levels: int = 3) -> Path | None:
    """The nearest ``dataset.json`` in the file's folder or up to ``levels - 1`` above it."""
    p = Path(path).resolve()
    folder = p if p.is_dir() else p.parent
    for _ in range(levels):
        candidate = folder / "dataset.json"
        if candidate.is_file():
            return candidate
        if folder.parent == folder:
            break
        folder = folder.parent
    return None
