"""A protocol's parameters as one typed, frozen record (:class:`Params`; ``docs/design.md``),
with each field's choices or number rule in its metadata, and the recipe differences."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from napari_segeval._errors import SegEvalError

P = TypeVar("P", bound="Params")
_DIFFERENCES = Path(__file__).with_name("differences.md")


def _json(value: Any) -> Any:
    """A JSON copy of ``value`` (tuples become lists, as in ``run.json``)."""
    return json.loads(json.dumps(value))


def choice(default: Any, choices: Any) -> Any:
    """A field whose value must be one of ``choices`` (refused in one line by :meth:`Params.check`)."""
    return field(default=default, metadata={"choices": tuple(choices)})


def number(
    default: Any,
    what: str,
    ok: Callable[[Any], bool] | None = None,
    *,
    whole: bool = False,
    null: bool = False,
) -> Any:
    """A number field (int with ``whole``, never a bool, None with ``null``) for which ``ok``
    holds; otherwise ``parameter NAME must be WHAT, got VALUE``.
    """
    check = ok or (lambda v: True)
    return field(default=default, metadata={"number": (what, check, whole, null)})


def tolerance() -> Any:
    """The ``tolerance_mm`` field of NSD: a positive number of mm (2 by default)."""
    return number(2.0, "a positive number of mm", lambda v: 0 < v < float("inf"))


def empty(default: str = "one") -> Any:
    """The ``empty`` field: the Dice of a structure absent from reference and prediction."""
    from napari_segeval.metrics.overlap import EMPTY_CHOICES

    return choice(default, EMPTY_CHOICES)


@lru_cache(maxsize=1)
def _sections() -> dict[str, str]:
    """The sections of ``differences.md`` by their ``## `` title."""
    parts = re.split(r"^## (.+)$", _DIFFERENCES.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def differences(section: str) -> tuple[str, ...]:
    """The ``- `` bullets of ``section`` of ``differences.md`` (the recipe differences of a
    protocol or preset), each joined into one line; ``- {NAME}`` stands for section NAME's.
    """
    out: list[str] = []
    for bullet in re.split(r"^\s*- ", _sections()[section], flags=re.MULTILINE)[1:]:
        text = " ".join(bullet.split())
        shared = re.fullmatch(r"\{(.+)\}", text)
        out += differences(shared[1]) if shared else [text]
    return tuple(out)


def listed(*default: Any) -> Any:
    """A field whose default is the list ``default`` (a new list per record)."""
    return field(default_factory=lambda: list(default))


@dataclass(frozen=True)
class Params:
    """Base of every protocol's parameter record.

    Examples
    --------
    >>> from napari_segeval.evaluation.protocols import get_protocol
    >>> p = get_protocol("medsam2-3d").resolve_params({"jitter": 2})
    >>> p.jitter, p.to_json()["jitter"], list(p.to_json())[:3]
    (2, 2, ['model', 'device', 'window'])
    """

    if TYPE_CHECKING:  # every protocol's record declares it, with its own default
        model: str | None = None

    # What a results folder's browser and a correction read of any run; a record whose
    # protocol has the parameter overrides the method.
    def image_channel(self) -> int:
        """The image channel the run read (0: the protocol has no ``channel``)."""
        return 0

    def run_models(self) -> list[str]:
        """The models of a run of several (``models``), else []."""
        return []

    def per_frame(self) -> bool:
        """Whether the run's rounds step through a video's frames (``mode=video``)."""
        return False

    def propagation_options(self) -> dict[str, Any]:
        """The :class:`~napari_segeval.propagation.PropagationOptions` fields the run set
        ({}: not a propagating protocol).
        """
        return {}

    def mask_prompts(self) -> bool:
        """Whether the run prompted with reference masks (``prompt=mask``)."""
        return False

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The parameter names, in order."""
        return tuple(f.name for f in fields(cls))

    def to_json(self) -> dict:
        """The parameters as ``run.json`` stores them: every field, in order, as JSON."""
        return {f.name: _json(getattr(self, f.name)) for f in fields(self)}

    def updated(self: P, values: Mapping[str, Any], protocol: str = "", origin: str = "") -> P:
        """This record with ``values`` (JSON copies) set; an unknown name raises :class:`SegEvalError`."""
        names = self.names()
        for key in values:
            if key not in names:
                where = f" ({origin})" if origin else ""
                raise SegEvalError(
                    f"protocol {protocol or '?'} has no parameter {key!r}{where} "
                    f"(parameters: {', '.join(sorted(names))})"
                )
        return replace(self, **{k: _json(v) for k, v in values.items()})

    @classmethod
    def stored(cls: type[P], values: Mapping[str, Any]) -> P:
        """The record of a results folder's ``run.json`` ``params``, as written and unchecked
        (missing parameters keep their defaults, unknown ones are left out).
        """
        names = cls.names()
        return cls().updated({k: v for k, v in values.items() if k in names})

    def check(self) -> None:
        """Refuse a value outside its field's choices or number rule (one line); a protocol adds
        its own rules by overriding this (calling ``super``).
        """
        for f in fields(self):
            value = getattr(self, f.name)
            if "choices" in f.metadata and value not in f.metadata["choices"]:
                allowed = ", ".join(str(a) for a in f.metadata["choices"])
                raise SegEvalError(f"parameter {f.name} must be one of {allowed}, got {value!r}")
            if "number" in f.metadata:
                what, ok, whole, null = f.metadata["number"]
                if null and value is None:
                    continue
                kind = int if whole else (int, float)
                if isinstance(value, bool) or not isinstance(value, kind) or not ok(value):
                    raise SegEvalError(f"parameter {f.name} must be {what}, got {value!r}")


@dataclass(frozen=True)
class Models(Params):
    """The ``models`` parameter of a protocol that runs several models of its kind (None: the
    ``model`` parameter runs). Listed first among a record's bases, it is its last field.
    """

    models: list[str] | None = None

    def run_models(self) -> list[str]:
        """The ``models`` parameter, else []."""
        return list(self.models or [])
