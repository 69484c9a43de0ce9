"""The ``li2026`` preset end to end: AUV-filtered training, retraining, test Dice (CPU).

Runs ``segeval evaluate --protocol uncertainty --preset li2026`` on an MSD task:
the AUV of every training case (built-in promptable model, or MedSAM2 with
``--checkpoint``), the most uncertain 5 % and 10 % of the training cases removed
(the paper's quantile rule), the built-in 3D U-Net retrained for each list and
once more with the paper's DUO loss on every training case, and every model
scored on the test cases. Prints the test Dice / mIoU per condition and the AUV
energy spectrum used.

``--task DIR`` runs on an existing task (the bundled
``sample_data/msd_task/Task90_AbdomenPhantom`` by default: 6 cases, 2 held out,
so 5 % and 10 % of its 4 training cases remove nothing); ``--cases N`` instead
writes an N-case phantom task (seeds 3000 + i, the bundled task's shape and
spacing, tumour drawn at random) into the output folder and runs on it.

Run: ``.venv/bin/python benchmarks/bench_li2026.py [--cases 24] [--iterations 300]
--output /tmp/li2026``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def write_task(root: Path, n: int) -> Path:
    """An MSD task of ``n`` CT phantoms (seeds 3000 + i) at ``root``."""
    from napari_segeval.io import write_image, write_labels
    from napari_segeval.phantoms.ct import make_ct_case
    from napari_segeval.phantoms.make_samples import MSD_SHAPE

    root.mkdir(parents=True, exist_ok=True)
    (root / "imagesTr").mkdir(exist_ok=True)
    (root / "labelsTr").mkdir(exist_ok=True)
    training, names = [], {}
    for i in range(n):
        case = make_ct_case(3000 + i, shape=MSD_SHAPE, spacing=(2.5, 1.4, 1.4))
        names = case.structures
        name = f"abd_{i:03d}.nii.gz"
        if not (root / "imagesTr" / name).exists():
            write_image(root / "imagesTr" / name, case.image, case.geometry)
            write_labels(root / "labelsTr" / name, case.labels, case.geometry)
        training.append({"image": f"./imagesTr/{name}", "label": f"./labelsTr/{name}"})
    ds = {
        "name": "AbdomenPhantomLarge",
        "modality": {"0": "CT"},
        "labels": {"0": "background", **{str(k): v for k, v in names.items()}},
        "numTraining": n,
        "training": training,
        "test": [],
    }
    (root / "dataset.json").write_text(json.dumps(ds, indent=1))
    return root


def main(argv=None) -> int:
    """Run the preset and print the conditions."""
    from napari_segeval.evaluation import run_evaluation

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", type=Path, help="MSD task folder (default: the bundled sample)")
    p.add_argument("--cases", type=int, help="write an N-case phantom task instead")
    p.add_argument("--holdout", type=float, default=None, help="hold-out fraction")
    p.add_argument("--iterations", type=int, default=None, help="training iterations")
    p.add_argument("--checkpoint", help="MedSAM2 checkpoint for the AUV")
    p.add_argument("--output", type=Path, required=True)
    a = p.parse_args(argv)
    if a.cases:
        task = write_task(a.output / "task", a.cases)
    else:
        from napari_segeval.phantoms.samples import sample_root

        task = a.task or sample_root() / "msd_task" / "Task90_AbdomenPhantom"
    params = {}
    if a.holdout is not None:
        params["holdout"] = a.holdout
    if a.iterations is not None:
        params["train_iterations"] = a.iterations
    if a.checkpoint:
        params["auv_checkpoint"] = a.checkpoint
    t0 = time.perf_counter()
    r = run_evaluation(
        task, "uncertainty", a.output / "run", preset="li2026", params=params, workers=1
    )
    res = r.summary["results"]
    print(
        f"task {task} ({r.n_ok} test cases ok, {r.n_failed} failed); {res.get('test_set')}; "
        f"{time.perf_counter() - t0:.0f} s; AUV energy: {res.get('auv_energy')}"
    )
    print("| condition | n_train | removed | test Dice % | test mIoU % |\n|---|---|---|---|---|")
    for name, c in res.get("conditions", {}).items():
        print(
            f"| {name} | {c['n_train']} | {', '.join(c['removed']) or '-'} | "
            f"{c['dice']:.2f} | {c['iou']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
