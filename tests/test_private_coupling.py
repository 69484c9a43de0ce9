"""No module reaches into another's private names (issue 31: modules split by concept).

A module may import a private *module* of the package (``from ... import _common as C``:
the module is its package's own business), but a name with a leading underscore is its
module's alone: when another module needs it, it is part of an interface and gets a
public name (and usually a better home). Like the import contract, this reads the source.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "napari_segeval"


def private_name_imports(root: Path, package: str) -> list[str]:
    """``file:line: module._name`` for every ``from package.x import _name`` that is not a module."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.split(".")[0] == package
            ):
                continue
            base = root.parent.joinpath(*node.module.split("."))
            for alias in node.names:
                name = alias.name
                if not name.startswith("_") or name.startswith("__"):
                    continue
                if (base / f"{name}.py").is_file() or (base / name).is_dir():
                    continue  # a private module of that package
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {node.module}.{name}")
    return found


def test_no_module_imports_another_modules_private_name():
    found = private_name_imports(PACKAGE, "napari_segeval")
    assert found == [], "give these names a public name in their module:\n" + "\n".join(found)


def test_the_rule_sees_a_private_name_and_spares_a_private_module(tmp_path):
    pkg = tmp_path / "fakepkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "_helpers.py").write_text("_secret = 1\n")
    (pkg / "user.py").write_text(
        "from fakepkg.sub import _helpers\nfrom fakepkg.sub._helpers import _secret\n"
    )
    assert private_name_imports(pkg, "fakepkg") == [
        "fakepkg/user.py:2: fakepkg.sub._helpers._secret"
    ]
