"""Attack budgets: epsilon in normalized units, converted to raw units for people.

Every attack works in the model's **normalized input units** (what the model's
``preprocess`` returns). People think in raw units (HU for CT, grey levels for
ultrasound/endoscopy, scanner units for MR), so results report both.

Assumption: the normalization is *linear* in the range clean images occupy
(z-scoring, a CT window, min-max scaling), so one normalized unit is a fixed
number of raw units, ``raw_per_normalized_unit`` (the foreground std for a
z-scored dense model, the window width for a windowed promptable model). Outside
the clip range or the window, the inverse mapping is undefined (many raw values
map to one normalized value); a perturbation is therefore converted to raw units
as ``delta * raw_per_normalized_unit`` and added to the *clean raw image*, not
obtained by inverting the normalization of the perturbed input.

Natural-image budgets such as ``8/255`` assume inputs in ``[0, 1]``; they mean
nothing for z-scored CT (one unit is about one foreground std, tens of HU) and
must not be reused. Choose epsilon in raw units (e.g. a few HU) and convert.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

NORMS = ("linf", "l2")


def eps_to_raw(eps_normalized: float, raw_per_normalized_unit: float) -> float:
    """Epsilon in raw units (HU, grey levels) from normalized units.

    Examples
    --------
    >>> eps_to_raw(0.05, 30.0)  # a z-scored CT model with foreground std 30 HU
    1.5
    """
    _check_scale(raw_per_normalized_unit)
    return float(eps_normalized) * float(raw_per_normalized_unit)


def eps_from_raw(eps_raw: float, raw_per_normalized_unit: float) -> float:
    """Epsilon in normalized units from raw units (inverse of :func:`eps_to_raw`).

    Examples
    --------
    >>> eps_from_raw(10.0, 400.0)  # 10 HU under an abdomen window (W=400)
    0.025
    """
    _check_scale(raw_per_normalized_unit)
    return float(eps_raw) / float(raw_per_normalized_unit)


def _check_scale(scale: float) -> None:
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"raw_per_normalized_unit must be positive and finite, got {scale}")


@dataclass(frozen=True)
class Budget:
    """An epsilon ball in both unit systems.

    Attributes
    ----------
    eps_normalized : float
        Radius in the model's normalized units (what the attack uses).
    eps_raw : float
        The same radius in raw units.
    raw_per_normalized_unit : float
        Raw units per normalized unit (linear normalization assumed).
    norm : {"linf", "l2"}
        The norm of the ball. For ``l2`` the raw radius scales by the same factor
        (the norm is taken over every input element of one case).

    Examples
    --------
    >>> b = Budget.from_raw(15.0, 30.0)
    >>> b.eps_normalized, b.eps_raw
    (0.5, 15.0)
    >>> Budget.from_normalized(0.5, 30.0).to_dict()["eps_raw"]
    15.0
    """

    eps_normalized: float
    eps_raw: float
    raw_per_normalized_unit: float
    norm: str = "linf"

    def __post_init__(self) -> None:
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        if not (math.isfinite(self.eps_normalized) and self.eps_normalized >= 0):
            raise ValueError(f"epsilon must be finite and >= 0, got {self.eps_normalized}")

    @classmethod
    def from_normalized(
        cls, eps: float, raw_per_normalized_unit: float, norm: str = "linf"
    ) -> Budget:
        """Budget from an epsilon in normalized units."""
        return cls(
            float(eps),
            eps_to_raw(eps, raw_per_normalized_unit),
            float(raw_per_normalized_unit),
            norm,
        )

    @classmethod
    def from_raw(cls, eps_raw: float, raw_per_normalized_unit: float, norm: str = "linf") -> Budget:
        """Budget from an epsilon in raw units (HU, grey levels)."""
        return cls(
            eps_from_raw(eps_raw, raw_per_normalized_unit),
            float(eps_raw),
            float(raw_per_normalized_unit),
            norm,
        )

    def to_dict(self) -> dict:
        """Plain dict (for JSON records)."""
        return asdict(self)
