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


def slow_worst_slice(ref, pred, label):
    """Lowest Dice among slices holding the structure; ties: most FP + FN, then the first."""
    scored = []
    for k in range(ref.shape[0]):
        a, b = ref[k] == label, pred[k] == label
        if a.any() or b.any():
            dice = 2 * (a & b).sum() / (a.sum() + b.sum())
            scored.append((dice, -int((a ^ b).sum()), k))
    return min(scored)[2] if scored else None


@pytest.mark.parametrize("seed", range(6))
def test_worst_slice_matches_the_written_rule(seed):
    from napari_segeval.metrics import worst_slice, worst_slice_from_counts

    rng = np.random.default_rng(seed)
    ref = rng.integers(0, 3, (7, 5, 5)).astype(np.uint8)
    ref[rng.integers(0, 7)] = 0  # a slice without the structures
    pred = np.where(rng.random(ref.shape) < 0.6, ref, 0).astype(np.uint8)
    pred[rng.integers(0, 7)] = 0  # a slice where the prediction misses everything
    for label in (1, 2, 3):
        want = slow_worst_slice(ref, pred, label)
        assert worst_slice(ref, pred, label) == want
        counts = per_slice_counts(ref, pred, 0, 4)[:, :, label]
        assert worst_slice_from_counts(counts) == want


def test_worst_slice_ties_and_absent_structures():
    from napari_segeval.metrics import worst_slice

    ref = np.zeros((5, 6, 6), np.uint8)
    ref[1:4, 1:5, 1:5] = 1
    pred = ref.copy()
    pred[1] = 0  # Dice 0, 16 wrong voxels
    pred[3] = 0
    pred[3, 0, :] = 1  # Dice 0, 22 wrong voxels: the worst
    assert worst_slice(ref, pred, 1) == 3
    pred[3, 0, :] = 0  # equal on both: the first
    assert worst_slice(ref, pred, 1) == 1
    assert worst_slice(ref, pred, 2) is None  # in neither map
    assert worst_slice(ref[0], pred[0], 1) is None  # 2D: no slices
