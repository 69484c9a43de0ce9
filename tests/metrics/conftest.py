import numpy as np
import pytest


@pytest.fixture
def deepmind(monkeypatch):
    """DeepMind's surface-distance package (an oracle).

    Its PyPI build 0.1 still calls ``np.Inf``, removed in numpy 2: the alias is
    set for the test that uses this fixture only, and removed after it.
    """
    if not hasattr(np, "Inf"):
        monkeypatch.setattr(np, "Inf", np.inf, raising=False)
    return pytest.importorskip(
        "surface_distance", reason="surface-distance (bench extra) not installed"
    )
