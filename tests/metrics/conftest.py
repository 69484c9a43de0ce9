import numpy as np
import pytest


@pytest.fixture
def deepmind():
    """DeepMind's surface-distance package (an oracle), with numpy 2's np.Inf alias."""
    if not hasattr(np, "Inf"):
        np.Inf = np.inf  # the PyPI build 0.1 still uses np.Inf
    return pytest.importorskip("surface_distance", reason="surface-distance (bench extra) not installed")

