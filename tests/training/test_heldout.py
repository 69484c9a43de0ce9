"""The held-out volumes of the built-in model's benchmark."""

import numpy as np
import pytest

from napari_segeval.training.heldout import HELDOUT_SEED_BASE, make_heldout_volume


def test_reproducible_and_in_range():
    a, la = make_heldout_volume(2001, (10, 64, 64))
    b, lb = make_heldout_volume(2001, (10, 64, 64))
    assert np.array_equal(a, b) and np.array_equal(la, lb)
    assert a.dtype == np.float32 and a.min() >= 0 and a.max() <= 1
    assert la.max() >= 1


def test_training_seeds_are_refused():
    with pytest.raises(ValueError, match="held-out seeds start at 2000"):
        make_heldout_volume(HELDOUT_SEED_BASE - 1)
