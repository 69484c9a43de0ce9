"""The headless-core contract of DESIGN.md: no GUI in the core, no heavy import at start-up."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "napari_segeval"
GUI_MODULES = ("qtpy", "PyQt5", "PyQt6", "PySide2", "PySide6", "napari", "magicgui", "vispy")
#: Modules allowed to touch the GUI: napari entry points and the widgets.
GUI_ALLOWED = ("_widgets", "_reader.py", "_writer.py", "_sample_data.py")
HEAVY_AT_IMPORT = ("torch", "SimpleITK", "av", "dask", "distributed", "sam2", "matplotlib")


def _core_files() -> list[Path]:
    files = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in GUI_ALLOWED:
            continue
        files.append(path)
    return files


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_core_files_found():
    files = _core_files()
    assert any(f.name == "case.py" for f in files)
    assert not any("_widgets" in f.parts for f in files)


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_module_never_imports_gui(path):
    bad = _imported_roots(path) & set(GUI_MODULES)
    assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}; only {GUI_ALLOWED} may"


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return {m.split(".")[0] for m in out.stdout.split()}


def test_import_package_is_light():
    loaded = _modules_after("import napari_segeval")
    bad = loaded & set(HEAVY_AT_IMPORT + GUI_MODULES)
    assert not bad, f"import napari_segeval imported {sorted(bad)}"


def test_import_core_layers_is_light():
    layers = [p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()]
    layers = [name for name in layers if name not in ("_widgets",)]
    stmt = "; ".join(f"import napari_segeval.{name}" for name in sorted(layers))
    loaded = _modules_after(stmt)
    bad = loaded & set(GUI_MODULES + ("torch", "SimpleITK", "av", "dask", "sam2"))
    assert not bad, f"importing the core layers imported {sorted(bad)}"
