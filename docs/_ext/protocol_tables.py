"""mkdocs hook: the protocols page's lists and preset tables, generated from the code.

``docs/protocols.md`` does not copy what the code carries; it places markers that this
hook (``hooks:`` in ``mkdocs.yml``) replaces when the site is built:

``<!-- differences: PROTOCOL -->``
    one bullet per entry of the protocol's ``differences`` (how its defaults differ from
    the paper);
``<!-- parameters: PROTOCOL PRESET -->``
    the preset's ``| parameter | value |`` table, one row per parameter it sets (values
    as JSON);
``<!-- differences: PROTOCOL PRESET -->``
    one bullet per entry of the preset's ``differences``.

:func:`render` is the whole transformation (the tests call it on the page).
"""

from __future__ import annotations

import json
import re
from typing import Any

MARKER = re.compile(r"^<!-- (differences|parameters): ([\w-]+)(?: ([\w-]+))? -->$", re.MULTILINE)


def _bullets(items: Any) -> str:
    return "\n".join(f"- {item}" for item in items)


def _block(match: re.Match) -> str:
    from napari_segeval.evaluation import get_protocol

    what, name, preset = match.groups()
    proto = get_protocol(name)
    source = proto if preset is None else proto.presets[preset]
    if what == "differences":
        return _bullets(source.differences)
    proto.params().updated(source.params, name, f"preset {preset}")  # a typo fails the build
    params = json.loads(json.dumps(dict(source.params)))
    rows = "\n".join(f"| `{k}` | `{json.dumps(v)}` |" for k, v in params.items())
    return f"| parameter | value |\n|---|---|\n{rows}"


def render(markdown: str) -> str:
    """``markdown`` with every marker replaced by the code's list or table (module doc)."""
    return MARKER.sub(_block, markdown)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """mkdocs' hook: render the protocols page's markers."""
    return render(markdown) if page.file.src_uri == "protocols.md" else markdown
