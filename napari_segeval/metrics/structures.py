"""Which structures of a case are scored: the named ones and every other id present
(``"label N"``), one rule for ``segeval metrics``, the protocols and the uncertainty features.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from napari_segeval._names import unnamed_structures


def structures_to_score(names: Mapping[int, str] | None, *label_maps: np.ndarray) -> dict[int, str]:
    """Label id -> name of every structure to score: ``names``, then the unnamed ids present.

    Parameters
    ----------
    names : mapping of int to str, optional
        The structures something names (a dataset.json's labels, a colour table); all
        are scored, present or not (absent, not forgotten).
    *label_maps : numpy.ndarray
        The label maps the ids are looked for in (the reference; for two maps, both).

    Returns
    -------
    dict of int to str
        ``names`` in their order, then every non-zero id of the maps that ``names``
        leaves out, ascending, as ``"label N"``.
    """
    out = {int(k): str(v) for k, v in (names or {}).items()}
    present: set[int] = set()
    for m in label_maps:
        present.update(int(v) for v in np.unique(np.asarray(m)))
    out.update({k: v for k, v in unnamed_structures(sorted(present)).items() if k not in out})
    return out


__all__ = ["structures_to_score"]
