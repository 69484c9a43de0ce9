"""The examples of the propagation package's internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace
(the ``run_example`` fixture of ``tests/conftest.py``).
"""

import pytest

EXAMPLES = {
    "napari_segeval.propagation.corrections.round0_length": """\
>>> s = PromptSet.of([Box(0, 0, 4, 4, index=2), Point(1, 1, index=3),
...                   Box(0, 0, 3, 3, index=7), Point(2, 2, index=4)])
>>> round0_length(s, Corrections.BOXES), round0_length(s, Corrections.NONE)
(1, 4)
""",
    "napari_segeval.propagation.corrections.kept_voxels": """\
>>> m = np.zeros((3, 4, 4), bool); m[2, 1, 1] = True
>>> kept_voxels(PromptSet.of([Box(0, 0, 2, 2, index=2)]), Corrections.BOXES, m)
[(2, 1, 1)]
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
