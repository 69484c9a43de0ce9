"""docs/protocols.md, as the site's build renders it, carries the code's recipes.

The page places markers that the build's hook (``docs/_ext/protocol_tables.py``) fills
from the code. Rendered, for every registered protocol the page has a ``## NAME``
section listing each of ``Protocol.differences`` as a bullet, word for word; for every
preset a ``### NAME preset PRESET`` section with a ``| parameter | value |`` table whose
rows are exactly the preset's parameters (values as JSON), and a bullet for each of
``Preset.differences``. Unrendered, the page holds no copy of them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from napari_segeval.evaluation import get_protocol
from napari_segeval.evaluation.protocols import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "protocols.md"


def rendered() -> str:
    """The page as the site's build writes it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "protocol_tables", ROOT / "docs/_ext/protocol_tables.py"
    )
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook.render(DOC.read_text(encoding="utf-8"))


def sections(text: str, level: int) -> dict[str, str]:
    """``{heading: body}`` for the headings of one level (``##`` or ``###``)."""
    marks = "#" * level
    parts = re.split(rf"^{marks} (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def bullets(body: str, after: str | None = None) -> list[str]:
    if after is not None:
        assert after in body, f"missing {after!r}"
        body = body.split(after, 1)[1]
    body = re.split(r"^#{2,3} ", body, flags=re.MULTILINE)[0]
    return [line[2:].strip() for line in body.splitlines() if line.startswith("- ")]


def param_table(body: str) -> dict:
    rows = re.findall(r"^\| `([^`]+)` \| `(.+)` \|", body, flags=re.MULTILINE)
    return {k: json.loads(v) for k, v in rows}


def test_sections_parse():
    text = "## a\n- x\n### a preset p\n| `k` | `[1, 2]` |\n- y\n## b\n"
    top = sections(text, 2)
    assert set(top) == {"a", "b"} and bullets(top["a"]) == ["x"]
    sub = sections(text, 3)
    assert param_table(sub["a preset p"]) == {"k": [1, 2]} and bullets(sub["a preset p"]) == ["y"]


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_defaults_differences_are_documented_word_for_word(name):
    proto = get_protocol(name)
    text = rendered()
    body = sections(text, 2).get(name)
    assert body is not None, f"docs/protocols.md has no '## {name}' section"
    assert proto.differences, f"{name} lists no differences from its paper"
    documented = bullets(body, "Differences of the defaults from the paper:")
    assert documented == list(proto.differences)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_presets_are_documented_with_their_exact_values(name):
    proto = get_protocol(name)
    subs = sections(rendered(), 3)
    for preset in proto.presets.values():
        heading = f"{name} preset {preset.name}"
        assert heading in subs, f"docs/protocols.md has no '### {heading}' section"
        body = subs[heading]
        assert param_table(body) == json.loads(json.dumps(dict(preset.params)))
        assert bullets(body, "Differences from the paper:") == list(preset.differences)


def test_the_page_holds_markers_not_copies():
    """Every list and table comes from the code: the source page has none of them."""
    text = DOC.read_text(encoding="utf-8")
    for name in REGISTRY:
        proto = get_protocol(name)
        assert f"<!-- differences: {name} -->" in text
        assert not any(f"- {d}" in text for d in proto.differences)
        for preset in proto.presets.values():
            assert f"<!-- parameters: {name} {preset.name} -->" in text
            assert f"<!-- differences: {name} {preset.name} -->" in text
    assert "| parameter | value |" not in text


def test_the_site_is_built_with_the_hook():
    assert "docs/_ext/protocol_tables.py" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
