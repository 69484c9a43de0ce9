"""The name of a structure nothing names: ``"label N"``, one spelling everywhere.

Metric tables, the command line, the viewer, the protocols and the results all
call an unnamed label id ``N`` ``"label N"`` (what ``segeval inspect`` prints and
``--structure`` accepts, see :func:`napari_segeval.io.resolve_structure`). It
lives in the base layer because ``io`` and ``metrics``, which both need it, may
not import each other.
"""

from __future__ import annotations

from collections.abc import Iterable


def unnamed_label(label: int) -> str:
    """``"label N"``: the name of label id ``N`` when nothing names it.

    Examples
    --------
    >>> unnamed_label(3)
    'label 3'
    """
    return f"label {int(label)}"


def unnamed_structures(ids: Iterable[int]) -> dict[int, str]:
    """``{id: "label id"}`` for every non-zero id (background is no structure).

    Examples
    --------
    >>> unnamed_structures([0, 2, 5])
    {2: 'label 2', 5: 'label 5'}
    """
    return {int(v): unnamed_label(v) for v in ids if int(v) != 0}


__all__ = ["unnamed_label", "unnamed_structures"]
