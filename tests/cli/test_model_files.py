"""A checkpoint that would run a command is refused the same way by every command.

The file's unpickling would create a marker file; each command must refuse it
with one line ``segeval CMD: error: PATH: refused: this <what> contains Python
code ...``, exit non-zero, print no traceback, never mention ``weights_only``,
and never create the marker.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch

from napari_segeval.cli import main
from napari_segeval.io import Geometry, write_image, write_labels


class Payload:
    """Unpickling this calls ``open(marker, "w")``: the marker file appears if code runs."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    d = tmp_path_factory.mktemp("refuse")
    img = np.full((8, 24, 20), -100, np.int16)
    lab = np.zeros(img.shape, np.uint8)
    lab[2:6, 5:15, 4:12] = 1
    img[lab > 0] = 80
    geom = Geometry((2.5, 1.2, 1.2), (0.0, 0.0, 0.0), tuple(np.eye(3).ravel()))
    write_image(d / "ct.nii.gz", img, geom)
    write_labels(d / "seg.nii.gz", lab, geom)
    return d


@pytest.fixture(params=["zip", "raw-pickle"])
def evil(request, tmp_path):
    """A checkpoint carrying code: torch's zip format, or a bare pickle file."""
    path = tmp_path / "evil.pt"
    payload = {"model": {}, "state_dict": {}, "format": Payload(tmp_path / "MARKER")}
    if request.param == "zip":
        torch.save(payload, path)
    else:
        path.write_bytes(pickle.dumps(payload))
    return path


COMMANDS = {
    "propagate medsam2": (
        [
            "propagate",
            "{img}",
            "--labels",
            "{lab}",
            "--model",
            "medsam2",
            "--checkpoint",
            "{evil}",
            "--device",
            "cpu",
            "-o",
            "{out}/p.nii.gz",
        ],
        "MedSAM2 checkpoint",
    ),
    "propagate builtin": (
        [
            "propagate",
            "{img}",
            "--labels",
            "{lab}",
            "--checkpoint",
            "{evil}",
            "--device",
            "cpu",
            "-o",
            "{out}/p.nii.gz",
        ],
        "built-in prompt model weight file",
    ),
    "segment": (
        ["segment", "{img}", "--model", "{evil}", "--device", "cpu", "-o", "{out}/s.nii.gz"],
        "dense model weight file",
    ),
    "attack dense": (
        [
            "attack",
            "{img}",
            "--labels",
            "{lab}",
            "--model",
            "{evil}",
            "--eps",
            "0.1",
            "--steps",
            "1",
            "--device",
            "cpu",
            "--output-dir",
            "{out}",
        ],
        "dense model weight file",
    ),
    "attack medsam2": (
        [
            "attack",
            "{img}",
            "--labels",
            "{lab}",
            "--model",
            "medsam2",
            "--checkpoint",
            "{evil}",
            "--eps",
            "0.1",
            "--steps",
            "1",
            "--device",
            "cpu",
            "--output-dir",
            "{out}",
        ],
        "MedSAM2 checkpoint",
    ),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_code_in_a_checkpoint_is_refused_in_one_line(command, case, evil, tmp_path, capsys):
    argv, what = COMMANDS[command]
    out = tmp_path / "out"
    out.mkdir()
    fill = {
        "img": str(case / "ct.nii.gz"),
        "lab": str(case / "seg.nii.gz"),
        "evil": str(evil),
        "out": str(out),
    }
    rc = main([a.format(**fill) for a in argv])
    captured = capsys.readouterr()
    text = captured.out + captured.err
    name = argv[0]
    assert rc != 0
    assert captured.err == (
        f"segeval {name}: error: {evil}: refused: this {what} contains Python code (pickled "
        "objects), which napari-segeval never runs; re-save its state dict with "
        "torch.save(model.state_dict(), ...)\n"
    )
    assert "Traceback" not in text and "weights_only" not in text
    assert not (tmp_path / "MARKER").exists()
    assert not any(out.iterdir())


def test_info_lists_the_registry_names(capsys):
    from napari_segeval.models.registry import ALIASES, DENSE, PROMPTABLE

    assert main(["info", "--json"]) == 0
    models = json.loads(capsys.readouterr().out)["models"]
    names = {m["name"]: m for m in models}
    for name in [*PROMPTABLE, *DENSE, *ALIASES, "module:factory", "NNUNET_FOLDER"]:
        assert name in names
    assert names["medsam2"]["checkpoint"] == "optional" and names["threshold"]["available"]
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert "models (--model):" in text and "builtin-ct" in text and "medsam2" in text
