import pytest
import torch

from napari_segeval._errors import SegEvalError
from napari_segeval.models._device import autocast_context, pick_device


def test_auto_prefers_cuda_then_mps_then_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert pick_device(None) == torch.device("cpu")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert pick_device("auto") == torch.device("mps")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device() == torch.device("cuda")


def test_unavailable_or_unknown_device_is_an_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SegEvalError, match="CUDA is not available"):
        pick_device("cuda")
    with pytest.raises(SegEvalError, match="unknown device"):
        pick_device("tpu-ish")


def test_autocast_only_on_cuda():
    ctx = autocast_context(torch.device("cpu"))
    assert not isinstance(ctx, torch.autocast)
