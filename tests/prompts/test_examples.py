"""The examples of the prompts package's internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace with
the flags of the package's own doctests but NUMBER (a pytest extension).
"""

import pytest

EXAMPLES = {
    "napari_segeval.prompts.prompt_file.encode_mask": """\
>>> encode_mask(np.array([[0, 1, 1], [0, 0, 1]], bool))
{'size': [2, 3], 'counts': [1, 2, 2, 1]}
""",
    "napari_segeval.prompts.prompt_set.describe": """\
>>> describe(Point(3, 4, index=7, positive=False), "frame")
'- point (y=3, x=4) on frame 7'
""",
    "napari_segeval.prompts.correction.most_wrong_slice": """\
>>> r = np.zeros((4, 2, 2), bool); r[1] = r[3] = True
>>> most_wrong_slice(r, np.zeros_like(r), allowed=[False, False, True, True])
3
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
