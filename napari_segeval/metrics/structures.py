"""Which structures of a case are scored: the named ones and every other id present.

One rule for ``segeval metrics``, the promptable protocols and the uncertainty
features: an id present and named by nothing is scored as ``"label N"``.
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
        The structures something names (a dataset.json's labels, a colour table);
        they are all scored, present or not (a named structure absent from every map
        is a row of its own: absent, not forgotten). None or empty: nothing is named.
    *label_maps : numpy.ndarray
        The label maps the ids are looked for in (the reference; for two maps to
        compare, both).

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
