"""napari layer data ``(data, kwargs, layer type)`` from files and cases, without napari.

``translate`` is the origin when the direction is the identity (else 0, the geometry in
``metadata["geometry"]``); which files open as labels: docs/design.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._names import unnamed_label

LABEL_WORDS = ("label", "seg", "_gt", "mask")
LABEL_FOLDERS = ("labelstr", "labelsts", "labels")
#: Most distinct values (background included) of an image taken as labels by its content.
MAX_LABEL_VALUES = 32
#: Least fraction of equal neighbours among neighbouring foreground voxels.
MIN_AGREEMENT = 0.9
#: File kinds whose content may make them labels (:func:`napari_segeval.io._formats.kind`).
CONTENT_KINDS = ("nifti", "itk", "raster")
#: ``metadata["labels_reason"]`` of a file taken as labels by its name.
BY_NAME = "its name or folder says it holds labels"
_SAMPLE = 1 << 20  # voxels looked at before counting all of them

LayerData = tuple[np.ndarray, dict, str]


def looks_like_labels(path: str | Path) -> bool:
    """True when the name or a parent folder says the file holds reference labels."""
    p = Path(path)
    name = p.name.lower()
    parents = {q.name.lower() for q in p.parents}
    return any(w in name for w in LABEL_WORDS) or bool(parents & set(LABEL_FOLDERS))


def labels_by_content(image: np.ndarray, axes: str) -> str | None:
    """Why a grey integer image is a label map (see docs/design.md), or None."""
    a = np.asarray(image)
    if a.dtype.kind not in "biu" or axes.endswith("c") or axes.startswith("c") or a.size < 2:
        return None
    sample = a.ravel()[:: max(1, a.size // _SAMPLE)]
    values, counts = np.unique(sample, return_counts=True)
    if len(values) > MAX_LABEL_VALUES or values[0] != 0 or values[np.argmax(counts)] != 0:
        return None
    if a.dtype.kind == "b":
        a = a.view(np.uint8)
    if a.min() < 0 or a.max() > 65535:
        return None
    small = a.view(np.uint16) if a.dtype == np.int16 else a  # no negatives: same values
    if small.dtype.kind != "u" or small.itemsize > 2:
        small = small.astype(np.uint16)
    n = len(present_ids(small))
    if not 2 <= n <= MAX_LABEL_VALUES or _agreement(a) < MIN_AGREEMENT:
        return None
    return f"integer voxels with {n} values (0 the most common) that agree between neighbours"


def _agreement(a: np.ndarray) -> float:
    """Fraction of non-zero row neighbour pairs that agree (on a sample of rows)."""
    if a.shape[-1] < 2:
        return 1.0
    rows = a.reshape(-1, a.shape[-1])
    rows = rows[:: max(1, rows.size // (8 * _SAMPLE))]
    left, right = rows[:, :-1], rows[:, 1:]
    both = (left != 0) & (right != 0)
    pairs = int(np.count_nonzero(both))
    return 1.0 if pairs == 0 else int(np.count_nonzero(both & (left == right))) / pairs


def present_ids(labels: np.ndarray) -> list[int]:
    """The label ids present in ``labels``, ascending (a lookup table for 8/16-bit maps)."""
    a = np.asarray(labels)
    if a.dtype.kind == "u" and a.dtype.itemsize <= 2 and a.size:
        seen = np.zeros(1 << (8 * a.dtype.itemsize), bool)
        seen[a.ravel()] = True
        return np.flatnonzero(seen).tolist()
    return [int(i) for i in np.unique(a)]


def _placement(geometry, n_spatial: int) -> tuple[tuple, tuple]:
    identity = np.allclose(geometry.direction_matrix, np.eye(geometry.ndim))
    return tuple(geometry.spacing), tuple(geometry.origin[::-1]) if identity else (0.0,) * n_spatial


def _nan_layer(image: np.ndarray, kwargs: dict) -> LayerData | None:
    from napari_segeval.io import nan_mask

    if image.dtype.kind != "f" or not np.isnan(image).any():
        return None
    mask = nan_mask(image).max(axis=-1) if kwargs.get("rgb") else nan_mask(image)
    finite = image[np.isfinite(image)]
    kwargs["contrast_limits"] = (float(finite.min()), float(max(finite.max(), finite.min() + 1e-6)))
    nan_kwargs = {k: kwargs[k] for k in ("scale", "translate")}
    nan_kwargs.update(
        name=f"{kwargs['name']} NaN",
        opacity=0.5,
        metadata={"source": kwargs["metadata"]["source"], "nan_mask": True},
        features={"index": [0, 1], "name": ["background", "NaN"]},
    )
    return mask, nan_kwargs, "labels"


def _image_kwargs(case, name: str, source: str | None, extra: dict) -> dict[str, Any]:
    """The image layer of ``case``: its placement, metadata (``extra`` last) and ``name``."""
    scale, translate = _placement(case.geometry, len(case.spatial_shape))
    meta = {"source": source, "modality": case.modality, "axes": case.axes, **extra}
    meta = {"geometry": case.geometry.to_dict(), **meta}
    return {"name": name, "scale": scale, "translate": translate, "metadata": meta}


def labels_layer(
    labels: np.ndarray,
    geometry,
    names: dict[int, str],
    name: str,
    meta: dict,
    ids: list[int] | None = None,
) -> LayerData:
    """A Labels layer ``name`` of a label map; ``meta`` joins its metadata, ``ids`` are the ids
    present in ``labels`` when known (else counted here)."""
    scale, translate = _placement(geometry, labels.ndim)
    ids = sorted(set(present_ids(labels) if ids is None else ids) | set(names) | {0})
    features = {
        "index": ids,
        "name": ["background" if i == 0 else names.get(i) or unnamed_label(i) for i in ids],
    }
    meta = {"geometry": geometry.to_dict(), **meta, "structures": dict(names)}
    kwargs = dict(name=name, scale=scale, translate=translate, metadata=meta, features=features)
    return labels, kwargs, "labels"


def _file_labels(labels, geometry, names, axes: str, path: Path, reason: str) -> LayerData:
    """The Labels layer of a label map read from ``path``, with why it is one (``reason``)."""
    layer = labels_layer(labels, geometry, names, path.name, {"source": str(path), "axes": axes})
    layer[1]["metadata"]["labels_reason"] = reason
    return layer


def file_layers(path: str | Path) -> list[LayerData]:
    """The layers of one file or folder: a Labels layer when its name or content says it
    holds labels, else its image (and a NaN mask layer); SegEvalError when unreadable."""
    from napari_segeval._errors import InvalidLabelsError
    from napari_segeval.io import read_image
    from napari_segeval.io._formats import kind
    from napari_segeval.io.read import labels_of_image, labels_with_axes

    p = Path(path)
    if looks_like_labels(p):
        try:
            labels, geometry, names, axes = labels_with_axes(p)
            return [_file_labels(labels, geometry, names, axes, p, BY_NAME)]
        except InvalidLabelsError:
            pass
    case = read_image(p)
    why = labels_by_content(case.image, case.axes) if kind(p) in CONTENT_KINDS else None
    if why:
        labels, names = labels_of_image(case)
        return [_file_labels(labels, case.geometry, names, case.axes, p, why)]
    scalars = {k: v for k, v in case.meta.items() if isinstance(v, (str, int, float, bool))}
    warnings = list(case.meta.get("warnings", []))
    kwargs = _image_kwargs(case, p.name, str(p), {**scalars, "warnings": warnings})
    if case.is_rgb:
        kwargs["rgb"] = True
    nan = _nan_layer(case.image, kwargs)
    return [(case.image, kwargs, "image")] + ([nan] if nan else [])


def case_to_layers(case, name: str, ids: list[int] | None = None) -> list[LayerData]:
    """Layer data of a :class:`~napari_segeval.io.Case`: its image, then its labels
    (``name + " reference"``; ``ids`` as in :func:`labels_layer`)."""
    source = str(case.image_path) if case.image_path else None
    image = {**_image_kwargs(case, name, source, {}), "rgb": case.is_rgb}
    layers: list[LayerData] = [(case.image, image, "image")]
    if case.labels is not None:
        meta = {**image["metadata"], "source": str(case.labels_path) if case.labels_path else None}
        ref = f"{name} reference"
        layers.append(labels_layer(case.labels, case.geometry, case.structures, ref, meta, ids))
    return layers
