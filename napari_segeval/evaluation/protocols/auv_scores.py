"""AUV of a data set's cases (Li et al. 2026), its scores files (JSON or CSV), and filtered
training lists; used by ``segeval uncertainty score``/``filter`` and the ``li2026`` preset.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from napari_segeval._atomic import atomic_write_text
from napari_segeval._errors import ReadError, SegEvalError, WriteError
from napari_segeval._json import json_safe

FORMAT = "napari-segeval-auv/1"
METHOD = (
    "Aleatoric Uncertainty Value (Li et al., CVPR 2026): normalized entropy of the "
    "singular-value energy of each class's decoded map, summed over classes, "
    "log-min-max normalized over the cases (1 = most uncertain)"
)
CSV_COLUMNS = (
    "case",
    "split",
    "case_scale",
    "case_auv",
    "structure",
    "label",
    "n_voxels",
    "scale",
    "auv",
    "note",
    "error",
)


def resolve_model(model: str | None, checkpoint: str | None) -> tuple[str, str | None, str]:
    """``(reference, checkpoint, note)``: ``auto``/None: MedSAM2 with a checkpoint, else built-in."""
    ref = model or "auto"
    paper = "MedSAM2 (frozen), as in the paper"
    if ref == "auto" and checkpoint:
        return "medsam2", checkpoint, paper
    if ref == "auto":
        note = "built-in promptable model: no MedSAM2 checkpoint was given"
        return "builtin", None, f"{note} (the paper uses a frozen MedSAM2)"
    from napari_segeval.models.registry import split_ref

    medsam2 = split_ref(ref)[0] == "medsam2"
    return ref, checkpoint, paper if medsam2 else f"{ref}: not the paper's MedSAM2"


def score_cases(
    specs: Sequence[Any],
    *,
    model: str | None = "auto",
    checkpoint: str | None = None,
    device: Any = None,
    layout: str = "D_HW",
    power: float = 2.0,
    aggregate: str = "sum",
    grid: Sequence[int] | None = None,
    ct_mapping: str = "window",
    resize: str = "float",
    threads: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: Any = None,
) -> dict:
    """The AUV record of ``specs`` (case records with labels).

    ``model``/``checkpoint`` as :func:`resolve_model`; ``layout``, ``power``, ``aggregate``
    and ``grid`` as :func:`napari_segeval.uncertainty.class_scales` takes them; ``ct_mapping``
    and ``resize`` are the backend's preprocessing (``resize``: MedSAM2 only); ``threads``
    sets torch's CPU threads (None: unchanged); ``progress(done, total)`` counts cases. A case
    that cannot be read or scored keeps NaN values and its ``error``.
    """
    import contextlib

    from napari_segeval._cancel import Cancelled
    from napari_segeval.evaluation.protocols import _common as C
    from napari_segeval.metrics import structures_to_score
    from napari_segeval.models.dense.unet2d import TorchThreads
    from napari_segeval.models.registry import load_promptable
    from napari_segeval.uncertainty import auv_table, class_scales, feature_kind

    ref, ckpt, note = resolve_model(model, checkpoint)
    net = load_promptable(ref, checkpoint=ckpt, device=device or "auto")
    offers_resize = bool(net.capabilities.resize_modes)  # MedSAM2: float or Pillow resize
    if offers_resize:
        net = net.with_options(resize=resize)
    rows: dict[str, dict] = {}
    if progress is not None:
        progress(0, len(specs))
    opts: dict[str, Any] = {
        "layout": layout,
        "power": power,
        "grid": grid,
        "ct_mapping": ct_mapping,
    }
    with TorchThreads(threads) if threads else contextlib.nullcontext():
        for i, spec in enumerate(specs):
            entry: dict = {"case": spec.case_id, "split": spec.split, "classes": [], "error": None}
            try:
                if spec.error:
                    raise SegEvalError(spec.error)
                case = C.load_case(spec)
                # the named classes and every other id present, as "label N"
                structures = structures_to_score(spec.structures or case.structures, case.labels)
                entry["classes"] = class_scales(net, case, structures, cancel=cancel, **opts)
            except Cancelled:
                raise
            except Exception as exc:  # noqa: BLE001 - a broken case is recorded, the rest scored
                entry["error"] = (
                    str(exc) if isinstance(exc, SegEvalError) else f"{type(exc).__name__}: {exc}"
                )
            rows[spec.case_id] = entry
            if progress is not None:
                progress(i + 1, len(specs))
    table = auv_table(
        {c: {r["name"]: r["scale"] for r in e["classes"]} for c, e in rows.items()}, aggregate
    )
    cases = []
    for c, e in rows.items():
        per = table["classes"].get(c, {})
        classes = [{**r, "auv": per.get(r["name"], {}).get("auv", math.nan)} for r in e["classes"]]
        head = {"case": c, "split": e["split"], **table["cases"][c]}
        cases.append({**head, "classes": classes, "error": e["error"]})
    return {
        "format": FORMAT,
        "method": METHOD,
        "model": {
            "name": ref,
            "checkpoint": str(ckpt) if ckpt else None,
            "feature": feature_kind(net),
            "note": note,
        },
        "layout": layout,
        "energy_power": power,
        "aggregate": aggregate,
        "grid": list(grid) if grid else None,
        "ct_mapping": ct_mapping,
        "resize": net.resize if offers_resize else None,
        "cases": cases,
    }


def auv_of(record: dict) -> dict[str, float]:
    """``{case: AUV}`` of a scores record (NaN where unscored)."""
    return {
        c["case"]: (math.nan if c.get("auv") is None else float(c["auv"]))
        for c in record.get("cases", [])
    }


def csv_text(record: dict) -> str:
    """One CSV row per case and class (a case without classes gets one row)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)

    def num(v) -> str:
        return "" if v is None or (isinstance(v, float) and math.isnan(v)) else repr(float(v))

    for c in record["cases"]:
        head = [c["case"], c.get("split") or "", num(c.get("scale")), num(c.get("auv"))]
        for r in c.get("classes") or [{}]:
            names = [r.get(k, "") for k in ("name", "label", "n_voxels")]
            tail = [num(r.get("scale")), num(r.get("auv")), r.get("note", ""), c.get("error") or ""]
            w.writerow(head + names + tail)
    return buf.getvalue()


def write_scores(path: str | os.PathLike, record: dict, *, overwrite: bool = False) -> Path:
    """Write the record as JSON (``.json``) or CSV (any other suffix), atomically."""
    path = Path(path)
    text = (
        json.dumps(json_safe(record), indent=1)
        if path.suffix.lower() == ".json"
        else csv_text(record)
    )
    return atomic_write_text(path, text, overwrite=overwrite)


def read_scores(path: str | os.PathLike) -> dict:
    """Read a scores file written by :func:`write_scores` (JSON or CSV)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReadError(f"{path}: cannot read the scores file ({exc.strerror or exc})") from None
    if path.suffix.lower() == ".json":
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise ReadError(f"{path}: not JSON ({exc})") from None
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            raise ReadError(
                f"{path}: not a scores file of segeval uncertainty score (format {FORMAT})"
            )
        cases = record.get("cases")
        if not isinstance(cases, list) or not all(
            isinstance(c, dict) and isinstance(c.get("case"), str) for c in cases
        ):
            raise ReadError(
                f'{path}: not a scores file of segeval uncertainty score ("cases" '
                'must be a list of {"case": ID, "auv": NUMBER or null})'
            )
        for c in cases:
            auv = c.get("auv")
            if auv is not None and (isinstance(auv, bool) or not isinstance(auv, (int, float))):
                raise ReadError(f"{path}: case {c['case']}: auv {auv!r} is not a number")
        return record
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows or not {"case", "case_auv"} <= set(rows[0]):
        raise ReadError(
            f"{path}: not a scores CSV of segeval uncertainty score (columns case, case_auv)"
        )
    by_case: dict[str, dict] = {}
    for r in rows:
        v = (r["case_auv"] or "").strip()
        try:
            auv = float(v) if v else None
        except ValueError:
            raise ReadError(f"{path}: case {r['case']}: case_auv {v!r} is not a number") from None
        by_case.setdefault(
            r["case"], {"case": r["case"], "split": r.get("split") or None, "auv": auv}
        )
    return {"format": FORMAT, "cases": list(by_case.values())}


def write_filtered_lists(
    out_dir: str | os.PathLike,
    removed: Sequence[str],
    *,
    train_ids: Sequence[str],
    splits: list | None = None,
    dataset: dict | None = None,
    overwrite: bool = False,
) -> dict:
    """Write ``splits_final.json`` (and ``dataset.json`` when given) without ``removed``; returns
    what was written. ``splits``: the data set's (else five folds as nnU-Net makes them).
    """
    from napari_segeval.uncertainty.training_lists import (
        crossval_splits,
        filter_dataset_json,
        filter_splits,
    )

    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(f"{out}: cannot create the output folder ({exc.strerror or exc})") from exc
    source = "the data set's splits_final.json"
    if splits is None:
        source = "5 folds made like nnU-Net's (shuffled k-fold, seed 12345, sorted ids)"
    text = json.dumps(
        filter_splits(crossval_splits(train_ids) if splits is None else splits, removed), indent=1
    )
    path = atomic_write_text(out / "splits_final.json", text, overwrite=overwrite)
    written: dict[str, Any] = {"splits_final.json": str(path), "splits_source": source}
    if dataset is not None:
        filtered, dropped = filter_dataset_json(dataset, removed)
        path = atomic_write_text(
            out / "dataset.json", json.dumps(filtered, indent=4), overwrite=overwrite
        )
        written.update({"dataset.json": str(path), "dataset_json_dropped": dropped})
    return written


__all__ = [
    "CSV_COLUMNS",
    "FORMAT",
    "auv_of",
    "csv_text",
    "read_scores",
    "resolve_model",
    "score_cases",
    "write_filtered_lists",
    "write_scores",
]
