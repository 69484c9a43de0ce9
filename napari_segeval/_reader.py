"""napari reader contribution: open cases (NIfTI, MHA/NRRD, DICOM, video, 2D images).

It never raises: a file that cannot be opened becomes an error notification, what the
reader noticed about one that did (bad header values, NaN voxels ...) a warning or info.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

from napari_segeval._errors import SegEvalError
from napari_segeval._layer_data import BY_NAME, LayerData, file_layers


def napari_get_reader(path: str | list[str]) -> Callable[[str | list[str]], list] | None:
    """:func:`open_results_folder` for a folder holding ``run.json`` (``segeval evaluate``'s),
    :func:`read_layers` when every path is a file kind we read, else None."""
    try:
        from napari_segeval.io._formats import kind

        paths = [Path(str(p)) for p in ([path] if isinstance(path, (str, Path)) else path)]
        if len(paths) == 1 and paths[0].is_dir() and (paths[0] / "run.json").is_file():
            return open_results_folder
        if paths and all(p.exists() and kind(p) is not None for p in paths):
            return read_layers
    except Exception:  # noqa: BLE001 - a reader probe must never raise
        return None
    return None


def open_results_folder(path: str | list[str]) -> list:
    """Open a results folder in the *Results* panel of the current viewer; no layers.

    napari calls readers without a viewer, so the panel is reached through
    :func:`napari.current_viewer` and ``window.add_plugin_dock_widget``; ``[(None,)]`` is
    napari's sentinel for "read, nothing to add".
    """
    import napari

    folder = path if isinstance(path, (str, Path)) else path[0]
    viewer = napari.current_viewer()
    if viewer is None:
        raise SegEvalError(
            f"{folder}: a results folder opens in the napari Results panel; no viewer is open"
        )
    _, panel = viewer.window.add_plugin_dock_widget("napari-segeval", "Results")
    panel.open_folder(str(folder))
    return [(None,)]


def _notify(level: str, message: str) -> None:
    """Show ``message`` as a napari notification (``info``, ``warning`` or ``error``)."""
    try:
        from napari.utils import notifications

        getattr(notifications, f"show_{level}")(message)
    except Exception:  # noqa: BLE001 - no napari: fall back to a Python warning
        warnings.warn(message, stacklevel=2)


def _report(path: Path, layers: list[LayerData]) -> None:
    """Notifications for what the first layer's metadata says about its file."""
    meta = layers[0][1].get("metadata", {})
    if meta.get("series_note"):
        _notify("info", meta["series_note"])
    reason = meta.get("labels_reason")
    if reason and reason != BY_NAME:
        _notify("info", f"{path.name}: opened as labels ({reason})")
    for text in meta.get("warnings", []):
        _notify("warning", f"{path.name}: {text}")


def read_layers(path: str | list[str], **_: object) -> list:
    """Read each path into layer data tuples; never raises (an error notification per path
    that cannot be opened; napari's sentinel ``[(None,)]`` when none opens)."""
    from napari_segeval.io._quiet import one_line

    paths = [path] if isinstance(path, (str, Path)) else list(path)
    layers: list = []
    for p in paths:
        try:
            found = file_layers(Path(p))
            _report(Path(p), found)
            layers += found
        except SegEvalError as exc:
            _notify("error", one_line(str(exc)))
        except Exception as exc:  # noqa: BLE001 - the reader never raises into napari
            from napari_segeval.io._quiet import reason

            _notify("error", f"{p}: cannot open ({reason(exc)})")
    return layers or [(None,)]
