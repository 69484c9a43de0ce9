"""Named, versioned evaluation recipes.

A :class:`Protocol` bundles a name, a version, default parameters, a per-case
function and an aggregation. Its functions are module-level, so the object
pickles by reference and runs in spawned worker processes and on Dask workers.

Registered protocols (see :data:`REGISTRY`): ``msd-robust``, ``medsam2-3d``,
``medsam2-video``, ``uncertainty``, ``cv5-2d``, ``interactive``. :func:`get_protocol` also accepts
``"package.module:ATTRIBUTE"`` naming any :class:`Protocol` object.

A protocol may carry **paper presets** (:class:`Preset`): named parameter sets
that follow a published recipe to the letter (except its documented recipe
bugs, which stay corrected). ``segeval evaluate --preset NAME`` applies one;
the preset's name is recorded in ``run.json``, ``summary.json`` and the report,
next to its list of differences from the paper (the same list, word for word,
as ``docs/protocols.md``; a test keeps the two equal).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from napari_segeval._errors import SegEvalError

#: Protocol name -> module defining ``PROTOCOL``.
REGISTRY: dict[str, str] = {
    "msd-robust": "napari_segeval.evaluation.protocols.msd_robust",
    "medsam2-3d": "napari_segeval.evaluation.protocols.medsam2_3d",
    "medsam2-video": "napari_segeval.evaluation.protocols.medsam2_video",
    "uncertainty": "napari_segeval.evaluation.protocols.uncertainty",
    "cv5-2d": "napari_segeval.evaluation.protocols.cv5_2d",
    "interactive": "napari_segeval.evaluation.protocols.interactive",
}


@dataclass(frozen=True)
class Preset:
    """A named parameter set following one published recipe.

    Parameters
    ----------
    name : str
        What users type after ``--preset`` (``"rog"``, ``"medsam2"`` ...).
    params : mapping
        Parameter values the preset sets (every key must be a protocol parameter);
        user ``--param`` overrides still apply on top and are recorded.
    source : str
        The paper and code the preset follows, one line.
    differences : tuple of str
        Every deliberate difference between the preset and that recipe, one
        sentence each with its reason (shown in the report, listed word for word
        in ``docs/protocols.md``).
    """

    name: str
    params: Mapping[str, Any]
    source: str
    differences: tuple[str, ...] = ()


@dataclass
class CaseArrays:
    """Arrays of one case to save in the results folder, on the source image's grid.

    Parameters
    ----------
    geometry : Geometry
        The source image's geometry (every array is written with it).
    axes : str
        The source image's axes (``"zyx"``, ``"tyx"``, ``"yx"``, ``"yxc"`` ...).
    source : str
        The source image's path: its kind picks the file format
        (:func:`napari_segeval.io._formats.output_formats`).
    arrays : dict of str to numpy.ndarray
        Keyed as the record's ``files``: a condition name (``"clean"``,
        ``"fgsm-linf eps=0.5"``) holds that condition's label map;
        ``"perturbed:<condition>"`` and ``"perturbation:<condition>"`` hold the
        attacked image and the perturbation in raw units (float32).
    """

    geometry: Any
    axes: str
    source: str
    arrays: dict = field(default_factory=dict)


@dataclass
class CaseOutput:
    """What a protocol returns for one case.

    Parameters
    ----------
    rows : list of dict
        One per structure x condition, with at least ``structure``, ``condition``
        and the metric columns (``dice`` ...). The runner adds ``case``,
        ``protocol``, ``protocol_version``, ``fold``, ``split`` and ``status``.
    views : dict of str to numpy.ndarray
        2D arrays for report thumbnails: ``"image"`` (uint8 grey or RGB),
        ``"reference"`` and one label slice per condition (``"clean"`` ...).
    extra : dict
        Per-case values that are not per-structure (an uncertainty score ...),
        kept in the case record and copied into its rows.
    arrays : CaseArrays or None
        Predictions (and perturbed images) to save as files in the results folder
        (see :mod:`napari_segeval.evaluation.files`); None saves nothing.
    """

    rows: list[dict]
    views: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    arrays: CaseArrays | None = None


@dataclass(frozen=True)
class Protocol:
    """A named, versioned evaluation recipe.

    Parameters
    ----------
    name, version : str
        Written into every result row and ``summary.json``.
    defaults : mapping
        Every parameter with its default; unknown parameters are refused.
    run_case : callable
        ``run_case(spec: CaseSpec, params: dict) -> CaseOutput``; raises on bad input
        (the runner turns the exception into an error row).
    summarize : callable
        ``summarize(rows: list[dict], params: dict) -> dict`` over ok rows.
    description : str
        One paragraph for ``--help`` and the report.
    select : callable, optional
        ``select(specs, params) -> specs`` picking the cases to evaluate (default:
        every case with reference labels, plus cases that carry a parse error).
    needs_folds : bool
        Assign cross-validation folds before running.
    layout_options : mapping
        Default options for :func:`~napari_segeval.evaluation.layouts.load_layout`
        (``{"camus_mode": "sequences"}`` for video protocols).
    prepare : callable, optional
        ``prepare(specs, params, output_dir) -> None``, run once in the calling
        process after folds are assigned and before any case is dispatched (train
        per-fold models ...). It may add JSON values to ``spec.meta``; the specs
        are saved in ``cases.json`` afterwards and reach ``run_case``.
    presets : mapping of str to Preset
        Paper presets by name (see :class:`Preset`).
    differences : tuple of str
        Every deliberate difference between the *defaults* and the published
        recipe the protocol is named after, with its reason.

    Examples
    --------
    >>> p = get_protocol("medsam2-3d")
    >>> p.name, p.resolve_params({"jitter": 2})["jitter"]
    ('medsam2-3d', 2)
    """

    name: str
    version: str
    defaults: Mapping[str, Any]
    run_case: Callable
    summarize: Callable
    description: str = ""
    select: Callable | None = None
    needs_folds: bool = False
    layout_options: Mapping[str, Any] = field(default_factory=dict)
    prepare: Callable | None = None
    presets: Mapping[str, Preset] = field(default_factory=dict)
    differences: tuple[str, ...] = ()

    def preset(self, name: str | None) -> Preset | None:
        """The preset called ``name`` (None for None); unknown names raise :class:`SegEvalError`."""
        if name is None:
            return None
        if name not in self.presets:
            known = ", ".join(sorted(self.presets)) or "none"
            raise SegEvalError(f"protocol {self.name} has no preset {name!r} (presets: {known})")
        return self.presets[name]

    def resolve_params(self, overrides: Mapping[str, Any] | None = None,
                       preset: str | None = None) -> dict:
        """Defaults, then the preset's values, then ``overrides``.

        Unknown parameter or preset names raise :class:`SegEvalError`.
        """
        params = json.loads(json.dumps(dict(self.defaults)))
        chosen = self.preset(preset)
        layers = [(f"preset {chosen.name}", chosen.params)] if chosen else []
        for origin, values in [*layers, ("", overrides or {})]:
            for key, value in values.items():
                if key not in params:
                    where = f" ({origin})" if origin else ""
                    raise SegEvalError(
                        f"protocol {self.name} has no parameter {key!r}{where} "
                        f"(parameters: {', '.join(sorted(params))})"
                    )
                params[key] = json.loads(json.dumps(value))
        return params

    def differences_for(self, preset: str | None) -> tuple[str, ...]:
        """The documented differences from the paper of ``preset`` (or of the defaults)."""
        chosen = self.preset(preset)
        return chosen.differences if chosen else self.differences

    def cases(self, specs: Sequence, params: Mapping) -> list:
        """The cases this protocol evaluates."""
        if self.select is not None:
            return list(self.select(specs, params))
        return [s for s in specs if s.labels or s.error]


def get_protocol(name: str | Protocol) -> Protocol:
    """Look up a protocol by registered name or ``"module:ATTRIBUTE"``.

    Examples
    --------
    >>> get_protocol("cv5-2d").needs_folds
    True
    """
    if isinstance(name, Protocol):
        return name
    if name in REGISTRY:
        module, attr = REGISTRY[name], "PROTOCOL"
    elif ":" in name:
        module, attr = name.split(":", 1)
    else:
        raise SegEvalError(f"unknown protocol {name!r}; choose one of {', '.join(REGISTRY)}")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise SegEvalError(f"cannot load protocol {name!r}: {exc}") from exc
    if not isinstance(obj, Protocol):
        raise SegEvalError(f"{name!r} is not a Protocol")
    return obj


__all__ = ["REGISTRY", "CaseArrays", "CaseOutput", "Preset", "Protocol", "get_protocol"]
