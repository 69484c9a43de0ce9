"""Fixtures of the model tests: a tiny built-in prompt weight file, a code-carrying object."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch


class CodePayload:
    """Unpickling this object calls ``open(marker, "w")``: ``marker`` appears if code runs."""

    def __init__(self, marker: Path) -> None:
        self.marker = Path(marker)

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.fixture
def code_payload(tmp_path) -> CodePayload:
    """An object whose unpickling would create ``code_payload.marker`` (a file in tmp_path)."""
    return CodePayload(tmp_path / "MARKER")


@pytest.fixture(scope="session")
def tiny_prompt_weights(tmp_path_factory) -> Path:
    """A small random built-in prompt network (width 4, depth 2, 16 px) in the shipped format."""
    from napari_segeval.models._prompt_net import PromptUNet
    from napari_segeval.models.builtin_prompt import save_weights

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("prompt") / "tiny.pt"
    save_weights(PromptUNet(width=4, depth=2).eval(), path, {"width": 4, "depth": 2, "size": 16})
    return path
