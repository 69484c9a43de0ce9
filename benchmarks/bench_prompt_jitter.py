"""Prompt-jitter uncertainty: what N samples cost against one propagation, and what they find.

On a bundled MSD sample case (``--case``, default ``abd_001``) LiteMedSAM propagates
the reference boxes (the project's rule: each structure's middle slice) once; then
:func:`napari_segeval.uncertainty.prompt_tta` draws ``--samples`` propagations two ways
in the same process on the same frames:

``box jitter``
    boxes jittered (``--jitter`` px), no intensity noise: the slices are encoded once
    and every further sample is decoded from the kept embeddings (what the viewer's
    *Uncertainty* button runs for LiteMedSAM and MedSAM2/SAM2.1);
``jitter + noise``
    the same with Gaussian intensity noise (``--noise``, normalized units): every
    sample's frames differ, so every slice is encoded again (what it ran before).

For each it prints the seconds, the ratio to one propagation and to the other way,
and how well the per-slice mean entropy over the structure's band finds the slices
whose Dice is below 0.5 (failure AUROC over the slices where the reference or the
prediction is non-empty)::

    python benchmarks/bench_prompt_jitter.py [--case abd_001] [--samples 8]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _slice_auroc(maps, labels: np.ndarray, pred: np.ndarray, ids: list[int]) -> float:
    """Failure AUROC of the per-slice mean entropy (slice Dice < 0.5 is a failure)."""
    from napari_segeval.uncertainty import binary_entropy
    from napari_segeval.uncertainty.failure import failure_auroc

    score, failed = [], []
    for c, label in enumerate(maps.channels):
        if label not in ids:
            continue
        ref, m = labels == label, pred == label
        ent = binary_entropy(maps.mean[c])
        for k in np.flatnonzero((ref | m).reshape(ref.shape[0], -1).any(axis=1)):
            total = int(ref[k].sum()) + int(m[k].sum())
            dice = 2.0 * int((ref[k] & m[k]).sum()) / total
            band = ref[k] | m[k]
            score.append(float(ent[k][band].mean()))
            failed.append(dice < 0.5)
    return failure_auroc(score, failed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", default="abd_001")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--jitter", type=int, default=3)
    ap.add_argument("--noise", type=float, default=0.02)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)

    import torch

    from napari_segeval.evaluation.protocols._promptable import reference_prompts
    from napari_segeval.io import read_case
    from napari_segeval.models.litemedsam import load_litemedsam
    from napari_segeval.phantoms.samples import sample_root
    from napari_segeval.propagation import propagate_case
    from napari_segeval.uncertainty import prompt_tta

    torch.set_num_threads(args.threads)
    task = sample_root() / "msd_task" / "Task90_AbdomenPhantom"
    name = f"{args.case}.nii.gz"
    case = read_case(task / "imagesTr" / name, task / "labelsTr" / name)
    lite = load_litemedsam(device="cpu")
    frames = torch.as_tensor(lite.preprocess(case.image, "CT"))
    boxes = reference_prompts(case.labels, {}, jitter=0, rng=np.random.default_rng(0))
    ids = sorted({b.label for b in boxes})
    t0 = time.perf_counter()
    one = propagate_case(lite, frames, boxes)
    t_one = time.perf_counter() - t0
    print(f"LiteMedSAM, {args.case} {tuple(case.image.shape)}, structures {ids}: "
          f"one propagation {t_one:.1f} s")  # fmt: skip
    seconds = {}
    for what, noise in (("box jitter", 0.0), ("jitter + noise", args.noise)):
        t0 = time.perf_counter()
        maps = prompt_tta(lite, frames, boxes, n_samples=args.samples, jitter=args.jitter,
                          noise_std=noise, clamp=(0.0, 1.0), seed=0)  # fmt: skip
        seconds[what] = time.perf_counter() - t0
        auroc = _slice_auroc(maps, case.labels, one.labels, ids)
        print(f"  {what:15s} {args.samples} samples {seconds[what]:7.1f} s = "
              f"{seconds[what] / t_one:5.2f}x one propagation; slice failure AUROC of "
              f"the mean entropy {auroc:.3f}")  # fmt: skip
    print(f"  box jitter is {seconds['jitter + noise'] / seconds['box jitter']:.2f}x faster "
          "than jitter + noise")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
