"""The README and the documentation site: what they link to exists, and the site builds.

The README is the package index page, so its links and images are absolute URLs into this
repository; the pages of ``docs/`` are all in ``mkdocs.yml``'s nav; every file the README,
the pages and the root documents link to is in the repository. A release test
(``scripts/test.sh --release``) builds the site with ``mkdocs build --strict`` (broken
links, anchors and docstring cross-references fail it) and checks what it wrote;
``scripts/test.sh`` builds it strictly once, beside its tests.
"""

from __future__ import annotations

import doctest
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
#: Where the README's links into the repository point (the index page has no relative paths).
BLOB = "https://github.com/napari-segeval/napari-segeval/blob/main/"
TREE = "https://github.com/napari-segeval/napari-segeval/tree/main/"
RAW = "https://raw.githubusercontent.com/napari-segeval/napari-segeval/main/"
#: The quick start's two commands, byte for byte (the second is what .ci/run runs).
VENV_LINE = (
    'python3 -m venv .venv && .venv/bin/pip install -e ".[report]" && '
    ".venv/bin/segeval evaluate sample_data/msd_task/Task90_AbdomenPhantom "
    "--protocol medsam2-3d --output-dir out/medsam2-3d"
)
TEST_LINE = "bash scripts/test.sh"
BEGIN, END = "<!-- wheel-user commands -->", "<!-- /wheel-user commands -->"
#: Root documents beside the README.
ROOT_DOCS = ("CHANGELOG.md", "CONTRIBUTING.md", "THIRD_PARTY_LICENSES.md")
#: A Markdown link or image target, and an HTML ``src=``.
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SRC = re.compile(r"""src=["']([^"']+)["']""")


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_ext" not in p.relative_to(DOCS).parts)


def _targets(text: str) -> list[str]:
    """Link and image targets of a Markdown text, code blocks and code spans left out."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text) + SRC.findall(text)


def _nav_files(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [f for item in nav for f in _nav_files(item)]
    if isinstance(nav, dict):
        return [f for value in nav.values() for f in _nav_files(value)]
    return []


def _repo_path(target: str, base: Path) -> Path | None:
    """The repository file a link target names (None: outside the repository, an anchor)."""
    target = target.split("#", 1)[0]
    for prefix in (BLOB, TREE, RAW):
        if target.startswith(prefix):
            return ROOT / target[len(prefix) :]
    if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):  # an anchor, http:, mailto:
        return None
    return (base / target).resolve()


def test_targets_are_read_outside_code():
    text = "[a](x.md) `[b](y.md)` ![c](https://e/c.png)\n```\n[d](z.md)\n```\n<img src='i.png'>"
    assert _targets(text) == ["x.md", "https://e/c.png", "i.png"]
    assert _repo_path(BLOB + "docs/cli.md#prompts", ROOT) == ROOT / "docs" / "cli.md"
    assert _repo_path("#top", ROOT) is None and _repo_path("https://napari.org", ROOT) is None


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_files(config["nav"])
    pages = [p.relative_to(DOCS).as_posix() for p in _pages()]
    assert sorted(set(pages) - set(nav)) == [], "pages missing from mkdocs.yml's nav"
    assert sorted(set(nav) - set(pages)) == [], "nav entries without a page"
    assert len(nav) == len(set(nav)), "a page is in the nav twice"


def test_the_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines (at most 200)"
    assert VENV_LINE in lines and TEST_LINE in lines
    # the test line is the one CI runs and scripts/test.sh documents as the README's
    ci = ROOT / ".ci" / "run"
    if ci.exists():
        assert re.search(rf"^{re.escape(TEST_LINE)}\b", ci.read_text(), flags=re.MULTILINE)
    assert "the README's command" in (ROOT / "scripts" / "test.sh").read_text()
    assert "not a medical device" in text


def test_ci_runs_the_readme_command_then_the_release_tier():
    ci = ROOT / ".ci" / "run"
    if not ci.exists():
        pytest.skip("no .ci/run in this tree")
    runs = [ln.split() for ln in ci.read_text().splitlines() if ln.startswith(TEST_LINE)]
    assert [r[: len(TEST_LINE.split()) + 1] for r in runs] == [
        [*TEST_LINE.split(), "-q"],
        [*TEST_LINE.split(), "--release"],
    ]
    assert (
        '--release) markers="release and not heavy"' in (ROOT / "scripts" / "test.sh").read_text()
    )


def test_the_readme_links_only_absolute_urls():
    relative = [
        t
        for t in _targets(README.read_text(encoding="utf-8"))
        if not re.match(r"^(https?://|#|mailto:)", t)
    ]
    assert relative == [], "the index page cannot resolve relative links and images"


def test_the_readme_has_a_wheel_user_block_without_checkout_paths():
    text = README.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    block = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert block.startswith("```bash\n") and block.endswith("```") and block.count("```") == 2
    assert "sample_data/" not in block
    assert "segeval samples path" in block and "segeval evaluate" in block


def test_every_linked_repository_file_exists():
    documents = [README, *(ROOT / name for name in ROOT_DOCS), *_pages()]
    missing = []
    for doc in documents:
        for target in _targets(doc.read_text(encoding="utf-8")):
            path = _repo_path(target, doc.parent)
            if path is not None and not path.exists():
                missing.append(f"{doc.relative_to(ROOT)}: {target}")
    assert missing == []


def test_root_documents_and_license_files_exist():
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    for name in ROOT_DOCS:
        assert (ROOT / name).is_file(), name
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    files = project["license-files"]
    assert "LICENSE" in files and "THIRD_PARTY_LICENSES.md" in files
    assert [f for f in files if not (ROOT / f).is_file()] == []


def test_the_benchmarks_page_lists_every_benchmark():
    page = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("bench_*.py"))
    assert scripts and [s for s in scripts if f"`{s}`" not in page] == []


def _roles_extension():
    path = DOCS / "_ext" / "griffe_sphinx_roles.py"
    spec = importlib.util.spec_from_file_location("_segeval_docs_roles", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sphinx_roles_become_site_references():
    ext = _roles_extension()
    known = {
        "Box": "napari_segeval.prompts.box.Box",
        "napari_segeval.io.read_case": "napari_segeval.io.read.read_case",
    }
    text = (
        ":class:`Box`, :func:`~napari_segeval.io.read_case`, :func:`numpy.unique`, "
        ":meth:`the key <keys.gone>` and :data:`GONE`"
    )
    assert ext.convert(text, known.get) == (
        '<autoref identifier="napari_segeval.prompts.box.Box" optional>`Box`</autoref>, '
        '<autoref identifier="napari_segeval.io.read.read_case" optional>`read_case`</autoref>, '
        '`numpy.unique`, <autoref identifier="napari_segeval.keys.gone">`the key`</autoref> '
        'and <autoref identifier="napari_segeval.GONE">`GONE`</autoref>'
    )
    assert ext.parse("~a.b.c()") == ("c()", "a.b.c()")
    assert doctest.testmod(ext).failed == 0


@pytest.mark.release
def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert (tmp_path / "site" / "api" / "io" / "index.html").is_file()
