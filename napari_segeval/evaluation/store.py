"""The results folder (layout: docs/design.md): case records, run metadata, result rows.

A case's ``.json`` is written last, after its prediction files
(``DIR/predictions/<safe case id>/<safe key>.<ext>``, encoded by workers with
:func:`encode_arrays`), so its presence means the case is complete: a re-run skips it and
never overwrites its files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._atomic import atomic_open, atomic_write_bytes, atomic_write_text
from napari_segeval._errors import ReadError, SegEvalError, WriteError
from napari_segeval._json import json_safe
from napari_segeval.evaluation.keys import PredictionKey, is_image_key

_SAFE = re.compile(r"[^A-Za-z0-9._-]")

#: Folder of the saved predictions inside a results folder.
PREDICTIONS = "predictions"


def case_filename(case_id: str) -> str:
    """A file-system-safe, collision-free stem for a case id."""
    safe = _SAFE.sub("_", case_id).lstrip(".") or "case"
    if safe != case_id:
        safe += "-" + hashlib.sha1(case_id.encode()).hexdigest()[:8]
    return safe


def relative_path(case_id: str, key: str | PredictionKey, ext: str) -> str:
    """``predictions/<safe case>/<safe key><ext>`` (POSIX separators, relative to DIR)."""
    return f"{PREDICTIONS}/{case_filename(case_id)}/{case_filename(str(key))}{ext}"


def encode_arrays(case_id: str, arrays) -> dict[str, tuple[str, bytes]]:
    """A case's CaseArrays as ``{key: (relative path, bytes)}``, in the source's format."""
    from napari_segeval.io import write_image, write_labels
    from napari_segeval.io._formats import output_formats

    label_ext, image_ext = output_formats(arrays.source, arrays.axes)
    out: dict[str, tuple[str, bytes]] = {}
    with tempfile.TemporaryDirectory(prefix="segeval-files-") as tmp:
        for key, array in arrays.arrays.items():
            image = is_image_key(key)
            rel = relative_path(case_id, key, image_ext if image else label_ext)
            path = Path(tmp) / Path(rel).name
            geometry = arrays.geometry
            if image and arrays.axes == "czyx" and np.ndim(array) == geometry.ndim + 1:
                geometry = geometry.stacked()  # channels first: a 4D file, as MSD's
            (write_image if image else write_labels)(path, array, geometry)
            out[key] = (rel, path.read_bytes())
            path.unlink()
    return out


def write_json(path: str | os.PathLike, payload: Mapping) -> Path:
    """Strict JSON (NaN -> null, inf -> "inf") written atomically, replacing ``path``."""
    text = json.dumps(json_safe(payload), indent=1, allow_nan=False)
    return atomic_write_text(path, text, overwrite=True)


def read_json(path: str | os.PathLike) -> dict:
    """Read a JSON object, raising :class:`ReadError` with the file name."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReadError(f"{path}: cannot read JSON ({exc})") from exc


def case_path(output_dir: str | os.PathLike, case_id: str) -> Path:
    """``DIR/cases/<safe id>.json``."""
    return Path(output_dir) / "cases" / f"{case_filename(case_id)}.json"


def is_done(output_dir: str | os.PathLike, case_id: str) -> bool:
    """True when a complete record of the case exists."""
    return case_path(output_dir, case_id).is_file()


def write_files(
    output_dir: str | os.PathLike, case_id: str, payload: Mapping[str, tuple[str, bytes]]
) -> dict[str, str]:
    """Write a case's encoded files (:func:`encode_arrays`)
    atomically; ``{key: path relative to DIR}``. WriteError when the case already has a record
    or a path leaves ``DIR/predictions``.
    """
    out = Path(output_dir)
    if is_done(out, case_id):
        raise WriteError(
            f"{case_path(out, case_id)}: case {case_id} is finished; its "
            "prediction files are not overwritten"
        )
    folder = (out / PREDICTIONS).resolve()
    files = {}
    for key, (rel, data) in payload.items():
        target = (out / rel).resolve()
        if folder not in target.parents:
            raise WriteError(f"{rel}: prediction file outside {folder}")
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, data, overwrite=True)
        files[key] = rel
    return files


def write_case(output_dir: str | os.PathLike, record: dict) -> Path:
    """Write one case record: ``record["payload"]`` as files (:func:`write_files`), its
    ``views`` to ``<id>.npz``, then the JSON (listing the files and view names), each atomically.
    """
    path = case_path(output_dir, record["case"])
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = record.pop("payload", None)
    if payload is not None:
        record["files"] = write_files(output_dir, record["case"], payload)
    views = record.pop("views", None) or {}
    record["views"] = sorted(views)
    if views:
        with atomic_open(path.with_suffix(".npz"), "wb", overwrite=True) as fh:
            arrays: dict[str, Any] = {k: np.asarray(v) for k, v in views.items()}
            np.savez_compressed(fh, **arrays)
    return write_json(path, record)


def read_case(output_dir: str | os.PathLike, case_id: str) -> dict | None:
    """The record of a case, or None when it has not finished."""
    path = case_path(output_dir, case_id)
    return read_json(path) if path.is_file() else None


def read_views(output_dir: str | os.PathLike, case_id: str) -> dict[str, np.ndarray]:
    """Thumbnail slices of a case (empty when none were saved)."""
    npz = case_path(output_dir, case_id).with_suffix(".npz")
    if not npz.is_file():
        return {}
    with np.load(npz, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def load_records(output_dir: str | os.PathLike) -> tuple[list[dict], list[dict]]:
    """``(case specs, finished records)`` of a results folder, in case order."""
    out = Path(output_dir)
    cases = read_json(out / "cases.json")["cases"]
    records = [r for r in (read_case(out, c["case_id"]) for c in cases) if r is not None]
    return cases, records


def check_run(output_dir: str | os.PathLike, run_info: dict, resume: bool) -> None:
    """Write ``run.json``, or (SegEvalError) refuse to resume a run of another protocol,
    version or parameters.
    """
    out = Path(output_dir)
    if resume and (path := out / "run.json").is_file():
        old = read_json(path)
        if not isinstance(old, dict):
            raise ReadError(
                f"{path}: not a results record (not a JSON object); use another "
                "--output-dir, or --restart to discard it"
            )
        keys = ("protocol", "protocol_version", "preset", "params")
        if json.dumps([old.get(k) for k in keys], sort_keys=True) != json.dumps(
            [run_info.get(k) for k in keys], sort_keys=True
        ):
            raise SegEvalError(
                f"{out} holds results of {old.get('protocol')} {old.get('protocol_version')} "
                f"(preset {old.get('preset') or 'none'}) with parameters {old.get('params')}; "
                "resume needs the same recipe "
                "(use another --output-dir, or --restart to discard them)"
            )
    write_json(out / "run.json", run_info)


def clear_cases(output_dir: str | os.PathLike) -> int:
    """Delete the case records and prediction files of a previous run (for a restart);
    corrections stay. Returns how many records were deleted.
    """
    records = list((Path(output_dir) / "cases").glob("*.json"))
    for p in records + list((Path(output_dir) / "cases").glob("*.npz")):
        p.unlink()
    predictions = Path(output_dir) / "predictions"
    for case_dir in predictions.iterdir() if predictions.is_dir() else []:
        if case_dir.is_dir() and not case_dir.is_symlink():
            for f in case_dir.iterdir():
                if f.is_file() or f.is_symlink():
                    f.unlink()
            if not any(case_dir.iterdir()):
                case_dir.rmdir()
    return len(records)


def save_correction(
    output_dir: Path, case_id: str, name: str, labels: Any, geometry: Any, ext: str, prompts: Any
) -> Path:
    """Save a corrected label map as ``DIR/corrections/<case>/<name>[-k].<ext>`` (never over a
    file) with ``prompts`` beside it as ``<name>[-k].prompts.json`` (else the map is removed).
    """
    from napari_segeval.io import write_labels
    from napari_segeval.prompts.prompt_file import write_prompts

    folder = output_dir / "corrections" / case_filename(case_id)
    folder.mkdir(parents=True, exist_ok=True)
    stem = case_filename(name)
    for n in range(1, 10000):
        base = f"{stem}{'' if n == 1 else f'-{n}'}"
        target, beside = folder / f"{base}{ext}", folder / f"{base}.prompts.json"
        if target.exists() or (prompts is not None and beside.exists()):
            continue
        try:
            out = write_labels(target, np.asarray(labels), geometry)
        except WriteError:
            if not target.exists():
                raise
            continue
        if prompts is not None:
            try:
                write_prompts(beside, prompts)
            except BaseException:
                out.unlink(missing_ok=True)
                raise
        return out
    raise WriteError(f"{folder}: too many corrections named {stem}")


def slice_rows(records: Iterable[dict]) -> list[dict]:
    """The ``slices.csv`` rows of the ok records (empty for a run that wrote none)."""
    return [r for rec in records if rec.get("status") == "ok" for r in rec.get("slices") or []]


def result_rows(records: Iterable[dict]) -> list[dict]:
    """Flatten case records to results rows: ok rows as they are, one row per failure."""
    rows: list[dict] = []
    for rec in records:
        if rec.get("status") == "ok":
            rows.extend(rec.get("rows") or [])
        else:
            ids = {k: rec.get(k) for k in ("protocol", "protocol_version", "fold", "split")}
            head = {"case": rec["case"], "structure": "", "condition": "", "status": "error"}
            rows.append({**head, "error": rec.get("error", ""), **ids})
    return rows


__all__ = [
    "PREDICTIONS",
    "case_filename",
    "case_path",
    "check_run",
    "clear_cases",
    "encode_arrays",
    "is_done",
    "load_records",
    "read_case",
    "read_json",
    "read_views",
    "relative_path",
    "result_rows",
    "save_correction",
    "slice_rows",
    "write_case",
    "write_files",
    "write_json",
]
