"""Box prompts: from drawn shapes, from reference labels (middle slice), jitter."""

from napari_segeval.prompts.box import Box
from napari_segeval.prompts.from_labels import box_from_labels, boxes_from_labels, key_index

__all__ = ["Box", "box_from_labels", "boxes_from_labels", "key_index"]
