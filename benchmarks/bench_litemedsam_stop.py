"""Where LiteMedSAM's slice-by-slice box chain should stop, under the project's rule.

The authors' 3D loop walks only the reference's z range; with a box on the middle slice
alone the chain must find the structure's end itself. LiteMedSAM almost never returns an
empty mask for a box (it was trained to segment whatever the box holds), so "stop at the
first empty slice" lets every chain run to the end of the volume. This script walks every
structure of some volumes to both ends without a stop, records each slice's predicted
IoU (the decoder's own quality estimate), mean foreground probability and overlap with
the reference, and replays candidate stop rules on those walks (a rule cuts a walk at
its first slice after the prompted one that meets the rule; the cut is exact: a walk's
slices before the cut do not depend on the rule). Printed: median and mean Dice of the
union of the two cut walks per structure, per rule, on the volumes given.

The rule is chosen on the tuning phantoms (``--seeds 500-509``, disjoint from training,
the samples and the held-out benchmarks) and checked, unchanged, on the others::

    python benchmarks/bench_litemedsam_stop.py --seeds 500-509
    python benchmarks/bench_litemedsam_stop.py --sample
    python benchmarks/bench_litemedsam_stop.py --mni
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # _mni


def _cases(args) -> list:
    from napari_segeval.phantoms.ct import make_ct_case

    cases = []
    if args.seeds:
        a, _, b = args.seeds.partition("-")
        cases += [(f"ct seed {s}", make_ct_case(s), "CT") for s in range(int(a), int(b or a) + 1)]
    if args.sample:
        from napari_segeval.io import read_case

        root = Path(__file__).resolve().parents[1] / "sample_data/msd_task/Task90_AbdomenPhantom"
        for f in sorted((root / "imagesTr").glob("*.nii.gz")):
            cases.append((f.name, read_case(f, labels=root / "labelsTr" / f.name), "CT"))
    if args.mni:
        from _mni import mni_case

        cases.append(("MNI152 T1", mni_case(), "MR"))
    return cases


def walks(model, case, modality: str) -> list[dict]:
    """Every structure walked both ways to the end: per visited slice its statistics."""
    from napari_segeval.evaluation.protocols._promptable import reference_prompts
    from napari_segeval.models.litemedsam import _chain
    from napari_segeval.models.walk import Walk, WalkOptions

    frames = model.preprocess(case.image, modality)
    seen = {}
    run = _chain.run

    def spy(*a, **kw):
        run(*a, **kw)
        seen["chains"] = a[3]

    _chain.run = spy
    out = []
    try:
        store = model.feature_cache()
        for box in reference_prompts(case.labels, {}, jitter=0, rng=np.random.default_rng(0)):
            ref = case.labels == box.label
            for order in ("forward", "backward"):
                model.propagate_walks(
                    frames, [Walk(box.index, box, order)], WalkOptions(features=store)
                )
                c = seen["chains"][0]
                masks = []
                for crop, v in zip(c.crops, c.values):
                    m = np.zeros(ref.shape[1:], bool)
                    if crop is not None:
                        y0, x0, y1, x1 = crop
                        m[y0:y1, x0:x1] = (v > 0.5).numpy()
                    masks.append(m)
                conf = [
                    float(v[v > 0.5].mean()) if v is not None and (v > 0.5).any() else 0.0
                    for v in c.values
                ]
                out.append(
                    {
                        "label": box.label,
                        "order": order,
                        "frames": c.frames,
                        "iou": c.ious,
                        "conf": conf,
                        "masks": masks,
                        "ref": ref,
                    }
                )
    finally:
        _chain.run = run
    return out


def _iou_below(t: float):
    return lambda w, j: w["iou"][j] < t


def _iou_below_key(r: float):
    return lambda w, j: w["iou"][j] < r * w["iou"][0]


def _conf_below(t: float):
    return lambda w, j: w["conf"][j] < t


RULES = {
    "none": lambda w, j: False,
    **{f"iou<{t}": _iou_below(t) for t in (0.7, 0.75, 0.8, 0.85)},
    **{f"iou<{r}*key": _iou_below_key(r) for r in (0.85, 0.9, 0.95)},
    **{f"conf<{t}": _conf_below(t) for t in (0.9, 0.92, 0.94)},
    "area>1.5*prev": lambda w, j: w["masks"][j].sum() > 1.5 * max(1, w["masks"][j - 1].sum()),
}


def cut(walk: dict, rule) -> int:
    """Slices the walk keeps under ``rule`` (the cut slice and those after it are dropped)."""
    for j in range(1, len(walk["frames"])):
        if rule(walk, j):
            return j
    return len(walk["frames"])


def score(all_walks: list[dict], rule) -> list[float]:
    dice = []
    for i in range(0, len(all_walks), 2):
        pair = all_walks[i : i + 2]
        ref = pair[0]["ref"]
        pred = np.zeros_like(ref)
        for w in pair:
            for j in range(cut(w, rule)):
                pred[w["frames"][j]] |= w["masks"][j]
        dice.append(2 * (pred & ref).sum() / max(1, pred.sum() + ref.sum()))
    return dice


def main(argv: list[str] | None = None) -> int:
    import torch

    from napari_segeval.models.litemedsam import load_litemedsam

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", help="CT phantom seeds a-b (tuning: 500-509)")
    p.add_argument("--sample", action="store_true", help="the sample task's six volumes")
    p.add_argument("--mni", action="store_true", help="the MNI152 T1 template (nilearn)")
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_litemedsam(device="cpu")
    data = []
    for name, case, modality in _cases(args):
        data += walks(model, case, modality)
        print(f"walked {name}", flush=True)
    print(f"{len(data) // 2} structures")
    print(f"{'rule':<16} {'median':>7} {'mean':>7}")
    for name, rule in RULES.items():
        d = score(data, rule)
        print(f"{name:<16} {np.median(d):7.3f} {np.mean(d):7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
