"""The Prompt tab's propagations, through one correction session per case, model, modality,
CT window and kind (docs/design.md)."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from napari_segeval._names import CLEAN
from napari_segeval._widgets._layers import prediction_layer
from napari_segeval._widgets.jobs.tasks import propagate_session
from napari_segeval._widgets.jobs.worker import show_info
from napari_segeval._widgets.prompt.tools import case_key
from napari_segeval.metrics.catalog import METRICS
from napari_segeval.prompts.prompt_file import PromptFile
from napari_segeval.prompts.prompt_set import PromptSet


class PropagationJobs:
    """The session of the Prompt panel ``panel`` and the jobs that propagate through it;
    ``made_from``: the prompts of the prediction shown, ``case_id``: the case corrected."""

    def __init__(self, panel: Any) -> None:
        self.panel = panel
        self.changes: dict[int, tuple[float, float]] = {}
        #: (session key, seconds) of the last whole propagation (None before one)
        self.seconds: tuple[tuple, float] | None = None
        self.drop()

    def drop(self) -> None:
        """Forget the session and what a correction set (another case is shown)."""
        self.session: Any = None
        self._key: tuple | None = None
        self.made_from: dict[int, PromptSet] = {}
        self.seed: tuple | None = None
        self.result_name: str | None = None
        self.case_id: str | None = None
        self._case: tuple | None = None
        self.options: dict = {}
        self.panel.runner.drop_next()

    def start_from(
        self,
        labels: np.ndarray | None,
        sets: dict[int, PromptSet],
        *,
        name: str | None = None,
        case_id: str | None = None,
        options: dict | None = None,
    ) -> None:
        """Correct a saved prediction ``labels`` made from ``sets`` (the first session's seed)
        into layer ``name``; ``options``: the run's ``PropagationOptions`` fields."""
        self.drop()
        self.options = dict(options or {})
        if labels is not None:
            self.seed = (labels, dict(sets))
            self.made_from = dict(sets)
        self.result_name, self.case_id = name, case_id
        self._case = case_key(self.panel.state)

    @property
    def case(self) -> tuple | None:
        """The case (``case_key``) of the session or correction, if any."""
        return self._case if self._key is None else self._key[0]

    def _key_now(self) -> tuple:
        p = self.panel
        return (case_key(p.state), p.spec(), p.chosen_modality(), p.state.window, p.state.kind())

    def start(self, fresh: bool, auto: bool = False) -> Any:
        """Propagate (``fresh``: all, a new session) or re-propagate; the job, or None."""
        p = self.panel
        image = p.state.image
        if image is None:
            raise ValueError("choose an image layer first")
        layers = p.tools.layers
        shape, where = layers.frame_shape(), layers.where()  # a series is refused first
        sets = p.tools.prompts()
        for label, s in sets.items():
            s.validate(shape, name=p.state.structures.get(label), where=where)
        if p.runner.running:
            if auto:  # the newest prompts, once the job running has ended; a propagation's
                # prompts are out of date
                stale = p.runner.worker_name in ("propagation", "re-propagation")
                p.runner.then("re-propagation", lambda: self.start(fresh, auto), cancel=stale)
                return None
            show_info(f"{p.runner.worker_name} is still running: wait or cancel it")
            return None
        key = self._key_now()
        session = None if fresh or key != self._key else self.session
        seed = self.seed if not fresh and session is None else None
        known = {} if fresh or (session is None and seed is None) else self.made_from
        changed = sorted(lab for lab in {*sets, *known} if known.get(lab) != sets.get(lab))
        if not changed and not fresh and session is not None:
            p.tools.status.setText(
                "nothing to re-propagate: no prompt changed since the last propagation"
            )
            return None
        name = self.result_name or f"{image.name} prediction"
        base = p.state.predictions.get(CLEAN) if known else None
        spatial = shape[1:] if p.state.kind() == "image" else shape
        before = None if base is None else np.asarray(base.data)
        paint = p.live.start(
            f"{name} (propagating)", spatial, base=before, clear=changed, hide=base
        )
        ref = p.state.reference
        fits = ref is not None and tuple(ref.data.shape) == tuple(spatial)
        reference = np.asarray(ref.data) if fits else None
        what = "propagation" if session is None and seed is None else "re-propagation"
        started = time.monotonic()
        return p.runner.start(
            what,
            propagate_session,
            p.spec(),
            p.cached_model(),
            session,
            np.asarray(image.data),
            p.chosen_modality(),
            p.state.kind(),
            sets,
            window=p.state.window,
            seed=seed,
            options=self.options,
            reference=reference,
            needs=[image],
            relay={"on_slice": paint},
            on_done=lambda result: self._done(
                result, key, sets, name, what != "propagation", started
            ),
        )

    def _done(
        self, result: tuple, key: tuple, sets: dict, name: str, again: bool, started: float
    ) -> None:
        p = self.panel
        model, session, res, changes, risks = result
        if not again:  # what one whole propagation of this case costs
            self.seconds = (key, time.monotonic() - started)
        p.live.stop()  # the final merged prediction replaces the partial one
        self.session, self._key, self.made_from = session, key, dict(sets)
        self.seed, self.changes = None, dict(changes)
        p.state.set_model(model, p.spec(), "promptable")
        p.state.prompts = dict(sets)
        layer = prediction_layer(p.viewer, p.state, res.labels, name)
        names = {lab: p.state.structures[lab] for lab in sets if lab in p.state.structures}
        layer.metadata["prompts"] = PromptFile(
            dict(sets), p.tools.layers.frame_shape(), names
        ).to_json()
        if self.case_id is not None:
            layer.metadata["correction_of"] = self.case_id
        p.tools.layers.raise_layers()
        p.state.set_prediction(CLEAN, layer)
        p.state.set_risk(risks)  # the Dice tab's plot draws each structure's risk
        p.tools.status.setText(self.describe(session.last_propagated, again=again))

    def propagation_seconds(self) -> float | None:
        """Seconds of the last whole propagation with these settings (None if none)."""
        if self.seconds is None or self.seconds[0] != self._key_now():
            return None
        return self.seconds[1]

    def describe(self, labels: list[int], again: bool = True) -> str:
        """The status line after a propagation: what was propagated, how Dice moved."""
        names = self.panel.state.structures
        if not labels:
            return "nothing was propagated again"
        parts = []
        for lab in labels:
            text = names.get(lab) or f"label {lab}"
            before, after = self.changes.get(lab, (math.nan, math.nan))
            if not math.isnan(after):
                shown = [v for v in (before, after) if not math.isnan(v)]
                text += ": Dice " + " → ".join(METRICS["dice"].text(v) for v in shown)
            parts.append(text)
        return ("re-propagated " if again else "propagated ") + "; ".join(parts)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def estimate_text(seconds: float | None, samples: int, *, encodes_once: bool = False) -> str:
    """The expected time ("" unknown) of ``samples`` prompt-jitter propagations of ``seconds``
    each; with ``encodes_once`` (embeddings kept) all but the first are decoder passes."""
    if seconds is None or not math.isfinite(seconds):
        return ""
    if encodes_once:
        more = int(samples) - 1
        tail = f" + {more} decoder pass{'es' if more != 1 else ''}" if more else ""
        return f"about {_duration(float(seconds))}{tail}"
    return f"about {_duration(float(seconds) * int(samples))}"
