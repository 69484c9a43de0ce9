"""The examples of the inference package's internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace with
the flags of the package's own doctests but NUMBER (a pytest extension).
"""

import pytest

EXAMPLES = {
    "napari_segeval.inference.windowing.ct_bounds": """\
>>> ct_bounds(None, 40, 400)
(-160.0, 240.0)
>>> ct_bounds(np.array([-1000.0, 100.0]), -600, 1500, "minmax")
(-1000.0, 100.0)
""",
    "napari_segeval.inference.windowing.mr_bounds": """\
>>> mr_bounds(np.array([0.0, 1.0, 2.0, 3.0, 4.0, 100.0]), 0, 75)
(1.0, 4.0)
""",
    "napari_segeval.inference.postprocess.config_from_mapping": """\
>>> config_from_mapping({"organs": [1], "lesion_min_mm3": {"5": 10}}).lesion_min_mm3
{5: 10.0}
""",
    "napari_segeval.inference.intensity.minmax_scale": """\
>>> out, rng = minmax_scale(np.array([10.0, 20.0, 30.0]))
>>> out.tolist(), rng
([0.0, 0.5, 1.0], 20.0)
>>> minmax_scale(np.full(3, 7.0))[1]
1.0
""",
    "napari_segeval.inference.resample.resample_to_shape": """\
>>> resample_to_shape(np.arange(4.0).reshape(1, 4), (1, 2), order=1)
array([[0.5, 2.5]], dtype=float32)
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
