"""Attack target for promptable propagation: the normalized frames, prompts fixed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval.io.case import Case
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_file import prompt_to_dict
from napari_segeval.propagation import PropagationOptions, merge_structures, propagate_case
from napari_segeval.propagation.images import as_frames, check_image_prompts, promptable_kind
from napari_segeval.propagation.options import as_prompt_sets

if TYPE_CHECKING:  # pragma: no cover
    import torch

LOGIT_EPS = 1e-6


def _record(p: Any) -> dict:
    """One prompt for the attack record (a box as ``[y0, x0, y1, x1]``)."""
    if isinstance(p, Box):
        return {"label": p.label, "index": p.index, "box": [p.y0, p.x0, p.y1, p.x1]}
    d = prompt_to_dict(p)
    d.pop("rle", None)
    return {"label": p.label, **d}


class PromptTarget:
    """A case, fixed prompts and a promptable model, as ``forward(x) -> logits``.

    Parameters
    ----------
    model : PromptableModel
        A backend (:class:`~napari_segeval.models.builtin_prompt.BuiltinPromptModel`, MedSAM2).
    case : Case
        Volume, video or 2D image (and optional reference labels).
    prompts : dict of int to PromptSet, or list of PromptSet and Box
        One prompt set (or box) per structure (on frame 0 for a 2D image).
    mode : {"volume", "video"}, optional
        Default: ``"volume"`` for volumes; a video or 2D image is always ``"video"``.
    window : str or (float, float), optional
        CT window for the backend's preprocessing.
    keep_largest, stop_when_empty, threshold
        As :func:`napari_segeval.propagation.propagate_case`.
    chain : {"full", "per-slice"}
        Gradient path: each slice's soft mask feeds the next (a perturbation acts on every
        later slice), or each frame is conditioned on the clean previous prediction
        (MedSAM2's memory bank refuses it).

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> from napari_segeval.phantoms.ct import make_ct_case
    >>> from napari_segeval.prompts.from_labels import boxes_from_labels
    >>> case = make_ct_case(3, shape=(8, 32, 32))
    >>> t = PromptTarget(ThresholdPromptModel(), case, boxes_from_labels(case.labels, [1]))
    >>> t.num_classes, t.raw_per_normalized_unit
    (2, 400.0)
    """

    kind = "promptable"
    #: Propagate all structures in one shared pass (see
    #: :func:`napari_segeval.propagation.propagate_case`): the same logits and
    #: gradient as one pass per structure, each frame's shared work done once.
    share = True

    def __init__(
        self,
        model: Any,
        case: Case,
        prompts: Any,
        *,
        mode: str | None = None,
        window: Any = None,
        keep_largest: bool = True,
        stop_when_empty: bool = True,
        threshold: float = 0.5,
        chain: str = "full",
    ) -> None:
        if chain not in ("full", "per-slice"):
            raise ValueError(f"chain must be 'full' or 'per-slice', got {chain!r}")
        if not prompts:
            raise ValueError("a promptable attack needs at least one box prompt")
        self.model, self.case = model, case
        #: the prompt sets, by structure id
        self.prompts = as_prompt_sets(prompts)
        self.input_kind = promptable_kind(case)
        self.image_2d = self.input_kind == "image"
        if self.image_2d:
            if mode not in (None, "video"):
                raise ValueError(f"a 2D image is attacked as a one-frame video, not {mode!r}")
            check_image_prompts(self.prompts)
        self.mode = mode or ("volume" if self.input_kind == "volume" else "video")
        self.window = window
        self.keep_largest, self.stop_when_empty = keep_largest, stop_when_empty
        self.threshold = float(threshold)
        frames = as_frames(np.asarray(case.image), self.input_kind)
        self.x = model.preprocess(frames, case.modality, window)[None].float().to(model.device)
        #: image channels of ``x`` (RGB frames ``(1, n, H, W, C)``), None for grey frames
        self.channel_axis = self.x.ndim - 1 if self.x.ndim == 5 else None
        self.norm_info = info = model.normalize_info(case.modality, window, case.image)
        self.valid_range = (float(info.valid_min), float(info.valid_max))
        #: every channel (RGB included) shares ``valid_range``: no per-channel ranges
        self.channel_valid_ranges: tuple[tuple[float, float], ...] = ()
        self.raw_per_normalized_unit = float(info.raw_per_normalized_unit)
        self.label_ids = sorted(self.prompts)
        self.num_classes = len(self.label_ids) + 1
        self.structures = {lab: case.structure_name(lab) for lab in self.label_ids}
        self.chain = chain
        self.priors = None
        if chain == "per-slice":
            import torch

            with torch.no_grad():  # full-size clean probabilities, read at every step
                self.priors = dict(self._propagate(self.x[0], grad=False).probabilities)

    def _propagate(self, frames: Any, grad: bool):
        options = PropagationOptions(
            mode=self.mode,
            keep_largest=self.keep_largest,
            stop_when_empty=self.stop_when_empty,
            threshold=self.threshold,
            grad=grad,
            share=self.share,
        )
        return propagate_case(self.model, frames, self.prompts, options, priors=self.priors)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(1, K + 1, n, H, W)`` of normalized frames ``(1, n, H, W[, C])``.

        Background is 0 and structure ``k`` ``logit(p_k)``, so one structure's softmax is
        ``(1 - p, p)``; class ``i`` is the ``i``-th prompted label id.
        """
        import torch

        if x.shape[0] != 1:
            raise ValueError("promptable targets attack one case at a time")
        res = self._propagate(x[0], grad=torch.is_grad_enabled())
        found = res.tensors or res.probabilities  # tensors: with gradients
        probs = [torch.as_tensor(found[lab], device=x.device) for lab in self.label_ids]
        fg = torch.logit(torch.stack(probs).float(), eps=LOGIT_EPS)
        return torch.cat([torch.zeros_like(fg[:1]), fg])[None]

    def reference_target(self) -> torch.Tensor | None:
        """Reference labels as class indices ``(1, n, H, W)`` (other labels: background).

        A 2D image's labels get their one-frame axis: ``(1, 1, H, W)``.
        """
        import torch

        if self.case.labels is None:
            return None
        lab = np.asarray(self.case.labels)
        if self.image_2d:
            lab = lab[None]
        out = np.zeros(lab.shape, np.int64)
        for i, lid in enumerate(self.label_ids, start=1):
            out[lab == lid] = i
        return torch.from_numpy(out)[None].to(self.x.device)

    def labels(self, logits: torch.Tensor) -> np.ndarray:
        """Label map (label ids) the way propagation merges it (largest component, overlaps).

        On the case's grid: ``(H, W)`` for a 2D image.
        """
        import torch

        with torch.no_grad():
            prob = torch.sigmoid(logits.detach()[0, 1:].float()).cpu().numpy()
        out = merge_structures(
            {lab: prob[i] for i, lab in enumerate(self.label_ids)},
            threshold=self.threshold,
            keep_largest=self.keep_largest,
        )
        return out[0] if self.image_2d else out

    def perturbation_raw(self, delta: torch.Tensor) -> np.ndarray:
        """``delta`` in raw units on the case's grid (channel mean for grey images)."""
        d = delta.detach()[0].float().cpu().numpy() * self.raw_per_normalized_unit
        if self.image_2d:
            d = d[0]
        image_nd = np.asarray(self.case.image).ndim
        if d.ndim == image_nd + 1:
            d = d.mean(axis=-1)
        return d.astype(np.float32)

    def describe(self) -> dict:
        """Target settings for the record."""
        return {
            "kind": self.kind,
            "model": self.model.name,
            "mode": self.mode,
            "input": self.input_kind,
            "chain": self.chain,
            "prompts": [_record(p) for s in self.prompts.values() for p in s.prompts],
            "window": self.window,
            "normalization": self.norm_info.description,
            "keep_largest": self.keep_largest,
            "stop_when_empty": self.stop_when_empty,
            "threshold": self.threshold,
        }
