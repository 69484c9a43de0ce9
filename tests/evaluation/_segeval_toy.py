"""Small deterministic models and data sets for the evaluation tests (numpy only, no weights).

Imported as ``_segeval_toy`` (``conftest.py`` puts this folder on ``sys.path``, which
spawned worker processes inherit), so protocols can name ``_segeval_toy:threshold_dense``.

They follow the protocol model interface: ``segment(case, probabilities=False)``
returns an object with ``labels`` (and ``probabilities`` ``(K, *spatial)``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import numpy as np

from napari_segeval.evaluation.protocols._params import Params, choice, number
from napari_segeval.models.dense import DenseBackend


class ThresholdDense(DenseBackend):
    """Label ``k`` where the (grey) image lies within ``k - 0.5 .. k + 0.5`` (k = 1, 2)."""

    name = "threshold-dense"
    num_classes = 3
    structures: ClassVar[dict] = {1: "cube", 2: "ball"}

    def segment(self, case, probabilities: bool = False):
        img = np.asarray(case.image, np.float32)
        if case.is_rgb:
            img = img.mean(axis=-1) / 100.0
        labels = np.clip(np.rint(img), 0, 2).astype(np.uint8)
        prob = None
        if probabilities:
            centres = np.arange(3, dtype=np.float32).reshape((3,) + (1,) * img.ndim)
            logits = -8.0 * (img[None] - centres) ** 2
            e = np.exp(logits - logits.max(axis=0, keepdims=True))
            prob = e / e.sum(axis=0, keepdims=True)
        return SimpleNamespace(labels=labels, probabilities=prob)


class FailingDense(ThresholdDense):
    """Raises on images whose file name contains ``bad``."""

    def segment(self, case, probabilities: bool = False):
        if "bad" in case.image_path.name:
            raise RuntimeError("model blew up")
        return super().segment(case, probabilities)


def threshold_dense() -> ThresholdDense:
    """Factory named by ``--param model=_segeval_toy:threshold_dense``."""
    return ThresholdDense()


def failing_dense() -> FailingDense:
    """Factory of :class:`FailingDense`."""
    return FailingDense()


def shift_attack(model, case, *, shift: int = 1):
    """A deterministic 'attack': segment the image rolled by ``shift`` voxels along the last axis."""
    from dataclasses import replace

    moved = replace(case, image=np.roll(case.image, int(shift), axis=-1))
    return model.segment(moved).labels


TOY = "_segeval_toy:threshold_dense"


def toy_volume(seed: int, shape=(8, 16, 16)) -> tuple[np.ndarray, np.ndarray]:
    """Image (0 background, ~1 cube, ~2 ball, small noise) and its labels."""
    rng = np.random.default_rng(seed)
    labels = np.zeros(shape, np.uint8)
    z0, y0, x0 = rng.integers(1, 3), rng.integers(1, 5), rng.integers(1, 4)
    labels[z0 : z0 + 4, y0 : y0 + 5, x0 : x0 + 5] = 1
    zz, yy, xx = np.ogrid[: shape[0], : shape[1], : shape[2]]
    cz, cy, cx = shape[0] // 2, shape[1] - 5, shape[2] - 5 - int(rng.integers(0, 3))
    labels[(zz - cz) ** 2 + (yy - cy) ** 2 + (xx - cx) ** 2 <= 9] = 2
    image = labels.astype(np.float32) + rng.normal(0, 0.05, shape).astype(np.float32)
    return image, labels


def write_msd(
    root: Path,
    n: int = 4,
    *,
    names=None,
    extra_training=(),
    channels: int = 1,
    spacing=(2.0, 1.0, 1.0),
) -> Path:
    """An MSD task folder with ``n`` cases ``case_XXX`` (and optional extra entries)."""
    from napari_segeval.io import Geometry, write_image, write_labels

    (root / "imagesTr").mkdir(parents=True)
    (root / "labelsTr").mkdir()
    g = Geometry.identity(3, spacing)
    training = []
    for i in range(n):
        cid = f"case_{i:03d}"
        image, labels = toy_volume(i)
        if channels == 1:
            write_image(root / "imagesTr" / f"{cid}.nii.gz", image, g)
        else:
            for c in range(channels):
                write_image(root / "imagesTr" / f"{cid}_{c:04d}.nii.gz", image + c, g)
        write_labels(root / "labelsTr" / f"{cid}.nii.gz", labels, g)
        training.append({"image": f"./imagesTr/{cid}.nii.gz", "label": f"./labelsTr/{cid}.nii.gz"})
    training.extend(extra_training)
    ds = {
        "name": "Toy",
        "modality": {str(c): "MRI" for c in range(channels)},
        "labels": names or {"0": "background", "1": "cube", "2": "ball"},
        "numTraining": len(training),
        "training": training,
        "test": [],
    }
    (root / "dataset.json").write_text(json.dumps(ds))
    return root


class CrashingDense(ThresholdDense):
    """Kills its worker process on images whose file name contains ``crash``."""

    def segment(self, case, probabilities: bool = False):
        if "crash" in case.image_path.name:
            import os

            os._exit(13)
        return super().segment(case, probabilities)


def crashing_dense() -> CrashingDense:
    """Factory of :class:`CrashingDense` (use only with worker processes)."""
    return CrashingDense()


class _Active:
    """Counts concurrent ``segment`` calls (threads of one process)."""

    import threading

    lock = threading.Lock()
    now = 0
    most = 0


class ConcurrencyDense(ThresholdDense):
    """Records the largest number of concurrent calls in :class:`_Active` (sleeps briefly)."""

    def segment(self, case, probabilities: bool = False):
        import time

        with _Active.lock:
            _Active.now += 1
            _Active.most = max(_Active.most, _Active.now)
        time.sleep(0.2)
        with _Active.lock:
            _Active.now -= 1
        return super().segment(case, probabilities)


def concurrency_dense() -> ConcurrencyDense:
    """Factory of :class:`ConcurrencyDense`."""
    return ConcurrencyDense()


def _preset_protocol():
    """``msd-robust`` with a toy paper preset (for the preset machinery's tests)."""
    from dataclasses import replace

    from napari_segeval.evaluation.protocols import Preset
    from napari_segeval.evaluation.protocols.msd_robust import PROTOCOL as MSD

    paper = Preset(
        "paper",
        {"overlap": 0.25, "robust_factor": 0.4},
        "A. Author et al. 2099",
        ("The toy preset keeps one thing different, because tests need one.",),
    )
    return replace(
        MSD,
        name="toy-preset",
        presets={"paper": paper},
        differences=("The defaults differ in everything.",),
    )


#: Registered by the preset tests as ``REGISTRY["toy-preset"] = "_segeval_toy"``.
PROTOCOL = _preset_protocol()


@dataclass(frozen=True)
class CountParams(Params):
    """The parameters of :data:`COUNTING`: its own small record (module-level: it pickles
    by reference into worker processes)."""

    label: int = number(1, "a whole number >= 1", lambda v: v >= 1, whole=True)
    unit: str = choice("voxels", ("voxels", "ml"))


def _count_case(spec, params: CountParams):
    from napari_segeval.evaluation.protocols import CaseOutput
    from napari_segeval.io import read_labels

    labels = read_labels(spec.labels)[0]
    n = int((labels == params.label).sum())
    return CaseOutput([{"structure": str(params.label), "condition": "clean", "count": n}])


def _count_summary(rows, params: CountParams) -> dict:
    return {"unit": params.unit, "total": sum(r["count"] for r in rows)}


def _counting_protocol():
    from napari_segeval.evaluation.protocols import Protocol

    return Protocol(
        name="toy-count",
        version="1",
        params=CountParams,
        run_case=_count_case,
        summarize=_count_summary,
    )


#: A ``module:ATTR`` protocol with its own record (``_segeval_toy:COUNTING``).
COUNTING = _counting_protocol()


def medsam2_small():
    """MedSAM2's network (SAM2.1 Hiera-tiny) at 128 px with the random weights (seed 0) of the
    ``medsam2_checkpoint`` fixture, on the CPU: the same network at a sixteenth of a 512 px
    frame's cost (the weights do not depend on the input size). Needs ``sam2``/``hydra``."""
    import torch

    from napari_segeval.models.medsam2 import MedSAM2Model
    from napari_segeval.models.medsam2._build import build_network

    torch.manual_seed(0)
    return MedSAM2Model(build_network(image_size=128), device="cpu")
