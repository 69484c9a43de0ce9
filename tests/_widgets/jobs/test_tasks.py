"""The panels load models by registry name; the list they show comes from the registry."""

from __future__ import annotations

import pytest

from napari_segeval._errors import SegEvalError
from napari_segeval._widgets.jobs.tasks import load_model
from napari_segeval.models.registry import PROMPTABLE


def test_the_sam21_sizes_are_registry_models_with_their_labels():
    labels = {PROMPTABLE[f"sam2.1-{s}"].label for s in ("tiny", "small", "base-plus", "large")}
    assert labels == {"SAM2.1 tiny", "SAM2.1 small", "SAM2.1 base-plus", "SAM2.1 large"}


def test_a_label_is_not_a_model_name():
    """The GUI carries registry names (issue 31): a label shown in a list loads nothing."""
    with pytest.raises(SegEvalError, match="SAM2.1 large"):
        load_model("SAM2.1 large", None, "cpu")


def test_a_backend_not_pulled_says_how_to_pull_it():
    with pytest.raises(
        SegEvalError,
        match=r"model 'sam2\.1-large' needs a checkpoint: segeval "
        r"models pull sam2\.1-large \(898 MB, once",
    ):
        load_model("sam2.1-large", None, "cpu")  # nothing downloads behind the user's back
