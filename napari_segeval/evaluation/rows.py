"""The columns of ``results.csv``, declared once per protocol family.

Each family is a :class:`RowSchema` a :class:`~napari_segeval.evaluation.protocols.Protocol`
names as its ``rows``. The runner refuses a row with a column its protocol does not
declare (:meth:`RowSchema.check`), so a misspelt column fails the run that writes it;
rows are never checked when read, so older results folders keep opening.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from napari_segeval._errors import SegEvalError
from napari_segeval.metrics.catalog import RISK, STRUCTURE_METRICS, UNCERTAINTY


@dataclass(frozen=True)
class Column:
    """One column of ``results.csv``.

    Attributes
    ----------
    name : str
        The column's name; with ``indexed``, its prefix (``eps_raw_c`` for ``eps_raw_c0`` ...).
    kind : type
        The type of its values (``float`` may hold NaN; any column may be empty).
    doc : str
        What it holds, for people.
    indexed : bool
        One column per index (``NAME0``, ``NAME1`` ...).
    """

    name: str
    kind: type
    doc: str
    indexed: bool = False

    def matches(self, key: str) -> bool:
        """Whether ``key`` is this column (or one of its indexed columns).

        Examples
        --------
        >>> Column("eps_raw_c", float, "", indexed=True).matches("eps_raw_c2")
        True
        >>> Column("dice", float, "").matches("dice2")
        False
        """
        if self.indexed:
            return re.fullmatch(re.escape(self.name) + r"\d+", key) is not None
        return key == self.name


@dataclass(frozen=True)
class RowSchema:
    """The columns of one protocol family's rows: its own and those of its bases.

    Examples
    --------
    >>> FOLDS.check([{"case": "a", "dice": 0.9, "n_tp": 3}])
    >>> FOLDS.check([{"case": "a", "dcie": 0.9}])
    Traceback (most recent call last):
    ...
    napari_segeval._errors.SegEvalError: rows of family 'folds' have columns it does not declare: dcie (napari_segeval.evaluation.rows)
    """

    family: str
    own: tuple[Column, ...]
    bases: tuple[RowSchema, ...] = ()

    @property
    def columns(self) -> tuple[Column, ...]:
        """Every column, the bases' first (in declaration order, each once)."""
        seen: dict[str, Column] = {}
        for base in self.bases:
            for c in base.columns:
                seen.setdefault(c.name, c)
        for c in self.own:
            seen.setdefault(c.name, c)
        return tuple(seen.values())

    def column(self, key: str) -> Column | None:
        """The column ``key`` belongs to, or None."""
        return next((c for c in self.columns if c.matches(key)), None)

    def check(self, rows: Iterable[Mapping[str, object]]) -> None:
        """Refuse (one line) rows holding a column the family does not declare."""
        keys = {k for r in rows for k in r}  # each column name once, not once per row
        unknown = sorted(k for k in keys if self.column(k) is None)
        if unknown:
            raise SegEvalError(
                f"rows of family {self.family!r} have columns it does not declare: "
                f"{', '.join(unknown)} (napari_segeval.evaluation.rows)"
            )


#: What every protocol writes: the runner's columns and the metrics of one structure.
SCORE = RowSchema(
    "score",
    (
        Column("case", str, "the case id"),
        Column("structure", str, 'the structure\'s name ("label N" when unnamed)'),
        Column("condition", str, "clean, or the attack (or training condition) that ran"),
        Column("protocol", str, "the protocol's name"),
        Column("protocol_version", str, "the protocol's version"),
        Column("fold", int, "the case's cross-validation fold, when the layout has folds"),
        Column("split", str, "the case's split (train, test ...), when the layout has splits"),
        Column("status", str, "ok (rows of failed cases are in the case records)"),
        Column("params", str, "every parameter of the run, as JSON"),
        Column("label", int, "the structure's label id"),
        *(Column(m.name, float, m.doc) for m in STRUCTURE_METRICS),
        Column("absent", bool, "the structure is in neither the reference nor the prediction"),
        Column("model", str, "the model, as named in the run (runs of several models)"),
    ),
)

#: Attacks: how large the perturbation was.
_EPS = (
    Column("eps", float, "the attack's budget, in the model's normalized units"),
    Column("eps_raw", float, "the budget in raw units (HU for CT), first channel"),
)

#: A structure's risk of failure, estimated without the reference.
_RISK = Column(RISK.name, float, RISK.doc)

#: A dense model on an MSD task, clean and attacked (``msd-robust``).
ATTACKED = RowSchema(
    "attacked",
    (
        *_EPS,
        Column("eps_raw_c", float, "the budget in raw units of channel N", indexed=True),
        Column("gate_threshold", float, "the robust threshold that gated the attacks"),
        Column("skipped_attacks", str, "attacks that do not apply to the model, and why"),
        _RISK,
    ),
    (SCORE,),
)

#: Box-prompted propagation (``medsam2-3d``, ``medsam2-video``).
PROMPTED = RowSchema(
    "prompted",
    (
        Column("task", str, "the data set's folder name"),
        Column("key_slice", int, "the prompted slice (or frame)"),
        Column("box", str, "the prompt's box, y0,x0,y1,x1 (y1, x1 exclusive)"),
        Column("network", str, "the network the model ran"),
        Column("modality", str, "the modality the case was read as"),
        Column("ct_mapping", str, "how CT intensities were mapped (window or minmax)"),
        Column("resize", str, "how frames were resized (float or pillow)"),
        Column("scoring", str, "merged, per-structure or ordered"),
        Column("nsd_gated", bool, "the case's NSD was set to 0 by the challenge's rule"),
        _RISK,
    ),
    (SCORE,),
)

#: Correction rounds (``interactive``).
ROUNDS = RowSchema(
    "rounds",
    (
        Column("round", int, "the correction round (0: the first propagation)"),
        Column("refine_prompt", str, "the kind of correction prompts (point or box)"),
        *_EPS,
        Column("prompt", str, "the prompt added in this round, as JSON"),
        Column("prompt_text", str, "the prompt added in this round, for people"),
    ),
    (PROMPTED,),
)

#: A model trained for the case (cross-validation folds, the ``li2026`` conditions).
_TRAINED = (
    Column("model_file", str, "the trained weights that segmented the case"),
    Column("n_train", int, "the number of training cases (or images) of that model"),
)

#: 5-fold cross-validation of a 2D model (``cv5-2d``).
FOLDS = RowSchema(
    "folds",
    (
        *_TRAINED,
        Column("n_tp", int, "true-positive pixels (mmsegmentation's accumulated metrics)"),
        Column("n_ref", int, "reference pixels"),
        Column("n_pred", int, "predicted pixels"),
        _RISK,
    ),
    (SCORE,),
)

#: The uncertainty protocol (``uncertainty``, its ``li2026`` preset).
UNCERTAIN = RowSchema(
    "uncertain",
    (
        Column(UNCERTAINTY.name, float, UNCERTAINTY.doc),
        *_TRAINED,
        Column(
            "removed", str, "li2026: the training cases removed as most uncertain (;-separated)"
        ),
        Column("loss", str, "li2026: the training loss (ce-dice or duo)"),
        Column("test_split", str, "li2026: the split the case was scored in"),
        Column("auv_features", str, "li2026: the model and features the AUV was computed from"),
    ),
    (SCORE,),
)

#: ``slices.csv``: one structure on one slice (the risk signals of
#: :mod:`napari_segeval.uncertainty.risk`); written beside ``results.csv`` by runs that
#: estimate risks. Not a family of ``results.csv``.
SLICES = RowSchema(
    "slices",
    (
        Column("case", str, "the case id"),
        Column("structure", str, "the structure's name"),
        Column("label", int, "the structure's label id"),
        Column("model", str, "the model, as named in the run"),
        Column("condition", str, "clean, or the attack that ran"),
        Column("slice", int, "the slice (or frame) index"),
        Column("risk", float, "the estimated probability that the slice's mask is wrong"),
        Column("area", int, "voxels of the structure's mask on the slice"),
        Column("entropy", float, "mean binary entropy over the mask grown by one pixel"),
        Column("continuity", float, "1 - mean Dice with the non-empty neighbouring slices"),
        Column("end", float, "where a walk ended: the last mask's area over the largest"),
        Column("iou", float, "1 - the decoder's own IoU estimate (LiteMedSAM)"),
        Column("jitter", float, "1 - the agreement of jittered boxes on the same embedding"),
        Column("models", float, "1 - the mean Dice with the other models' masks"),
        Column("tta", float, "1 - the mean Dice with test-time augmented passes (dense)"),
        Column("object", float, "1 - the decoder's object score (MedSAM2, SAM2.1)"),
        Column("flags", str, "why the slice is flagged for review ('; '-separated)"),
        Column("dice", float, "the slice's Dice against the reference, where there is one"),
    ),
)

#: Every family, by name.
FAMILIES: dict[str, RowSchema] = {
    s.family: s for s in (SCORE, ATTACKED, PROMPTED, ROUNDS, FOLDS, UNCERTAIN)
}

__all__ = [
    "ATTACKED",
    "FAMILIES",
    "FOLDS",
    "PROMPTED",
    "ROUNDS",
    "SCORE",
    "SLICES",
    "UNCERTAIN",
    "Column",
    "RowSchema",
]
