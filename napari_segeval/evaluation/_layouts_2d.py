"""Layouts of 2D and echo data sets: CAMUS, ISIC 2018 task 1, NeoPolyp, generic pairs.

Patient groups come from what each data set publishes (docs/design.md, "Data-set layouts").
"""

from __future__ import annotations

import csv
import glob as _glob
import re
from pathlib import Path

import numpy as np

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation._spec import CaseSpec, inside, spec_maker
from napari_segeval.io._formats import IMAGE_SUFFIXES, natural_key, stem, suffix

CAMUS_STRUCTURES = {1: "lv_cavity", 2: "myocardium", 3: "left_atrium"}
ISIC_STRUCTURES = {1: "lesion"}
NEOPOLYP_STRUCTURES = {1: "neoplastic", 2: "non_neoplastic"}
#: NeoPolyp masks: red = neoplastic, green = non-neoplastic (black background).
NEOPOLYP_COLORS = {"1": [255, 0, 0], "2": [0, 255, 0]}
_CAMUS_GT = ("_gt.mhd", "_gt.mha", "_gt.nii.gz", "_gt.nii")
_CAMUS_NAME = re.compile(
    r"^(?P<patient>.*?)(?:_(?P<view>[24]CH))?_(?P<phase>ED|ES|half_sequence|sequence)$",
    re.IGNORECASE,
)


def _all_files(root: Path) -> list[Path]:
    out = [p for p in root.rglob("*") if p.is_file() and suffix(p) in IMAGE_SUFFIXES]
    return sorted(out, key=lambda p: natural_key(str(p)))


def camus_pairs(root: Path) -> list[tuple[Path, Path]]:
    """``(image, ground truth)`` pairs named ``X.ext`` / ``X_gt.ext`` under ``root``."""
    pairs = []
    for p in sorted(root.rglob("*_gt.*"), key=lambda q: natural_key(str(q))):
        name = p.name
        end = next((e for e in _CAMUS_GT if name.endswith(e)), None)
        if end is None:
            continue
        image = p.with_name(name[: -len(end)] + end[3:])
        if image.is_file():
            pairs.append((image, p))
    return pairs


def _camus_split(root: Path) -> dict[str, str]:
    """Patient -> split from CAMUS ``database_split/subgroup_*.txt`` files, if present."""
    out: dict[str, str] = {}
    for split, name in (("train", "training"), ("val", "validation"), ("test", "testing")):
        for f in root.rglob(f"subgroup_{name}.txt"):
            for line in f.read_text(encoding="utf-8", errors="replace").split():
                out[line.strip()] = split
    return out


def parse_camus(root: str | Path, mode: str | None = None) -> list[CaseSpec]:
    """CAMUS echocardiography: ``patientXXXX_{2CH,4CH}_{ED,ES,half_sequence}[_gt]``, each
    case's ``group`` its patient; ``mode``: the ED/ES frames, the (half) sequences, or all
    (None: the frames, else the sequences).
    """
    if mode is None:
        return parse_camus(root, "frames") or parse_camus(root, "sequences")
    if mode not in ("frames", "sequences", "all"):
        raise SegEvalError(f"CAMUS mode must be frames, sequences or all, got {mode!r}")
    root = Path(root)
    splits = _camus_split(root)
    spec, specs = spec_maker("camus", root, CAMUS_STRUCTURES, "US"), []
    for image, gt in camus_pairs(root):
        m = _CAMUS_NAME.match(stem(image))
        phase = m.group("phase") if m else ""
        is_seq = phase.lower().endswith("sequence")
        if (mode == "frames" and (not m or is_seq)) or (mode == "sequences" and not is_seq):
            continue
        patient = m.group("patient") if m else stem(image)
        view = (m.group("view") or "") if m else ""
        meta = {"patient": patient, "view": view, "phase": "sequence" if is_seq else phase.upper()}
        split = splits.get(patient, "train")
        specs.append(spec(stem(image), image, gt, split, meta=meta, group=patient))
    return specs


def _split_from_path(path: Path) -> str:
    text = str(path).lower()
    if "test" in text:
        return "test"
    if "validation" in text or "/val" in text:
        return "val"
    return "train"


#: Columns of an ISIC Archive metadata CSV: the image id, then the group ids by preference.
_ISIC_ID_COLUMNS = ("isic_id", "image_id", "image")
_ISIC_GROUP_COLUMNS = ("patient_id", "lesion_id")
_ISIC_IMAGES = (".jpg", ".jpeg", ".png")


def _isic_metadata_rows(root: Path):
    """``(image id, [(column, id), ...])`` for every row of the metadata CSVs under ``root``."""
    for path in sorted(root.rglob("*.csv"), key=lambda q: natural_key(str(q))):
        try:
            with open(path, newline="", encoding="utf-8", errors="replace") as fh:
                reader = csv.DictReader(fh)
                header = [(h or "").strip() for h in (reader.fieldnames or [])]
                key = next((c for c in _ISIC_ID_COLUMNS if c in header), None)
                if key is None or not any(c in header for c in _ISIC_GROUP_COLUMNS):
                    continue
                for raw in reader:
                    row = {
                        (k or "").strip(): v.strip() for k, v in raw.items() if isinstance(v, str)
                    }
                    ids = [(c, row[c]) for c in _ISIC_GROUP_COLUMNS if row.get(c)]
                    if row.get(key) and ids:
                        yield row[key], ids
        except (OSError, csv.Error):
            continue


def isic_groups(root: str | Path) -> dict[str, str]:
    """Image id -> group from ISIC Archive metadata CSVs under ``root``.

    The ISIC Archive export (``isic_id, ..., lesion_id, patient_id``) and HAM10000's
    ``HAM10000_metadata.csv`` say which images show one patient or lesion. Images sharing
    a patient or a lesion (directly or through other images) form one group named by its
    smallest id; CSVs without those columns are ignored.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    edges = [
        (f"image:{image}", f"{column.split('_')[0]}:{value}")
        for image, ids in _isic_metadata_rows(Path(root))
        for column, value in ids
    ]
    nodes = sorted({n for edge in edges for n in edge})
    if not nodes:
        return {}
    index = {n: i for i, n in enumerate(nodes)}
    ends = np.array([[index[a], index[b]] for a, b in edges], int)
    graph = coo_matrix((np.ones(len(edges)), (ends[:, 0], ends[:, 1])), shape=(len(nodes),) * 2)
    part = connected_components(graph, directed=False)[1]
    names: dict[int, str] = {}  # each component is named by its smallest non-image id
    for n in nodes:
        if not n.startswith("image:"):
            names.setdefault(int(part[index[n]]), n)
    images = [n for n in nodes if n.startswith("image:")]
    return {n.removeprefix("image:"): names[int(part[index[n]])] for n in images}


def parse_isic(root: str | Path) -> list[CaseSpec]:
    """ISIC 2018 task 1: ``ISIC_XXXXXXX.jpg`` with ``ISIC_XXXXXXX_segmentation.png`` in one folder
    or the official ``*_Input`` / ``*_GroundTruth`` ones; the split from the folder names.
    """
    root = Path(root)
    files = _all_files(root)
    tail = "_segmentation"
    masks = {stem(p).removesuffix(tail): p for p in files if stem(p).endswith(tail)}
    groups = isic_groups(root)
    spec, specs = spec_maker("isic", root, ISIC_STRUCTURES, "dermoscopy"), []
    for p in files:
        s = stem(p)
        if s.endswith(("_segmentation", "_superpixels")) or suffix(p) not in _ISIC_IMAGES:
            continue
        split = _split_from_path(p.relative_to(root))
        specs.append(spec(s, p, masks.get(s), split, group=groups.get(s)))
    return specs


def _is_neopolyp_mask(p: Path, root: Path) -> bool:
    parts = [q.lower() for q in p.relative_to(root).parts[:-1]]
    return stem(p).endswith("_mask") or any(q.endswith("gt") for q in parts)


def neopolyp_pairs(root: Path) -> list[tuple[Path, Path | None]]:
    """``(image, mask or None)``: masks named ``X_mask.*`` or inside a ``*_gt`` folder."""
    files = _all_files(root)
    masks = {stem(p).removesuffix("_mask"): p for p in files if _is_neopolyp_mask(p, root)}
    if not masks:
        return []
    return [(p, masks.get(stem(p))) for p in files if not _is_neopolyp_mask(p, root)]


def parse_neopolyp(root: str | Path) -> list[CaseSpec]:
    """NeoPolyp (BKAI-IGH): RGB endoscopy with RGB-coded masks (red neoplastic, green not).

    Masks are ``X_mask.png`` beside ``X.png``, or same-named files in a ``train_gt`` folder;
    images without a mask are test cases.
    """
    root = Path(root)
    spec = spec_maker("neopolyp", root, NEOPOLYP_STRUCTURES, "endoscopy", NEOPOLYP_COLORS)
    return [spec(stem(i), i, m, "train" if m else "test") for i, m in neopolyp_pairs(root)]


def parse_generic(root: str | Path, images: str = "*", labels: str | None = None) -> list[CaseSpec]:
    """Paired folders: an image glob (``**`` recurses) and a label pattern, relative to ``root``.

    ``labels`` may use ``{stem}``, ``{name}`` (with extension) and ``{parent}`` (folder
    relative to root) and glob characters (the first match is used); files that are some
    image's label are not images. Without it, no labels.
    """
    root = Path(root)
    inside(root, images)  # refuse patterns that leave the folder
    if labels:
        try:
            labels.format(stem="", name="", parent="")
        except (KeyError, IndexError, ValueError) as exc:
            what = f"unknown field {{{exc.args[0]}}}" if isinstance(exc, KeyError) else str(exc)
            raise SegEvalError(
                f"label pattern {labels!r}: {what} (fields: {{stem}}, {{name}}, {{parent}})"
            ) from exc
    candidates = map(Path, _glob.glob(str(root / images), recursive=True))
    found: dict[Path, Path | None] = {
        p: _label_for(root, p, labels) if labels else None
        for p in sorted(candidates, key=lambda p: natural_key(str(p)))
        if p.is_file() and suffix(p) in IMAGE_SUFFIXES
    }
    label_files = {lab.resolve() for lab in found.values() if lab is not None}
    spec = spec_maker("generic", root)
    return [spec(stem(p), p, lab) for p, lab in found.items() if p.resolve() not in label_files]


def _label_for(root: Path, image: Path, pattern: str) -> Path | None:
    parent = image.parent.relative_to(root).as_posix()
    rel = pattern.format(stem=stem(image), name=image.name, parent=parent)
    target = inside(root, rel)
    if any(c in rel for c in "*?["):
        matches = sorted(_glob.glob(str(target)), key=natural_key)
        return Path(matches[0]) if matches else None
    return target if target.is_file() else None
