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


def slow_largest_failing_slice(ref, pred, label, below=0.5):
    """The largest reference slice with Dice below ``below``, else the lowest Dice (first)."""
    held = []
    for k in range(ref.shape[0]):
        a, b = ref[k] == label, pred[k] == label
        if a.any():
            held.append((2 * (a & b).sum() / (a.sum() + b.sum()), int(a.sum()), k))
    if not held:
        return None
    bad = [h for h in held if h[0] < below]
    if bad:
        return min(bad, key=lambda h: (-h[1], h[2]))[2]
    return min(held, key=lambda h: (h[0], h[2]))[2]


@pytest.mark.parametrize("seed", range(6))
def test_largest_failing_slice_matches_the_written_rule(seed):
    from napari_segeval.metrics import largest_failing_slice

    rng = np.random.default_rng(seed)
    ref = rng.integers(0, 3, (7, 5, 5)).astype(np.uint8)
    pred = np.where(rng.random(ref.shape) < 0.6 + 0.05 * seed, ref, 0).astype(np.uint8)
    pred[rng.integers(0, 7)] = 1  # a slice where label 1 leaks everywhere
    for label in (1, 2, 3):
        assert largest_failing_slice(ref, pred, label) == slow_largest_failing_slice(
            ref, pred, label
        )
    moved = np.moveaxis(ref, 0, 2), np.moveaxis(pred, 0, 2)
    assert largest_failing_slice(*moved, 1, axis=2) == largest_failing_slice(ref, pred, 1)


def test_largest_failing_slice_differs_from_worst_slice_where_it_should():
    """A small slice missed entirely (Dice 0) and a large one half wrong: the worst slice is
    the small one, the demo corrects the large one; a slice only predicted is never chosen."""
    from napari_segeval.metrics import largest_failing_slice, worst_slice

    ref = np.zeros((4, 8, 8), np.uint8)
    ref[0, 0, 0] = 1  # 1 voxel, missed
    ref[1, :, :] = 1  # 64 voxels, 44 missed: Dice 0.48
    ref[2, :4, :4] = 1
    pred = ref.copy()
    pred[0] = 0
    pred[1] = 0
    pred[1, :2, :] = 1
    pred[1, 2, :4] = 1
    pred[3, :2, :2] = 1  # only predicted: Dice 0, more wrong voxels than slice 0
    assert largest_failing_slice(ref, pred, 1) == 1
    assert worst_slice(ref, pred, 1) == 3
    assert largest_failing_slice(ref, pred, 1, below=0.1) == 0  # only slice 0 that bad
    assert largest_failing_slice(ref, pred, 2) is None


#: The slice-choosing rules and the one module each is defined in (issue 31: one rule, one name).
SLICE_RULES = {
    "worst_slice": "metrics/slices.py",
    "worst_slice_from_counts": "metrics/slices.py",
    "largest_failing_slice": "metrics/slices.py",
    "most_wrong_slice": "prompts/correction.py",
}
#: Names that mean "the slice to look at / to correct": a new one needs a row above.
SLICE_RULE_WORDS = (
    "worst_slice",
    "wrong_slice",
    "failing_slice",
    "correction_slice",
    "bad_slice",
    "error_slice",
)


def test_each_slice_choosing_rule_is_defined_once_in_its_module():
    """Fails if a function named like a worst-/correction-slice rule is defined anywhere in
    the package but its one module (a second copy of a rule, or a rule reusing a name)."""
    import ast
    from pathlib import Path

    import napari_segeval

    root = Path(napari_segeval.__file__).parent
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                w in node.name for w in SLICE_RULE_WORDS
            ):
                found.setdefault(node.name, []).append(path.relative_to(root).as_posix())
    stray = {n: where for n, where in found.items() if where != [SLICE_RULES.get(n)]}
    assert not stray, f"slice rules defined outside their one module: {stray}"
    assert set(found) == set(SLICE_RULES)
