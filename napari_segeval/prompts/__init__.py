"""Prompts: boxes, points and mask prompts on any slice/frame, grouped per structure.

Boxes come from drawn shapes or reference labels (middle slice), with jitter; a
:class:`PromptSet` holds every prompt of one structure in the order given, and a
:class:`PromptFile` saves a case's sets as JSON so a session can be replayed exactly;
:func:`next_correction` is the simulated person of the interactive protocol (where the
next click or box goes, from the prediction and the reference).
"""

from napari_segeval.prompts.box import Box
from napari_segeval.prompts.correction import Correction, next_correction
from napari_segeval.prompts.from_labels import box_from_labels, boxes_from_labels, key_index
from napari_segeval.prompts.prompt_file import PromptFile, read_prompts, write_prompts
from napari_segeval.prompts.prompt_set import MaskPrompt, Point, PromptSet

__all__ = [
    "Box",
    "Correction",
    "MaskPrompt",
    "Point",
    "PromptFile",
    "PromptSet",
    "box_from_labels",
    "boxes_from_labels",
    "key_index",
    "next_correction",
    "read_prompts",
    "write_prompts",
]
