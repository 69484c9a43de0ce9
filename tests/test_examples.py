"""The examples of the top-level modules' internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace with
the flags of the package's own doctests but NUMBER (a pytest extension).
"""

import pytest

EXAMPLES = {
    "napari_segeval._json.json_safe": """\
>>> json_safe({"a": float("nan"), "b": [float("inf"), np.int64(3)]})
{'a': None, 'b': ['inf', 3]}
""",
    "napari_segeval._layer_data.present_ids": """\
>>> present_ids(np.array([[0, 3], [3, 1]], np.uint8))
[0, 1, 3]
""",
    "napari_segeval._names.unnamed_label": """\
>>> unnamed_label(3)
'label 3'
""",
    "napari_segeval._names.unnamed_structures": """\
>>> unnamed_structures([0, 2, 5])
{2: 'label 2', 5: 'label 5'}
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
