"""The Prompt panel's backend list comes from the model registry, SAM2.1 included."""

from __future__ import annotations

import pytest

from napari_segeval._errors import SegEvalError
from napari_segeval._widgets.evaluate_jobs import BACKENDS, load_model
from napari_segeval.models.registry import PROMPTABLE


def test_backends_are_the_registrys_promptable_models():
    assert tuple(m.label for m in PROMPTABLE.values()) == BACKENDS
    assert {"SAM2.1 tiny", "SAM2.1 small", "SAM2.1 base-plus", "SAM2.1 large"} <= set(BACKENDS)


def test_a_backend_not_pulled_says_how_to_pull_it():
    with pytest.raises(SegEvalError, match=r"model 'sam2\.1-large' needs a checkpoint: segeval "
                                           r"models pull sam2\.1-large \(898 MB, once"):
        load_model("SAM2.1 large", None, "cpu")  # nothing downloads behind the user's back
