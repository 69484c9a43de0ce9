"""napari-segeval from Python: read a case, prompt and propagate, score, attack, evaluate.

The same steps as ``segeval propagate``, ``segeval attack`` and ``segeval evaluate``,
on the bundled sample data, through the names at the top of the package::

    python examples/api_quickstart.py [OUTPUT_DIR]

It needs about 40 s of CPU time; the results folder it writes opens in the napari
results browser (``napari OUTPUT_DIR/msd-robust``). ``tests/test_api.py`` runs it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import napari_segeval as se


def main(out_dir: Path) -> dict:
    # 1. read a case: the CT phantom (HU) with its reference labels and geometry
    case = se.read_case(se.sample_path("ct", "image"), se.sample_path("ct", "labels"))
    print(
        f"case: {case.kind} {case.image.shape}, spacing {case.spacing} mm, "
        f"structures {case.structures}"
    )

    # 2. prompt and propagate: a box on the middle slice of the liver, propagated up and down
    liver = next(k for k, name in case.structures.items() if name == "liver")
    boxes = se.boxes_from_labels(case.labels, [liver])
    model = se.load_promptable("builtin", device="cpu")  # a name `segeval info` lists
    result = se.propagate_image(model, case, boxes)

    # 3. score: one row per structure (Dice, IoU, precision, recall, HD95, ASSD, NSD)
    rows = se.structure_table(case.labels, result.labels, case.spacing, structures={liver: "liver"})
    clean = rows[0]["dice"]
    print(
        f"liver Dice {clean:.3f}, HD95 {rows[0]['hd95']:.1f} mm, worst slice "
        f"{se.worst_slice(case.labels, result.labels, liver)}"
    )

    # 4. attack: FGSM through the whole propagation chain, 8 HU in the model's units
    target = se.PromptTarget(model, case, boxes)
    eps = se.eps_from_raw(8.0, target.raw_per_normalized_unit)
    attacked = se.attack_case(target, se.AttackConfig("fgsm", eps=eps))
    after = attacked.attacked_rows[0]["dice"]
    print(f"FGSM at 8 HU (eps {eps:.4f} normalized): liver Dice {clean:.3f} -> {after:.3f}")
    se.write_labels(
        out_dir / "liver_attacked.nii.gz",
        attacked.attacked_prediction,
        case.geometry,
        overwrite=True,
    )

    # 5. evaluate: the msd-robust protocol (the built-in CT U-Net, clean and FGSM) on the
    #    first case of the sample MSD task; the whole task is se.sample_path("msd_task")
    cases = se.load_layout(se.sample_path("msd_task"))[:1]
    run = se.run_evaluation(
        cases,
        "msd-robust",
        out_dir / "msd-robust",
        workers=1,
        params={"attacks": [{"name": "fgsm", "eps": 0.5}]},
    )
    summary = run.summary
    print(f"msd-robust: {summary['n_ok']} cases scored, results in {run.output_dir}")
    return {
        "clean_dice": clean,
        "attacked_dice": after,
        "n_ok": summary["n_ok"],
        "output_dir": Path(run.output_dir),
    }


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="segeval-"))
    out.mkdir(parents=True, exist_ok=True)
    main(out)
