"""The Python API at the top of the package: cheap to import, the CLI's names, a runnable example."""

from __future__ import annotations

import ast
import importlib
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

import napari_segeval as se

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "api_quickstart.py"
HEAVY = (
    "torch",
    "SimpleITK",
    "napari",
    "qtpy",
    "PyQt6",
    "dask",
    "av",
    "sam2",
    "matplotlib",
    "scipy",
)


def test_import_stays_cheap_and_the_first_use_loads_the_name():
    code = (
        "import sys, napari_segeval as se; "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules)); "
        "se.read_case; print('napari_segeval.io.read' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[:2] == ["[]", "True"]


def _stub() -> tuple[dict[str, str], list[str]]:
    """``__init__.pyi``'s imports (name -> the module it comes from) and its ``__all__``."""
    tree = ast.parse((ROOT / "napari_segeval" / "__init__.pyi").read_text(encoding="utf-8"))
    imports = {
        alias.name: node.module or ""
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    (listed,) = (
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__"
    )
    return imports, listed


def test_every_api_name_is_its_modules_public_object():
    imports, listed = _stub()
    assert {"read_case", "attack_case", "SegEvalError", "Cancelled"} <= set(imports)
    # what type checkers see (the stub's __all__) is what Python loads (its imports)
    assert sorted(se.__all__) == sorted(listed) == sorted({*imports, "__version__"})
    for name, where in imports.items():
        module = importlib.import_module(f"napari_segeval.{where}")
        if not where.startswith("_"):  # the exceptions' own modules have no __all__
            assert name in module.__all__, f"{name} is not public in napari_segeval.{where}"
        assert getattr(se, name) is getattr(module, name)
        assert getattr(se, name).__doc__, name
    assert set(imports) <= set(dir(se))
    with pytest.raises(AttributeError, match="attribute nope"):
        se.nope  # noqa: B018


def test_the_cli_runs_the_api_functions():
    """The API's names are the functions the commands call, not copies."""
    from napari_segeval import attacks, evaluation, io, propagation
    from napari_segeval.models import registry

    assert se.propagate_image is propagation.propagate_image
    assert se.attack_case is attacks.attack_case and se.AttackConfig is attacks.AttackConfig
    assert se.run_evaluation is evaluation.run_evaluation and se.read_case is io.read_case
    assert se.load_promptable is registry.load_promptable


def test_the_version_is_written_once():
    from setuptools.config.pyprojecttoml import read_configuration

    config = read_configuration(ROOT / "pyproject.toml")
    assert "version" in config["project"]["dynamic"]
    assert config["project"]["version"] == se.__version__


@pytest.mark.slow
def test_the_quickstart_example_runs(tmp_path, capsys):
    out = runpy.run_path(str(EXAMPLE))["main"](tmp_path)
    printed = capsys.readouterr().out
    assert "liver Dice" in printed and "FGSM at 8 HU" in printed
    assert 0.7 < out["clean_dice"] <= 1.0 and out["attacked_dice"] < out["clean_dice"]
    assert out["n_ok"] == 1
    results = out["output_dir"]
    assert (results / "results.csv").is_file() and (results / "report.html").is_file()
    assert (tmp_path / "liver_attacked.nii.gz").is_file()
