import numpy as np
import pytest

from napari_segeval.metrics.slices import per_slice_counts, per_slice_dice


def slow_slice_dice(ref, pred, label, axis):
    out = []
    for i in range(ref.shape[axis]):
        a = np.take(ref, i, axis) == label
        b = np.take(pred, i, axis) == label
        s = a.sum() + b.sum()
        out.append(np.nan if s == 0 else 2 * (a & b).sum() / s)
    return np.array(out)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_matches_slow_reference_along_any_axis(axis):
    rng = np.random.default_rng(axis)
    ref = rng.integers(0, 4, (5, 6, 7)).astype(np.uint8)
    pred = np.where(rng.random(ref.shape) < 0.7, ref, 0).astype(np.uint8)
    got = per_slice_dice(ref, pred, axis=axis)
    assert sorted(got) == [1, 2, 3]
    for lab, values in got.items():
        np.testing.assert_allclose(values, slow_slice_dice(ref, pred, lab, axis))


def test_counts_sum_to_slice_size_and_empty_value():
    ref = np.zeros((3, 4, 4), np.uint8)
    ref[0, :2, :2] = 1
    counts = per_slice_counts(ref, ref)
    assert counts[:, 1].sum(axis=1).tolist() == [16, 16, 16]
    d = per_slice_dice(ref, ref, labels=[1, 2], empty="one")
    assert d[1].tolist() == [1.0, 1.0, 1.0] and d[2].tolist() == [1.0, 1.0, 1.0]
    assert np.isnan(per_slice_dice(ref, ref)[1][1])


def test_video_2d_plus_t():
    ref = np.zeros((4, 5, 5), np.uint16)  # (t, y, x)
    ref[:, 1:4, 1:4] = 2
    pred = ref.copy()
    pred[3] = 0
    assert per_slice_dice(ref, pred)[2].tolist() == [1.0, 1.0, 1.0, 0.0]
