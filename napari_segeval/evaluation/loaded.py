"""One case of a results folder read for browsing: its files in a thread pool, with counts.

Of an attack's two float images only the perturbation is read; the perturbed image is
computed as the attack did (bit for bit the saved file).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._cancel import check_cancel
from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval._names import CLEAN
from napari_segeval.evaluation.keys import IMAGE_KINDS, FileKind, PredictionKey, is_image_key
from napari_segeval.io._formats import output_formats


@dataclass
class LoadedCase:
    """One case of a results folder, read and checked, ready to show."""

    case_id: str
    case: Any  #: a Case: image, reference labels, geometry and structure names
    predictions: dict[str, np.ndarray]  #: prediction key -> saved label map (clean first)
    focus: str | None = None  #: the attacked condition whose perturbed image is loaded
    #: float32, raw units, on the case's grid (the channel of ``case.image``)
    perturbed: np.ndarray | None = None
    perturbation: np.ndarray | None = None
    perturbation_range: float = 0.0  #: largest absolute perturbation value (0 without one)
    label_ext: str = ".nii.gz"  #: the suffix corrections of this case are saved with
    files: dict[str, str] = field(default_factory=dict)  #: image, reference, record files
    #: overlap counts of the reference against the two predictions of :attr:`pair`
    counters: dict[str, Any] = field(default_factory=dict)
    pair: tuple[str | None, str | None] = (CLEAN, None)  #: shown side by side (compare_pair)


class MissingFilesError(ReadError):
    """Files a case record needs are missing or moved (``missing``: their paths; ``data``:
    some are data-set files that ``ResultsFolder.remap_data`` can find).
    """

    def __init__(self, case_id: str, missing: list[str], data: bool) -> None:
        self.case_id, self.missing, self.data = case_id, list(missing), data
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        if data:
            hint = "data set moved? choose its new folder with 'Locate data folder'"
        else:
            hint = "prediction files deleted or moved out of the results folder"
        super().__init__(
            f"case {case_id}: missing or moved files: {', '.join(missing[:3])}{more} ({hint})"
        )


def focus_key(files: Mapping, focus: str | PredictionKey | None) -> str | None:
    """The prediction in focus among a record's ``files``: ``focus`` if saved, else the first
    attack, else any (None without predictions).
    """
    keys = {k: PredictionKey.parse(k) for k in files}
    keys = {k: p for k, p in keys.items() if not p.is_image and k != CLEAN}
    if focus is not None and str(focus) in keys:
        return str(focus)
    attacked = [k for k, p in keys.items() if not p.is_clean]
    return (attacked or list(keys) or [None])[0]


def float_key(files: Mapping, focus: str | PredictionKey | None) -> str | None:
    """The float image of ``focus`` a load reads: its perturbation, else its perturbed image."""
    if focus is None:
        return None
    for kind in (FileKind.PERTURBATION, FileKind.PERTURBED):
        key = str(PredictionKey.parse(focus).image(kind))
        if key in files:
            return key
    return None


def on_grid(array: np.ndarray, case: Any, channel: int) -> np.ndarray:
    """A saved float image on the loaded case's grid (``channel`` of a ``(C, ...)`` array)."""
    image = np.asarray(case.image)
    if (
        array.ndim == image.ndim + 1
        and not case.is_rgb
        and tuple(array.shape[1:]) == tuple(image.shape)
        and channel < array.shape[0]
    ):
        return np.asarray(array[channel], np.float32)
    return np.asarray(array, np.float32)


def both_images(
    image: np.ndarray, perturbed: Any, perturbation: Any, pool: ThreadPoolExecutor | None = None
) -> tuple[Any, Any]:
    """``(perturbed image, perturbation)`` from whichever of the two was read.

    The perturbed image is float32 image + perturbation, as the attack computed it (with
    a ``pool``, split across its threads); from a perturbed image alone the perturbation
    is ``perturbed - image``.
    """
    image = np.asarray(image)
    if perturbation is not None:
        d = perturbation
        add = d[..., None] if d.ndim == image.ndim - 1 else d
        out = np.empty(image.shape, np.float32)

        def part(s: slice) -> None:  # int -> float32 is exact, then one float32 add
            np.add(image[s], add[s], out=out[s], dtype=np.float32, casting="unsafe")

        step = max(1, -(-image.shape[0] // 4))  # four chunks of rows
        parts = [slice(i, i + step) for i in range(0, image.shape[0], step)]
        list(pool.map(part, parts) if pool is not None else map(part, parts))
        return out, d
    if perturbed is not None:
        d = np.asarray(perturbed, np.float32).copy()
        np.subtract(d, image, out=d, casting="unsafe")
        return perturbed, d
    return None, None


def largest_magnitude(a: np.ndarray | None) -> float:
    """``max |a|`` without a temporary array (0 for None or empty)."""
    if a is None or not a.size:
        return 0.0
    return float(max(abs(float(np.nanmax(a))), abs(float(np.nanmin(a)))))


def compare_pair(
    keys: Sequence[str], focus: str | None, other: str | None = None
) -> tuple[str | None, str | None]:
    """The two predictions of a case to put side by side: ``(first, second)``.

    One model: the clean prediction and the attack in focus (else the first attack).
    Several models: an attack with its model's clean prediction; a model's clean
    prediction with ``other`` when given, else with the next model's.
    """
    parsed = {k: PredictionKey.parse(k) for k in keys}
    keys = list(parsed)
    if all(p.model is None for p in parsed.values()):  # one model
        attacks = [k for k in keys if k != CLEAN]
        second = focus if focus in attacks else (attacks[0] if attacks else None)
        return (CLEAN if CLEAN in keys else None), second
    # round 0's clean predictions; a correction round is paired with its model's
    cleans = [k for k in keys if parsed[k].is_clean and parsed[k].round is None]
    if focus not in keys:
        focus = cleans[0] if cleans else (keys[0] if keys else None)
    if focus is None:
        return None, None
    if focus not in cleans:
        own = str(PredictionKey(CLEAN, model=parsed[focus].model))
        return (own if own in keys else None), focus
    if other in keys and other != focus:
        return focus, other
    rest = cleans[cleans.index(focus) + 1 :] + cleans[: cleans.index(focus)]
    return focus, (rest[0] if rest else None)


def counters(
    case: Any, predictions: Mapping[str, np.ndarray], focus: str | None, first: str = CLEAN
) -> dict:
    """``{"clean"|"attacked": LiveMetrics}`` of the reference against predictions ``first``
    and ``focus``; empty without a reference.
    """
    from napari_segeval.metrics import LiveMetrics

    ref, out = case.labels, {}
    for cond, key in ((first, CLEAN), (focus, "attacked")) if ref is not None else ():
        pred = predictions.get(cond) if cond else None
        if pred is not None and pred.shape == ref.shape:
            try:
                out[key] = LiveMetrics(ref, pred, case.spacing, dict(case.structures) or None)
            except (SegEvalError, MemoryError, ValueError):
                continue  # the Dice panel counts again and shows what is wrong
    return out


def read_case_files(
    case_id: str,
    spec: Any,
    paths: Mapping[str, Path],
    channel: int,
    focus: str | None,
    record_files: Mapping[str, str],
    root: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    cancel: Any = None,
) -> LoadedCase:
    """Read a checked case (``paths`` from ``ResultsFolder.check_files``) into a :class:`LoadedCase`;
    SegEvalError for a file that does not match the image's grid.
    """
    from napari_segeval.evaluation.protocols._common import load_case
    from napari_segeval.io import read_image, read_labels

    keys = [k for k in paths if k not in ("image", "reference")]
    labels, floats = [k for k in keys if not is_image_key(k)], [k for k in keys if is_image_key(k)]
    total, done = 1 + len(keys), [0]

    def read(key: str):
        check_cancel(cancel, "loading the case")
        if key == "case":
            return load_case(spec, channel=min(channel, len(spec.images) - 1), need_labels=False)
        if is_image_key(key):
            return read_image(paths[key]).image
        return read_labels(paths[key])[0]

    def result(future):
        value = future.result()
        done[0] += 1
        if progress is not None:
            progress(done[0], total)
        return value

    def check(key: str, array: np.ndarray, want: tuple) -> None:
        if tuple(array.shape) not in (tuple(want), tuple(case.spatial_shape)):
            raise SegEvalError(
                f"{paths[key]}: shape {array.shape} does not match the image "
                f"{paths['image']} ({tuple(want)}): wrong data folder?"
            )

    if progress is not None:
        progress(0, total)
    with ThreadPoolExecutor(max_workers=min(4, total)) as pool:
        futures = {k: pool.submit(read, k) for k in ["case", *floats, *labels]}
        try:
            case = result(futures["case"])
            preds = {}
            for key in labels:
                preds[key] = result(futures[key])
                check(key, preds[key], case.spatial_shape)
            preds = dict(sorted(preds.items(), key=lambda kv: kv[0] != CLEAN))
            pair = compare_pair(list(preds), focus)
            counting = pool.submit(counters, case, preds, pair[1], pair[0] or CLEAN)
            k = int(case.meta.get("channel", min(channel, len(spec.images) - 1)))
            # read by an optional name: None (no attacked round) finds no image
            images: dict[str | None, np.ndarray] = {}
            for key in floats:
                images[key] = on_grid(result(futures[key]), case, k)
                check(key, images[key], case.image.shape)
            check_cancel(cancel, "loading the case")
            attacked = None if focus is None else PredictionKey.parse(focus).first_round()
            both = [str(attacked.image(kind)) if attacked else None for kind in IMAGE_KINDS]
            perturbed, pert = both_images(
                case.image, images.get(both[0]), images.get(both[1]), pool
            )
            counted = counting.result()
        except BaseException:  # an error or cancel: drop the reads not started yet
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    files = {k: str(p) for k, p in paths.items()}
    for name, rel in record_files.items():
        if attacked and is_image_key(name) and PredictionKey.parse(name).labels() == attacked:
            files[name] = str(root / rel)
    ext = output_formats(str(case.image_path or spec.images[0]), case.axes)[0]
    mag = largest_magnitude(pert)
    return LoadedCase(case_id, case, preds, focus, perturbed, pert, mag, ext, files, counted, pair)


__all__ = [
    "LoadedCase",
    "MissingFilesError",
    "focus_key",
    "both_images",
    "compare_pair",
    "counters",
    "float_key",
    "largest_magnitude",
    "on_grid",
    "read_case_files",
]
