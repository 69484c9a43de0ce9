import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from napari_segeval._errors import GeometryMismatchError, InvalidLabelsError
from napari_segeval.metrics.overlap import (
    confusion_matrix,
    overlap_from_confusion,
    overlap_from_counts,
    overlap_metrics,
)


def slow_confusion(ref, pred, n):
    cm = np.zeros((n, n), np.int64)
    for r, p in zip(ref.ravel(), pred.ravel()):
        cm[r, p] += 1
    return cm


def slow_dice(ref, pred, label, empty=1.0):
    a, b = ref == label, pred == label
    if a.sum() + b.sum() == 0:
        return empty
    return 2 * (a & b).sum() / (a.sum() + b.sum())


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.uint8,
        st.tuples(st.integers(1, 5), st.integers(1, 6), st.integers(1, 7)),
        elements=st.integers(0, 4),
    ),
    st.data(),
)
def test_confusion_matches_slow_reference(ref, data):
    pred = data.draw(arrays(np.uint8, ref.shape, elements=st.integers(0, 4)))
    n = int(max(ref.max(), pred.max())) + 1
    np.testing.assert_array_equal(confusion_matrix(ref, pred), slow_confusion(ref, pred, n))
    m = overlap_metrics(ref, pred, labels=range(1, 5), empty="one")
    for lab in range(1, 5):
        assert m[lab]["dice"] == pytest.approx(slow_dice(ref, pred, lab))


@pytest.mark.parametrize("shape", [(7, 9), (4, 7, 9), (3, 4, 7, 9)])  # 2D, 3D, 2D+t / 4D
def test_dimensions(shape):
    rng = np.random.default_rng(0)
    ref = rng.integers(0, 3, shape).astype(np.uint16)
    pred = rng.integers(0, 3, shape).astype(np.uint8)
    np.testing.assert_array_equal(confusion_matrix(ref, pred), slow_confusion(ref, pred, 3))


def test_many_slabs_and_threads():
    rng = np.random.default_rng(1)
    ref = rng.integers(0, 6, (40, 300, 300), dtype=np.uint8)  # several 2M-voxel slabs
    pred = ref.copy()
    pred[::3] = rng.integers(0, 6, pred[::3].shape)
    expected = np.bincount(ref.ravel().astype(np.int64) * 6 + pred.ravel(), minlength=36)
    np.testing.assert_array_equal(confusion_matrix(ref, pred).ravel(), expected)


@pytest.mark.parametrize("top", [255, 256, 3000])  # pair index in uint16, then uint32
def test_pair_index_width(top):
    rng = np.random.default_rng(top)
    ref = rng.integers(0, top + 1, (6, 20, 20)).astype(np.int32)
    pred = rng.integers(0, top + 1, (6, 20, 20)).astype(np.int64)
    ref[0, 0, 0] = top
    pairs = ref.ravel().astype(np.int64) * (top + 1) + pred.ravel()
    expected = np.bincount(pairs, minlength=(top + 1) ** 2)
    np.testing.assert_array_equal(confusion_matrix(ref, pred).ravel(), expected)


def test_shifted_cubes_known_dice():
    ref = np.zeros((10, 10, 10), np.uint8)
    ref[2:6, 2:6, 2:6] = 1  # 64 voxels
    pred = np.roll(ref, 1, axis=0)  # overlap 48
    m = overlap_metrics(ref, pred, spacing=(2.0, 1.0, 1.0))[1]
    assert m["dice"] == pytest.approx(2 * 48 / 128)
    assert m["iou"] == pytest.approx(48 / 80)
    assert m["precision"] == m["recall"] == pytest.approx(0.75)
    assert m["specificity"] == pytest.approx(1 - 16 / 936)
    assert m["volume_ref_ml"] == pytest.approx(64 * 2 / 1000)
    assert m["volume_similarity"] == 1.0
    assert (m["tp"], m["fp"], m["fn"], m["tn"]) == (48, 16, 16, 920)


def test_dice_is_not_union_denominator():
    ref = np.array([1, 1, 1, 1, 0, 0])
    pred = np.array([0, 0, 1, 1, 1, 1])
    d = overlap_metrics(ref, pred)[1]["dice"]
    assert d == pytest.approx(0.5)  # 2*2/(4+4)
    assert d != pytest.approx(2 * 2 / 6)  # the |A∪B| "Dice" of some published code


@pytest.mark.parametrize("empty,expected", [("one", 1.0), ("zero", 0.0)])
def test_empty_conventions(empty, expected):
    ref = np.zeros((3, 3), np.uint8)
    m = overlap_metrics(ref, ref, labels=[1], empty=empty)[1]
    assert m["dice"] == expected and m["iou"] == expected


def test_empty_nan_and_reference_empty():
    ref = np.zeros((3, 3), np.uint8)
    pred = ref.copy()
    pred[0, 0] = 2
    m = overlap_metrics(ref, pred, labels=[1, 2], empty="nan")
    assert np.isnan(m[1]["dice"])
    for empty in ("one", "nan", "zero"):  # reference empty, prediction not -> 0
        assert overlap_metrics(ref, pred, labels=[2], empty=empty)[2]["dice"] == 0.0


@pytest.mark.parametrize("empty,fill", [("one", 1.0), ("zero", 0.0), ("nan", np.nan)])
def test_overlap_from_counts_known_answers(empty, fill):
    # structures: overlapping, both empty, reference only, prediction only
    tp, ref_n, pred_n = np.array([3, 0, 0, 0]), np.array([4, 0, 2, 0]), np.array([5, 0, 0, 1])
    m = overlap_from_counts(tp, ref_n, pred_n, total=20, empty=empty)
    np.testing.assert_array_equal(m["dice"], [6 / 9, fill, 0.0, 0.0])
    np.testing.assert_array_equal(m["iou"], [3 / 6, fill, 0.0, 0.0])
    np.testing.assert_array_equal(m["precision"], [3 / 5, fill, 0.0, 0.0])
    np.testing.assert_array_equal(m["recall"], [3 / 4, fill, 0.0, 0.0])
    # tn = 20 - 4 - 2 (fp); specificity = tn / (tn + fp)
    np.testing.assert_array_equal(m["specificity"], [14 / 16, 1.0, 18 / 18, 19 / 20])
    np.testing.assert_array_equal(m["volume_similarity"], [8 / 9, fill, 0.0, 0.0])
    assert set(overlap_from_counts(1, 1, 1)) == {"dice", "iou", "precision", "recall"}
    with pytest.raises(ValueError):
        overlap_from_counts(1, 1, 1, empty="x")


@pytest.mark.parametrize("empty", ["one", "zero", "nan"])
def test_one_definition_for_maps_slices_and_live(empty):
    """Whole-map, per-slice and live Dice/IoU/precision/recall agree exactly, per convention."""
    from napari_segeval.metrics.live import LiveMetrics
    from napari_segeval.metrics.slices import per_slice_counts, per_slice_dice

    rng = np.random.default_rng(3)
    ref = rng.integers(0, 4, (6, 9, 9)).astype(np.uint8)
    ref[ref == 3] = 0  # structure 3 only in the prediction, 5 in neither
    pred = np.where(rng.random(ref.shape) < 0.7, ref, rng.integers(0, 4, ref.shape)).astype(
        np.uint8
    )
    structures = {1: "a", 2: "b", 3: "c", 5: "d"}
    whole = overlap_metrics(ref, pred, labels=structures, empty=empty)
    live = LiveMetrics(ref, pred, None, structures).table(empty=empty)
    for row in live:
        for key in ("dice", "iou", "precision", "recall"):
            np.testing.assert_array_equal(row[key], whole[row["label"]][key])
    counts = per_slice_counts(ref, pred, 0, 6)
    per_slice = per_slice_dice(ref, pred, labels=structures, empty=empty)
    for lab in structures:
        by_hand = overlap_from_counts(*(counts[:, i, lab] for i in range(3)), empty=empty)
        np.testing.assert_array_equal(per_slice[lab], by_hand["dice"])
        for z in range(ref.shape[0]):
            one = overlap_metrics(ref[z], pred[z], labels=[lab], empty=empty)[lab]["dice"]
            np.testing.assert_array_equal(per_slice[lab][z], one)


def test_background_included_or_not():
    ref = np.array([[0, 0, 1, 1]])
    pred = np.array([[0, 1, 1, 1]])
    cm = confusion_matrix(ref, pred)
    without = overlap_from_confusion(cm)
    with_bg = overlap_from_confusion(cm, include_background=True)
    assert np.isnan(without["dice"][0])
    assert with_bg["dice"][0] == pytest.approx(2 * 1 / 3)
    assert set(overlap_metrics(ref, pred, include_background=True)) == {0, 1}
    assert set(overlap_metrics(ref, pred)) == {1}


def test_errors():
    with pytest.raises(GeometryMismatchError):
        confusion_matrix(np.zeros((2, 2), np.uint8), np.zeros((2, 3), np.uint8))
    with pytest.raises(InvalidLabelsError):
        confusion_matrix(np.zeros(3) + 0.5, np.zeros(3))
    with pytest.raises(InvalidLabelsError):
        confusion_matrix(np.array([-1, 0]), np.array([0, 0]))
    with pytest.raises(InvalidLabelsError):
        confusion_matrix(np.array([5]), np.array([0]), n_labels=3)
    with pytest.raises(ValueError):
        overlap_from_confusion(np.eye(2, dtype=int), empty="maybe")


def test_bool_masks():
    a = np.array([True, True, False])
    b = np.array([True, False, False])
    assert confusion_matrix(a, b).tolist() == [[1, 0], [1, 1]]


def test_monai_dice_equal():
    import torch

    metrics = pytest.importorskip("monai.metrics", reason="MONAI (bench extra) not installed")
    rng = np.random.default_rng(3)
    ref = rng.integers(0, 4, (6, 20, 20))
    pred = np.where(rng.random(ref.shape) < 0.8, ref, rng.integers(0, 4, ref.shape))

    def one_hot(a):
        return torch.nn.functional.one_hot(torch.as_tensor(a), 4).permute(3, 0, 1, 2)[None]

    monai = metrics.DiceMetric(include_background=True, reduction="none")(
        one_hot(pred), one_hot(ref)
    )
    ours = overlap_from_confusion(confusion_matrix(ref, pred), include_background=True)["dice"]
    np.testing.assert_allclose(ours, monai.numpy()[0], rtol=1e-6)


@pytest.mark.parametrize("slab", [1 << 21, 64])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, bool])
def test_boxes_of_the_counting_pass_are_find_objects_of_either_map(monkeypatch, slab, dtype):
    """One pass gives the confusion matrix and each label's box in either map, across slabs."""
    from scipy import ndimage

    from napari_segeval.metrics import overlap
    from napari_segeval.metrics.overlap import confusion_and_boxes

    monkeypatch.setattr(overlap, "_SLAB_VOXELS", slab)  # 64: one slice per slab
    rng = np.random.default_rng(3)
    top = 1 if dtype is bool else 6
    ref = np.zeros((9, 7, 8), dtype)
    pred = np.zeros_like(ref)
    for k in range(1, top + 1):
        for arr in (ref, pred):
            z, y, x = (int(rng.integers(0, s - 2)) for s in ref.shape)
            arr[z : z + int(rng.integers(1, 4)), y : y + 2, x : x + int(rng.integers(1, 3))] = k
    cm, boxes = confusion_and_boxes(ref, pred)
    np.testing.assert_array_equal(cm, confusion_matrix(ref, pred))
    for k in range(1, top + 1):
        want = ndimage.find_objects(((ref == k) | (pred == k)).astype(np.uint8))[0]
        assert boxes[k] == want
    assert confusion_and_boxes(np.zeros((3, 4), np.uint8), np.zeros((3, 4), np.uint8))[1] == {}
