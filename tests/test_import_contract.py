"""The import contract: layers, no cycles, no GUI in the core, no heavy import at start-up.

Layer order, low to high (a module may import its own layer's package and any
package of a lower layer; packages that share a layer are independent of each
other)::

    base   _errors, _cancel, _json,         exceptions, cancel flag, strict JSON,
           _names                           the name of an unnamed structure
           _atomic                          the one atomic writer
           napari_segeval (the root)        public exceptions, version
    1      io, metrics, prompts             files, numbers, boxes
    2      phantoms, inference              synthetic cases (made with io's types);
                                            pre/post-processing, sliding window
    3      models                           networks and backends
    4      propagation                      slice/frame propagation of promptable models
    5      attacks, uncertainty             perturb models; score their uncertainty
    6      training                         training of the built-in models (scripts and
                                            the per-fold trainer cv5-2d calls)
    7      evaluation                       data sets, protocols, runner, reports
    top    _layer_data                      napari layer data from files and cases (no napari)
           _reader, _writer                 napari reader/writer
           _sample_data                     napari sample entry point
           cli, _widgets                    the two front ends

The checker reads the source with :mod:`ast` (nothing is imported): imports at
module level and inside functions both count; imports under ``if
TYPE_CHECKING:`` do not (they never run). It fails on

(a) an import from a lower layer to a higher one, or between two packages of
    one layer;
(b) a cycle between modules of the package;
(c) a Qt/qtpy/napari/magicgui/vispy import outside ``_widgets/`` and the napari
    entry points (``_reader``, ``_writer``, ``_sample_data``);

and every top-level module must be placed in a layer. The front end ``_widgets`` has
an order of its own, by the same rules (:data:`WIDGET_LAYERS`): its sub-packages by
concept (``jobs``, ``models``, ``prompt`` ...) and its top modules import only from
those below them, never sideways, and every one of them is placed. Allowed exceptions are
listed in :data:`EXCEPTIONS`, each with its reason; an exception that no longer
matches an import fails too, so the list only shrinks.

One rule is its own: the Python API. The root package's PEP 562 ``__getattr__``
(:data:`API_LOADER`) loads the functions scripting users call (``read_case``,
``structure_table``, ``attack_case`` ...) from the layers above it on first use,
so that ``import napari_segeval`` stays cheap and ``napari_segeval.read_case``
still works. Its imports are accepted as upward edges and left out of the cycle
check (they run on attribute access, after every module has been initialised),
and only there: they must be inside that one function and reach public modules
only (no ``_private`` module); any other import by the root is checked as usual.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "napari_segeval"
PACKAGE = "napari_segeval"

#: Low to high. ``PACKAGE`` stands for the root ``__init__``.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_errors", "_cancel", "_json", "_names"),
    ("_atomic",),
    (PACKAGE,),
    ("io", "metrics", "prompts"),
    ("phantoms", "inference"),
    ("models",),
    ("propagation",),
    ("attacks", "uncertainty"),
    ("training",),
    ("evaluation",),
    ("_layer_data",),
    ("_reader", "_writer"),
    ("_sample_data",),
    ("cli", "_widgets"),
)

#: The package ``_widgets``; in :data:`WIDGET_LAYERS` it stands for its own ``__init__``.
WIDGETS = f"{PACKAGE}._widgets"

#: The sub-packages and top modules of ``_widgets``, low to high, by the rules of
#: :data:`LAYERS` (a name imports its own layer's and lower layers' names only; names that
#: share a layer are independent of each other).
WIDGET_LAYERS: tuple[tuple[str, ...], ...] = (
    (WIDGETS,),
    # per-viewer state; a job in a thread, the runner, the job functions; the colour
    # language; the display presets
    ("_state", "jobs", "colours", "display"),
    ("_layers", "overlays", "models"),  # layer picker; display numerics, overlays; model picker
    ("prompt",),  # the Prompt & propagate tab
    ("compare", "evaluate"),  # compare mode; the Segment, Attack, Dice and Export tabs
    ("case", "main"),  # the Case and Evaluate widgets
    ("results",),  # the results browser (docks the Evaluate widget)
    ("demo",),  # segeval demo
)

#: (importer, imported) -> why it is allowed. Target: empty.
EXCEPTIONS: dict[tuple[str, str], str] = {
    # ``segeval demo`` is the one command that opens the viewer: it imports the
    # widgets' demo lazily inside its run(), so no other command loads Qt.
    (
        "napari_segeval.cli._demo",
        "napari_segeval._widgets.demo",
    ): "GUI entry point of the command line (lazy import)",
}

#: (module, function): the root's PEP 562 loader of the Python API (see the module docstring).
API_LOADER: tuple[str, str] = (PACKAGE, "__getattr__")

GUI_MODULES = ("qtpy", "PyQt5", "PyQt6", "PySide2", "PySide6", "napari", "magicgui", "vispy")
#: Top-level modules allowed to import the GUI: the widgets and napari entry points.
GUI_ALLOWED = ("_widgets", "_reader", "_writer", "_sample_data")
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


# --------------------------------------------------------------------------- checker
@dataclass(frozen=True)
class Import:
    """One import statement's edge: ``importer`` imports ``imported`` (a module name)."""

    importer: str
    imported: str
    line: int
    lazy: bool  # inside a function (runs only when called)
    function: str | None = None  # the module-level function it is in, if any

    def __str__(self) -> str:
        where = "function-level" if self.lazy else "module-level"
        return f"{self.importer} -> {self.imported} (line {self.line}, {where})"


def module_names(package_dir: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([package, *parts])] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _resolve(name: str, modules: dict[str, Path]) -> str:
    """The longest prefix of ``name`` that is a module of the package."""
    parts = name.split(".")
    while len(parts) > 1 and ".".join(parts) not in modules:
        parts.pop()
    return ".".join(parts)


def _imports_of(module: str, path: Path, modules: dict[str, Path], package: str):
    """Every import of ``package`` modules by ``module`` (TYPE_CHECKING blocks skipped),
    and every top-level name imported from anywhere (for the GUI rule)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    edges: list[Import] = []
    roots: list[tuple[str, int]] = []

    def visit(node: ast.AST, lazy: bool, function: str | None = None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.orelse:
                    visit_one(stmt, lazy, function)
                continue
            visit_one(child, lazy, function)

    def visit_one(node: ast.AST, lazy: bool, function: str | None = None) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                roots.append((alias.name.split(".")[0], node.lineno))
                if alias.name == package or alias.name.startswith(package + "."):
                    edges.append(
                        Import(module, _resolve(alias.name, modules), node.lineno, lazy, function)
                    )
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            roots.append((source.split(".")[0], node.lineno))
            if source == package or source.startswith(package + "."):
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    target = sub if sub in modules else _resolve(source, modules)
                    edges.append(Import(module, target, node.lineno, lazy, function))
        is_function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if function is None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        visit(node, lazy or is_function, function)

    visit(tree, False)
    return edges, roots


def collect(package_dir: Path, package: str):
    """``(modules, package imports, {module: [(root name, line)]})`` of a package on disk."""
    modules = module_names(package_dir, package)
    edges: list[Import] = []
    roots: dict[str, list[tuple[str, int]]] = {}
    for name, path in modules.items():
        e, r = _imports_of(name, path, modules, package)
        seen = set()
        for x in e:  # one edge per statement (``from m import a, b`` names m once)
            if x.imported != name and (x.imported, x.line) not in seen:
                seen.add((x.imported, x.line))
                edges.append(x)
        roots[name] = r
    return modules, edges, roots


def is_api_edge(edge: Import, package: str) -> bool:
    """Whether ``edge`` is an import of the root's API loader (:data:`API_LOADER`)."""
    return edge.importer == package and edge.function == API_LOADER[1] and edge.lazy


def core_edges(edges, package: str) -> list[Import]:
    """The edges the layer and cycle rules check: all but the API loader's."""
    return [e for e in edges if not is_api_edge(e, package)]


def top_level(module: str, package: str) -> str:
    """``napari_segeval.io.read`` -> ``io``; the root package -> ``napari_segeval``.

    ``package`` may be a sub-package: ``napari_segeval._widgets.jobs.worker`` -> ``jobs``
    below ``napari_segeval._widgets`` (``module`` must be inside ``package``).
    """
    depth = package.count(".") + 1
    parts = module.split(".")
    return parts[depth] if len(parts) > depth else package


def layer_index(layers, package: str) -> dict[str, int]:
    """Layer number of each name; a dotted name of this package (:data:`PACKAGE` in
    :data:`LAYERS`, :data:`WIDGETS` in :data:`WIDGET_LAYERS`) stands for ``package``'s
    ``__init__`` (so that the tables also order a copy of the package under another name)."""
    return {
        (package if name == PACKAGE or name.startswith(PACKAGE + ".") else name): i
        for i, names in enumerate(layers)
        for name in names
    }


def inside(module: str, package: str) -> bool:
    """Whether ``module`` is ``package`` or below it."""
    return module == package or module.startswith(package + ".")


def within(edges, package: str) -> list[Import]:
    """The edges between two modules of ``package`` (a sub-package: its own order)."""
    return [e for e in edges if inside(e.importer, package) and inside(e.imported, package)]


def unplaced(modules, layers, package: str) -> list[str]:
    """Top-level modules that no layer names."""
    index = layer_index(layers, package)
    return sorted({top_level(m, package) for m in modules} - set(index))


def layer_violations(edges, layers, package: str, exceptions=()) -> list[str]:
    """Imports that go up the layer order or across packages of one layer."""
    index = layer_index(layers, package)
    bad = []
    for e in edges:
        a, b = top_level(e.importer, package), top_level(e.imported, package)
        if a == b or (e.importer, e.imported) in exceptions:
            continue
        ia, ib = index.get(a), index.get(b)
        if ia is None or ib is None:
            continue  # reported by unplaced()
        if ib > ia:
            bad.append(f"upward import ({a} is below {b}): {e}")
        elif ib == ia:
            bad.append(f"import between independent packages {a} and {b}: {e}")
    return bad


def cycles(edges, exceptions=()) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        if (e.importer, e.imported) not in exceptions:
            graph[e.importer].add(e.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def gui_violations(roots, package: str) -> list[str]:
    """GUI imports in modules outside :data:`GUI_ALLOWED`."""
    bad = []
    for module, names in roots.items():
        if top_level(module, package) in GUI_ALLOWED:
            continue
        bad += [
            f"{module} imports {name} (line {line}); only {', '.join(GUI_ALLOWED)} may"
            for name, line in names
            if name in GUI_MODULES
        ]
    return bad


def stale_exceptions(edges, exceptions) -> list[str]:
    present = {(e.importer, e.imported) for e in edges}
    return [f"{a} -> {b}" for a, b in exceptions if (a, b) not in present]


# --------------------------------------------------------------------------- the package
@pytest.fixture(scope="module")
def package():
    return collect(PACKAGE_DIR, PACKAGE)


def test_every_module_is_placed_in_a_layer(package):
    modules, _, _ = package
    assert not unplaced(modules, LAYERS, PACKAGE), (
        "add these top-level modules to LAYERS in tests/test_import_contract.py"
    )


def test_no_upward_or_sideways_import(package):
    _, edges, _ = package
    bad = layer_violations(core_edges(edges, PACKAGE), LAYERS, PACKAGE, EXCEPTIONS)
    assert not bad, "layer order broken:\n" + "\n".join(bad)


def test_every_widget_module_is_placed(package):
    modules, _, _ = package
    mine = [m for m in modules if inside(m, WIDGETS)]
    assert not unplaced(mine, WIDGET_LAYERS, WIDGETS), (
        "add these sub-packages or modules of _widgets to WIDGET_LAYERS in "
        "tests/test_import_contract.py"
    )


def test_widget_subpackages_import_only_downward(package):
    """Inside ``_widgets``: no upward arrow and no import between siblings of one level."""
    _, edges, _ = package
    bad = layer_violations(
        within(core_edges(edges, PACKAGE), WIDGETS), WIDGET_LAYERS, WIDGETS, EXCEPTIONS
    )
    assert not bad, "_widgets order broken (WIDGET_LAYERS):\n" + "\n".join(bad)


def test_no_import_cycle(package):
    _, edges, _ = package
    found = cycles(core_edges(edges, PACKAGE), EXCEPTIONS)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_core_never_imports_gui(package):
    _, _, roots = package
    bad = gui_violations(roots, PACKAGE)
    assert not bad, "\n".join(bad)


def test_the_api_loader_imports_lazily_and_only_public_modules(package):
    """The root's ``__getattr__`` is the one upward importer, and a narrow one."""
    _, edges, _ = package
    api = [e for e in edges if is_api_edge(e, PACKAGE)]
    assert api, "the root's __getattr__ imports no API module: update API_LOADER"
    private = [
        str(e) for e in api if any(part.startswith("_") for part in e.imported.split(".")[1:])
    ]
    assert not private, f"the Python API must come from public modules: {private}"
    ups = {top_level(e.imported, PACKAGE) for e in api}
    assert ups >= {"io", "metrics", "attacks", "evaluation"}
    other = [
        str(e)
        for e in edges
        if e.importer == PACKAGE
        and not is_api_edge(e, PACKAGE)
        and top_level(e.imported, PACKAGE) not in ("_errors", "_cancel")
    ]
    assert not other, f"the root imports more than its base layer: {other}"


def test_exceptions_are_still_needed_and_lazy(package):
    _, edges, _ = package
    stale = stale_exceptions(edges, EXCEPTIONS)
    assert not stale, f"remove these entries from EXCEPTIONS (the imports are gone): {stale}"
    eager = [str(e) for e in edges if (e.importer, e.imported) in EXCEPTIONS and not e.lazy]
    assert not eager, f"excepted imports must stay inside functions: {eager}"


# --------------------------------------------------------------------------- the checker can fail
def _fake_package(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "fakepkg"
    for rel, text in {"__init__.py": "", **files}.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.parent != pkg and not (path.parent / "__init__.py").exists():
            (path.parent / "__init__.py").write_text("")
        path.write_text(text)
    return pkg


def test_checker_catches_upward_sideways_cycle_and_gui(tmp_path):
    pkg = _fake_package(
        tmp_path,
        {
            "io/read.py": "def f():\n    from fakepkg.evaluation import report\n",  # upward, lazy
            "io/write.py": "from . import read\n",
            "metrics/a.py": "import fakepkg.prompts.box\n",  # sideways: same layer
            "prompts/box.py": "",
            "evaluation/report.py": "from fakepkg.evaluation.summary import x\n",
            "evaluation/summary.py": "def g():\n    from fakepkg.evaluation import report\n",
            "attacks/core.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from fakepkg.cli import main\nimport qtpy\n",
            "cli/main.py": "from fakepkg.io.read import f\n",  # downward: fine
            "mystery.py": "",
        },
    )
    modules, edges, roots = collect(pkg, "fakepkg")
    assert unplaced(modules, LAYERS, "fakepkg") == ["mystery"]
    bad = layer_violations(edges, LAYERS, "fakepkg")
    assert len(bad) == 2
    assert bad[0].startswith(
        "upward import (io is below evaluation): fakepkg.io.read -> "
        "fakepkg.evaluation.report (line 2, function-level)"
    )
    assert "independent packages metrics and prompts" in bad[1]
    assert cycles(edges) == [["fakepkg.evaluation.report", "fakepkg.evaluation.summary"]]
    exception = {("fakepkg.evaluation.summary", "fakepkg.evaluation.report"): "test"}
    assert cycles(edges, exception) == []
    assert not layer_violations(
        edges,
        LAYERS,
        "fakepkg",
        {
            ("fakepkg.io.read", "fakepkg.evaluation.report"): "t",
            ("fakepkg.metrics.a", "fakepkg.prompts.box"): "t",
        },
    )
    want = (
        "fakepkg.attacks.core imports qtpy (line 4); only _widgets, _reader, _writer, "
        "_sample_data may"
    )
    assert gui_violations(roots, "fakepkg") == [want]
    # the TYPE_CHECKING import of cli by attacks is not an edge; relative imports resolve
    assert ("fakepkg.attacks.core", "fakepkg.cli.main") not in {
        (e.importer, e.imported) for e in edges
    }
    assert ("fakepkg.io.write", "fakepkg.io.read") in {(e.importer, e.imported) for e in edges}
    assert stale_exceptions(edges, {("fakepkg.cli.main", "fakepkg.io.write"): "x"}) == [
        "fakepkg.cli.main -> fakepkg.io.write"
    ]


def test_checker_catches_an_upward_or_sideways_widget_import(tmp_path):
    """The order inside ``_widgets``: upward, sideways and unplaced names fail; down is fine."""
    pkg = _fake_package(
        tmp_path,
        {
            "_widgets/jobs/worker.py": "def f():\n    from fakepkg._widgets.results import panel\n",
            "_widgets/results/panel.py": "from fakepkg._widgets.jobs.worker import f\n"
            "from fakepkg._widgets import main\n",  # downward: fine
            "_widgets/compare/view.py": "from fakepkg._widgets.evaluate.dice import x\n",
            "_widgets/evaluate/dice.py": "from fakepkg.io import read\n",  # outside _widgets
            "_widgets/main.py": "",
            "_widgets/mystery.py": "",
            "io/read.py": "",
        },
    )
    modules, edges, _ = collect(pkg, "fakepkg")
    mine = [m for m in modules if inside(m, "fakepkg._widgets")]
    assert unplaced(mine, WIDGET_LAYERS, "fakepkg._widgets") == ["mystery"]
    bad = layer_violations(within(edges, "fakepkg._widgets"), WIDGET_LAYERS, "fakepkg._widgets")
    assert len(bad) == 2
    assert bad[0].startswith(
        "import between independent packages compare and evaluate: "
        "fakepkg._widgets.compare.view -> fakepkg._widgets.evaluate.dice"
    )
    assert bad[1].startswith(
        "upward import (jobs is below results): fakepkg._widgets.jobs."
        "worker -> fakepkg._widgets.results.panel (line 2, function-level)"
    )


def test_api_rule_is_narrow(tmp_path):
    """Only the root's API loader may import upward; elsewhere the same import fails."""
    pkg = _fake_package(
        tmp_path,
        {
            "__init__.py": "def __getattr__(name):\n    from fakepkg.evaluation import run\n"
            "def other():\n    import fakepkg.io\n",
            "io/read.py": "def __getattr__(name):\n    from fakepkg.evaluation import run\n",
            "evaluation/run.py": "import fakepkg\n",
            "io/__init__.py": "",
        },
    )
    _, edges, _ = collect(pkg, "fakepkg")
    kept = core_edges(edges, "fakepkg")
    assert ("fakepkg", "fakepkg.evaluation.run") not in {(e.importer, e.imported) for e in kept}
    bad = layer_violations(kept, LAYERS, "fakepkg")
    assert len(bad) == 2
    assert any("fakepkg -> fakepkg.io (line 4" in b for b in bad)  # other(): not the loader
    assert any("fakepkg.io.read -> fakepkg.evaluation.run" in b for b in bad)  # not the root
    assert cycles(kept) == []  # evaluation.run -> fakepkg is no cycle with the loader's edge


def test_checker_catches_a_new_upward_import_in_this_package(tmp_path):
    """Copy the real package, add one upward import: the contract must fail."""
    import shutil

    copy = tmp_path / PACKAGE
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "weights"))
    store = copy / "io" / "read.py"
    store.write_text(store.read_text() + "\n\ndef _x():\n    from napari_segeval.cli import main\n")
    _, edges, _ = collect(copy, PACKAGE)
    bad = layer_violations(edges, LAYERS, PACKAGE, EXCEPTIONS)
    assert any("napari_segeval.io.read -> napari_segeval.cli" in b for b in bad)


# --------------------------------------------------------------------------- light imports
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
    layers = [name for name in layers if name not in ("_widgets",)]
    stmt = "; ".join(f"import napari_segeval.{name}" for name in sorted(layers))
    loaded = _modules_after(stmt)
    bad = loaded & set(GUI_MODULES + ("torch", "SimpleITK", "av", "dask", "sam2"))
    assert not bad, f"importing the core layers imported {sorted(bad)}"


# --------------------------------------------------------------------------- the design page
DESIGN_DOC = PACKAGE_DIR.parent / "docs" / "design.md"


def design_layers(text: str) -> list[tuple[str, ...]]:
    """The layer table of docs/design.md as ``LAYERS``: rows of one layer number grouped.

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


def test_design_doc_layer_table_is_layers():
    documented = design_layers(DESIGN_DOC.read_text(encoding="utf-8"))
    assert documented == list(LAYERS), (
        "docs/design.md's layer table and LAYERS in tests/test_import_contract.py differ: "
        "change both"
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
