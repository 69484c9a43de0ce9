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
  (its prompts on frame 0); labels and probabilities come back on the 2D grid.

The viewer, the command line and the promptable attack target share these rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from napari_segeval._errors import InvalidPromptError
from napari_segeval.io.case import Case
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import describe
from napari_segeval.propagation.core import propagate_case
from napari_segeval.propagation.options import PropagationOptions, as_prompt_sets
from napari_segeval.propagation.result import PropagationResult

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
    what = (
        "multi-channel volume"
        if case.is_multichannel
        else "time series of volumes"
        if kind == "series"
        else None
    )
    if what is not None:
        raise ValueError(
            f"a promptable model takes a volume, a video or a 2D image, not a {what} ({case.axes})"
        )
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


def check_image_prompts(prompts: Any) -> None:
    """Refuse prompts of a 2D image that are not on frame 0 (boxes or prompt sets):
    :class:`~napari_segeval.InvalidPromptError`, one line.

    Examples
    --------
    >>> check_image_prompts([Box(0, 0, 2, 2, index=0)])
    >>> check_image_prompts([Box(0, 0, 2, 2, index=3)])
    Traceback (most recent call last):
    ...
    napari_segeval._errors.InvalidPromptError: a 2D image has one frame: box of label 1 is on frame 3, expected 0
    """
    for s in as_prompt_sets(prompts).values():
        for p in s.prompts:
            if p.index != 0:
                what = "box" if isinstance(p, Box) else describe(p, "frame").split(" on ")[0]
                raise InvalidPromptError(
                    f"a 2D image has one frame: {what} of label {p.label} is on "
                    f"frame {p.index}, expected 0"
                )


def squeeze_frame(result: PropagationResult) -> PropagationResult:
    """A one-frame :class:`PropagationResult` on the 2D grid (labels, probabilities, tensors).

    Examples
    --------
    >>> from napari_segeval.propagation.result import StructureResult
    >>> one = StructureResult(1, (0, 0, 0), np.zeros((1, 2, 3), np.float32),
    ...                       np.zeros((1, 2, 3), bool), (1, 2, 3))
    >>> s = squeeze_frame(PropagationResult(np.zeros((1, 2, 3), np.uint8), {1: one}, {}, {}))
    >>> s.labels.shape, s.probabilities[1].shape
    ((2, 3), (2, 3))
    """
    return result.first()


def propagate_image(
    model: Any,
    image: Case | np.ndarray,
    prompts: Any,
    *,
    kind: str | None = None,
    modality: str | None = None,
    window: Any = None,
    ct_mapping: str = "window",
    options: PropagationOptions | None = None,
    **kwargs: Any,
) -> PropagationResult:
    """Preprocess a raw image, propagate every structure's prompts and merge (any kind).

    Parameters
    ----------
    model : PromptableModel
        Backend (see :mod:`napari_segeval.models.base`).
    image : Case or numpy.ndarray
        The raw image: a case (its axes give the kind, its modality the
        preprocessing), or an array with ``kind`` and ``modality``.
    prompts : dict of int to PromptSet, or list of PromptSet and Box
        One prompt set (or box) per structure; on a 2D image every prompt is on frame 0.
    kind : {"volume", "video", "image"}, optional
        Required for arrays; for a case, defaults to :func:`promptable_kind`.
    modality : str, optional
        For the backend's preprocessing (default: the case's, else ``"other"``).
    window : str or (float, float), optional
        CT window for the backend's preprocessing.
    ct_mapping : {"window", "minmax"}
        How the CT window maps to the model's range
        (:mod:`napari_segeval.inference.windowing`); ``"minmax"`` is MedSAM2's.
    options : PropagationOptions, optional
        Settings of :func:`~napari_segeval.propagation.core.propagate_case`; the
        mode follows the kind.
    **kwargs
        ``priors``, ``progress``, ``cancel``, ``on_slice`` of
        :func:`~napari_segeval.propagation.core.propagate_case`.

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
    kind, modality, frames = image_frames(
        model, image, kind=kind, modality=modality, window=window, ct_mapping=ct_mapping
    )
    if kind == "image":
        check_image_prompts(prompts)
    options = (options or PropagationOptions()).replace(mode=propagation_mode(kind))
    result = propagate_case(model, frames, prompts, options, **kwargs)
    result.params["kind"] = kind
    result.params["modality"] = modality
    return squeeze_frame(result) if kind == "image" else result


def image_frames(
    model: Any,
    image: Case | np.ndarray,
    *,
    kind: str | None = None,
    modality: str | None = None,
    window: Any = None,
    ct_mapping: str = "window",
) -> tuple[str, str, Any]:
    """``(kind, modality, frames)``: the backend's normalized frames of a raw image.

    A 2D image becomes a one-frame stack (:func:`as_frames`).

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> kind, modality, frames = image_frames(ThresholdPromptModel(), np.zeros((4, 5), np.uint8),
    ...                                       kind="image")
    >>> kind, modality, tuple(frames.shape)
    ('image', 'other', (1, 4, 5))
    """
    if isinstance(image, Case):
        kind = kind or promptable_kind(image)
        modality = modality or image.modality
        array = image.image
    else:
        if kind is None:
            raise ValueError("propagate_image needs kind= for an array (volume, video, image)")
        array = image
    extra = {} if ct_mapping == "window" else {"ct_mapping": ct_mapping}
    modality = modality or "other"
    frames = model.preprocess(as_frames(np.asarray(array), kind), modality, window, **extra)
    return kind, modality, frames
