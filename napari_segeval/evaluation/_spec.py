"""Where a case lives: :class:`CaseSpec`, and :func:`inside` to keep paths in the data set."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from napari_segeval._errors import SegEvalError
from napari_segeval.io._labels import structure_label


@dataclass
class CaseSpec:
    """Where one case lives, and what is known about it before reading it.

    Parameters
    ----------
    case_id
        Unique id within the data set.
    images
        Image path per channel (``_0000``, ``_0001`` ...); usually one.
    labels
        Reference label map, if any.
    layout
        The parser that made the record (one of :data:`napari_segeval.evaluation.layouts.LAYOUTS`).
    root
        The data-set folder.
    structures
        Label id -> name (background left out), when the layout states them.
    color_table
        ``{"1": [255, 0, 0], ...}`` for colour-coded masks (JSON form).
    modality
        Modality hint for the reader.
    split
        ``"train"``, ``"val"`` or ``"test"`` as published by the data set.
    fold
        Cross-validation fold (from a splits file, or :mod:`.splits`).
    meta
        Layout extras (CAMUS view and phase, ...).
    error
        Why the case cannot be used (set by the parser, e.g. a path escape).
    group
        The patient (or lesion) the case comes from; None: its own group.
    train_specs
        The cases a protocol trains on before scoring this one (run-time only: not in
        :meth:`to_dict` nor in equality).
    """

    case_id: str
    images: tuple[str, ...]
    labels: str | None = None
    layout: str = "generic"
    root: str = ""
    structures: dict[int, str] = field(default_factory=dict)
    color_table: dict | None = None
    modality: str | None = None
    split: str = "train"
    fold: int | None = None
    meta: dict = field(default_factory=dict)
    error: str | None = None
    group: str | None = None
    train_specs: tuple[CaseSpec, ...] = field(default=(), repr=False, compare=False)

    @property
    def group_id(self) -> str:
        """The group that keeps cases together in one fold: ``group``, else the case id."""
        return self.group if self.group else self.case_id

    def to_dict(self) -> dict:
        """Plain-JSON form (structure ids as strings; ``train_specs`` left out)."""
        d = asdict(replace(self, train_specs=()))
        del d["train_specs"]
        d["images"] = list(self.images)
        d["structures"] = {str(k): v for k, v in self.structures.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> CaseSpec:
        """Inverse of :meth:`to_dict`."""
        d = dict(d)
        d["images"] = tuple(d["images"])
        d["structures"] = {int(k): v for k, v in (d.get("structures") or {}).items()}
        return cls(**d)

    def moved(self, old: str, new: str) -> CaseSpec:
        """The spec with its paths under folder ``old`` moved to folder ``new`` (others kept)."""

        def move(p: str) -> str:
            ap = os.path.abspath(p) if p and old else ""
            if not ap or os.path.commonpath([ap, old]) != old:
                return p
            return os.path.join(new, os.path.relpath(ap, old))

        labels = None if self.labels is None else move(self.labels)
        return replace(self, images=tuple(map(move, self.images)), labels=labels, root=new)

    def reader_color_table(self) -> dict | None:
        """The colour table in the reader's form ``{(r, g, b): (id, name)}``.

        Examples
        --------
        >>> CaseSpec("p", ("p.png",), "m.png", structures={1: "neo"},
        ...          color_table={"1": [255, 0, 0]}).reader_color_table()
        {(255, 0, 0): (1, 'neo')}
        """
        if not self.color_table:
            return None
        return {
            tuple(int(c) for c in colour): (int(k), structure_label(int(k), self.structures))
            for k, colour in self.color_table.items()
        }


def spec_maker(
    layout: str,
    root: str | Path,
    structures: dict[int, str] | None = None,
    modality: str | None = None,
    color_table: dict | None = None,
    meta: dict | None = None,
):
    """``spec(case, images, labels, split="train", **extra)``: a :class:`CaseSpec` of ``layout``
    in ``root`` with the data set's names, colours, modality and ``meta`` (copies per case);
    ``images`` is one path or a tuple of them, ``labels`` a path or None.
    """

    def spec(case: str, images, labels, split: str = "train", **extra) -> CaseSpec:
        paths = tuple(str(p) for p in images) if isinstance(images, tuple) else (str(images),)
        extra.setdefault("meta", dict(meta or {}))
        labels = str(labels) if labels else None
        colours = dict(color_table) if color_table else None
        names = dict(structures or {})
        return CaseSpec(
            case, paths, labels, layout, str(root), names, colours, modality, split, **extra
        )

    return spec


def inside(root: str | Path, relative: str) -> Path:
    """Join ``relative`` to ``root``; SegEvalError for an absolute path or a ``..`` escape."""
    root_n = os.path.normpath(os.path.abspath(root))
    rel = str(relative).replace("\\", "/")
    joined = os.path.normpath(os.path.join(root_n, rel))
    if os.path.isabs(rel) or os.path.commonpath([root_n, joined]) != root_n:
        raise SegEvalError(f"path {relative!r} escapes the data-set folder {root_n}")
    return Path(joined)


__all__ = ["CaseSpec", "inside", "spec_maker"]
