"""Prediction keys: the one name of a saved prediction (or attack image) in a results folder.

A key names a file in a case record's ``files`` (its thumbnail: ``"pred:<key>"``). Its
text is written by :meth:`PredictionKey.format` and read by :meth:`PredictionKey.parse`
only (a test fails on a second parser)::

    key       := [kind ":"] ["round" N ":"] condition [" @ " model]
    kind      := "perturbed" | "perturbation"      (absent: a label map)
    N         := 1, 2, ...                          (round 0 is written without it)

e.g. ``clean``, ``perturbed:fgsm-linf eps=0.5``, ``round3:pgd @ builtin``. A condition
may hold ``:`` and ``=``, a model ``:``; neither may hold ``" @ "`` (nor a model begin
with ``"@ "``), and a condition may not begin like a kind or round prefix, so every key
reads back as the key it was written from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import Enum

from napari_segeval._errors import SegEvalError
from napari_segeval._names import CLEAN

#: Between a condition and its model.
MODEL_SEPARATOR = " @ "
_ROUND = re.compile(r"round([1-9]\d*):")
_RESERVED = re.compile(r"(perturbed|perturbation|round\d+):")


def _nameable(text: object) -> bool:
    return isinstance(text, str) and bool(text) and MODEL_SEPARATOR not in text


def _unnameable(what: str, text: object, begin: str) -> SegEvalError:
    return SegEvalError(
        f"{what} {text!r} cannot name a prediction: it must be non-empty text without "
        f"{MODEL_SEPARATOR!r} that does not begin with {begin}"
    )


class FileKind(Enum):
    """What a key's file holds: a label map, or one of an attack's two float images."""

    LABELS = "labels"
    PERTURBED = "perturbed"
    PERTURBATION = "perturbation"

    @property
    def is_image(self) -> bool:
        """True for the float images (the attacked image and the perturbation)."""
        return self is not FileKind.LABELS


#: The float-image kinds, as written before a key (``perturbed:<condition>``).
IMAGE_KINDS: tuple[FileKind, ...] = (FileKind.PERTURBED, FileKind.PERTURBATION)


@dataclass(frozen=True)
class PredictionKey:
    """The name of one saved file of a case: condition, round, model and kind.

    Parameters
    ----------
    condition
        ``"clean"`` or an attack with its parameters (``"pgd-linf eps=0.05 steps=10"``).
    round
        The correction round of an ``interactive`` run's prediction (0 is stored as None).
    model
        The model, in a run of several models (None: a run of one).
    kind
        A label map (default) or an attack's perturbed image or perturbation.

    Raises
    ------
    SegEvalError
        A condition or model that would not read back (see the module docstring).
    """

    condition: str
    round: int | None = None
    model: str | None = None
    kind: FileKind = FileKind.LABELS

    def __post_init__(self) -> None:
        cond, model, k = self.condition, self.model, self.round
        if not _nameable(cond) or _RESERVED.match(cond):
            raise _unnameable("condition", cond, "'perturbed:', 'perturbation:' or 'round<k>:'")
        if model is not None and (not _nameable(model) or model.startswith("@ ")):
            raise _unnameable("model", model, "'@ '")
        if k is not None:
            if isinstance(k, bool) or int(k) != k or int(k) < 0:
                raise SegEvalError(f"round {k!r} of a prediction must be a whole number >= 0")
            object.__setattr__(self, "round", int(k) or None)
        if not isinstance(self.kind, FileKind):
            object.__setattr__(self, "kind", FileKind(self.kind))

    # -- text ----------------------------------------------------------------------------
    def format(self) -> str:
        """The key as results folders store it (the module docstring's grammar)."""
        text = self.condition if self.round is None else f"round{self.round}:{self.condition}"
        if self.kind is not FileKind.LABELS:
            text = f"{self.kind.value}:{text}"
        return text if self.model is None else f"{text}{MODEL_SEPARATOR}{self.model}"

    def __str__(self) -> str:
        return self.format()

    @classmethod
    def parse(cls, text: str | PredictionKey) -> PredictionKey:
        """The key a stored text names (a :class:`PredictionKey` is returned as it is).

        Raises
        ------
        SegEvalError
            Text that :meth:`format` cannot have written.
        """
        if isinstance(text, PredictionKey):
            return text
        body, sep, named = str(text).rpartition(MODEL_SEPARATOR)
        body, model = (body, named) if sep else (named, None)
        kind = FileKind.LABELS
        head, colon, rest = body.partition(":")
        if colon and head in {k.value for k in IMAGE_KINDS}:
            kind, body = FileKind(head), rest
        m = _ROUND.match(body)
        k = int(m.group(1)) if m else None
        return cls(body[m.end() :] if m else body, k, model, kind)

    # -- related keys --------------------------------------------------------------------
    @property
    def is_clean(self) -> bool:
        """True for a prediction of the clean condition (of any round or model)."""
        return self.condition == CLEAN

    @property
    def is_image(self) -> bool:
        """True for an attack's float images."""
        return self.kind.is_image

    def first_round(self) -> PredictionKey:
        """The same prediction's round 0 (the key itself outside ``interactive`` runs)."""
        return replace(self, round=None)

    def image(self, kind: FileKind) -> PredictionKey:
        """The key of the attacked image (or perturbation) this prediction was made on: its
        round 0's (a correction round keeps its attack).

        Examples
        --------
        >>> str(PredictionKey.parse("round3:pgd @ builtin").image(FileKind.PERTURBED))
        'perturbed:pgd @ builtin'
        """
        return replace(self, round=None, kind=kind)

    def labels(self) -> PredictionKey:
        """The label map of the same condition, round and model."""
        return replace(self, kind=FileKind.LABELS)

    def with_model(self, model: str | None) -> PredictionKey:
        """The same key of ``model``'s prediction (None: of a run of one model)."""
        return replace(self, model=model)

    def label(self) -> str:
        """How the report's tables name the prediction: ``"clean @ threshold round 5"``.

        Examples
        --------
        >>> PredictionKey("clean", 5).label(), PredictionKey("pgd", 2, "builtin").label()
        ('clean round 5', 'pgd @ builtin round 2')
        """
        text = str(replace(self, round=None, kind=FileKind.LABELS))
        return text if self.round is None else f"{text} round {self.round}"


def is_image_key(key: str | PredictionKey) -> bool:
    """True for the keys of float images (``perturbed:...``, ``perturbation:...``)."""
    return PredictionKey.parse(key).is_image


__all__ = ["IMAGE_KINDS", "MODEL_SEPARATOR", "FileKind", "PredictionKey", "is_image_key"]
