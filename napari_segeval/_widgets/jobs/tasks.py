"""Worker side of the *Evaluate* panel's tabs (no Qt): plain functions over core calls."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from napari_segeval._cancel import check_cancel
from napari_segeval.models.registry import PROMPTABLE

#: A job's ``progress(done, total)`` (None: not reported).
Progress = Callable[[int, int], None] | None


def surface_rows(
    pairs: Mapping[str, tuple[np.ndarray, np.ndarray]],
    spacing: Sequence[float],
    structures: Mapping[int, str],
    *,
    tolerance_mm: float = 2.0,
    progress: Progress = None,
    cancel: Any = None,
) -> dict[str, list[dict]]:
    """``{condition: structure_table rows with surface metrics}`` per (reference, prediction)."""
    from napari_segeval.metrics import structure_table

    out: dict[str, list[dict]] = {}
    total = len(pairs)
    for i, (cond, (ref, pred)) in enumerate(pairs.items()):
        check_cancel(cancel, "surface metrics")
        out[cond] = structure_table(
            ref, pred, spacing, structures=dict(structures), tolerance_mm=tolerance_mm, surface=True
        )
        if progress is not None:
            progress(i + 1, total)
    return out


def load_model(
    name: str, checkpoint: str | None, device: str, *, progress: Progress = None, cancel: Any = None
) -> Any:
    """Load a promptable model by its registry (or catalogue) name and optional checkpoint."""
    from napari_segeval.models.registry import load_promptable

    check_cancel(cancel, "model loading")
    if name in PROMPTABLE and PROMPTABLE[name].checkpoint == "none":
        checkpoint = None  # the panel's checkpoint field is shared by the backends
    model = load_promptable(name, checkpoint=checkpoint or None, device=device)
    if progress is not None:
        progress(1, 1)
    return model


def _model(spec: tuple, cached: tuple | None, cancel: Any, load: Callable = load_model) -> Any:
    """The model of ``spec``: ``cached = (spec, model)``'s, else ``load(*spec, cancel=)``."""
    return cached[1] if cached is not None and cached[0] == spec else load(*spec, cancel=cancel)


@dataclass(frozen=True)
class Capability:
    """What a chosen model takes: prompts, points (None: the unloaded weights decide), why not."""

    prompts: bool
    points: bool | None
    reason: str = ""


def capability(spec: tuple, model: Any = None) -> Capability:
    """What the model of ``spec = (name, checkpoint, device)`` (or its loaded ``model``) takes."""
    from napari_segeval.models.registry import DENSE

    name = spec[0]
    if name in DENSE:
        why = "it segments without prompts (Segment tab), so it cannot be corrected with prompts"
        return Capability(False, False, f"{name} is a dense model: {why}")
    caps = _capabilities(spec, model)
    if caps is None:  # the weights decide (or a factory): known once loaded
        return Capability(True, None)
    if not caps.points:
        return Capability(True, False, caps.refusal("point", name))
    return Capability(True, True)


def _capabilities(spec: tuple, model: Any = None) -> Any:
    """The loaded ``model``'s capabilities, else the registry's declaration (or None)."""
    from napari_segeval.models.registry import capabilities_of

    return model.capabilities if model is not None else capabilities_of(spec[0])


def propagate_session(
    spec: tuple[str, str | None, str],
    cached: tuple | None,
    session: Any,
    image: np.ndarray,
    modality: str,
    kind: str,
    sets: Mapping,
    *,
    window: str | None = None,
    seed: tuple | None = None,
    options: Mapping | None = None,
    reference: np.ndarray | None = None,
    progress: Progress = None,
    cancel: Any = None,
    on_slice: Callable[[int, int, np.ndarray], None] | None = None,
) -> tuple[Any, Any, Any, dict[int, tuple[float, float]], dict[int, Any]]:
    """Propagate ``sets`` through a correction session (a new one when ``session`` is None).

    A new session takes ``options`` (``PropagationOptions`` fields) and ``seed = (labels,
    prompt sets)``; only structures whose prompts changed are propagated again. Returns
    ``(model, session, result, changes, risks)``: ``changes`` ``{label: (Dice before, Dice
    after)}`` against ``reference`` (empty without one), ``risks`` :func:`live_risks`.
    """
    from napari_segeval.metrics import overlap_metrics
    from napari_segeval.propagation import PropagationOptions, PropagationSession

    model = _model(spec, cached, cancel)
    check_cancel(cancel, "propagation")
    before = None
    if session is None:
        session = PropagationSession.from_image(
            model,
            np.asarray(image),
            kind=kind,
            modality=modality,
            window=window,
            options=PropagationOptions(**(options or {})),
        )
        if seed is not None:
            session.seed(*seed)
            before = np.asarray(seed[0])
    elif session.result is not None:
        before = session.result.labels
    for label in [lab for lab in session.prompts if lab not in sets]:
        session.remove(label)
    session.set_prompts(dict(sets))
    result = session.propagate(progress=progress, cancel=cancel, on_slice=on_slice)
    changes: dict[int, tuple[float, float]] = {}
    if reference is not None and session.last_propagated:
        ref, labels = np.asarray(reference), list(session.last_propagated)
        after = overlap_metrics(ref, result.labels, labels=labels)
        old = {}
        if before is not None and before.shape == ref.shape:
            old = overlap_metrics(ref, before, labels=labels)
        changes = {
            lab: (old[lab]["dice"] if lab in old else float("nan"), after[lab]["dice"])
            for lab in labels
        }
    return model, session, result, changes, live_risks(result)


def live_risks(result: Any) -> dict[int, Any]:
    """Each structure's ``StructureRisk`` in a 3D propagation ``result`` (empty for 2D)."""
    from napari_segeval.evaluation.triage import crop_slices
    from napari_segeval.uncertainty.risk import structure_risk

    labels = np.asarray(result.labels)
    if labels.ndim != 3:
        return {}
    return {
        int(label): structure_risk(int(label), labels == label, crop_slices(s), trace=s.trace)
        for label, s in result.structures.items()
    }


#: The viewer's prompt-jitter intensity noise (normalized units) for a model that
#: encodes every sample's slices anyway (:func:`uncertainty`).
NOISE_STD = 0.02


def keeps_frames(spec: tuple[str, str | None, str], model: Any = None) -> bool:
    """Whether the model of ``spec`` keeps the slices' embeddings (``frame_features``)."""
    return (caps := _capabilities(spec, model)) is not None and caps.frame_features


def uncertainty(
    spec: tuple[str, str | None, str],
    cached: tuple | None,
    image: np.ndarray,
    modality: str,
    prompts: Any,
    kind: str,
    prediction: np.ndarray | None,
    structures: Mapping[int, str],
    *,
    window: str | None = None,
    n_samples: int = 8,
    jitter: int = 3,
    noise_std: float | None = None,
    progress: Progress = None,
    cancel: Any = None,
) -> tuple[Any, np.ndarray, dict[int, float]]:
    """``(model, normalised entropy map on the image grid, {label: score of prediction or, for
    None, the mean})`` by prompt jitter; ``noise_std`` None: 0 if :func:`keeps_frames`, else
    :data:`NOISE_STD`."""
    from napari_segeval.propagation import propagation_mode
    from napari_segeval.propagation.images import as_frames
    from napari_segeval.uncertainty import prompt_tta, structure_scores

    model = _model(spec, cached, cancel)
    frames = model.preprocess(as_frames(np.asarray(image), kind), modality, window)
    info = model.normalize_info(modality, window, image)
    if noise_std is None:
        noise_std = 0.0 if keeps_frames(spec, model) else NOISE_STD
    maps = prompt_tta(
        model,
        frames,
        prompts,
        mode=propagation_mode(kind),
        n_samples=n_samples,
        jitter=jitter,
        noise_std=noise_std,
        clamp=(info.valid_min, info.valid_max),
        progress=progress,
        cancel=cancel,
    )
    u, labels = maps.entropy, maps.labels
    if kind == "image":
        u, labels = u[0], labels[0]
    if prediction is not None:
        labels = np.asarray(prediction)
    rows = structure_scores(u, labels, dict(structures) or None)
    return model, u, {r["label"]: r["score"] for r in rows}


def attack(
    model: Any,
    case: Any,
    prompts: Any,
    attack_name: str,
    eps: float,
    steps: int,
    *,
    window: str | None = None,
    progress: Progress = None,
    cancel: Any = None,
) -> Any:
    """Attack ``model`` on ``case`` as ``segeval attack`` (``eps`` in normalized units), outputs
    on its grid; ``prompts`` None: a dense model (a volume)."""
    from napari_segeval.attacks import AttackConfig, DenseTarget, PromptTarget, attack_case

    target: Any = (
        DenseTarget(model, case)
        if prompts is None
        else PromptTarget(model, case, prompts, window=window)
    )
    config = AttackConfig(attack_name, eps=float(eps), steps=int(steps))
    return attack_case(target, config, clamp=True, progress=progress, cancel=cancel)


def attack_with(
    spec: tuple[str, str | None, str],
    cached: tuple | None,
    *args: Any,
    cancel: Any = None,
    **kw: Any,
) -> tuple[Any, Any]:
    """Load the model of ``spec`` (unless cached), :func:`attack` it: ``(model, result)``."""
    model = _model(spec, cached, cancel)
    return model, attack(model, *args, cancel=cancel, **kw)


#: Dense model sources offered by the Segment panel: label -> what the path field holds.
DENSE_SOURCES = {
    "built-in CT U-Net": None,
    "nnU-Net v2 results folder": "folder",
    "TorchScript file": "file",
    "U-Net weights file": "file",
}


def dense_ref(source: str, path: str | None) -> str:
    """The model registry reference of a Segment-panel choice (``builtin-ct`` or the path)."""
    if source not in DENSE_SOURCES:
        raise ValueError(f"unknown dense model source {source!r}: use one of {list(DENSE_SOURCES)}")
    if DENSE_SOURCES[source] is None:
        return "builtin-ct"
    if not path:
        raise ValueError(f"{source}: choose a {DENSE_SOURCES[source]} first")
    return str(path)


def segment_dense(
    spec: tuple[str, bool, str],
    cached: tuple | None,
    case: Any,
    *,
    progress: Progress = None,
    cancel: Any = None,
) -> tuple[Any, np.ndarray]:
    """``(model, labels)`` of the dense model ``spec = (ref, trust_torchscript, device)``."""
    from napari_segeval._errors import SegEvalError
    from napari_segeval.models.dense import segment_case
    from napari_segeval.models.registry import load_dense

    if case.axes != "zyx":
        raise SegEvalError(f"dense models need a 3D volume, got axes {case.axes!r}")
    check_cancel(cancel, "model loading")

    def load(ref: str, trust: bool, device: str, cancel: Any) -> Any:
        return load_dense(ref, trust_torchscript=bool(trust), device=device)

    model = _model(spec, cached, cancel, load)
    result = segment_case(model, case, progress=progress, cancel=cancel)
    return model, result.labels
