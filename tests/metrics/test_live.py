import numpy as np
import pytest

from napari_segeval._errors import GeometryMismatchError
from napari_segeval.metrics.live import LiveMetrics
from napari_segeval.metrics.overlap import overlap_metrics


def _maps():
    rng = np.random.default_rng(0)
    ref = rng.integers(0, 4, (8, 12, 12)).astype(np.uint8)
    pred = np.where(rng.random(ref.shape) < 0.8, ref, 0).astype(np.uint8)
    return ref, pred


def _check(live, ref, pred):
    expected = overlap_metrics(ref, pred, (1.0, 2.0, 2.0))
    rows = {r["label"]: r for r in live.table()}
    assert set(rows) == set(expected)
    for lab, row in rows.items():
        for key in ("dice", "iou", "precision", "recall", "volume_ref_ml", "tp", "fp", "fn"):
            assert row[key] == pytest.approx(expected[lab][key])


def test_edits_in_place_then_update():
    ref, pred = _maps()
    live = LiveMetrics(ref, pred, (1.0, 2.0, 2.0))
    _check(live, ref, pred)
    pred[3, :6] = 2  # paint on slice 3
    live.update(3)
    _check(live, ref, pred)
    pred[5:7, 2:4, 2:4] = 0
    live.update((slice(5, 7), slice(2, 4), slice(2, 4)))
    _check(live, ref, pred)
    ref[-1] = 1
    live.update(-1)
    _check(live, ref, pred)


def test_new_label_painted_and_set_arrays():
    ref, pred = _maps()
    live = LiveMetrics(ref, pred, (1.0, 2.0, 2.0))
    pred[2, 0, 0] = 9
    live.update(slice(2, 3))
    _check(live, ref, pred)
    new = ref.copy()
    live.set_prediction(new)
    assert all(r["dice"] == 1.0 for r in live.table())
    with pytest.raises(GeometryMismatchError):
        live.set_reference(ref[:2])


def test_per_slice_dice_and_structures():
    ref = np.zeros((3, 4, 4), np.uint8)
    ref[:, :2, :2] = 1
    pred = ref.copy()
    live = LiveMetrics(ref, pred, None, structures={1: "lv", 4: "la"})
    pred[1] = 0
    live.update(1)
    assert live.per_slice_dice(1).tolist()[0] == 1.0 and live.per_slice_dice(1)[1] == 0.0
    rows = live.table(empty="nan")
    assert [r["name"] for r in rows] == ["lv", "la"] and np.isnan(rows[1]["dice"])
    assert np.isnan(live.per_slice_dice(7)).all()
