import numpy as np
import pytest

from napari_segeval.metrics.overlap import overlap_metrics
from napari_segeval.metrics.surface import surface_metrics
from napari_segeval.metrics.table import ROW_KEYS, structure_table


def _maps():
    ref = np.zeros((12, 16, 16), np.uint8)
    ref[2:6, 2:8, 2:8] = 1
    ref[6:10, 8:14, 8:14] = 3
    pred = np.zeros_like(ref)
    pred[2:6, 3:9, 2:8] = 1
    pred[7:11, 8:14, 8:14] = 3
    pred[0, 0, 0] = 2  # only in the prediction
    return ref, pred


def test_rows_and_values_match_direct_calls():
    ref, pred = _maps()
    sp = (2.0, 0.5, 0.5)
    rows = structure_table(ref, pred, sp, tolerance_mm=1.0)
    assert [r["label"] for r in rows] == [1, 2, 3]
    assert all(tuple(r) == ROW_KEYS for r in rows)
    ov = overlap_metrics(ref, pred, sp)
    for r in rows:
        full = surface_metrics(ref == r["label"], pred == r["label"], sp, tolerance_mm=1.0)
        for key in ("hd", "hd95", "assd", "nsd"):
            assert r[key] == pytest.approx(full[key], abs=1e-12)  # cropping changes nothing
        assert r["dice"] == ov[r["label"]]["dice"]
        assert r["volume_ref_ml"] == pytest.approx(ov[r["label"]]["volume_ref_ml"])
    assert rows[1]["dice"] == 0.0 and rows[1]["hd95"] == np.inf


def test_named_structures_and_empty():
    ref, pred = _maps()
    rows = structure_table(ref, pred, (1, 1, 1), structures={1: "liver", 5: "spleen"}, empty="nan")
    assert [(r["label"], r["name"]) for r in rows] == [(1, "liver"), (5, "spleen")]
    assert np.isnan(rows[1]["dice"]) and np.isnan(rows[1]["nsd"])
    rows = structure_table(ref, pred, (1, 1, 1), structures={5: "spleen"}, empty="one")
    assert rows[0]["dice"] == 1.0 and rows[0]["nsd"] == 1.0 and rows[0]["hd95"] == 0.0


def test_without_surface():
    ref, pred = _maps()
    rows = structure_table(ref, pred, (1, 1, 1), surface=False)
    assert all(np.isnan(r["hd95"]) for r in rows)


def test_unnamed_structures_are_label_n_everywhere():
    """One spelling for an unnamed label id: "label N" (what --structure accepts)."""
    from napari_segeval.io import Case, Geometry, resolve_structure, structure_label
    from napari_segeval.metrics import LiveMetrics

    ref = np.zeros((3, 4, 4), np.uint8)
    ref[1, 1:3, 1:3] = 2
    table = structure_table(ref, ref, (1.0, 1.0, 1.0), surface=False)
    live = LiveMetrics(ref, ref.copy(), (1.0, 1.0, 1.0)).table()
    case = Case(ref.astype(np.float32), Geometry.identity(3), labels=ref)
    names = {table[0]["name"], live[0]["name"], structure_label(2, {}), case.structure_name(2)}
    assert names == {"label 2"}
    assert resolve_structure("label 2", {}, [0, 2]) == 2
