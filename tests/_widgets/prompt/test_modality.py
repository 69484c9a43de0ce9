"""The Prompt panel's modality choice."""

from __future__ import annotations

from napari_segeval._widgets.prompt.panel import PromptPanel


def test_modality_choice_overrides_the_readers(small_case):
    viewer, state, _ = small_case
    panel = PromptPanel(viewer, state)
    assert panel.modality.value == "from image"
    assert panel.chosen_modality() == "CT"  # the reader's
    panel.modality.value = "MR"
    assert panel.chosen_modality() == "MR"
