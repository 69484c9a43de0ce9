"""napari reader contribution: open cases (NIfTI, MHA/NRRD, DICOM, video, 2D images).

``napari_get_reader`` returns ``None`` for paths this plugin does not handle and
never raises. The reader function it returns never raises either: a handled file
that cannot be opened (corrupt, unsupported variant such as CIFTI) becomes one
error notification with the one-line message, and the other paths still open
(napari's "no layers" sentinel ``[(None,)]`` when none does). What the reader
noticed about a file that did open -- invalid header values, NaN voxels, which
series of a DICOM folder was opened (the largest; ``segeval inspect`` lists the
others) -- becomes a warning or info notification.

Layers get ``scale`` from the spacing. ``translate`` is the origin projected on the
array axes only when the direction is the identity (otherwise it stays 0 and the
full geometry is in ``metadata["geometry"]``). A file whose name contains
``label``, ``seg``, ``_gt`` or ``mask`` (or that lies under a ``labelsTr``/``labelsTs``
folder) and that holds non-negative integers opens as a Labels layer with
``metadata["structures"]`` and a ``features`` table of structure names. Images with
NaN voxels get contrast limits from their finite voxels and a Labels layer
``"<name> NaN"`` marking the NaN voxels; a 4D NIfTI opens as a ``(t, z, y, x)`` layer.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from napari_segeval._errors import SegEvalError

LABEL_WORDS = ("label", "seg", "_gt", "mask")
LABEL_FOLDERS = ("labelstr", "labelsts", "labels")

LayerData = tuple[np.ndarray, dict, str]


def _handled(path: str) -> bool:
    from napari_segeval.io._formats import kind

    try:
        return Path(path).exists() and kind(path) is not None
    except Exception:  # noqa: BLE001 - a reader probe must never raise
        return False


def napari_get_reader(path: str | list[str]) -> Callable[[str | list[str]], list] | None:
    """Return :func:`read_layers` when every path is a file kind we read, else None.

    Examples
    --------
    >>> napari_get_reader("notes.txt") is None
    True
    >>> napari_get_reader("missing/ct.nii.gz") is None
    True
    """
    try:
        paths = [path] if isinstance(path, (str, Path)) else list(path)
        if len(paths) == 1 and results_folder_reader(paths[0]) is not None:
            return open_results_folder
        if paths and all(_handled(str(p)) for p in paths):
            return read_layers
    except Exception:  # noqa: BLE001 - never raise out of the probe
        return None
    return None


def results_folder_reader(path: str | Path) -> Callable[[str | list[str]], list] | None:
    """:func:`open_results_folder` for a folder holding ``run.json`` (``segeval evaluate``'s).

    Examples
    --------
    >>> results_folder_reader("/nonexistent") is None
    True
    """
    try:
        p = Path(path)
        return open_results_folder if p.is_dir() and (p / "run.json").is_file() else None
    except Exception:  # noqa: BLE001 - a reader probe must never raise
        return None


def open_results_folder(path: str | list[str]) -> list:
    """Open a results folder in the *Results* panel of the current viewer; no layers.

    napari calls readers without a viewer, so the panel is reached through
    napari's public API: :func:`napari.current_viewer` (the window the folder was
    dropped on or opened in) and ``viewer.window.add_plugin_dock_widget``, which
    docks the plugin's *Results* widget or returns the one already docked. The
    panel then loads the folder in a worker. ``[(None,)]`` is napari's sentinel
    for "read, nothing to add" (layers come when a row is selected).
    """
    import napari

    folder = path if isinstance(path, (str, Path)) else path[0]
    viewer = napari.current_viewer()
    if viewer is None:
        raise SegEvalError(f"{folder}: a results folder opens in the napari Results panel; "
                           "no viewer is open")
    _, panel = viewer.window.add_plugin_dock_widget("napari-segeval", "Results")
    panel.open_folder(str(folder))
    return [(None,)]


def looks_like_labels(path: str | Path) -> bool:
    """True when the name or a parent folder says the file holds reference labels.

    Examples
    --------
    >>> looks_like_labels("Task03/labelsTr/liver_3.nii.gz"), looks_like_labels("ct.nii")
    (True, False)
    """
    p = Path(path)
    name = p.name.lower()
    parents = {q.name.lower() for q in p.parents}
    return any(w in name for w in LABEL_WORDS) or bool(parents & set(LABEL_FOLDERS))


def _placement(geometry, n_spatial: int) -> tuple[tuple, tuple]:
    scale = tuple(geometry.spacing)
    if np.allclose(geometry.direction_matrix, np.eye(geometry.ndim)):
        translate = tuple(geometry.origin[::-1])
    else:
        translate = (0.0,) * n_spatial
    return scale, translate


def _notify(level: str, message: str) -> None:
    """Show ``message`` as a napari notification (``info``, ``warning`` or ``error``)."""
    try:
        from napari.utils import notifications

        getattr(notifications, f"show_{level}")(message)
    except Exception:  # noqa: BLE001 - no napari: fall back to a Python warning
        warnings.warn(message, stacklevel=2)


def _report(path: Path, meta: dict) -> None:
    if meta.get("series_note"):
        _notify("info", meta["series_note"])
    for text in meta.get("warnings", []):
        _notify("warning", f"{path.name}: {text}")


def _nan_layer(image: np.ndarray, kwargs: dict) -> LayerData | None:
    from napari_segeval.io import nan_mask

    if image.dtype.kind != "f" or not np.isnan(image).any():
        return None
    mask = nan_mask(image)
    if kwargs.get("rgb"):
        mask = mask.max(axis=-1)
    finite = image[np.isfinite(image)]
    kwargs["contrast_limits"] = (float(finite.min()), float(max(finite.max(), finite.min() + 1e-6)))
    nan_kwargs = {k: kwargs[k] for k in ("scale", "translate")}
    nan_kwargs.update(name=f"{kwargs['name']} NaN", opacity=0.5,
                      metadata={"source": kwargs["metadata"]["source"], "nan_mask": True},
                      features={"index": [0, 1], "name": ["background", "NaN"]})
    return mask, nan_kwargs, "labels"


def _image_layers(path: Path) -> list[LayerData]:
    from napari_segeval.io import read_image

    case = read_image(path)
    scale, translate = _placement(case.geometry, len(case.spatial_shape))
    meta = {
        "geometry": case.geometry.to_dict(),
        "source": str(path),
        "modality": case.modality,
        "axes": case.axes,
        **{k: v for k, v in case.meta.items() if isinstance(v, (str, int, float, bool))},
        "warnings": list(case.meta.get("warnings", [])),
    }
    kwargs = {"name": path.name, "scale": scale, "translate": translate, "metadata": meta}
    if case.is_rgb:
        kwargs["rgb"] = True
    nan = _nan_layer(case.image, kwargs)
    _report(path, case.meta)
    return [(case.image, kwargs, "image")] + ([nan] if nan else [])


def _labels_layer(path: Path) -> LayerData:
    from napari_segeval.io.read import labels_with_axes

    labels, geometry, names, axes = labels_with_axes(path)
    scale, translate = _placement(geometry, labels.ndim)
    ids = sorted(set(present_ids(labels)) | set(names) | {0})
    features = {
        "index": ids,
        "name": ["background" if i == 0 else names.get(i, f"label {i}") for i in ids],
    }
    meta = {
        "geometry": geometry.to_dict(),
        "source": str(path),
        "axes": axes,
        "structures": dict(names),
    }
    kwargs = {
        "name": path.name,
        "scale": scale,
        "translate": translate,
        "metadata": meta,
        "features": features,
    }
    return labels, kwargs, "labels"


def _read_one(path: Path) -> list[LayerData]:
    if looks_like_labels(path):
        try:
            return [_labels_layer(path)]
        except SegEvalError as exc:
            from napari_segeval._errors import InvalidLabelsError

            if not isinstance(exc, InvalidLabelsError):
                raise
    return _image_layers(path)


def read_layers(path: str | list[str], **_: object) -> list:
    """Read each path into napari layer data tuples ``(data, kwargs, layer_type)``.

    Never raises: a path that cannot be opened becomes an error notification with
    the reader's one-line message; when no path opens, napari's sentinel
    ``[(None,)]`` ("read, nothing to add") is returned.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from napari_segeval.io import Geometry, write_image
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ct.nii.gz"
    >>> _ = write_image(p, np.zeros((2, 3, 4), np.int16), Geometry.identity(3))
    >>> [(data, kwargs, kind)] = read_layers(str(p))
    >>> data.shape, kind, kwargs["scale"]
    ((2, 3, 4), 'image', (1.0, 1.0, 1.0))
    """
    from napari_segeval.io._quiet import one_line

    paths = [path] if isinstance(path, (str, Path)) else list(path)
    layers: list = []
    for p in paths:
        try:
            layers += _read_one(Path(p))
        except SegEvalError as exc:
            _notify("error", one_line(str(exc)))
        except Exception as exc:  # noqa: BLE001 - the reader never raises into napari
            from napari_segeval.io._quiet import reason

            _notify("error", f"{p}: cannot open ({reason(exc)})")
    return layers or [(None,)]


def present_ids(labels: np.ndarray) -> list[int]:
    """The label ids present in ``labels``, ascending.

    For 8- and 16-bit maps a lookup table is filled in one pass (about twice as
    fast as :func:`numpy.unique` on a 300 x 512 x 512 map, which sorts or hashes).

    Examples
    --------
    >>> present_ids(np.array([[0, 3], [3, 1]], np.uint8))
    [0, 1, 3]
    """
    a = np.asarray(labels)
    if a.dtype.kind == "u" and a.dtype.itemsize <= 2 and a.size:
        seen = np.zeros(1 << (8 * a.dtype.itemsize), bool)
        seen[a.ravel()] = True
        return np.flatnonzero(seen).tolist()
    return [int(i) for i in np.unique(a)]


def case_to_layers(case, name: str, ids: list[int] | None = None) -> list[LayerData]:
    """Layer data tuples for a :class:`~napari_segeval.io.Case`: its image, then its labels.

    Parameters
    ----------
    case : Case
        Image with optional reference labels on the same grid.
    name : str
        Base layer name; the labels layer gets ``" reference"`` appended.
    ids : list of int, optional
        The label ids present in ``case.labels``, when known (else counted here).
    """
    scale, translate = _placement(case.geometry, len(case.spatial_shape))
    geometry = case.geometry.to_dict()
    source = str(case.image_path) if case.image_path else None
    meta = {"geometry": geometry, "source": source, "modality": case.modality, "axes": case.axes}
    image_kwargs = {"name": name, "scale": scale, "translate": translate, "metadata": meta,
                    "rgb": case.is_rgb}
    layers: list[LayerData] = [(case.image, image_kwargs, "image")]
    if case.labels is not None:
        found = present_ids(case.labels) if ids is None else ids
        ids = sorted(set(found) | set(case.structures) | {0})
        names = ["background" if i == 0 else case.structure_name(i) for i in ids]
        label_meta = {**meta, "structures": dict(case.structures),
                      "source": str(case.labels_path) if case.labels_path else None}
        layers.append((case.labels, {"name": f"{name} reference", "scale": scale,
                                     "translate": translate, "metadata": label_meta,
                                     "features": {"index": ids, "name": names}}, "labels"))
    return layers
