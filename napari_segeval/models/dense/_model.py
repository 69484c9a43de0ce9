"""The dense-model record, its preprocessing/post-processing and :func:`segment_case`.

Imports numpy only at module level; torch is imported inside functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from napari_segeval._errors import InvalidImageError
from napari_segeval.inference.intensity import IntensityStats, clip_zscore, minmax_scale
from napari_segeval.inference.postprocess import PostprocessConfig, postprocess
from napari_segeval.inference.resample import ResampleInfo, resample_back, resample_image
from napari_segeval.io._nan import fill_nan
from napari_segeval.io.case import Case

if TYPE_CHECKING:  # pragma: no cover
    import torch


@runtime_checkable
class DenseBackend(Protocol):
    """A dense model that segments a case itself (2D models, models of ``module:factory``).

    ``segment(case, *, probabilities=False)`` returns an object with ``labels`` on the
    case's grid and, when asked, ``probabilities`` ``(K, *spatial)``; a subclass gets the
    attributes' defaults.

    Attributes
    ----------
    name : str
        Where it came from, recorded in results.
    num_classes : int or None
        Output classes, background included; None: not known.
    structures : Mapping of int to str
        Names of its foreground labels (a case's own names come first).
    raw_per_normalized_unit : float
        Raw intensity units per normalized unit of its input (1.0: no normalization).

    Examples
    --------
    >>> class Blank(DenseBackend):
    ...     def segment(self, case, *, probabilities=False):
    ...         return None
    >>> m = Blank()
    >>> isinstance(m, DenseBackend), m.num_classes, dict(m.structures), m.raw_per_normalized_unit
    (True, None, {}, 1.0)
    """

    name: str = ""
    num_classes: int | None = None
    structures: Mapping[int, str] = MappingProxyType({})
    raw_per_normalized_unit: float = 1.0

    def segment(self, case: Case, *, probabilities: bool = False) -> Any:
        """The result of segmenting ``case`` (``labels``, ``probabilities`` when asked)."""
        ...


@dataclass
class PreprocessInfo:
    """What :meth:`DenseModel.preprocess` did to a case (needed to map results back).

    Attributes
    ----------
    resample : ResampleInfo or None
        Resampling to the model spacing (None: native grid).
    intensity : IntensityStats or None
        Clip/z-score statistics of the first channel (None: passed through).
    source_shape : tuple of int
        Spatial shape of the case.
    valid_range : (float, float)
        Normalized values of the clip bounds (over channels: the union).
    channel_scale : tuple of float
        Raw units per normalized unit, per channel (std, times ``max - min`` after MR
        min-max scaling).
    channel_valid_range : tuple of (float, float)
        ``valid_range`` per channel.
    minmax_range : tuple of float or None
        ``max - min`` per channel when MR min-max scaling ran.
    """

    resample: ResampleInfo | None
    intensity: IntensityStats | None
    source_shape: tuple[int, ...]
    valid_range: tuple[float, float]
    channel_scale: tuple[float, ...] = (1.0,)
    channel_valid_range: tuple[tuple[float, float], ...] = ()
    minmax_range: tuple[float, ...] | None = None

    def to_dict(self) -> dict:
        """Plain dict (for JSON records)."""
        return {
            "resample": self.resample.to_dict() if self.resample else None,
            "intensity": self.intensity.to_dict() if self.intensity else None,
            "source_shape": list(self.source_shape),
            "valid_range": list(self.valid_range),
            "channel_scale": list(self.channel_scale),
            "channel_valid_range": [list(v) for v in self.channel_valid_range],
            "minmax_range": list(self.minmax_range) if self.minmax_range else None,
        }


@dataclass
class DenseResult:
    """Output of :func:`segment_case`.

    Attributes
    ----------
    labels : numpy.ndarray
        Label map on the case's grid (uint8 for < 256 classes).
    probabilities : numpy.ndarray or None
        ``(K, *spatial)`` softmax probabilities on the case's grid, when asked for.
    params : dict
        Every parameter used (model, preprocessing, window, post-processing).
    logits : torch.Tensor or None
        With ``grad=True``: logits ``(1, K, *model_grid)`` attached to ``input``'s graph.
    input : torch.Tensor or None
        With ``grad=True``: the normalized input (``requires_grad``).
    """

    labels: np.ndarray
    probabilities: np.ndarray | None = None
    params: dict = field(default_factory=dict)
    logits: Any = None
    input: Any = None


@dataclass
class DenseModel:
    """A dense (prompt-free) segmentation network with its plans.

    Attributes
    ----------
    network : torch.nn.Module
        In eval mode, on ``device``.
    num_classes : int
        Output channels, background included.
    structures : dict of int to str
        Names of the foreground labels.
    patch_size, mirror_axes : tuple of int
        Sliding-window patch; spatial axes of mirroring test-time augmentation.
    spacing : tuple of float or None
        Spacing the network expects (None: the case's own grid).
    intensity : IntensityStats or None
        Clip/z-score statistics of the first channel (None: no normalization).
    postprocessing : PostprocessConfig
        Default post-processing (organs, lesion thresholds).
    name : str
        Where it came from (``"builtin-ct"`` or a path).
    device : torch.device
        Where the network runs.
    meta : dict
        Anything else (training record, file).
    in_channels : int
        Image channels the network takes (MR sequences; 1 for CT).
    channel_intensity : tuple of IntensityStats or None
        Statistics per channel when ``in_channels > 1``.
    mr_minmax : bool or None
        Min-max scale each non-CT channel to [0, 1] before the clip and z-score (ROG's
        MR step); None: the plans do not say (False unless a protocol sets it).
    """

    network: Any
    num_classes: int
    structures: dict[int, str]
    patch_size: tuple[int, ...]
    spacing: tuple[float, ...] | None
    intensity: IntensityStats | None
    postprocessing: PostprocessConfig
    mirror_axes: tuple[int, ...]
    name: str
    device: Any
    meta: dict = field(default_factory=dict)
    in_channels: int = 1
    channel_intensity: tuple[IntensityStats | None, ...] = ()
    mr_minmax: bool | None = None

    @property
    def raw_per_normalized_unit(self) -> float:
        """Raw units per normalized unit of the first channel, before any MR min-max scaling."""
        return self.intensity.raw_per_normalized_unit if self.intensity else 1.0

    @property
    def stats_per_channel(self) -> tuple[IntensityStats | None, ...]:
        """The clip/z-score statistics of each input channel."""
        if self.channel_intensity:
            return tuple(self.channel_intensity)
        return (self.intensity,) * self.in_channels

    def _channels(self, case: Case) -> list[np.ndarray]:
        image = np.asarray(case.image)
        chans = list(image) if case.is_multichannel else [image]
        nd = len(self.patch_size)
        if any(c.ndim != nd for c in chans):
            raise InvalidImageError(
                f"{case.image_path or 'image'}: {image.ndim}D array ({case.axes}), the model "
                f"{self.name} expects {nd}D volumes"
            )
        if len(chans) != self.in_channels:
            hint = (
                " (evaluate one of them with --param channel=K)"
                if self.in_channels == 1
                else " (a data set names its channels in dataset.json: modality / "
                "channel_names, or one file per channel: _0000, _0001 ...)"
            )
            raise InvalidImageError(
                f"{case.image_path or 'image'}: {len(chans)} image channel(s), the model "
                f"{self.name} takes {self.in_channels}{hint}"
            )
        return chans

    def preprocess(self, case: Case) -> tuple[torch.Tensor, PreprocessInfo]:
        """Resample (cubic), scale and normalize ``case`` into ``(1, C, *grid)`` on :attr:`device`."""
        import torch

        source = case.image_path or "image"
        minmax = bool(self.mr_minmax) and case.modality != "CT"
        info_r = None
        out, scales, valids, ranges = [], [], [], []
        for image, stats in zip(self._channels(case), self.stats_per_channel):
            image, _ = fill_nan(image, source)  # NaN: the minimum (io._nan)
            if not np.isfinite(image).all():
                raise InvalidImageError(f"{source}: contains infinite values")
            data = image.astype(np.float32)
            if self.spacing is not None:
                data, info_r = resample_image(data, case.spacing, self.spacing, order=3)
                if info_r.identity:
                    data, info_r = image.astype(np.float32), None
            scale = 1.0
            if minmax:
                data, scale = minmax_scale(data)
                ranges.append(scale)
            if stats is not None:
                data = clip_zscore(data, stats)
                valid = tuple((v - stats.mean) / stats.std for v in (stats.lower, stats.upper))
                scale *= stats.std
            else:
                valid = (float(data.min()), float(data.max()))
            out.append(data)
            scales.append(float(scale))
            valids.append((float(valid[0]), float(valid[1])))
        data = out[0][None] if len(out) == 1 else np.stack(out)
        x = torch.from_numpy(np.ascontiguousarray(data))[None].to(self.device)
        union = (min(v[0] for v in valids), max(v[1] for v in valids))
        info = PreprocessInfo(
            info_r,
            self.stats_per_channel[0],
            tuple(case.spatial_shape),
            union,
            tuple(scales),
            tuple(valids),
            tuple(ranges) if minmax else None,
        )
        return x, info

    def logits(
        self,
        x: torch.Tensor,
        *,
        overlap: float = 0.5,
        mirror: bool | Sequence[int] = False,
        batch_size: int = 2,
        accumulate_device: Any = None,
        progress: Callable[[int, int], None] | None = None,
        cancel: Any = None,
    ) -> torch.Tensor:
        """Gaussian sliding-window logits ``(N, K, *grid)`` of a normalized input (differentiable)."""
        from napari_segeval.inference.sliding_window import sliding_window_logits

        return sliding_window_logits(
            self.network,
            x,
            self.patch_size,
            overlap=overlap,
            batch_size=batch_size,
            mirror_axes=self._mirror_axes(mirror),
            accumulate_device=accumulate_device,
            progress=progress,
            cancel=cancel,
        )

    def _mirror_axes(self, mirror: bool | Sequence[int]) -> tuple[int, ...]:
        if mirror is True:
            return tuple(self.mirror_axes)
        if mirror is False or mirror is None:
            return ()
        return tuple(int(a) for a in mirror)

    def postprocess(
        self,
        logits: torch.Tensor,
        info: PreprocessInfo,
        spacing: Sequence[float],
        *,
        apply: bool = True,
        probabilities: bool = False,
    ) -> tuple[np.ndarray, np.ndarray | None, dict]:
        """Logits on the model grid -> labels (and probabilities) on the case's grid.

        Softmax, linear resampling back, argmax, then :attr:`postprocessing` when ``apply``.
        """
        import torch

        with torch.no_grad():
            prob = torch.softmax(logits.detach()[0].float(), dim=0).cpu().numpy()
        if info.resample is not None:
            prob = resample_back(prob, info.resample, order=1, channel_axis=0)
        dtype = np.uint8 if self.num_classes <= 256 else np.int32
        labels = prob.argmax(0).astype(dtype)
        record: dict = {"applied": False}
        if apply:
            labels, record = postprocess(labels, spacing, self.postprocessing)
            record["applied"] = True
        return labels, (prob.astype(np.float32) if probabilities else None), record

    def describe(self) -> dict:
        """Plans of the model as a plain dict (recorded with results)."""
        return {
            "name": self.name,
            "num_classes": self.num_classes,
            "structures": {str(k): v for k, v in self.structures.items()},
            "patch_size": list(self.patch_size),
            "spacing": list(self.spacing) if self.spacing else None,
            "intensity": self.intensity.to_dict() if self.intensity else None,
            "raw_per_normalized_unit": self.raw_per_normalized_unit,
            "in_channels": self.in_channels,
            "channel_intensity": [s.to_dict() if s else None for s in self.channel_intensity]
            or None,
            "mr_minmax": self.mr_minmax,
            "mirror_axes": list(self.mirror_axes),
            "device": str(self.device),
        }


def segment_case(
    model: DenseModel,
    case: Case,
    *,
    overlap: float = 0.5,
    mirror: bool | Sequence[int] = False,
    batch_size: int = 2,
    postprocess: bool = True,
    probabilities: bool = False,
    accumulate_device: Any = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: Any = None,
    grad: bool = False,
) -> DenseResult:
    """Segment one case with a dense model by Gaussian sliding window.

    Parameters
    ----------
    model : DenseModel
        From :func:`~napari_segeval.models.registry.load_dense`.
    case : Case
        A volume (``"zyx"``) or one channel per model input channel (``"czyx"``).
    overlap : float
        Window overlap fraction.
    mirror : bool or sequence of int
        Mirroring test-time augmentation: True: ``model.mirror_axes``, or these axes.
    batch_size : int
        Windows per network call.
    postprocess : bool
        Apply the model's post-processing (largest component, small lesions).
    probabilities : bool
        Also return ``(K, *spatial)`` probabilities on the case's grid.
    accumulate_device : torch.device or str, optional
        ``"cpu"`` keeps the full-size accumulators in host memory.
    progress : callable, optional
        ``progress(done_windows, total_windows)``.
    cancel : threading.Event, optional
        Checked between window batches.
    grad : bool
        Keep the autograd graph (``result.input`` and ``result.logits``) for attacks.

    Returns
    -------
    DenseResult
    """
    import torch

    x, info = model.preprocess(case)
    if grad:
        x = x.clone().requires_grad_(True)
    ctx = torch.enable_grad() if grad else torch.inference_mode()
    with ctx:
        logits = model.logits(
            x,
            overlap=overlap,
            mirror=mirror,
            batch_size=batch_size,
            accumulate_device=accumulate_device,
            progress=progress,
            cancel=cancel,
        )
    labels, prob, record = model.postprocess(
        logits, info, case.spacing, apply=postprocess, probabilities=probabilities
    )
    params = {
        "model": model.describe(),
        "overlap": overlap,
        "mirror_axes": list(model._mirror_axes(mirror)),
        "batch_size": batch_size,
        "sigma_scale": 0.125,
        "preprocess": info.to_dict(),
        "postprocess": record,
    }
    return DenseResult(labels, prob, params, logits if grad else None, x if grad else None)
