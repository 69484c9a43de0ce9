"""Layouts of published 3D data sets (LiTS, KiTS23, WORD, FeTA 2022, TotalSegmentator),
parsed by names only; what each holds: docs/design.md, "Data-set layouts".
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np

from napari_segeval._errors import InvalidLabelsError, ReadError
from napari_segeval.evaluation._spec import CaseSpec, spec_maker
from napari_segeval.io import load_dataset_json, structure_names
from napari_segeval.io._formats import natural_key

LITS_STRUCTURES = {1: "liver", 2: "tumor"}
KITS_STRUCTURES = {1: "kidney", 2: "tumor", 3: "cyst"}


def _numbered(names: str) -> dict[int, str]:
    """The space-separated ``names`` numbered from 1."""
    return dict(enumerate(names.split(), start=1))


WORD_STRUCTURES = _numbered(
    "liver spleen left_kidney right_kidney stomach gallbladder esophagus pancreas duodenum "
    "colon intestine adrenal rectum bladder Head_of_femur_L Head_of_femur_R"
)
FETA_STRUCTURES = _numbered(
    "external_csf grey_matter white_matter ventricles cerebellum deep_grey_matter brainstem"
)
_NII = (".nii.gz", ".nii")
_LITS = re.compile(r"^(?P<test>test-)?volume-(?P<n>\d+)\.nii(\.gz)?$", re.IGNORECASE)
_FETA = re.compile(r"^(?P<sub>sub-[^_]+)_rec-(?P<rec>[^_]+)_T2w\.nii(\.gz)?$")


def _nii(folder: Path, name: str) -> Path | None:
    for ext in _NII:
        p = folder / f"{name}{ext}"
        if p.is_file():
            return p
    return None


def _by_name(paths) -> list[Path]:
    """``paths`` in natural order of their names."""
    return sorted(paths, key=lambda q: natural_key(q.name))


def parse_lits(root: str | Path) -> list[CaseSpec]:
    """LiTS: ``volume-N`` / ``segmentation-N`` (train) and ``test-volume-N`` (test)."""
    root = Path(root)
    spec, specs = spec_maker("lits", root, LITS_STRUCTURES, "CT"), []
    for p in _by_name(root.rglob("*volume-*.nii*")):
        m = _LITS.match(p.name)
        if not m or not p.is_file():
            continue
        test = bool(m.group("test"))
        seg = _nii(p.parent, f"{'test-' if test else ''}segmentation-{m.group('n')}")
        error = None if seg or test else f"{p}: no segmentation-{m.group('n')}"
        specs.append(
            spec(p.name.split(".nii")[0], p, seg, "test" if test else "train", error=error)
        )
    return sorted(specs, key=lambda s: (s.split == "test", natural_key(s.case_id)))


def _kits_root(root: Path) -> Path:
    return root / "dataset" if (root / "dataset").is_dir() else root


def parse_kits23(root: str | Path) -> list[CaseSpec]:
    """KiTS23: ``case_XXXXX/imaging.nii.gz`` and ``segmentation.nii.gz``."""
    root = Path(root)
    spec, specs = spec_maker("kits23", root, KITS_STRUCTURES, "CT"), []
    for folder in _by_name(_kits_root(root).glob("case_*")):
        image = _nii(folder, "imaging")
        if image is not None:
            specs.append(spec(folder.name, image, _nii(folder, "segmentation"), "train"))
    return specs


def parse_word(root: str | Path) -> list[CaseSpec]:
    """WORD: ``images{Tr,Val,Ts}`` with ``labels{Tr,Val,Ts}`` (official 100/20/30 split)."""
    root = Path(root)
    spec, specs = spec_maker("word", root, WORD_STRUCTURES, "CT"), []
    for split, tag in (("train", "Tr"), ("val", "Val"), ("test", "Ts")):
        for p in _by_name(p for p in (root / f"images{tag}").glob("*.nii*") if p.is_file()):
            case = p.name.split(".nii")[0]
            specs.append(spec(case, p, _nii(root / f"labels{tag}", case), split))
    return specs


def parse_feta(root: str | Path) -> list[CaseSpec]:
    """FeTA 2022: ``sub-XXX/anat/sub-XXX_rec-REC_T2w.nii.gz`` and ``..._dseg.nii.gz``."""
    root = Path(root)
    spec, specs = spec_maker("feta", root, FETA_STRUCTURES, "MR"), []
    for p in _by_name(root.glob("sub-*/anat/*_T2w.nii*")):
        m = _FETA.match(p.name)
        if m:
            seg = _nii(p.parent, f"{m.group('sub')}_rec-{m.group('rec')}_dseg")
            specs.append(spec(m.group("sub"), p, seg, "train", meta={"rec": m.group("rec")}))
    return specs


def _totalseg_splits(root: Path) -> dict[str, str]:
    path = root / "meta.csv"
    if not path.is_file():
        return {}
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter=";"))
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        raise ReadError(f"{path}: unreadable meta.csv ({exc})") from None
    if rows and not {"image_id", "split"} <= set(rows[0]):
        raise ReadError(
            f"{path}: meta.csv needs the columns image_id and split (found {', '.join(rows[0])})"
        )
    return {r["image_id"].strip(): r["split"].strip() for r in rows}


def _totalseg_ids(root: Path, names: set[str]) -> dict[int, str]:
    """Label ids of ``dataset.json`` (region entries skipped), else ``names`` numbered by name."""
    ds = root / "dataset.json"
    pairs = structure_names(load_dataset_json(ds)) if ds.is_file() else {}
    pairs = {i: n for i, n in pairs.items() if n != "background"}
    return pairs or {i: n for i, n in enumerate(sorted(names), start=1)}


def parse_totalsegmentator(root: str | Path) -> list[CaseSpec]:
    """TotalSegmentator: ``sXXXX/ct.nii.gz`` + ``sXXXX/segmentations/*.nii.gz``.

    A case's ``labels`` is its ``segmentations`` folder; cases absent from ``meta.csv``
    get split ``train``.
    """
    root = Path(root)
    splits = _totalseg_splits(root)
    found = []
    names: set[str] = set()
    for folder in _by_name(p for p in root.iterdir() if p.is_dir()):
        image = _nii(folder, "ct")
        seg = folder / "segmentations"
        if image is None:
            continue
        if seg.is_dir():
            names |= {p.name.split(".nii")[0] for p in seg.glob("*.nii*")}
        found.append((folder.name, image, seg if seg.is_dir() else None))
    spec = spec_maker("totalsegmentator", root, _totalseg_ids(root, names), "CT")
    return [spec(case, image, seg, splits.get(case, "train")) for case, image, seg in found]


PARSERS = {
    "lits": parse_lits,
    "kits23": parse_kits23,
    "word": parse_word,
    "feta": parse_feta,
    "totalsegmentator": parse_totalsegmentator,
}


def detect_3d(root: Path) -> str | None:
    """The 3D layout of ``root`` by its names, or None."""
    if any((p / "segmentations").is_dir() and _nii(p, "ct") for p in root.glob("s*")):
        return "totalsegmentator"
    if any(_nii(p, "imaging") for p in _kits_root(root).glob("case_*")):
        return "kits23"
    if (root / "imagesVal").is_dir() or any(root.glob("images*/word_*.nii*")):
        return "word"
    if any(root.glob("sub-*/anat/*_dseg.nii*")):
        return "feta"
    if any(_LITS.match(p.name) for p in root.rglob("*volume-*.nii*")):
        return "lits"
    return None


def read_structure_folder(folder: str | Path, structures: dict[int, str]):
    """Merge one binary mask per structure (``NAME.nii[.gz]``) into ``(labels, geometry)``.

    A structure without a file is absent; a mask on another grid raises
    :class:`~napari_segeval.GeometryMismatchError`; where masks overlap the higher id wins.
    """
    from napari_segeval.io import read_labels
    from napari_segeval.io._validate import check_same_grid

    folder = Path(folder)
    if not folder.is_dir():
        raise ReadError(f"{folder}: no such segmentations folder")
    merged, geometry, first = None, None, None
    dtype = np.uint8 if max(structures, default=0) < 256 else np.uint16
    for ident, name in sorted(structures.items()):
        path = _nii(folder, name)
        if path is None:
            continue
        mask, geom, _ = read_labels(path)
        if merged is None or geometry is None or first is None:  # the first structure
            merged, geometry, first = np.zeros(mask.shape, dtype), geom, path
        else:
            check_same_grid(merged.shape, geometry, mask.shape, geom, first, path)
        merged[np.asarray(mask) > 0] = ident
    if merged is None:
        raise InvalidLabelsError(
            f"{folder}: none of the {len(structures)} structure files is there"
        )
    return merged, geometry


def read_structure_case(
    image: str | Path,
    folder: str | Path,
    structures: dict[int, str],
    *,
    modality: str | None = None,
):
    """Read an image with the merged masks of its ``segmentations`` folder as its labels."""
    from napari_segeval.io import read_case
    from napari_segeval.io._validate import check_same_grid

    case = read_case(image, None, modality=modality)
    labels, geometry = read_structure_folder(folder, structures)
    check_same_grid(case.spatial_shape, case.geometry, labels.shape, geometry, image, folder)
    case.labels = labels
    case.labels_path = Path(folder)
    case.structures = dict(structures)
    return case
