"""The import contract: layers, no cycles, no GUI in the core, no heavy import at start-up.

The layers, the viewer's order, the GUI rule and the cycle rule are import-linter
contracts (``[tool.importlinter]`` in ``pyproject.toml``; docs/design.md, "Layers"),
which ``scripts/test.sh`` checks with ``lint-imports``: every import counts, at module
level or inside a function, except under ``if TYPE_CHECKING:``. Here: the contracts catch
a new upward import, the root's lazy Python API stays narrow, the package imports nothing
heavy, and the design page's layer table is the contract's.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = ROOT / "napari_segeval"
PYPROJECT = ROOT / "pyproject.toml"

GUI_MODULES = ("qtpy", "PyQt5", "PyQt6", "PySide2", "PySide6", "napari", "magicgui", "vispy")
HEAVY_AT_IMPORT = (
    "torch",
    "SimpleITK",
    "av",
    "dask",
    "distributed",
    "sam2",
    "matplotlib",
    "huggingface_hub",
)


def _contracts() -> dict[str, dict]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: import-linter's own dependency
        import tomli as tomllib  # type: ignore[no-redef]
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def _lint(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on the package found first on ``pythonpath``, by ``pyproject.toml``."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    code = "import sys; from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run(
        [sys.executable, "-c", code, str(PYPROJECT), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )


def test_a_new_upward_import_breaks_the_layers(tmp_path):
    """Copy the package, add one function-level upward import: the contract fails."""
    copy = tmp_path / "napari_segeval"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "weights"))
    read = copy / "io" / "read.py"
    read.write_text(read.read_text() + "\n\ndef _x():\n    from napari_segeval.cli import main\n")
    res = _lint(tmp_path, tmp_path)
    assert res.returncode != 0
    assert "napari_segeval.io.read -> napari_segeval.cli" in res.stdout


def _package_imports(path: Path) -> list[str]:
    """The package's modules ``path`` imports (``from .a import b`` in the root is ``a.b``,
    as is ``from napari_segeval.a import b``), ``if`` blocks (``TYPE_CHECKING``) left out."""
    found: list[str] = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.ImportFrom):
                module = sub.module or ""
                if sub.level == 1:
                    found += [f"{module}.{a.name}".lstrip(".") for a in sub.names]
                elif module.startswith("napari_segeval"):
                    found += [f"{module}.{a.name}".split(".", 1)[1] for a in sub.names]
            elif isinstance(sub, ast.Import):
                found += [a.name for a in sub.names if a.name.startswith("napari_segeval")]
    return found


def test_the_api_stub_imports_only_public_modules_and_the_root_nothing():
    """The root loads its API lazily from the names ``__init__.pyi`` imports: public
    modules only (but the exceptions' own); ``__init__.py`` imports no module of the package."""
    api = _package_imports(PACKAGE_DIR / "__init__.pyi")
    assert {m.split(".")[0] for m in api} >= {"io", "metrics", "attacks", "evaluation"}
    private = [
        m
        for m in api
        if any(p.startswith("_") for p in m.split(".")[:-1])
        and not m.startswith(("_errors.", "_cancel."))
    ]
    assert not private, f"the Python API must come from public modules: {private}"
    assert _package_imports(PACKAGE_DIR / "__init__.py") == []


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return {m.split(".")[0] for m in out.stdout.split()}


def test_import_package_is_light():
    loaded = _modules_after("import napari_segeval")
    bad = loaded & set(HEAVY_AT_IMPORT + GUI_MODULES)
    assert not bad, f"import napari_segeval imported {sorted(bad)}"


def test_import_core_layers_is_light():
    layers = [p.name for p in PACKAGE_DIR.iterdir() if (p / "__init__.py").exists()]
    stmt = "; ".join(f"import napari_segeval.{n}" for n in sorted(layers) if n != "_widgets")
    bad = _modules_after(stmt) & set(GUI_MODULES + ("torch", "SimpleITK", "av", "dask", "sam2"))
    assert not bad, f"importing the core layers imported {sorted(bad)}"


# --------------------------------------------------------------------------- the design page
DESIGN_DOC = ROOT / "docs" / "design.md"


def design_layers(text: str) -> list[tuple[str, ...]]:
    """The layer table of docs/design.md, low to high: rows of one layer number grouped.

    The table is the first Markdown table under ``## Layers`` whose header starts
    with ``| layer | package |``; a row's packages are the backticked names of its
    second cell. Layer numbers must rise by one from 0.
    """
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    if not rows or not rows[0].replace(" ", "").startswith("|layer|package|"):
        raise AssertionError(
            "docs/design.md: no '| layer | package | owns |' table under '## Layers'"
        )
    groups: list[list[str]] = []
    for line in rows[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        number = int(cells[0])
        if number == len(groups):
            groups.append([])
        elif number != len(groups) - 1:
            raise AssertionError(f"docs/design.md: layer {number} out of order in {line!r}")
        groups[-1] += [name for i, name in enumerate(cells[1].split("`")) if i % 2]
    return [tuple(g) for g in groups]


def test_design_doc_layer_table_is_the_contract():
    """The table, less the root package's row (the container), is the contract's layers."""
    documented = [g for g in design_layers(DESIGN_DOC.read_text(encoding="utf-8"))
                  if g != ("napari_segeval",)]  # fmt: skip
    contract = [
        tuple(n.strip() for n in row.split("|"))
        for row in reversed(_contracts()["layers"]["layers"])
    ]
    assert documented == contract, (
        "docs/design.md's layer table and [tool.importlinter]'s layers differ: change both"
    )


def test_design_doc_parser_catches_drift():
    text = (
        "# x\n\n## Layers\n\n| layer | package | owns |\n|---|---|---|\n"
        "| 0 | `_errors`, `_json` | a |\n| 1 | `io` | b |\n| 1 | `metrics` | c |\n"
        "| 2 | `cli` | d |\n\n## Next\n| 9 | `x` | y |\n"
    )
    assert design_layers(text) == [("_errors", "_json"), ("io", "metrics"), ("cli",)]
    with pytest.raises(AssertionError, match="out of order"):
        design_layers(text.replace("| 2 | `cli`", "| 4 | `cli`"))
