"""Do noisy and attacked cases score as more uncertain than clean ones? (bundled samples)

For the bundled CT sample and the six cases of the bundled MSD task, the built-in
dense CT model segments the clean volume, the volume with Gaussian noise
(``noise-gaussian``, sigma = eps normalized units, L-inf projected) and a PGD-attacked
volume (L-inf, ``--pgd-eps`` normalized units, ``--pgd-steps`` steps, the reference
labels as target). For every condition it prints the foreground Dice and three case
scores: ``ent`` (single pass: mean normalized entropy over the predicted
foreground + 1-voxel band = the protocol's default score), ``ent_tta`` (the same on
the mean of ``--tta`` test-time augmentations: intensity gain/shift 0.1, zoom +-10%,
no flips) and ``mi_tta`` (mean mutual information over that region: disagreement
between augmentations). The last lines count the cases in which each perturbed
condition scores higher than clean.

Run: ``.venv/bin/python benchmarks/bench_uncertainty.py [--tta 4] [--device cpu]``
"""

from __future__ import annotations

import argparse
import dataclasses
import time


def _cases():
    from napari_segeval.io import read_case
    from napari_segeval.phantoms.samples import sample_path, sample_root

    yield "ct_001", read_case(sample_path("ct"), sample_path("ct", "labels"))
    task = sample_root() / "msd_task" / "Task90_AbdomenPhantom"
    for img in sorted((task / "imagesTr").glob("*.nii.gz")):
        yield img.name.split(".")[0], read_case(img, task / "labelsTr" / img.name)


def _scores(model, case, tta: int) -> dict:
    import numpy as np

    from napari_segeval.metrics import structure_table
    from napari_segeval.models.dense import segment_case
    from napari_segeval.uncertainty import (
        dense_tta,
        entropy_band_score,
        mean_uncertainty,
        scored_region,
    )

    res = segment_case(model, case, probabilities=True)
    rows = structure_table(
        case.labels, res.labels, case.spacing, structures=model.structures, surface=False
    )
    dice = float(np.nanmean([r["dice"] for r in rows]))
    maps = dense_tta(model, case, n_samples=tta, flip_axes=())
    region = scored_region(maps.labels, band=1)
    region = region if region.any() else None
    return {
        "dice": dice,
        "ent": entropy_band_score(res.probabilities, res.labels),
        "ent_tta": mean_uncertainty(maps.entropy, region),
        "mi_tta": mean_uncertainty(maps.mutual_information, region),
    }


def _perturbed(model, case, config):
    from napari_segeval.attacks import DenseTarget, attack_case

    res = attack_case(DenseTarget(model, case), config, clamp=True)
    return dataclasses.replace(case, image=res.perturbed_image)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tta", type=int, default=4, help="test-time augmentation samples")
    ap.add_argument("--noise-eps", type=float, default=2.0, help="normalized units")
    ap.add_argument("--pgd-eps", type=float, default=0.5, help="normalized units")
    ap.add_argument("--pgd-steps", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-cases", type=int, default=7)
    args = ap.parse_args(argv)

    import numpy as np
    import torch

    from napari_segeval.attacks import AttackConfig
    from napari_segeval.models.registry import load_dense

    torch.manual_seed(0)
    model = load_dense("builtin-ct", device=args.device)
    hu = model.raw_per_normalized_unit
    conditions = {
        "clean": None,
        f"noise eps={args.noise_eps:g}": AttackConfig("noise-gaussian", eps=args.noise_eps),
        f"pgd eps={args.pgd_eps:g}": AttackConfig("pgd", eps=args.pgd_eps, steps=args.pgd_steps),
    }
    print(f"model builtin-ct, 1 normalized unit = {hu:.1f} HU; TTA samples {args.tta}")
    header = "| case | condition | Dice fg | ent | ent_tta | mi_tta |"
    print(header + "\n|---|---|---|---|---|---|")
    table: dict[str, dict[str, dict]] = {}
    t0 = time.perf_counter()
    for i, (name, case) in enumerate(_cases()):
        if i >= args.max_cases:
            break
        for cond, config in conditions.items():
            c = case if config is None else _perturbed(model, case, config)
            s = _scores(model, c, args.tta)
            table.setdefault(cond, {})[name] = s
            print(
                f"| {name} | {cond} | {s['dice']:.3f} | {s['ent']:.4f} | "
                f"{s['ent_tta']:.4f} | {s['mi_tta']:.4f} |",
                flush=True,
            )
    print(
        "\n| condition | mean Dice fg | mean ent | mean ent_tta | mean mi_tta |"
        " cases above clean (ent / ent_tta / mi_tta) |\n|---|---|---|---|---|---|"
    )
    clean = table["clean"]
    for cond, by in table.items():
        mean = {
            k: float(np.mean([s[k] for s in by.values()]))
            for k in ("dice", "ent", "ent_tta", "mi_tta")
        }
        above = (
            "-"
            if cond == "clean"
            else " / ".join(
                f"{sum(by[c][k] > clean[c][k] for c in by)}/{len(by)}"
                for k in ("ent", "ent_tta", "mi_tta")
            )
        )
        print(
            f"| {cond} | {mean['dice']:.3f} | {mean['ent']:.4f} | {mean['ent_tta']:.4f} | "
            f"{mean['mi_tta']:.4f} | {above} |"
        )
    print(f"\n{time.perf_counter() - t0:.0f} s on {args.device}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
