"""Attack budgets: epsilon in the model's normalized units, and in raw units (HU, grey levels) for
people, assuming a linear normalization over the clean range (one normalized unit is a z-scored
model's foreground std, a windowed model's window width); ``8/255`` does not transfer."""

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
        The norm of the ball (``l2``: over every input element of one case).
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
        scale = raw_per_normalized_unit
        return cls(float(eps), eps_to_raw(eps, scale), float(scale), norm)

    def to_dict(self) -> dict:
        """Plain dict (for JSON records)."""
        return asdict(self)
