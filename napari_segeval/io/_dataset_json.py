"""MSD / nnU-Net ``dataset.json``: structure names, modality hints and colour tables
(``"color_table"``: label id to ``[R, G, B]`` or one grey value; ``--color-table`` reads
the same form).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from napari_segeval._errors import InvalidLabelsError, ReadError

_MR_NAMES = {"MR", "MRI", "T1", "T1W", "T1GD", "T1C", "T2", "T2W", "FLAIR", "ADC", "DWI", "PD"}
#: Modality names of DICOM (0008,0060) and dataset.json -> ours (MR sequences: _MR_NAMES).
_NAMES = {
    "CT": "CT",
    "MR": "MR",
    "US": "US",
    "ULTRASOUND": "US",
    "PT": "PET",
    "PET": "PET",
    "ES": "endoscopy",
    "ENDOSCOPY": "endoscopy",
    "DMS": "dermoscopy",
    "DERMOSCOPY": "dermoscopy",
}


def load_dataset_json(path: str | Path) -> dict:
    """Load an MSD/nnU-Net ``dataset.json`` (a file, or a folder containing one)."""
    p = Path(path)
    if p.is_dir():
        p = p / "dataset.json"
    data = read_json(p, "dataset.json")
    if not isinstance(data, dict):
        raise ReadError(f"{p}: dataset.json must hold a JSON object, not {type(data).__name__}")
    if data.get("labels") and not isinstance(data["labels"], dict):
        raise ReadError(f"{p}: 'labels' must be an object, got {type(data['labels']).__name__}")
    return data


def structure_names(dataset_json: dict) -> dict[int, str]:
    """Label id -> name from ``dataset_json["labels"]`` (MSD or nnU-Net v2 form), without 0.

    nnU-Net region entries (lists of ids) are skipped.
    """
    labels = dataset_json.get("labels") or {}
    if not isinstance(labels, dict):
        raise ReadError(f"dataset.json 'labels' must be an object, got {type(labels).__name__}")
    out: dict[int, str] = {}
    for key, value in labels.items():
        if str(key).strip().lstrip("-").isdigit() and isinstance(value, str):
            out[int(key)] = value
        elif (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and value.strip().isdigit()
        ):
            out[int(value)] = str(key)
    out.pop(0, None)
    return dict(sorted(out.items()))


def dataset_modality(dataset_json: dict) -> str | None:
    """Modality of channel 0 from ``"modality"`` (MSD) or ``"channel_names"`` (nnU-Net v2)."""
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


def dataset_channels(dataset_json: dict) -> tuple[str, ...]:
    """Channel names in index order from ``"modality"`` or ``"channel_names"`` (may be empty)."""
    entry = dataset_json.get("modality") or dataset_json.get("channel_names")
    if isinstance(entry, str):
        return (entry,)
    if not isinstance(entry, dict):
        return ()
    keyed = {int(k): str(v) for k, v in entry.items() if str(k).strip().isdigit()}
    return tuple(keyed[k] for k in sorted(keyed))


def find_dataset_json(path: str | Path, levels: int = 3) -> Path | None:
    """The nearest ``dataset.json`` in the file's folder or up to ``levels - 1`` above it."""
    p = Path(path).resolve()
    folder = p if p.is_dir() else p.parent
    found = (f / "dataset.json" for f in [folder, *folder.parents][:levels])
    return next((f for f in found if f.is_file()), None)


def read_json(path: Path, what: str) -> object:
    """The JSON value of ``path``; :class:`ReadError` naming it as ``what`` when it cannot."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ReadError(f"{path}: {what} not found") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReadError(f"{path}: cannot read {what} ({exc})") from exc


def parse_json_color_table(
    table: object, source: str | Path, names: dict[int, str] | None = None
) -> dict:
    """Check a JSON colour table ``{"id": [R, G, B] | grey}``; return ``{colour: (id, name) | id}``
    (:class:`InvalidLabelsError` naming ``source`` and the first bad entry)."""
    names = names or {}
    if not isinstance(table, dict) or not table:
        raise InvalidLabelsError(
            f"{source}: colour table must be a JSON object such as "
            f'{{"1": [255, 0, 0], "2": [0, 255, 0]}} (label id: colour)'
        )
    out: dict = {}
    widths = set()
    for key, colour in table.items():
        if not str(key).strip().isdigit():
            raise InvalidLabelsError(
                f'{source}: colour table key "{key}" is not a label id (expected "1", "2", ...)'
            )
        values = colour if isinstance(colour, list) else [colour]
        ok = len(values) in (1, 3) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 255
            for v in values
        )
        if not ok:
            raise InvalidLabelsError(
                f'{source}: colour table entry "{key}": expected '
                f"[R, G, B] (0-255) or one grey value, got {colour!r}"
            )
        widths.add(len(values))
        rgb = tuple(round(v) for v in values)
        colour_key = rgb if len(rgb) == 3 else rgb[0]
        label = int(key)
        if colour_key in out:
            raise InvalidLabelsError(f"{source}: colour {list(rgb)} is given to two label ids")
        out[colour_key] = (label, names[label]) if label in names else label
    if len(widths) > 1:
        raise InvalidLabelsError(f"{source}: colour table mixes RGB and grey colours")
    return out


def dataset_color_table(dataset_json: dict, source: str | Path) -> dict | None:
    """The reader's colour table from ``dataset_json["color_table"]`` (None when absent)."""
    table = dataset_json.get("color_table")
    if table is None:
        return None
    return parse_json_color_table(table, source, structure_names(dataset_json))


def load_color_table(path: str | Path) -> dict:
    """Read a colour table file: ``{"1": [R, G, B], ...}`` or an object with ``"color_table"``.

    Names come from the file's ``"labels"`` when it has them (a ``dataset.json``).
    """
    p = Path(path)
    data = read_json(p, "colour table")
    if isinstance(data, dict) and "color_table" in data:
        try:
            names = structure_names(data)
        except ReadError:
            names = {}
        return parse_json_color_table(data["color_table"], p, names)
    return parse_json_color_table(data, p)


def from_dicom(tag: str | None) -> str | None:
    """Map a DICOM Modality value to ours (``None`` when absent)."""
    if not tag:
        return None
    return _NAMES.get(tag.strip().upper(), "other")


def guess_modality(image: np.ndarray, axes: str) -> str:
    """Colour is endoscopy, grey video US, whole-numbered voxels with minimum <= -500 CT."""
    if axes.endswith("c"):
        return "endoscopy"
    if axes == "tyx":
        return "US"
    if image.dtype.kind in "iuf" and image.size:
        lo = np.nanmin(image) if image.dtype.kind == "f" else image.min()  # NaN: padding
        if lo <= -500:
            sample = image.ravel()[:: max(1, image.size // 100_000)]
            if image.dtype.kind == "f":
                sample = sample[np.isfinite(sample)]
            if image.dtype.kind in "iu" or np.all(sample == np.round(sample)):
                return "CT"
    return "other"
