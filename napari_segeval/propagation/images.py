"""Propagation from raw images of every kind: volumes, videos and single 2D images.

:func:`~napari_segeval.propagation.core.propagate_case` works on a stack of
normalized frames ``(n, H, W[, C])``. This module is the entry point that starts
from the raw image (a :class:`~napari_segeval.io.case.Case` or an array and its
kind), runs the backend's ``preprocess`` and picks the mode:

The kind of a case is :attr:`napari_segeval.io.Case.kind`; :func:`promptable_kind`
refuses the kinds a promptable model cannot take.

* ``"volume"`` (``zyx``): bidirectional from the key slice;
* ``"video"`` (``tyx``/``tyxc``): forward from the prompted frame;
* ``"image"`` (``yx``/``yxc``, a single 2D image): segmented as a one-frame video
  (its box on frame 0); labels and probabilities come back on the 2D grid.

The viewer, the command line and the promptable attack target share these rules.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from napari_segeval.io.case import Case
from napari_segeval.prompts.box import Box
from napari_segeval.propagation.core import PropagationResult, propagate_case

#: The kinds of case a promptable model takes (:attr:`napari_segeval.io.Case.kind`
#: without ``"series"``).
KINDS: tuple[str, ...] = ("volume", "video", "image")


def promptable_kind(case: Case) -> str:
    """``"volume"``, ``"video"`` or ``"image"``: the case's kind, when a promptable model takes it.

    The kind is :attr:`Case.kind <napari_segeval.io.Case.kind>`; a time series of
    volumes (choose one volume first) and a multi-channel volume (a promptable
    model sees one grey or colour image) are refused.

    Examples
    --------
    >>> from napari_segeval.io import Geometry
    >>> promptable_kind(Case(np.zeros((2, 4, 5, 3)), Geometry.identity(3), axes="tyxc"))
    'video'
    >>> promptable_kind(Case(np.zeros((2, 3, 4, 5)), Geometry.identity(3), axes="czyx"))
    Traceback (most recent call last):
    ...
    ValueError: a promptable model takes a volume, a video or a 2D image, not a multi-channel volume (czyx)
    """
    kind = case.kind
    what = ("multi-channel volume" if case.is_multichannel
            else "time series of volumes" if kind == "series" else None)
    if what is not None:
        raise ValueError(f"a promptable model takes a volume, a video or a 2D image, not a "
                         f"{what} ({case.axes})")
    return kind


def propagation_mode(kind: str) -> str:
    """Propagation mode of :func:`propagate_case` for an image kind.

    Examples
    --------
    >>> [propagation_mode(k) for k in KINDS]
    ['volume', 'video', 'video']
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return "volume" if kind == "volume" else "video"


def as_frames(image: Any, kind: str) -> Any:
    """A 2D image as a one-frame stack ``(1, H, W[, C])``; volumes and videos as they are.

    Examples
    --------
    >>> as_frames(np.zeros((4, 5, 3)), "image").shape, as_frames(np.zeros((2, 4, 5)), "video").shape
    ((1, 4, 5, 3), (2, 4, 5))
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return image[None] if kind == "image" else image


def check_image_prompts(prompts: list[Box]) -> None:
    """Refuse boxes of a 2D image that are not on frame 0.

    Examples
    --------
    >>> check_image_prompts([Box(0, 0, 2, 2, index=0)])
    >>> check_image_prompts([Box(0, 0, 2, 2, index=3)])
    Traceback (most recent call last):
    ...
    ValueError: a 2D image has one frame: box of label 1 is on frame 3, expected 0
    """
    for b in prompts:
        if b.index != 0:
            raise ValueError(f"a 2D image has one frame: box of label {b.label} is on frame "
                             f"{b.index}, expected 0")


def squeeze_frame(result: PropagationResult) -> PropagationResult:
    """A one-frame :class:`PropagationResult` on the 2D grid (labels, probabilities, tensors).

    Examples
    --------
    >>> r = PropagationResult(np.zeros((1, 2, 3), np.uint8), {1: np.zeros((1, 2, 3))}, [], {})
    >>> s = squeeze_frame(r)
    >>> s.labels.shape, s.probabilities[1].shape
    ((2, 3), (2, 3))
    """
    if result.labels.shape[0] != 1:
        raise ValueError(f"expected one frame, got {result.labels.shape[0]}")
    return replace(result, labels=result.labels[0],
                   probabilities={k: v[0] for k, v in result.probabilities.items()},
                   tensors={k: v[0] for k, v in result.tensors.items()},
                   masks={k: v[0] for k, v in result.masks.items()})


def propagate_image(model: Any, image: Case | np.ndarray, prompts: list[Box], *,
                    kind: str | None = None, modality: str | None = None,
                    window: Any = None, ct_mapping: str = "window",
                    **kwargs: Any) -> PropagationResult:
    """Preprocess a raw image, propagate every prompt and merge (any kind, 2D included).

    Parameters
    ----------
    model : PromptableModel
        Backend (see :mod:`napari_segeval.models.base`).
    image : Case or numpy.ndarray
        The raw image: a case (its axes give the kind, its modality the
        preprocessing), or an array with ``kind`` and ``modality``.
    prompts : list of Box
        One box per structure; on a 2D image every box is on frame 0.
    kind : {"volume", "video", "image"}, optional
        Required for arrays; for a case, defaults to :func:`promptable_kind`.
    modality : str, optional
        For the backend's preprocessing (default: the case's, else ``"other"``).
    window : str or (float, float), optional
        CT window for the backend's preprocessing.
    ct_mapping : {"window", "minmax"}
        How the CT window maps to the model's range
        (:mod:`napari_segeval.inference.windowing`); ``"minmax"`` is MedSAM2's.
    **kwargs
        Passed to :func:`~napari_segeval.propagation.core.propagate_case`
        (``keep_largest``, ``progress``, ``cancel``, ``grad``, ...); the mode
        follows the kind.

    Returns
    -------
    PropagationResult
        On the image's grid: ``(H, W)`` labels and probabilities for a 2D image,
        ``(n, H, W)`` otherwise. ``params["kind"]`` records the kind.

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> img = np.zeros((16, 20, 3), np.uint8); img[4:10, 5:12] = 200
    >>> res = propagate_image(ThresholdPromptModel(), img, [Box(3, 4, 11, 13)], kind="image",
    ...                       modality="endoscopy")
    >>> res.labels.shape, int(res.labels[6, 8]), res.params["mode"]
    ((16, 20), 1, 'video')
    """
    if "mode" in kwargs:
        raise TypeError("propagate_image picks the mode from the kind; do not pass mode")
    if isinstance(image, Case):
        kind = kind or promptable_kind(image)
        modality = modality or image.modality
        array = image.image
    else:
        if kind is None:
            raise ValueError("propagate_image needs kind= for an array (volume, video, image)")
        array = image
    if kind == "image":
        check_image_prompts(prompts)
    extra = {} if ct_mapping == "window" else {"ct_mapping": ct_mapping}
    frames = model.preprocess(as_frames(np.asarray(array), kind), modality or "other", window,
                              **extra)
    result = propagate_case(model, frames, prompts, mode=propagation_mode(kind), **kwargs)
    result.params["kind"] = kind
    result.params["modality"] = modality or "other"
    return squeeze_frame(result) if kind == "image" else result
