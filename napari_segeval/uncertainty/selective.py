"""Selective evaluation: the quality of the cases kept when the most uncertain are set aside.

A per-case uncertainty score ranks the cases; *selective evaluation* asks how
good the segmentations are on the cases a reader would keep. It judges the
uncertainty score (does it find the bad cases?), not the data.

Definitions
-----------
``n`` cases with uncertainty ``u_i`` and quality ``q_i`` (the case's mean Dice,
in ``[0, 1]``). Cases are ordered by ``u`` ascending (most certain first; ties
by case id; a NaN score counts as the most uncertain). Keeping the ``k`` first
cases gives

* *coverage* ``c_k = k / n`` (the fraction kept; ``1 - c_k`` is the fraction
  removed),
* *risk* ``r_k = 1 - (1/k) * sum_{j <= k} q_(j)``, one minus the mean Dice of the
  kept cases.

The *risk-coverage curve* is ``(c_k, r_k)`` for ``k = 1 .. n``, and

    AURC = (1/n) * sum_{k=1}^{n} r_k,

the area under that curve as a step function of coverage (each step ``1/n``
wide, evaluated at its right end), in ``[0, 1]``: lower is better. ``AURC*``
(``optimal_aurc``) is the same area when the cases are ordered by their true
quality (best first), the best any score can reach with these Dice values;
``AURC - AURC*`` is the excess (E-AURC). Both follow Geifman et al., "Bias-reduced
uncertainty estimation for deep neural classifiers", ICLR 2019, with one minus
Dice as the loss.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np


def _ranked(uncertainty: Mapping[str, float], cases) -> list[str]:
    def key(c: str):
        u = float(uncertainty[c])
        return (math.inf if math.isnan(u) else u, c)

    return sorted(cases, key=key)


def _curve(quality: list[float]) -> tuple[list[float], list[float]]:
    q = np.asarray(quality, dtype=np.float64)
    k = np.arange(1, q.size + 1)
    risk = 1.0 - np.cumsum(q) / k
    return (k / q.size).tolist(), risk.tolist()


def risk_coverage(uncertainty: Mapping[str, float], dice: Mapping[str, float]) -> dict:
    """Risk-coverage curve and AURC of an uncertainty score against per-case Dice.

    Parameters
    ----------
    uncertainty : mapping of str to float
        Case -> uncertainty score (higher = less trusted).
    dice : mapping of str to float
        Case -> mean Dice in ``[0, 1]``. Cases missing from either mapping, or with
        a NaN Dice, are left out.

    Returns
    -------
    dict
        ``coverage`` and ``risk`` (lists, one point per kept-case count), ``order``
        (case ids, most certain first), ``aurc``, ``optimal_aurc``, ``excess_aurc``
        and ``n``. NaN areas for no cases.

    Examples
    --------
    >>> rc = risk_coverage({"a": 0.1, "b": 0.9, "c": 0.5}, {"a": 1.0, "b": 0.4, "c": 0.7})
    >>> [round(r, 3) for r in rc["risk"]], round(rc["aurc"], 4), rc["excess_aurc"]
    ([0.0, 0.15, 0.3], 0.15, 0.0)
    """
    cases = [c for c in uncertainty if c in dice and not math.isnan(float(dice[c]))]
    if not cases:
        return {
            "coverage": [],
            "risk": [],
            "order": [],
            "aurc": math.nan,
            "optimal_aurc": math.nan,
            "excess_aurc": math.nan,
            "n": 0,
        }
    order = _ranked(uncertainty, cases)
    coverage, risk = _curve([float(dice[c]) for c in order])
    best = sorted((float(dice[c]) for c in cases), reverse=True)
    _, best_risk = _curve(best)
    aurc, optimal = float(np.mean(risk)), float(np.mean(best_risk))
    return {
        "coverage": coverage,
        "risk": risk,
        "order": order,
        "aurc": aurc,
        "optimal_aurc": optimal,
        "excess_aurc": aurc - optimal,
        "n": len(order),
    }


__all__ = ["risk_coverage"]
