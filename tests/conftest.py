"""Fixtures shared by several test folders (a folder's own fixtures live in its conftest)."""

from __future__ import annotations

import doctest
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _small_sample (workers too)

#: The committed sample data (a missing file is a failure, never a skip).
SAMPLE_DATA = Path(__file__).resolve().parents[1] / "sample_data"

#: Intensity statistics of the tiny dense model (CT-like HU).
TINY_INTENSITY = {"lower": -20.0, "upper": 160.0, "mean": 60.0, "std": 30.0}


def made_once(tmp_path_factory, name: str, make: Callable[[Path], Path]) -> Path:
    """``make(folder)``'s answer, run once for the whole run: under pytest-xdist the first
    worker to ask makes it in the run's base folder (shared by the workers) and the others
    wait for it, then read it; without xdist, in a fresh folder of the session."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return make(tmp_path_factory.mktemp(name))
    import shutil

    from filelock import FileLock

    root = tmp_path_factory.getbasetemp().parent
    folder, done = root / name, root / f"{name}.made"
    with FileLock(str(root / f"{name}.lock")):
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            done.write_text(str(make(folder).relative_to(folder)))
    return folder / done.read_text()


@pytest.fixture
def run_example() -> Callable[[str, str], None]:
    """Run a doctest example of ``module.name`` (moved out of the package) in that module."""

    def run(name: str, source: str) -> None:
        module, _ = name.rsplit(".", 1)
        globs = dict(vars(importlib.import_module(module)))
        test = doctest.DocTestParser().get_doctest(source, globs, name, module, 0)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
        runner.run(test)
        result = runner.summarize(verbose=False)
        assert result.attempted and not result.failed

    return run


@pytest.fixture(scope="session")
def tiny_dense_weights(tmp_path_factory) -> Path:
    """A small random 3D U-Net (6 classes) saved in the built-in dense weights format
    (built once per session: read it, never write to it)."""
    import torch

    from napari_segeval.models.dense import BUILTIN_PLANS
    from napari_segeval.models.dense.unet import UNet3D, UNetConfig

    torch.manual_seed(0)
    cfg = {"in_channels": 1, "num_classes": 6, "base_channels": 2, "levels": 2}
    payload = dict(BUILTIN_PLANS)
    payload.update(
        config=cfg,
        patch_size=[8, 16, 16],
        spacing=[2.5, 2.4, 2.4],
        intensity=dict(TINY_INTENSITY),
        lesion_min_mm3={"5": 50.0},
        state_dict=UNet3D(UNetConfig(**cfg)).state_dict(),
    )
    path = tmp_path_factory.mktemp("tiny-dense") / "tiny.pt"
    torch.save(payload, path)
    return path


@pytest.fixture(scope="session")
def medsam2_checkpoint(tmp_path_factory) -> Path:
    """MedSAM2's network (SAM2.1 Hiera-tiny, 512 px) with random weights (seed 0) saved as a
    checkpoint in Meta's layout (``{"model": state_dict}``), built once per session.

    Skipped where Meta's ``sam2`` package (and hydra) is missing.
    """
    pytest.importorskip("sam2")
    pytest.importorskip("hydra")
    import torch

    from napari_segeval.models.medsam2._build import build_network

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("medsam2") / "medsam2_random.pt"
    torch.save({"model": build_network().state_dict()}, path)
    return path


@pytest.fixture(scope="session")
def fgsm_run(tmp_path_factory) -> Path:
    """``msd-robust`` with the built-in CT model and FGSM (eps 0.5) on the first two cases of
    the sample task, cropped in-plane to one window of the model (:mod:`_small_sample`),
    report included: the results folder, made once per session for the results tests of
    the evaluation layer and of the viewer (read it, never write to it). The cases'
    data folder is ``cases.json``'s ``root``. Made once for all xdist workers."""

    def make(base: Path) -> Path:
        from _small_sample import cropped_sample

        from napari_segeval.evaluation import run_evaluation
        from napari_segeval.evaluation.layouts import load_layout

        out = base / "msd-robust"
        specs = load_layout(cropped_sample(base, 2))
        attacks = [{"name": "fgsm", "eps": 0.5}]
        run_evaluation(specs, "msd-robust", out, params={"attacks": attacks}, workers=1)
        return out

    return made_once(tmp_path_factory, "fgsm-run", make)


@pytest.fixture(scope="session")
def risk_run(tmp_path_factory) -> Path:
    """``medsam2-3d`` with the built-in model on the first case of the sample task, without
    its report: a results folder with risks (``slices.csv``), made once per session for the
    triage tests of the evaluation layer and of the command line (read it only); once for
    all xdist workers."""

    def make(base: Path) -> Path:
        from napari_segeval.evaluation import run_evaluation
        from napari_segeval.evaluation.layouts import load_layout

        task = SAMPLE_DATA / "msd_task/Task90_AbdomenPhantom"
        out = base / "medsam2-3d"
        run_evaluation(load_layout(task)[:1], "medsam2-3d", out, workers=1, report=False)
        return out

    return made_once(tmp_path_factory, "risk-run", make)


@pytest.fixture(scope="session")
def unlabelled_run(tmp_path_factory) -> Path:
    """``medsam2-3d`` with the built-in model on the sample task's first two cases without
    their labels, from prompts files (the boxes the reference would give, as the viewer
    saves them): a results folder without a reference, with risks, made once per session
    for the review tests (read it only; copy it to write ``review.json``); once for all
    xdist workers."""
    return made_once(tmp_path_factory, "unlabelled-run", _make_unlabelled_run)


def _make_unlabelled_run(root: Path) -> Path:
    import json
    import shutil

    from napari_segeval.evaluation import run_evaluation
    from napari_segeval.evaluation.protocols._promptable import prompt_sets, reference_prompts
    from napari_segeval.io import read_case
    from napari_segeval.prompts.prompt_file import PromptFile, write_prompts

    task = SAMPLE_DATA / "msd_task/Task90_AbdomenPhantom"
    data, prompts = root / "Task90_NoLabels", root / "prompts"
    (data / "imagesTr").mkdir(parents=True)
    prompts.mkdir()
    ds = json.loads((task / "dataset.json").read_text())
    ds["training"] = ds["training"][:2]
    for entry in ds["training"]:
        image, labels = task / entry["image"], task / entry["label"]
        shutil.copy(image, data / "imagesTr")
        case = read_case(image, labels=labels)
        rng = np.random.default_rng(0)
        boxes = reference_prompts(case.labels, case.structures, jitter=0, rng=rng)
        pf = PromptFile(prompt_sets(boxes, case.labels, "box"), case.labels.shape, case.structures)
        write_prompts(prompts / f"{image.name.split('.')[0]}.prompts.json", pf)
    (data / "dataset.json").write_text(json.dumps(ds))
    out = root / "medsam2-3d"
    run_evaluation(data, "medsam2-3d", out, params={"prompts": str(prompts)}, workers=1)
    return out


@pytest.fixture
def tiny_ct_files(tmp_path):
    """A small CT-like volume and its labels as NIfTI: ``(folder, geometry, image)``.

    ``folder/ct.nii.gz`` (int16, noise around 50 HU) and ``folder/seg.nii.gz``
    (one cube of label 1), written with a non-trivial spacing and origin.
    """
    from napari_segeval.io import Geometry, write_image, write_labels

    geom = Geometry((2.5, 1.2, 1.2), (5.0, -3.0, 2.0), tuple(np.eye(3).ravel()))
    img = np.random.default_rng(0).normal(50, 40, (8, 24, 20)).astype(np.int16)
    lab = np.zeros(img.shape, np.uint8)
    lab[2:6, 4:12, 4:12] = 1
    write_image(tmp_path / "ct.nii.gz", img, geom)
    write_labels(tmp_path / "seg.nii.gz", lab, geom)
    return tmp_path, geom, img


@pytest.fixture(autouse=True, scope="session")
def _no_real_model_hub(tmp_path_factory):
    """No test reads the user's model cache or reaches the real hub: ``HF_HUB_CACHE`` is a
    fresh folder and ``HF_ENDPOINT`` a closed local port (tests of ``segeval models``
    start their own local hub, tests/models/hub_server.py)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("hf-hub-cache")))
        mp.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
        yield


#: Markers a test gets from the fixtures it takes: napari/Qt fixtures make it ``gui``
#: (``-m 'not gui'`` on a machine without a display), a MedSAM2 network ``medsam2`` and
#: ``slow`` (seconds per frame on a CPU), the session's msd-robust + FGSM run ``slow``
#: (tens of seconds to make, once). Subprocess GUI tests carry ``gui`` themselves.
FIXTURE_MARKS = {
    "make_napari_viewer": ("gui",),
    "make_napari_viewer_proxy": ("gui",),
    "qtbot": ("gui",),
    "qapp": ("gui",),
    "medsam2_checkpoint": ("medsam2", "slow"),
    "fgsm_run": ("slow",),
}


def pytest_collection_modifyitems(config, items):
    """Add the markers of :data:`FIXTURE_MARKS` to every test that takes those fixtures."""
    for item in items:
        marks = {m for f in getattr(item, "fixturenames", ()) for m in FIXTURE_MARKS.get(f, ())}
        for mark in sorted(marks):
            item.add_marker(getattr(pytest.mark, mark))
