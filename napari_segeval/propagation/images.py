"""Propagation from raw images: volumes, videos and 2D images (a one-frame video, prompts on
frame 0, results on the 2D grid), shared by the viewer, the CLI and the attack target."""

from __future__ import annotations

from typing import Any

import numpy as np

from napari_segeval._errors import InvalidPromptError
from napari_segeval.io.case import Case
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import describe
from napari_segeval.propagation.core import on_grid, propagate_case
from napari_segeval.propagation.options import PropagationOptions, as_prompt_sets
from napari_segeval.propagation.result import PropagationResult

#: The kinds of case a promptable model takes (:attr:`napari_segeval.io.Case.kind`).
KINDS: tuple[str, ...] = ("volume", "video", "image")


def promptable_kind(case: Case) -> str:
    """``"volume"``, ``"video"`` or ``"image"``: the case's kind, when a promptable model takes it.

    Raises ``ValueError`` for a time series of volumes or a multi-channel volume.
    """
    if case.is_multichannel or case.kind == "series":
        what = "multi-channel volume" if case.is_multichannel else "time series of volumes"
        raise ValueError(
            f"a promptable model takes a volume, a video or a 2D image, not a {what} ({case.axes})"
        )
    return case.kind


def propagation_mode(kind: str) -> str:
    """Propagation mode of :func:`propagate_case` for an image kind."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return "volume" if kind == "volume" else "video"


def as_frames(image: Any, kind: str) -> Any:
    """A 2D image as a one-frame stack ``(1, H, W[, C])``; volumes and videos as they are."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return image[None] if kind == "image" else image


def check_image_prompts(prompts: Any) -> None:
    """Refuse prompts of a 2D image that are not on frame 0 (:class:`~napari_segeval.InvalidPromptError`)."""
    for s in as_prompt_sets(prompts).values():
        for p in s.prompts:
            if p.index != 0:
                what = "box" if isinstance(p, Box) else describe(p, "frame").split(" on ")[0]
                raise InvalidPromptError(
                    f"a 2D image has one frame: {what} of label {p.label} is on "
                    f"frame {p.index}, expected 0"
                )


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
        A case (its axes give the kind, its modality the preprocessing), or an array with
        ``kind`` and ``modality``.
    prompts : dict of int to PromptSet, or list of PromptSet and Box
        One prompt set (or box) per structure; on a 2D image every prompt is on frame 0.
    kind : {"volume", "video", "image"}, optional
        Required for arrays; for a case, defaults to :func:`promptable_kind`.
    modality : str, optional
        For the backend's preprocessing (default: the case's, else ``"other"``).
    window : str or (float, float), optional
        CT window for the backend's preprocessing.
    ct_mapping : {"window", "minmax"}
        How the CT window maps to the model's range; ``"minmax"`` is MedSAM2's.
    options : PropagationOptions, optional
        Settings of :func:`~napari_segeval.propagation.core.propagate_case`; the mode
        follows the kind.
    **kwargs
        ``priors``, ``progress``, ``cancel``, ``on_slice`` of ``propagate_case``.

    Returns
    -------
    PropagationResult
        On the image's grid (``(H, W)`` for a 2D image); ``params["kind"]`` records the kind.
    """
    kind, modality, frames = image_frames(
        model, image, kind=kind, modality=modality, window=window, ct_mapping=ct_mapping
    )
    if kind == "image":
        check_image_prompts(prompts)
    options = (options or PropagationOptions()).replace(mode=propagation_mode(kind))
    return on_grid(propagate_case(model, frames, prompts, options, **kwargs), kind, modality)


def image_frames(
    model: Any,
    image: Case | np.ndarray,
    *,
    kind: str | None = None,
    modality: str | None = None,
    window: Any = None,
    ct_mapping: str = "window",
) -> tuple[str, str, Any]:
    """``(kind, modality, frames)``: the backend's normalized frames of a raw image."""
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
