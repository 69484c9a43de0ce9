import math

import numpy as np
import pytest

from napari_segeval.attacks.budget import Budget, eps_from_raw, eps_to_raw


@pytest.mark.parametrize("scale", [30.23, 400.0, 255.0, 1.0])
def test_eps_conversion_round_trips(scale):
    for eps_hu in (0.5, 4.0, 12.5, 100.0):
        assert math.isclose(eps_to_raw(eps_from_raw(eps_hu, scale), scale), eps_hu, rel_tol=1e-12)
        b = Budget.from_normalized(eps_from_raw(eps_hu, scale), scale)
        assert math.isclose(
            Budget.from_normalized(b.eps_normalized, scale).eps_raw, eps_hu, rel_tol=1e-12
        )


def test_hu_conversion_uses_the_zscore_std_of_the_builtin_ct_model():
    from napari_segeval.models.registry import load_dense

    model = load_dense("builtin-ct", device="cpu")
    std = model.intensity.std
    assert math.isclose(eps_to_raw(0.05, model.raw_per_normalized_unit), 0.05 * std)
    # 10 HU under the z-score is 10/std normalized units; a clean HU value v maps to
    # (v - mean)/std, so adding 10 HU moves the normalized value by exactly that much
    v = np.array([40.0, 60.0, 100.0])
    norm = (v - model.intensity.mean) / std
    moved = (v + 10.0 - model.intensity.mean) / std
    assert np.allclose(moved - norm, eps_from_raw(10.0, model.raw_per_normalized_unit))


def test_invalid_budgets_are_refused():
    with pytest.raises(ValueError):
        eps_to_raw(0.1, 0.0)
    with pytest.raises(ValueError):
        Budget.from_normalized(-1.0, 10.0)
    with pytest.raises(ValueError):
        Budget.from_normalized(0.1, 10.0, norm="l1")
    assert Budget.from_normalized(0.02, 400.0, "l2").to_dict() == {
        "eps_normalized": 0.02,
        "eps_raw": 8.0,
        "raw_per_normalized_unit": 400.0,
        "norm": "l2",
    }
