import pytest


@pytest.fixture
def tiny_weights(tiny_dense_weights):
    """The shared tiny dense U-Net (tests/conftest.py) under this folder's name."""
    return tiny_dense_weights
