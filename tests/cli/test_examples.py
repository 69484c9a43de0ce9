"""The examples of the command line's internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace with
the flags of the package's own doctests but NUMBER (a pytest extension).
"""

import pytest

EXAMPLES = {
    "napari_segeval.cli._attack.output_paths": """\
>>> from types import SimpleNamespace
>>> c = SimpleNamespace(axes="yxc")
>>> sorted(p.name for p in output_paths(Path("skin.png"), c, Path("o")).values())
['skin_attacked_pred.png', 'skin_clean_pred.png', 'skin_perturbation.tif', 'skin_perturbed.tif']
""",
    "napari_segeval.cli._common.add_model_option": """\
>>> p = argparse.ArgumentParser(); add_model_option(p, ["promptable"], "builtin")
>>> p.parse_args(["--model", "threshold"]).model, p.parse_args([]).model
('threshold', 'builtin')
""",
    "napari_segeval.cli._common.fmt": """\
>>> fmt(0.91234), fmt(float("-inf")), fmt(float("nan")), fmt(None), fmt(3)
('0.9123', '-inf', '-', '-', '3')
""",
    "napari_segeval.cli._common.format_table": """\
>>> print(format_table(["name", "dice"], [["liver", 0.91234], ["spleen", float("nan")]]))
name    dice
------  ------
liver   0.9123
spleen  -
""",
    "napari_segeval.cli._demo.display_problem": """\
>>> display_problem({}, "linux", ("PyQt6",)) is not None
True
>>> display_problem({"DISPLAY": ":99"}, "linux", ("PyQt6",)) is None
True
>>> display_problem({}, "darwin", ("PyQt6",)) is None
True
""",
    "napari_segeval.cli._evaluate.apply_models": """\
>>> apply_models({}, ["threshold"]), apply_models({"jitter": 2}, ["builtin", "threshold"])
({'model': 'threshold'}, {'jitter': 2, 'models': ['builtin', 'threshold']})
>>> apply_models({"model": "builtin"}, ["threshold"])
Traceback (most recent call last):
...
napari_segeval._errors.SegEvalError: --param model=builtin and --model threshold disagree: name each model with --model
""",
    "napari_segeval.cli._evaluate._headline_lines": """\
>>> _headline_lines({"robust_accuracy": {"pgd": 0.51234}})
['robust accuracy (ROG: mean attacked Dice): pgd 0.5123']
""",
    "napari_segeval.cli._inspect.label_rows": """\
>>> lab = np.array([[0, 1], [1, 2]], dtype=np.uint8)
>>> [(r["id"], r["voxels"]) for r in label_rows(lab, (1.0, 1.0), {1: "a"})]
[(0, 1), (1, 2), (2, 1)]
""",
    "napari_segeval.cli._propagate.command_line_prompts": """\
>>> ps = command_line_prompts([("box", "1,2,2,6,6,3"), ("point", "2,4,4,-")], [], (3, 8, 8))
>>> [(type(p).__name__, p.label) for p in ps]
[('Box', 3), ('Point', 3)]
""",
    "napari_segeval.cli._propagate.parse_point": """\
>>> parse_point("2,10.5,7,-", 1, (4, 32, 32))
Point(y=10.5, x=7.0, index=2, label=1, positive=False)
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
