"""Risk of failure without a reference: per slice, per structure and per case.

Each slice's signals (:class:`Signal`, each in ``[0, 1]``, higher = riskier; NaN where
the run cannot give it) are combined by a fitted logistic model (:class:`RiskModel`,
shipped as ``risk_model.json`` and ``risk_model_dense.json``). The signals, the fit and
its commands are described in docs/reviewing.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval.metrics.overlap import mask_dice
from napari_segeval.uncertainty.maps import binary_entropy


class Signal(Enum):
    """A per-slice risk signal (see the module doc); the value is its column name."""

    ENTROPY = "entropy"
    CONTINUITY = "continuity"
    END = "end"
    IOU = "iou"
    JITTER = "jitter"
    MODELS = "models"
    TTA = "tta"
    OBJECT = "object"


class Flag(Enum):
    """Why a slice is flagged for review (the text a person reads)."""

    STOPPED = "the chain stopped here"
    ENDED = "the mask ends on a large cross-section"
    JITTER = "box jitter disagrees"
    IOU = "IoU estimate fell"
    MODELS = "models disagree"
    TTA = "test-time augmentations disagree"
    OBJECT = "the model doubts the object is here"
    SHAPE = "the shape jumps between slices"
    UNCERTAIN = "the mask is uncertain"


#: The level of a signal above which a slice is flagged, and the flag it raises.
FLAG_LEVEL: dict[Signal, tuple[float, Flag]] = {
    Signal.END: (0.5, Flag.ENDED),
    Signal.JITTER: (0.2, Flag.JITTER),
    Signal.IOU: (0.3, Flag.IOU),
    Signal.MODELS: (0.3, Flag.MODELS),
    Signal.TTA: (0.3, Flag.TTA),
    Signal.OBJECT: (0.5, Flag.OBJECT),
    Signal.CONTINUITY: (0.6, Flag.SHAPE),
    Signal.ENTROPY: (0.5, Flag.UNCERTAIN),
}


@dataclass(frozen=True)
class SliceRisk:
    """One structure on one slice.

    Attributes
    ----------
    slice : int
        Slice (frame) index.
    risk : float
        Estimated probability that the slice's mask is wrong.
    signals : mapping of Signal to float
        The signals it was made from (NaN: not available).
    flags : tuple of Flag
        Why it is flagged (empty: not flagged).
    area : int
        Voxels of the structure's mask on the slice.
    """

    slice: int
    risk: float
    signals: Mapping[Signal, float]
    flags: tuple[Flag, ...] = ()
    area: int = 0


@dataclass(frozen=True)
class StructureRisk:
    """One structure of one prediction: its risk and its slices'.

    ``stops`` lists ``(slice, reason)`` for each walk that ended by a quality stop.
    """

    label: int
    risk: float
    slices: tuple[SliceRisk, ...]
    stops: tuple[tuple[int, str], ...] = ()

    @property
    def flagged(self) -> tuple[SliceRisk, ...]:
        """The flagged slices, riskiest first."""
        return tuple(sorted((s for s in self.slices if s.flags), key=lambda s: -s.risk))

    @property
    def riskiest_slice(self) -> int | None:
        """The slice to open first: the riskiest flagged one, else the riskiest."""
        pool = self.flagged or tuple(sorted(self.slices, key=lambda s: -s.risk))
        return pool[0].slice if pool else None


@dataclass(frozen=True)
class Logistic:
    """``sigmoid(intercept + sum_i weights[i] * (x_i if finite else fill[i]))``."""

    names: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float
    fill: tuple[float, ...]

    def __call__(self, x: Mapping[str, float]) -> float:
        z = self.intercept
        for name, w, f in zip(self.names, self.weights, self.fill):
            v = float(x.get(name, math.nan))
            z += w * (v if math.isfinite(v) else f)
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0  # exp overflows below -709

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Logistic:
        """From its JSON form (``names``, ``weights``, ``intercept``, ``fill``)."""
        weights, fill = (tuple(float(v) for v in d[k]) for k in ("weights", "fill"))
        return cls(tuple(d["names"]), weights, float(d["intercept"]), fill)

    def to_dict(self) -> dict:
        """Its JSON form."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in vars(self).items()}


class RiskKind(Enum):
    """The kind of model a shipped risk model was fitted for; the value is its file."""

    PROMPTABLE = "risk_model.json"
    DENSE = "risk_model_dense.json"


@dataclass(frozen=True)
class RiskModel:
    """The two fitted logistic models (slice and structure) and their provenance."""

    slice: Logistic
    structure: Logistic
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Any = None, kind: RiskKind = RiskKind.PROMPTABLE) -> RiskModel:
        """The shipped model of ``kind`` (its file beside this module), or ``path``'s."""
        file = resources.files(__package__).joinpath(kind.value) if path is None else Path(path)
        d = json.loads(file.read_text(encoding="utf-8"))
        return cls(
            Logistic.from_dict(d["slice"]),
            Logistic.from_dict(d["structure"]),
            d.get("provenance", {}),
        )

    def to_dict(self) -> dict:
        """Its JSON form (what :meth:`load` reads)."""
        return {
            "slice": self.slice.to_dict(),
            "structure": self.structure.to_dict(),
            "provenance": dict(self.provenance),
        }


def _disagreement(mask: np.ndarray, others: Sequence[np.ndarray]) -> float:
    """One minus the mean Dice between ``mask`` and each of ``others`` (NaN: none)."""
    return 1.0 - float(np.mean([mask_dice(mask, o) for o in others])) if others else math.nan


def slice_entropy(prob: np.ndarray, mask: np.ndarray) -> float:
    """The ``entropy`` signal of one slice (``prob``, ``mask``: ``(H, W)``).

    Mean binary entropy over the mask grown by one pixel, or over ``prob > 0.05``
    where the mask is empty.
    """
    from scipy import ndimage

    region = ndimage.binary_dilation(mask, iterations=1) if mask.any() else prob > 0.05
    if not region.any():
        return 0.0
    return float(binary_entropy(prob[region]).mean())


def slice_signals(
    masks: np.ndarray,
    probs: Any,
    slices: Iterable[int],
    *,
    ends: Sequence[Any] = (),
    quality: Mapping[int, float] | None = None,
    agreement: Mapping[int, float] | None = None,
    others: Sequence[np.ndarray] = (),
    augmented: Sequence[np.ndarray] = (),
    presence: Mapping[int, float] | None = None,
) -> dict[int, dict[Signal, float]]:
    """The signals of one structure on ``slices``.

    Parameters
    ----------
    masks : numpy.ndarray
        The structure's mask, ``(n, H, W)``.
    probs : numpy.ndarray or indexable
        Its foreground probability: ``probs[k]`` is slice ``k``, ``(H, W)``.
    slices : iterable of int
        The slices to describe.
    ends : sequence of WalkEnd
        Where its walks ended (:class:`~napari_segeval.propagation.trace.WalkEnd`).
    quality, agreement : mapping of int to float, optional
        The model's IoU estimate and the box-jitter agreement per slice.
    others : sequence of numpy.ndarray
        Other models' masks of the same structure, ``(n, H, W)`` each.
    augmented : sequence of numpy.ndarray
        The structure's masks from test-time augmented passes, ``(n, H, W)`` each.
    presence : mapping of int to float, optional
        The model's object score per slice (its probability that the object is there).
    """
    n = masks.shape[0]
    areas = masks.reshape(n, -1).sum(axis=1)
    biggest = max(int(areas.max()), 1) if n else 1
    end_risk: dict[int, float] = {}
    for e in ends:
        level = float(areas[e.last]) / biggest
        for k in e.slices:
            end_risk[k] = max(end_risk.get(k, 0.0), level)
    estimates = {Signal.IOU: quality, Signal.JITTER: agreement, Signal.OBJECT: presence}
    out: dict[int, dict[Signal, float]] = {}
    for k in slices:
        m = masks[k]
        near = [masks[j] for j in (k - 1, k + 1) if 0 <= j < n and areas[j] > 0]
        row = {
            Signal.ENTROPY: slice_entropy(probs[k], m),
            Signal.CONTINUITY: (_disagreement(m, near) if near else 1.0) if m.any() else math.nan,
            Signal.END: end_risk.get(k, 0.0),
            Signal.MODELS: _disagreement(m, [o[k] for o in others]),
            Signal.TTA: _disagreement(m, [a[k] for a in augmented]),
        }
        for signal, estimate in estimates.items():  # one minus the model's own estimate
            v = (estimate or {}).get(k)
            row[signal] = math.nan if v is None else float(np.clip(1.0 - v, 0.0, 1.0))
        out[k] = {s: row[s] for s in Signal}  # in Signal's order
    return out


def flags_of(signals: Mapping[Signal, float], stopped: bool = False) -> tuple[Flag, ...]:
    """The flags of a slice's signals (``stopped``: a quality stop ended a walk here)."""
    out = [Flag.STOPPED] if stopped else []
    for signal, (level, flag) in FLAG_LEVEL.items():
        v = signals.get(signal, math.nan)
        if math.isfinite(v) and v >= level and not (stopped and signal is Signal.END):
            out.append(flag)
    return tuple(out)


def structure_features(slices: Sequence[SliceRisk], quality_stop: bool) -> dict[str, float]:
    """The structure-level features a fitted :class:`Logistic` reads.

    Area-weighted mean and largest slice risk, whether a walk stopped on its own
    judgement, log of the number of slices, and per signal its area-weighted mean over
    the slices that have it (``mean_<signal>``).

    Examples
    --------
    >>> s = [SliceRisk(0, 0.2, {Signal.TTA: 0.1}, area=3), SliceRisk(1, 0.6, {}, area=1)]
    >>> {k: round(v, 3) for k, v in structure_features(s, False).items()}
    {'mean_risk': 0.3, 'max_risk': 0.6, 'quality_stop': 0.0, 'n_slices': 0.693, 'mean_tta': 0.1}
    """
    if not slices:
        return {"mean_risk": 1.0, "max_risk": 1.0, "quality_stop": float(quality_stop),
                "n_slices": 0.0}  # fmt: skip
    w = np.array([max(s.area, 1) for s in slices], float)
    r = np.array([s.risk for s in slices], float)
    out = {
        "mean_risk": float((w * r).sum() / w.sum()),
        "max_risk": float(r.max()),
        "quality_stop": float(quality_stop),
        "n_slices": float(math.log(len(slices))),
    }
    for signal in Signal:
        v = np.array([s.signals.get(signal, math.nan) for s in slices], float)
        ok = np.isfinite(v)
        if ok.any():
            out[f"mean_{signal.value}"] = float((w[ok] * v[ok]).sum() / w[ok].sum())
    return out


def structure_risk(
    label: int,
    masks: np.ndarray,
    probs: Any,
    *,
    trace: Any = None,
    others: Sequence[np.ndarray] = (),
    extra_slices: Iterable[int] = (),
    augmented: Sequence[np.ndarray] = (),
    model: RiskModel | None = None,
) -> StructureRisk:
    """Risk of one structure and of each of its slices.

    The slices described are those with a predicted mask, the slice after each end of
    a walk, and ``extra_slices`` (a reference's, when there is one).

    Parameters
    ----------
    label : int
        Structure id.
    masks, probs, others, augmented
        As in :func:`slice_signals` (others: on the same prompts; augmented: dense models).
    trace : StructureTrace, optional
        Its walks' trace (:mod:`napari_segeval.propagation.trace`).
    extra_slices : iterable of int
        More slices to describe.
    model : RiskModel, optional
        Default: the shipped one (:meth:`RiskModel.load`).
    """
    model = model or RiskModel.load()
    n = masks.shape[0]
    ends = tuple(trace.ends) if trace is not None else ()
    quality_stops = trace.quality_stops if trace is not None else ()
    signals_of = ("quality", "agreement", "presence")  # the model's per-slice signals
    seen = {k: dict(getattr(trace, k)) for k in signals_of} if trace is not None else {}
    wanted = set(np.flatnonzero(masks.reshape(n, -1).any(axis=1)).tolist())
    wanted |= {k for e in ends for k in e.slices}
    wanted |= {int(k) for k in extra_slices if 0 <= int(k) < n}
    signals = slice_signals(
        masks, probs, sorted(wanted), ends=ends, others=others, augmented=augmented, **seen
    )
    stopped = {k for e in quality_stops for k in e.slices}
    rows = []
    for k, sig in signals.items():
        risk = model.slice({s.value: v for s, v in sig.items()})
        rows.append(SliceRisk(k, risk, sig, flags_of(sig, k in stopped), int(masks[k].sum())))
    stops = tuple((e.last, e.reason.value) for e in quality_stops)
    risk = model.structure(structure_features(rows, bool(stops)))
    return StructureRisk(label, risk, tuple(rows), stops)


def fit_logistic(
    names: Sequence[str], x: Sequence[Mapping[str, float]], failed: Sequence[bool], l2: float = 1e-2
) -> Logistic:
    """A :class:`Logistic` of ``names`` fitted to ``failed`` by penalised maximum likelihood.

    A missing value takes its feature's mean (the model's ``fill``); ``l2`` penalises
    the weights of the standardised features (not the intercept); the returned weights
    are on the features' own scale. A feature that does not vary gets weight 0.
    """
    from scipy.optimize import minimize

    raw = np.array([[float(r.get(n, math.nan)) for n in names] for r in x], float)
    ok = np.isfinite(raw)
    fill = np.array(
        [float(raw[ok[:, j], j].mean()) if ok[:, j].any() else 0.0 for j in range(len(names))]
    )
    data = np.where(ok, raw, fill)
    centre = data.mean(axis=0)
    spread = data.std(axis=0)
    varies = spread > 1e-12
    std = np.where(varies, (data - centre) / np.where(varies, spread, 1.0), 0.0)
    y = np.asarray(failed, float)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = w[0] + std @ w[1:]
        nll = float(np.sum(np.logaddexp(0.0, z) - y * z)) / len(y)
        g = (1.0 / (1.0 + np.exp(-z)) - y) / len(y)
        grad = np.concatenate([[g.sum()], std.T @ g + 2 * l2 * w[1:]])
        return nll + l2 * float(w[1:] @ w[1:]), grad

    w = minimize(loss, np.zeros(len(names) + 1), jac=True, method="L-BFGS-B").x
    weights = np.where(varies, w[1:] / np.where(varies, spread, 1.0), 0.0)
    intercept = float(w[0] - weights @ centre)
    return Logistic(
        tuple(names), tuple(float(v) for v in weights), intercept, tuple(float(v) for v in fill)
    )


__all__ = [
    "FLAG_LEVEL",
    "Flag",
    "Logistic",
    "RiskKind",
    "RiskModel",
    "Signal",
    "SliceRisk",
    "StructureRisk",
    "fit_logistic",
    "flags_of",
    "slice_entropy",
    "slice_signals",
    "structure_features",
    "structure_risk",
]
