"""Prompts: boxes, points and mask prompts on any slice/frame, grouped per structure.

Boxes come from drawn shapes or reference labels (middle slice), with jitter; a
:class:`PromptSet` holds every prompt of one structure in the order given, and a
:class:`PromptFile` saves a case's sets as JSON so a session can be replayed exactly.
"""

from napari_segeval.prompts.box import Box
from napari_segeval.prompts.from_labels import (
    box_from_labels,
    boxes_from_labels,
    correction_prompt,
    key_index,
)
from napari_segeval.prompts.prompt_set import (
    MaskPrompt,
    Point,
    PromptFile,
    PromptSet,
    read_prompts,
    write_prompts,
)

__all__ = [
    "Box",
    "MaskPrompt",
    "Point",
    "PromptFile",
    "PromptSet",
    "box_from_labels",
    "boxes_from_labels",
    "correction_prompt",
    "key_index",
    "read_prompts",
    "write_prompts",
]
