"""Names every layer spells one way: an unnamed structure's (``"label N"``) and
:data:`CLEAN`, the condition of a prediction of the unattacked image. They live in the
base layer because ``io``, ``metrics`` and the layers above all need them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

#: The condition of a prediction of the unattacked image, as results folders write it.
CLEAN: Final = "clean"


def unnamed_label(label: int) -> str:
    """``"label N"``: the name of label id ``N`` when nothing names it."""
    return f"label {int(label)}"


def unnamed_structures(ids: Iterable[int]) -> dict[int, str]:
    """``{id: "label id"}`` for every non-zero id (background is no structure)."""
    return {int(v): unnamed_label(v) for v in ids if int(v) != 0}
