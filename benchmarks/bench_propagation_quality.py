"""Quality of box-prompted propagation on held-out phantoms (seeds >= 2000).

MedSAM2 protocol: CT volumes get a box on the middle slice of each structure's
extent and bidirectional propagation with largest-component post-processing;
echo clips get a box on the first frame and forward propagation. Reports the
median Dice and IQR per structure (Dice = 2|A∩B| / (|A| + |B|)).

Usage::

    python benchmarks/bench_propagation_quality.py --ct 20 --video 20
    python benchmarks/bench_propagation_quality.py --model medsam2 --checkpoint MedSAM2_latest.pt
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def dice_per_structure(reference: np.ndarray, prediction: np.ndarray, labels) -> dict[int, float]:
    """Dice per label: the metrics layer when present, else the same formula inline."""
    try:
        from napari_segeval.metrics import overlap_metrics
    except ImportError:  # pragma: no cover - metrics layer absent
        out = {}
        for lab in labels:
            a, b = reference == lab, prediction == lab
            denom = a.sum() + b.sum()
            out[lab] = 1.0 if denom == 0 else 2.0 * float((a & b).sum()) / float(denom)
        return out
    m = overlap_metrics(reference, prediction, labels=list(labels))
    return {lab: float(m[lab]["dice"]) for lab in labels}


def load_model(args):
    from napari_segeval.models.registry import load_promptable

    checkpoint = args.weights if args.model == "builtin" else args.checkpoint
    return load_promptable(args.model, checkpoint=checkpoint, device=args.device)


def run(args) -> int:
    import torch

    from napari_segeval.phantoms.ct import CT_STRUCTURES, make_ct_case
    from napari_segeval.phantoms.echo import ECHO_STRUCTURES, make_echo_clip
    from napari_segeval.prompts.from_labels import boxes_from_labels
    from napari_segeval.propagation import PropagationOptions, propagate_case

    torch.set_num_threads(args.threads)
    model = load_model(args)
    groups = [
        ("CT", CT_STRUCTURES, args.ct, "volume"),
        ("US", ECHO_STRUCTURES, args.video, "video"),
    ]
    rows, used = [], {}
    for modality, names, count, mode in groups:
        scores: dict[int, list[float]] = {lab: [] for lab in names}
        t0 = time.time()
        for i in range(count):
            seed = args.seed + i
            case = make_ct_case(seed) if modality == "CT" else make_echo_clip(seed)
            present = [lab for lab in names if (case.labels == lab).any()]
            boxes = boxes_from_labels(
                case.labels, present, mode=mode, jitter=args.jitter, seed=seed
            )
            frames = model.preprocess(case.image, modality, None)
            options = PropagationOptions(mode=mode, keep_largest=True)
            if args.min_confidence is not None:
                options = options.replace(min_confidence=args.min_confidence)
            res = propagate_case(model, frames, boxes, options)
            used = res.params
            for lab, d in dice_per_structure(case.labels, res.labels, present).items():
                scores[lab].append(d)
        secs = (time.time() - t0) / max(count, 1)
        for lab, vals in scores.items():
            if vals:
                q1, med, q3 = np.percentile(vals, [25, 50, 75])
                rows.append((modality, names[lab], len(vals), med, q1, q3, secs))
    print(
        f"model={args.model} jitter={args.jitter}px seeds {args.seed}.. "
        f"min_confidence={used.get('min_confidence')} "
        f"(CT: bidirectional from middle slice; US: forward from first frame)"
    )
    print(f"{'modality':8s} {'structure':14s} {'n':>3s} {'median':>7s} {'IQR':>15s} {'s/case':>7s}")
    for mod, name, n, med, q1, q3, secs in rows:
        print(f"{mod:8s} {name:14s} {n:3d} {med:7.3f} [{q1:.3f}, {q3:.3f}] {secs:7.2f}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ct", type=int, default=20, help="number of CT phantom cases")
    p.add_argument("--video", type=int, default=20, help="number of echo phantom clips")
    p.add_argument("--seed", type=int, default=2000, help="first phantom seed (>= 2000)")
    p.add_argument("--jitter", type=int, default=0, help="box edge jitter in pixels")
    p.add_argument("--model", choices=("builtin", "medsam2"), default="builtin")
    p.add_argument("--weights", default=None, help="built-in model weight file")
    p.add_argument("--checkpoint", default=None, help="MedSAM2 checkpoint")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--min-confidence",
        type=float,
        default=None,
        help="confidence stop of propagate_case (default: the model's own)",
    )
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
