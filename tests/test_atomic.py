"""The one atomic writer: umask modes, no temporary files left, no silent overwrite."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

from napari_segeval._atomic import (
    atomic_open,
    atomic_path,
    atomic_write_bytes,
    atomic_write_text,
    current_umask,
    file_mode,
)
from napari_segeval._errors import WriteError


@pytest.fixture(params=[0o022, 0o002, 0o077], ids=lambda m: f"umask{m:03o}")
def umask(request):
    """Run the test under a given process umask (restored afterwards)."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def listing(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_umask_is_read_without_changing_it(umask):
    assert current_umask() == umask
    assert current_umask() == umask  # reading twice: still the same (nothing was reset)
    assert file_mode() == 0o666 & ~umask


def test_primitives_give_the_umask_mode(umask, tmp_path):
    want = 0o666 & ~umask
    assert mode(atomic_write_text(tmp_path / "a.txt", "x")) == want
    assert mode(atomic_write_bytes(tmp_path / "b.bin", b"x")) == want
    with atomic_open(tmp_path / "c.csv", newline="") as fh:
        fh.write("case,dice\n")
    assert mode(tmp_path / "c.csv") == want
    with atomic_path(tmp_path / "d.npy") as tmp:
        np.save(tmp, np.arange(3))
    assert mode(tmp_path / "d.npy") == want
    assert listing(tmp_path) == ["a.txt", "b.bin", "c.csv", "d.npy"]


def _sites(tmp_path):
    """Every package writer, as (name, callable writing one file, the file(s) written)."""
    from napari_segeval.evaluation import splits, store
    from napari_segeval.io import Geometry, write_image, write_labels
    from napari_segeval.metrics import ResultsTable

    g = Geometry.identity(3, (2.0, 1.0, 1.0))
    lab = np.zeros((2, 3, 4), np.uint8)
    table = ResultsTable()
    table.add("c1", "liver", "clean", dice=0.5)
    return {
        "results.csv": lambda p: table.to_csv(p),
        "summary.json": lambda p: store.write_json(p, {"dice": float("nan")}),
        "splits.json": lambda p: splits.save_splits(p, {"a": 0, "b": 1}, k=2, seed=0, source="t"),
        "pred.nii.gz": lambda p: write_labels(p, lab, g),
        "pred.mhd": lambda p: write_labels(p, lab, g),
        "image.mha": lambda p: write_image(p, lab.astype(np.float32), g),
    }


@pytest.mark.parametrize(
    "name", ["results.csv", "summary.json", "splits.json", "pred.nii.gz", "pred.mhd", "image.mha"]
)
def test_package_writers_give_the_umask_mode(umask, tmp_path, name):
    out = tmp_path / "out"
    out.mkdir()
    _sites(tmp_path)[name](out / name)
    files = listing(out)
    assert name in files and not any(f.startswith(".segeval-tmp-") for f in files)
    if name.endswith(".mhd"):
        assert files == ["pred.mhd", "pred.zraw"]  # the data file moved with its header
    for f in files:
        assert mode(out / f) == 0o666 & ~umask, f


def test_case_record_and_views_give_the_umask_mode(umask, tmp_path):
    from napari_segeval.evaluation import store

    store.write_case(tmp_path, {"case": "c1", "status": "ok", "views": {"a": np.eye(2)}})
    for f in ("c1.json", "c1.npz"):
        assert mode(tmp_path / "cases" / f) == 0o666 & ~umask


def test_fold_weights_give_the_umask_mode(umask, tmp_path):
    import torch

    from napari_segeval.models.builtin_prompt import save_weights

    save_weights(torch.nn.Linear(2, 1), tmp_path / "w.pt", {"k": 1})
    assert mode(tmp_path / "w.pt") == 0o666 & ~umask
    assert listing(tmp_path) == ["w.pt"]


def test_overwrite_is_refused_and_the_old_file_kept(tmp_path):
    p = tmp_path / "r.json"
    atomic_write_text(p, "old")
    for write in (lambda: atomic_write_text(p, "new"), lambda: atomic_write_bytes(p, b"new")):
        with pytest.raises(WriteError, match="r.json: file exists; pass overwrite=True"):
            write()
    with pytest.raises(WriteError, match="file exists"), atomic_path(p) as tmp:
        tmp.write_text("new")  # pragma: no cover - refused before the block runs
    assert p.read_text() == "old" and listing(tmp_path) == ["r.json"]
    atomic_write_text(p, "new", overwrite=True)
    assert p.read_text() == "new"


def test_a_file_that_appears_during_the_write_is_not_clobbered(tmp_path):
    p = tmp_path / "r.csv"
    with pytest.raises(WriteError, match="file exists"), atomic_open(p) as fh:
        fh.write("mine")
        p.write_text("someone else's")  # created by another process meanwhile
    assert p.read_text() == "someone else's" and listing(tmp_path) == ["r.csv"]
    p.unlink()
    with pytest.raises(WriteError, match="file exists"), atomic_path(p) as tmp:
        tmp.write_text("mine")
        p.write_text("theirs")
    assert p.read_text() == "theirs" and listing(tmp_path) == ["r.csv"]


class Boom(RuntimeError):
    pass


def test_no_temporary_file_left_after_a_failure(tmp_path):
    p = tmp_path / "x.json"
    with pytest.raises(Boom), atomic_open(p) as fh:
        fh.write("half a reco")
        raise Boom
    with pytest.raises(Boom), atomic_path(p) as tmp:
        tmp.write_text("half")
        (tmp.parent / "x.raw").write_bytes(b"companion")
        raise Boom
    with pytest.raises(WriteError, match="cannot write"), atomic_open(p) as fh:
        raise OSError(28, "No space left on device")
    with pytest.raises(WriteError, match="produced no file"), atomic_path(p):
        pass
    assert listing(tmp_path) == []


def test_failed_library_write_leaves_nothing(tmp_path):
    from napari_segeval.io import Geometry, write_labels

    with pytest.raises(WriteError):  # a 3D geometry for a 2D array: refused, nothing written
        write_labels(tmp_path / "p.nii.gz", np.zeros((3, 4), np.uint8), Geometry.identity(3))
    p = tmp_path / "summary.json"
    from napari_segeval.evaluation import store

    with pytest.raises(TypeError):  # not JSON-serializable: the old file stays whole
        store.write_json(p, {"x": object()})
    assert listing(tmp_path) == []
    store.write_json(p, {"x": 1})
    with pytest.raises(TypeError):
        store.write_json(p, {"x": object()})
    assert json.loads(p.read_text()) == {"x": 1} and listing(tmp_path) == ["summary.json"]


def test_missing_folder_and_bad_mode(tmp_path):
    with pytest.raises(WriteError, match="does not exist"):
        atomic_write_text(tmp_path / "nope" / "x.txt", "x")
    with pytest.raises(ValueError, match="mode"), atomic_open(tmp_path / "x", "a"):
        pass  # pragma: no cover
