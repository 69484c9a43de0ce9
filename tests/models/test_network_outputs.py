"""The networks give the outputs recorded before the shared conv block (bit-for-bit here).

``data/network_outputs.npz`` was written by the code before the U-Net conv block was
shared between the networks (commit 471b497): the shipped built-in prompt and CT
weights, and a 2D U-Net filled with fixed values, on the fixed inputs below. The
shipped weight files load with ``strict=True`` and their key names are unchanged, so
the outputs must agree; on the machine that recorded them they are identical, the
tolerance only allows for other CPUs' float rounding.

The ``prompt`` entry was recorded again when the built-in prompt model was retrained
with clicks (six input channels; the four-channel input below leaves the click
channels at zero): it is the new shipped weights' output, computed by the code of that
commit; ``ct`` and ``unet2d`` are the original recordings.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

RECORDED = np.load(Path(__file__).parent / "data" / "network_outputs.npz")


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "prompt": rng.random((2, 4, 32, 32), dtype=np.float32),
        "ct": rng.standard_normal((1, 1, 8, 16, 16), dtype=np.float32),
        "unet2d": rng.standard_normal((1, 3, 16, 16), dtype=np.float32),
    }


def _filled(net):
    """Every float tensor drawn from a fixed generator (variances kept positive)."""
    rng = np.random.default_rng(1)
    state = {}
    for k, v in net.state_dict().items():
        if v.dtype.is_floating_point:
            t = torch.from_numpy(rng.uniform(-0.5, 0.5, tuple(v.shape)).astype(np.float32))
            state[k] = t.abs() + 0.5 if "running_var" in k else t
        else:
            state[k] = v
    net.load_state_dict(state, strict=True)
    return net.eval()


def _network(name: str):
    if name == "prompt":
        from napari_segeval.models.builtin_prompt import load_network

        return load_network()[0]
    if name == "ct":
        from napari_segeval.models.registry import load_dense

        return load_dense("builtin-ct", device="cpu").network
    from napari_segeval.models.dense.unet2d import build_network

    return _filled(build_network(3, 3, width=4, levels=3))


@pytest.mark.parametrize("name", ["prompt", "ct", "unet2d"])
def test_outputs_match_the_recording(name):
    net = _network(name)
    with torch.no_grad():
        out = net(torch.from_numpy(_inputs()[name])).numpy()
    expected = RECORDED[name]
    assert out.shape == expected.shape and np.abs(expected).max() > 0.1
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
