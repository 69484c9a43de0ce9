"""Shared, session-cached phantom cases (generation is deterministic, so caching is safe)."""

from __future__ import annotations

import pytest

from napari_segeval.phantoms import make_ct_case, make_echo_clip


@pytest.fixture(scope="session")
def ct_case():
    """The default-size CT phantom with a tumour."""
    return make_ct_case(7, tumour=True)


@pytest.fixture(scope="session")
def echo_clip():
    """A default-size echo clip."""
    return make_echo_clip(7)
