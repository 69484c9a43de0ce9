"""The examples of the protocols' internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace
(the ``run_example`` fixture of ``tests/conftest.py``).
"""

import pytest

EXAMPLES = {
    "napari_segeval.evaluation.protocols._common.score": """\
>>> ref = np.array([[1, 1], [0, 0]]); pred = np.array([[1, 0], [0, 0]])
>>> rows = score(ref, pred, (1.0, 1.0), {1: "a", 2: "b"}, "clean", surface=False)
>>> [(r["structure"], r["dice"], r["absent"]) for r in rows]
[('a', 0.6666666666666666, False), ('b', 1.0, True)]
""",
    "napari_segeval.evaluation.protocols._common.cached": """\
>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "r.json"
>>> calls = []
>>> def make():
...     calls.append(1)
...     return {"value": 3}
>>> cached(p, {"k": 1}, make)["value"], cached(p, {"k": 1}, make)["value"], len(calls)
(3, 3, 1)
>>> _ = cached(p, {"k": 2}, make); len(calls)
2
""",
    "napari_segeval.evaluation.protocols._dense.check_attacks": """\
>>> check_attacks([{"name": "pgd", "eps": 0.05}, {"name": "os.path:join"}])
>>> check_attacks([{"name": "pgd", "eps": -1}])
Traceback (most recent call last):
...
napari_segeval._errors.SegEvalError: attack {'name': 'pgd', 'eps': -1}: eps must be finite and >= 0, got -1
""",
    "napari_segeval.evaluation.protocols._promptable.ordered_labels": """\
>>> a = np.array([[True, True, False]]); b = np.array([[False, True, True]])
>>> ordered_labels({2: b, 1: a}, (1, 3)).tolist()
[[1, 2, 2]]
""",
    "napari_segeval.evaluation.protocols._prompts.prompt_sets": """\
>>> from napari_segeval.prompts.box import Box
>>> lab = np.zeros((2, 4, 4), np.uint8); lab[1, 1:3, 1:3] = 2
>>> sets = prompt_sets([Box(1, 1, 3, 3, index=1, label=2)], lab, "mask")
>>> sets[2].prompts[0].area, sets[2].frames
(4, (1,))
""",
    "napari_segeval.evaluation.protocols.auv_scores.resolve_model": """\
>>> resolve_model("auto", None)[0], resolve_model("auto", "m.pt")[:2]
('builtin', ('medsam2', 'm.pt'))
""",
    "napari_segeval.evaluation.protocols.interactive.refine_kind": """\
>>> from types import SimpleNamespace
>>> from napari_segeval.models.base import Capabilities
>>> refine_kind(SimpleNamespace(name="m", capabilities=Capabilities()), "auto")
'box'
""",
    "napari_segeval.evaluation.protocols.uncertainty.case_uncertainty": """\
>>> p = np.stack([np.full((2, 2), 0.5), np.full((2, 2), 0.5)])
>>> case_uncertainty("entropy-band", p, np.zeros((2, 2), int))
1.0
>>> case_uncertainty("entropy", p, np.ones((2, 2), int))
1.0
""",
    "napari_segeval.evaluation.protocols.uncertainty.dice_vs_uncertainty": """\
>>> rows = [{"case": c, "condition": "clean", "structure": s, "dice": d, "uncertainty": u}
...         for c, d, u in [("a", .9, .1), ("b", .5, .6), ("c", .7, .3)]
...         for s in ("background", "x")]
>>> dice_vs_uncertainty(rows)["spearman"]
-1.0
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
