"""Where a correction of a results-browser case starts (no Qt): its prediction and prompts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._names import CLEAN
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import MaskPrompt, PromptSet

if TYPE_CHECKING:
    from napari_segeval.evaluation.loaded import LoadedCase
    from napari_segeval.evaluation.results import ResultsFolder


def protocol_prompts(folder: ResultsFolder, loaded: Any) -> dict[int, PromptSet]:
    """The prompts the protocol gave each structure of ``loaded``, from its clean rows (or {})."""
    from napari_segeval.evaluation.store import result_rows

    record = folder.records.get(loaded.case_id)
    if record is None:
        return {}
    mask = folder.params.mask_prompts()
    sets: dict[int, PromptSet] = {}
    for row in result_rows([record]):
        if row.get("condition") != CLEAN or row.get("label") is None:
            continue
        if row.get("key_slice") is None or not row.get("box"):
            continue
        label, index = int(row["label"]), int(row["key_slice"])
        y0, x0, y1, x1 = (int(v) for v in str(row["box"]).split(","))
        if mask:
            ref = np.asarray(loaded.case.labels)
            plane = ref[index] if ref.ndim == 3 else ref
            prompt: Any = MaskPrompt(plane == label, index=index, label=label)
        else:
            prompt = Box(y0, x0, y1, x1, index=index, label=label)
        sets[label] = PromptSet(label, (prompt,))
    return dict(sorted(sets.items()))


def starting_prompts(folder: ResultsFolder, loaded: LoadedCase) -> tuple[dict[int, PromptSet], str]:
    """``(prompt sets, where they come from)`` a correction of ``loaded`` starts from."""
    from napari_segeval.prompts import boxes_from_labels

    sets = protocol_prompts(folder, loaded)
    if sets:
        kind = (
            "mask prompts"
            if any(isinstance(p, MaskPrompt) for s in sets.values() for p in s)
            else "boxes"
        )
        return sets, f"the protocol's {kind}"
    labels = loaded.case.labels
    if labels is None:
        raise ValueError(
            f"case {loaded.case_id}: no prompts on record and no reference "
            "labels to take boxes from"
        )
    mode = "video" if loaded.case.kind == "video" else "volume"
    boxes = boxes_from_labels(np.asarray(labels), mode=mode)
    if not boxes:
        raise ValueError(f"case {loaded.case_id}: the reference labels are empty")
    return {b.label: PromptSet.from_box(b) for b in boxes}, "boxes from the reference"


def run_model(folder: ResultsFolder, loaded: Any = None) -> str | None:
    """The run's ``model`` parameter, else (several models) the first shown prediction's."""
    from napari_segeval.evaluation.keys import PredictionKey

    model = folder.params.model
    first = None if loaded is None else loaded.pair[0]
    if model is None and first:
        model = PredictionKey.parse(first).model
    return None if model is None else str(model)


def open_correction(folder: ResultsFolder, loaded: LoadedCase, evaluate: Any) -> None:
    """Hand case ``loaded`` of ``folder`` (run's model, settings) to ``evaluate``'s Prompt tab."""
    from napari_segeval.models.registry import DENSE

    cid = loaded.case_id
    sets, source = starting_prompts(folder, loaded)
    prompt = evaluate.prompt
    model = run_model(folder, loaded)
    note = f"correcting {cid} from its saved clean prediction and {source}"
    if model in DENSE:
        note += (
            f"; the run's model {model} is dense and takes no prompts: the "
            f"corrections run {prompt.backend.currentText()}"
        )
    elif model is not None and not prompt.picker.choose(model):
        note += f"; the run's model {model} is not in the list: choose one above"
    start = loaded.predictions.get(loaded.pair[0] or CLEAN)
    prompt.start_correction(
        sets,
        start,
        name=f"{cid} corrected",
        case_id=cid,
        note=note,
        options=folder.params.propagation_options(),
    )
    evaluate.tabs.setCurrentWidget(prompt)
