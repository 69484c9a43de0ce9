"""The one checkpoint reader: each way a file can be wrong is one distinct line."""

from __future__ import annotations

import pickle
import warnings
import zipfile

import numpy as np
import pytest
import torch

from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval.models._checkpoint import (
    check_torch,
    contains_code,
    load_state_strict,
    read_checkpoint,
)

WHAT = "test checkpoint"
CORRUPT = f"not a readable {WHAT} (truncated, corrupt, or not a PyTorch file)"
CODE = (
    f"refused: this {WHAT} contains Python code (pickled objects), which napari-segeval "
    "never runs; re-save its state dict with torch.save(model.state_dict(), ...)"
)


def _good(path):
    torch.save({"model": {"w": torch.arange(1000, dtype=torch.float32)}}, path)
    return path


def _write(tmp_path, kind, payload):
    """A file of ``kind`` and the message it must give (None: it loads)."""
    path = tmp_path / f"{kind}.pt"
    if kind == "good":
        return _good(path), None
    if kind == "legacy":
        torch.save({"w": torch.ones(3)}, path, _use_new_zipfile_serialization=False)
        return path, None
    if kind == "zip_code":
        torch.save({"model": {}, "x": payload}, path)
    elif kind == "legacy_code":
        torch.save({"x": payload}, path, _use_new_zipfile_serialization=False)
    elif kind == "raw_pickle_code":
        path.write_bytes(pickle.dumps({"format": payload}))
    elif kind == "numpy_object":
        torch.save({"w": np.zeros(3)}, path)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_bytes(b"\x00not a torch file" * 10)
    elif kind == "text":
        path.write_text("config: value\nclass: thing\n")
    elif kind == "raw_pickle_data":
        path.write_bytes(pickle.dumps({"format": 1}))
    elif kind == "truncated_end":
        path.write_bytes(_good(tmp_path / "g.pt").read_bytes()[:-300])
    elif kind == "truncated_start":
        path.write_bytes(_good(tmp_path / "g.pt").read_bytes()[:200])
    elif kind == "legacy_truncated":
        torch.save({"w": torch.ones(3)}, tmp_path / "l.pt", _use_new_zipfile_serialization=False)
        path.write_bytes((tmp_path / "l.pt").read_bytes()[:-20])
    elif kind == "zip_bad_pickle":
        with zipfile.ZipFile(_good(tmp_path / "g.pt")) as zin, zipfile.ZipFile(path, "w") as zout:
            for name in zin.namelist():
                zout.writestr(name, b"garbage!" if name.endswith("data.pkl") else zin.read(name))
    code = kind in ("zip_code", "legacy_code", "raw_pickle_code", "numpy_object")
    return path, CODE if code else CORRUPT


KINDS = [
    "good",
    "legacy",
    "zip_code",
    "legacy_code",
    "raw_pickle_code",
    "numpy_object",
    "empty",
    "garbage",
    "text",
    "raw_pickle_data",
    "truncated_end",
    "truncated_start",
    "legacy_truncated",
    "zip_bad_pickle",
]


@pytest.mark.parametrize("kind", KINDS)
def test_each_file_kind_gives_its_line(tmp_path, kind, code_payload):
    path, message = _write(tmp_path, kind, code_payload)
    if message is None:
        assert isinstance(read_checkpoint(path, WHAT), dict)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's warnings (they cite weights_only) are silenced
        with pytest.raises(ReadError) as info:
            read_checkpoint(path, WHAT)
    assert str(info.value) == f"{path}: {message}"
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert not code_payload.marker.exists()


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(ReadError) as info:
        read_checkpoint(tmp_path / "nope.pt", WHAT)
    assert str(info.value) == f"{tmp_path / 'nope.pt'}: {WHAT} not found"
    with pytest.raises(ReadError, match=f"is a folder, not a {WHAT}$"):
        read_checkpoint(tmp_path, WHAT)


def test_random_bytes_are_never_called_code():
    rng = np.random.default_rng(0)
    for n in (1, 7, 64, 4096):
        for _ in range(25):
            blob = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            assert not _imports(blob)


def _imports(blob: bytes) -> bool:
    from napari_segeval.models._checkpoint import _imports_objects

    return _imports_objects(blob)


def test_contains_code_reads_without_running(tmp_path, code_payload):
    path = tmp_path / "p.pkl"
    path.write_bytes(pickle.dumps([1, code_payload], protocol=2))
    assert contains_code(path) and not code_payload.marker.exists()
    path.write_bytes(pickle.dumps({"a": [1.0, "x"]}))
    assert not contains_code(path)


def test_old_torch_is_refused():
    with pytest.raises(SegEvalError, match=r"torch >= 2\.10 .* found torch 2\.9\.1\+cu121"):
        check_torch("2.9.1+cu121")
    assert check_torch("2.10.0") is torch and check_torch() is torch


def test_load_state_strict_names_the_problem():
    net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1))
    good = {k: v.clone() for k, v in net.state_dict().items()}
    load_state_strict(net, good, "w.pt", "weight file", "the net")
    cases = [
        ([1, 2], "w.pt: not a weight file: expected a state dict (names to tensors)"),
        (
            {**good, "0.weight": np.zeros((3, 2))},
            "w.pt: not a weight file: expected a state dict (names to tensors)",
        ),
        (
            {k: v for k, v in good.items() if k != "1.bias"},
            "w.pt: this weight file does not fit the net: 1 missing keys (e.g. 1.bias)",
        ),
        (
            {**good, "extra": torch.zeros(1)},
            "w.pt: this weight file does not fit the net: 1 unexpected keys (e.g. extra)",
        ),
        (
            {**good, "1.bias": torch.zeros(2)},
            (
                "w.pt: this weight file does not fit the net: 1 tensors have the wrong shape "
                "(e.g. 1.bias: (2,) in the file, (1,) in the model)"
            ),
        ),
    ]
    for state, message in cases:
        with pytest.raises(ReadError) as info:
            load_state_strict(net, state, "w.pt", "weight file", "the net")
        assert str(info.value) == message
