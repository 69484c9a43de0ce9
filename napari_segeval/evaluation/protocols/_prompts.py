"""The promptable protocols' round-0 prompts: each present structure's box from the reference
(MedSAM2's key slice, or the CVPR 2024 challenge's 3D box), or a person's prompts file.
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import SegEvalError
from napari_segeval._names import unnamed_label
from napari_segeval.evaluation.protocols._prompt_params import Promptable
from napari_segeval.metrics.table import structures_to_score


def case_rng(seed: int, case_id: str) -> np.random.Generator:
    """A generator seeded by the run seed and the case id (independent of order and workers)."""
    return np.random.default_rng([int(seed), zlib.crc32(case_id.encode())])


def reference_prompts(
    labels: np.ndarray,
    structures: dict[int, str],
    *,
    jitter: int,
    rng: np.random.Generator,
    first: bool = False,
    jitter_mode: str = "edges",
) -> list:
    """One box per structure present in ``labels`` on its key slice (the middle of its extent,
    or its first frame: :func:`~napari_segeval.prompts.from_labels.key_index`), jittered by
    ``jitter`` pixels (``jitter_mode``: :meth:`Box.jittered`).
    """
    from napari_segeval.prompts.box import Box
    from napari_segeval.prompts.from_labels import key_index

    prompts = []
    ids = sorted(structures) if structures else [int(v) for v in np.unique(labels) if v]
    for label in ids:
        mask = labels == label
        if not mask.any():
            continue
        k = key_index(mask, "video" if first else "volume")
        box = Box.from_mask(mask[k], index=k, label=label)
        prompts.append(
            box.jittered(int(jitter), rng, mask.shape[1:], jitter_mode) if jitter else box
        )
    return prompts


def challenge_prompts(labels: np.ndarray, structures: dict[int, str]) -> list:
    """The CVPR 2024 challenge's prompt of every structure present: its 3D box as the 2D box on
    the middle slice of its z range, ``int((z_max - z_min) / 2 + z_min)``.
    """
    from napari_segeval.models.litemedsam import Box3D
    from napari_segeval.prompts.box import Box

    out = []
    ids = sorted(structures) if structures else [int(v) for v in np.unique(labels) if v]
    for label in ids:
        b = Box3D.from_mask(labels == label, label, 1)
        if b is not None:
            x0, y0, x1, y1 = b.xyxy
            out.append(Box(y0, x0, y1 + 1, x1 + 1, index=b.middle, label=label))
    return out


def prompt_sets(prompts: list, labels: np.ndarray, prompt: str) -> dict:
    """One prompt set per structure: its box, or (``prompt="mask"``) the mask on the box's frame."""
    from napari_segeval.prompts.prompt_set import MaskPrompt, PromptSet

    if prompt == "mask":
        return {
            b.label: PromptSet(b.label, (MaskPrompt(labels[b.index] == b.label, b.index, b.label),))
            for b in prompts
        }
    return {b.label: PromptSet.from_box(b) for b in prompts}  # box3d: its middle-slice box


def round0(spec, case: Any, params: Promptable, mode: str) -> tuple[list, dict, dict]:
    """A case's round-0 ``(boxes, prompt sets, present ids -> names)``, or its prompts file's."""
    if params.prompts is not None:  # the person's prompts, with or without a reference
        return _from_file(spec, params, params.prompts, case, mode)
    structures = structures_to_score(case.structures, case.labels)
    if params.prompt == "box3d":
        if mode != "volume":
            raise SegEvalError(
                "parameter prompt=box3d (the challenge's 3D boxes) is for volumes, not videos"
            )
        prompts = challenge_prompts(case.labels, structures)
    else:
        prompts = reference_prompts(
            case.labels,
            structures,
            jitter=params.jitter,
            rng=case_rng(params.seed, spec.case_id),
            first=(mode == "video"),
            jitter_mode=params.jitter_mode,
        )
    if not prompts:
        raise SegEvalError(f"case {spec.case_id}: reference labels are empty, nothing to prompt")
    present = {b.label: structures.get(b.label, unnamed_label(b.label)) for b in prompts}
    return prompts, prompt_sets(prompts, case.labels, params.prompt), present


def _from_file(spec, params: Promptable, folder: str, case: Any, mode: str) -> tuple:
    """:func:`round0` from ``folder``'s ``<case>.prompts.json``, checked against the image; a
    set's round-0 box is its first box (else a unit box on its first frame). Refused in one line
    when missing or not fitting.
    """
    from napari_segeval.prompts.box import Box
    from napari_segeval.prompts.prompt_file import read_prompts

    if params.prompt != "box":
        raise SegEvalError(
            f"case {spec.case_id}: prompt={params.prompt} needs reference labels; "
            "a prompts file gives the prompts as they are"
        )
    path = Path(folder) / f"{spec.case_id}.prompts.json"
    if not path.is_file():
        raise SegEvalError(
            f"case {spec.case_id}: no reference labels and no prompts file {path.name} in {folder}"
        )
    pf = read_prompts(path)
    where = "frame" if mode == "video" else "slice"
    pf.check(case.image.shape[:3], case.structures, where=where, source=str(path))
    sets = dict(pf.sets)
    names = {lab: pf.names.get(lab) or case.structures.get(lab) for lab in sets}
    present = {lab: name or unnamed_label(lab) for lab, name in names.items()}
    first = {
        lab: next((q for q in s.prompts if isinstance(q, Box)), None) for lab, s in sets.items()
    }
    boxes = [
        replace(first[lab] or Box(0, 0, 1, 1, index=s.frames[0]), label=lab)
        for lab, s in sets.items()
    ]
    return boxes, sets, present
