"""The built-in promptable model: weight loading, interface, gradients through propagation."""

import pickle
import threading

import numpy as np
import pytest
import torch

from napari_segeval._cancel import Cancelled
from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval.models._prompt_net import PromptUNet, crop, paste
from napari_segeval.models.base import PromptableModel
from napari_segeval.models.builtin_prompt import (
    DEFAULT_WEIGHTS,
    BuiltinPromptModel,
    load_network,
    save_weights,
)
from napari_segeval.models.walk import WalkOptions
from napari_segeval.prompts.box import Box
from napari_segeval.propagation import PropagationOptions


@pytest.fixture
def tiny_weights(tiny_prompt_weights):
    return tiny_prompt_weights


def _frames(n=6, h=20, w=24):
    rng = np.random.default_rng(0)
    f = rng.uniform(0.2, 0.4, (n, h, w)).astype(np.float32)
    f[:, 6:14, 8:18] += 0.4
    return f


def test_implements_protocol(tiny_weights):
    m = BuiltinPromptModel(tiny_weights, device="cpu")
    assert isinstance(m, PromptableModel)
    assert m.normalize_info("CT", "lung").raw_per_normalized_unit == 1500.0
    assert m.preprocess(np.zeros((2, 5, 5), np.int16) + 40, "CT").unique().tolist() == [0.5]


def test_shapes_and_visit_order(tiny_weights):
    m = BuiltinPromptModel(tiny_weights, device="cpu")
    f = _frames()
    box = Box(6, 8, 14, 18, index=2)
    fwd = m.propagate(f, 2, box, "forward")
    bwd = m.propagate(f, 2, box, "backward")
    assert fwd.shape == (4, 20, 24) and bwd.shape == (3, 20, 24)
    assert torch.allclose(fwd[0], bwd[0])  # both start on the key frame
    assert float(fwd.min()) >= 0 and float(fwd.max()) <= 1


def test_gradient_reaches_frames_across_three_steps(tiny_weights):
    m = BuiltinPromptModel(tiny_weights, device="cpu")
    frames = torch.tensor(_frames(), requires_grad=True)
    prob = m.propagate(frames, 1, Box(6, 8, 14, 18, index=1), options=WalkOptions(grad=True))
    assert prob.requires_grad and prob.shape[0] == 5
    prob[3].sum().backward()  # third propagated step
    g = frames.grad.abs().sum(dim=(1, 2))
    assert g[4] > 0 and g[3] > 0 and g[1] > 0  # current, previous and the key frame
    assert g[5] == 0 and g[0] == 0  # frames never visited before step 3
    frames.grad = None
    with torch.no_grad():
        assert not m.propagate(frames, 1, Box(6, 8, 14, 18, index=1)).requires_grad


def test_cancel_and_progress(tiny_weights):
    m = BuiltinPromptModel(tiny_weights, device="cpu")
    ev = threading.Event()
    calls = []

    def progress(d, t):
        calls.append((d, t))
        ev.set()

    with pytest.raises(Cancelled):
        m.propagate(
            _frames(), 0, Box(6, 8, 14, 18), options=WalkOptions(progress=progress, cancel=ev)
        )
    assert calls == [(1, 6)]


def test_crop_paste_roundtrip_is_identity_inside_window():
    x = torch.zeros(1, 1, 30, 40)
    x[0, 0, 10:18, 12:25] = 1
    win = torch.tensor([[14.0, 18.5, 10.0]])
    back = paste(crop(x, win, 64), win, 30, 40)
    assert torch.equal(back > 0.5, x > 0.5)


def test_shipped_weights_load_safely():
    net, config = load_network(DEFAULT_WEIGHTS)
    assert DEFAULT_WEIGHTS.stat().st_size < 5 * 2**20
    n_params = sum(p.numel() for p in net.parameters())
    assert 50_000 < n_params < 1_000_000 and config["size"] >= 32
    blob = torch.load(DEFAULT_WEIGHTS, weights_only=True)
    assert set(blob) == {"format", "config", "state_dict"}


WHAT = "built-in prompt model weight file"


@pytest.mark.parametrize(
    "kind, message",
    [
        ("missing", f"{WHAT} not found"),
        ("garbage", f"not a readable {WHAT} (truncated, corrupt, or not a PyTorch file)"),
        (
            "pickle",
            (
                f"refused: this {WHAT} contains Python code (pickled objects), which "
                "napari-segeval never runs; re-save its state dict with "
                "torch.save(model.state_dict(), ...)"
            ),
        ),
        ("foreign", f"not a {WHAT}: no format 'napari-segeval/builtin-prompt/1' entry"),
        (
            "wrong_shape",
            (
                f"this {WHAT} does not fit its config (width=8, depth=2): 55 tensors have the "
                "wrong shape (e.g. down.0.0.weight: (4, 4, 3, 3) in the file, "
                "(8, 4, 3, 3) in the model;"
            ),
        ),
    ],
)
def test_bad_weight_files_are_clear_errors(tmp_path, kind, message, code_payload):
    path = tmp_path / f"{kind}.pt"
    if kind == "garbage":
        path.write_bytes(b"\x00not a torch file" * 10)
    elif kind == "pickle":
        path.write_bytes(pickle.dumps({"format": code_payload}))
    elif kind == "foreign":
        torch.save({"model": {"w": torch.zeros(2)}}, path)
    elif kind == "wrong_shape":
        save_weights(PromptUNet(width=4, depth=2), path, {"width": 8, "depth": 2, "size": 16})
    with pytest.raises(ReadError) as info:
        BuiltinPromptModel(path, device="cpu")
    text = str(info.value)
    assert isinstance(info.value, SegEvalError) and text.startswith(f"{path}: {message}")
    assert "\n" not in text and "weights_only" not in text
    assert not code_payload.marker.exists()


def test_propagation_uses_the_model_confidence_stop(tiny_weights):
    from napari_segeval.models.builtin_prompt import STOP_CONFIDENCE
    from napari_segeval.propagation import propagate_case

    m = BuiltinPromptModel(tiny_weights, device="cpu")
    assert 0.5 < m.capabilities.stop_confidence == STOP_CONFIDENCE < 1.0
    res = propagate_case(m, _frames(), [Box(6, 8, 14, 18, index=2)])
    assert res.params["min_confidence"] == STOP_CONFIDENCE
    assert (
        propagate_case(
            m, _frames(), [Box(6, 8, 14, 18, index=2)], PropagationOptions(min_confidence=None)
        ).params["min_confidence"]
        is None
    )
