"""Data-set layouts: one parser per layout (:data:`LAYOUTS`) turns a folder into
:class:`CaseSpec` records by names only; :func:`detect_layout` picks one.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval.evaluation import _layouts_2d as l2
from napari_segeval.evaluation._layouts_3d import PARSERS, detect_3d
from napari_segeval.evaluation._spec import CaseSpec, inside, spec_maker
from napari_segeval.io._formats import IMAGE_SUFFIXES, natural_key, stem, suffix


def channel_meta(dataset_json: dict) -> dict:
    """``{"channel_names": [...]}`` when ``dataset.json`` names several image channels, else ``{}``
    (then a 4D file is one multi-channel volume, as MSD BrainTumour's, not a time series).
    """
    from napari_segeval.io._dataset_json import dataset_channels

    names = dataset_channels(dataset_json)
    return {"channel_names": list(names)} if len(names) > 1 else {}


def _msd_images(root: Path, entry: str) -> tuple[tuple[str, ...], str]:
    """Image path(s) of one MSD entry: the file itself, or its ``_0000``... channels."""
    p = inside(root, entry)
    if p.exists():
        return (str(p),), stem(p)
    case, ending = stem(p), suffix(p)
    paths = (p.parent / f"{case}_{i:04d}{ending}" for i in range(1000))
    chans = tuple(str(q) for q in itertools.takewhile(Path.exists, paths))
    return (chans or (str(p),)), case


def _dataset_json_cases(root: Path, layout: str) -> tuple[dict, Callable[..., CaseSpec]]:
    """The ``dataset.json`` of ``root``, and a :func:`~._spec.spec_maker` of ``layout`` with the
    names, modality and channels it states.
    """
    from napari_segeval.io import load_dataset_json, structure_names
    from napari_segeval.io._dataset_json import dataset_modality

    ds = load_dataset_json(root)
    names, modality, meta = structure_names(ds), dataset_modality(ds), channel_meta(ds)
    return ds, spec_maker(layout, root, names, modality, meta=meta)


def parse_msd(root: str | Path) -> list[CaseSpec]:
    """Cases of a Medical Segmentation Decathlon task folder.

    ``dataset.json``'s ``training`` and ``test`` entries (an image split in ``_0000``...
    channel files lists all of them); without entries, ``imagesTr``/``labelsTr``/``imagesTs``
    are scanned.
    """
    root = Path(root)
    ds, spec = _dataset_json_cases(root, "msd")
    specs: list[CaseSpec] = []

    def add(image_entry: str, label_entry: str | None, split: str) -> None:
        try:
            images, case = _msd_images(root, image_entry)
            path = inside(root, label_entry) if label_entry else None
            # a data set shipped without its labels folder has no reference (label-free
            # runs); a missing file in an existing folder stays an error of its case
            labels = str(path) if path is not None and path.parent.is_dir() else None
            err = None
        except SegEvalError as exc:
            images, case, labels, err = (str(image_entry),), stem(image_entry), None, str(exc)
        specs.append(spec(case, images, labels, split, error=err))

    training, test = ds.get("training") or [], ds.get("test") or []
    for entry in training:
        if isinstance(entry, dict) and "image" in entry:
            add(str(entry["image"]), entry.get("label"), "train")
    for entry in test:
        add(str(entry["image"] if isinstance(entry, dict) else entry), None, "test")
    if not training and not test:
        for split, _, case, _, chans, lab in _scan_channels(root, test_labels=False):
            specs.append(spec(case, chans, lab, split))
    return _unique(specs)


def _scan_channels(root: Path, test_labels: bool) -> Iterator[tuple]:
    """``(split, folder, case, ending, channel files, label or None)`` of ``imagesTr`` and
    ``imagesTs`` (``case_0000.ext`` files, or a plain ``case.ext``, grouped by case); the
    label from ``labelsTr`` (with ``test_labels`` also ``labelsTs``) when it is there.
    """
    for split, tag in (("train", "Tr"), ("test", "Ts")):
        folder = root / f"images{tag}"
        groups: dict[tuple[str, str], list[str]] = {}
        files = [p for p in folder.glob("*") if p.is_file() and suffix(p) in IMAGE_SUFFIXES]
        for p in sorted(files, key=lambda p: natural_key(p.name)):
            s, ext = stem(p), suffix(p)
            case = s[:-5] if len(s) > 5 and s[-5] == "_" and s[-4:].isdigit() else s
            groups.setdefault((case, ext), []).append(str(p))
        for (case, ext), chans in groups.items():
            lab = root / f"labels{tag}" / f"{case}{ext}"
            found = (tag == "Tr" or test_labels) and lab.exists()
            yield split, folder, case, ext, tuple(sorted(chans)), lab if found else None


def parse_nnunet(root: str | Path) -> list[CaseSpec]:
    """Cases of an nnU-Net v2 raw data set (``Dataset001_X``).

    ``imagesTr/{case}_{XXXX}{file_ending}``, ``labelsTr/{case}{file_ending}``,
    ``imagesTs`` (with ``labelsTs`` if present), or explicit ``"dataset"`` entries
    in ``dataset.json``. Folds come from ``splits_final.json`` when present.
    """
    root = Path(root)
    ds, spec = _dataset_json_cases(root, "nnunet")
    ending = str(ds.get("file_ending", ".nii.gz"))
    n_chan = len(ds.get("channel_names") or {"0": ""})
    specs: list[CaseSpec] = []
    explicit = ds.get("dataset")
    if isinstance(explicit, dict):
        for case, entry in explicit.items():
            try:
                images = tuple(str(inside(root, p)) for p in entry.get("images", []))
                labels = str(inside(root, entry["label"])) if entry.get("label") else None
                err = None
            except SegEvalError as exc:
                images, labels, err = tuple(entry.get("images", [])), None, str(exc)
            specs.append(spec(str(case), images, labels, "train", error=err))
    else:
        for split, folder, case, ext, chans, lab in _scan_channels(root, test_labels=True):
            if ext != ending:
                continue
            err = f"{folder}: case {case} has {len(chans)} channel files, "
            err = None if len(chans) == n_chan else f"{err}dataset.json names {n_chan}"
            specs.append(spec(case, chans, lab, split, error=err))
    specs = _unique(specs)
    splits_file = root / "splits_final.json"
    if splits_file.is_file():
        from napari_segeval.evaluation.splits import apply_folds, load_nnunet_splits

        apply_folds(specs, load_nnunet_splits(splits_file))
    return specs


def _unique(specs: list[CaseSpec]) -> list[CaseSpec]:
    seen: dict[str, int] = {}
    for s in specs:
        n = seen.get(s.case_id, 0)
        seen[s.case_id] = n + 1
        if n:
            s.case_id = f"{s.case_id}~{n}"
    return specs


def _has_dataset_json(root: Path) -> dict | None:
    p = root / "dataset.json"
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}  # the reader says what is wrong with it


def detect_layout(root: str | Path) -> str:
    """Guess the layout of a folder (one of :data:`LAYOUTS`).

    A ``dataset.json`` means nnU-Net (``channel_names``/``file_ending``) or MSD
    (``training``/``test`` entries or an ``imagesTr`` folder); one that only names the
    labels does not decide the layout.
    """
    root = Path(root)
    if not root.is_dir():
        raise ReadError(f"{root}: not a folder")
    ds = _has_dataset_json(root)
    if ds is not None and ("channel_names" in ds or "file_ending" in ds):
        return "nnunet"
    if ds is not None and (ds.get("training") or ds.get("test") or (root / "imagesTr").is_dir()):
        return "msd"
    found = detect_3d(root)
    if found:
        return found
    if l2.camus_pairs(root):
        return "camus"
    if any(root.rglob("*_segmentation.png")):
        return "isic"
    if l2.neopolyp_pairs(root):
        return "neopolyp"
    raise SegEvalError(
        f"{root}: cannot tell the data-set layout (no dataset.json, CAMUS *_gt files, "
        "ISIC *_segmentation.png or NeoPolyp masks); use --layout generic with "
        "--images GLOB --labels PATTERN"
    )


def load_layout(
    root: str | Path,
    layout: str | None = None,
    *,
    images: str | None = None,
    labels: str | None = None,
    camus_mode: str | None = None,
) -> list[CaseSpec]:
    """Parse ``root`` with ``layout`` (detected when None); cases sorted by id.

    Parameters
    ----------
    images, labels
        Generic layout: image glob and label pattern (``parse_generic``).
    camus_mode : {"frames", "sequences", "all"}, optional
        CAMUS: ED/ES frames, half sequences, or both (default: frames, else sequences).
    """
    root = Path(root).absolute()
    if not root.is_dir():
        raise ReadError(f"{root}: data-set folder not found")
    layout = layout or detect_layout(root)
    if layout not in _PARSERS:
        raise SegEvalError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    options = {
        "camus": {"mode": camus_mode},
        "generic": {"images": images or "*", "labels": labels},
    }
    specs = _PARSERS[layout](root, **options.get(layout, {}))
    if not specs:
        raise SegEvalError(f"{root}: no cases found for layout {layout!r}")
    ds = _has_dataset_json(root) if layout not in ("msd", "nnunet") else None
    if ds and isinstance(ds.get("labels"), dict):
        from napari_segeval.io import structure_names

        names = structure_names(ds)
        for s in specs:
            s.structures = names or s.structures
    return sorted(specs, key=lambda s: natural_key(s.case_id))


#: Every layout's parser (camus takes ``mode``, generic ``images`` and ``labels``): the 2D and
#: data-set-file layouts, then the 3D data sets'.
_PARSERS: dict[str, Callable[..., list[CaseSpec]]] = {
    "msd": parse_msd,
    "nnunet": parse_nnunet,
    "camus": l2.parse_camus,
    "isic": l2.parse_isic,
    "neopolyp": l2.parse_neopolyp,
    "generic": l2.parse_generic,
    **PARSERS,
}
#: Every layout's name.
LAYOUTS = tuple(_PARSERS)

__all__ = [
    "LAYOUTS",
    "CaseSpec",
    "detect_layout",
    "inside",
    "load_layout",
    "parse_msd",
    "parse_nnunet",
]
