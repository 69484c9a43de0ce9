"""The examples of the metrics package's internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace with
the flags of the package's own doctests but NUMBER (a pytest extension).
"""

import pytest

EXAMPLES = {
    "napari_segeval.metrics._border_search.window": """\
>>> window(np.array([1.5, 0.8, 0.8]))
(4, 8, 8)
>>> window(np.array([5.0, 0.3, 0.3]))
(4, 12, 12)
""",
    "napari_segeval.metrics._border_search.distance": """\
>>> distance(np.array([[3, 4]]), np.array([1.0, 1.0])).tolist()
[5.0]
""",
    "napari_segeval.metrics._border_search.padded_codes": """\
>>> padded_codes(np.array([[True]]), (1, 0)).tolist()
[[0, 0], [1, 2], [4, 8], [0, 0]]
""",
    "napari_segeval.metrics._border_search.border": """\
>>> b, idx = border(np.array([[0, 3], [15, 7]], np.uint8))
>>> idx.tolist()
[1, 3]
""",
    "napari_segeval.metrics.catalog.scored": """\
>>> scored([0.5, None, "nan", "inf", 2]).tolist()
[0.5, inf, 2.0]
""",
    "napari_segeval.metrics.catalog.mean": """\
>>> mean([0.5, float("nan"), 1.0]), mean([1.0, "inf"]), mean([None])
(0.75, inf, nan)
""",
    "napari_segeval.metrics.overlap.mask_dice": """\
>>> mask_dice(np.array([1, 1, 0], bool), np.array([0, 1, 1], bool))
0.5
>>> mask_dice(np.zeros(3, bool), np.zeros(3, bool))
1.0
""",
    "napari_segeval.metrics.slices.dice_from_counts": """\
>>> dice_from_counts(np.array([[1, 0], [2, 0], [2, 0]])).tolist()
[0.5, nan]
""",
    "napari_segeval.metrics.surface.bounding_box": """\
>>> m = np.zeros((4, 5), bool); m[1:3, 2] = True
>>> bounding_box(m)
(slice(1, 3, None), slice(2, 3, None))
>>> bounding_box(m, margin=1)
(slice(0, 4, None), slice(1, 4, None))
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
