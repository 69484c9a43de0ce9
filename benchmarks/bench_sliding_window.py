"""Sliding-window throughput: ours vs MONAI ``sliding_window_inference`` on one model and volume.

The built-in CT U-Net (shipped weights; random weights of the same architecture with
``--random``) on the bundled CT sample after the model's preprocessing (or a random
normalized volume of ``--shape``), Gaussian blending (sigma = patch/8), overlap 0.5,
constant padding. Output parity is the
largest absolute difference of the float32 logits. Runs alternate (ours, MONAI, ...) and the fastest of
``--repeats`` is kept for each, so background load affects both alike.

Run: ``.venv/bin/python benchmarks/bench_sliding_window.py [--shape Z Y X] [--repeats 5]``
Target: throughput ratio ours/MONAI >= 1.0 and max |difference| < 1e-5.
"""

from __future__ import annotations

import argparse
import time

TARGET_RATIO = 1.0
TARGET_DIFF = 1e-5


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--shape",
        type=int,
        nargs=3,
        default=None,
        help="random volume of this shape instead of the CT sample",
    )
    ap.add_argument("--overlap", type=float, default=0.5)
    ap.add_argument("--batch", type=int, default=2, help="windows per network call")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    ap.add_argument("--random", action="store_true", help="random weights, same architecture")
    args = ap.parse_args(argv)

    import torch
    from monai.inferers import sliding_window_inference

    from napari_segeval.inference.sliding_window import sliding_window_logits, window_grid
    from napari_segeval.models.dense.unet import UNet3D
    from napari_segeval.models.registry import load_dense

    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_dense("builtin-ct", device="cpu")
    net = model.network
    if args.random:
        torch.manual_seed(0)
        net = UNet3D(net.config).eval()
    patch = model.patch_size
    if args.shape:
        torch.manual_seed(1)
        x = torch.randn(1, 1, *args.shape)
    else:
        from napari_segeval.io import read_case
        from napari_segeval.phantoms.samples import sample_path

        x, _ = model.preprocess(read_case(sample_path("ct", "image")))
        x = x.float().cpu()
    shape = tuple(x.shape[2:])
    n_win = len(window_grid(shape, patch, args.overlap))

    def ours(net=net, x=x):
        return sliding_window_logits(net, x, patch, overlap=args.overlap, batch_size=args.batch)

    def monai(net=net, x=x):
        return sliding_window_inference(
            x,
            patch,
            args.batch,
            net,
            overlap=args.overlap,
            mode="gaussian",
            sigma_scale=0.125,
            padding_mode="constant",
        )

    times = {"ours": [], "monai": []}
    outs = {}
    with torch.inference_mode():
        ours(), monai()  # warm-up
        for _ in range(args.repeats):
            for name, fn in (("ours", ours), ("monai", monai)):
                t0 = time.perf_counter()
                outs[name] = fn()
                times[name].append(time.perf_counter() - t0)
    t_ours, t_monai = min(times["ours"]), min(times["monai"])
    ratio = t_monai / t_ours
    diff = float((outs["ours"] - outs["monai"]).abs().max())
    scale = float(outs["monai"].abs().max())
    vox = x.numel()
    print(
        f"volume {shape}, patch {patch}, overlap {args.overlap}, "
        f"{n_win} windows, batch {args.batch}, torch threads {torch.get_num_threads()}, "
        f"best of {args.repeats}"
    )
    rows = [
        ("seconds / volume", f"{t_ours:.3f}", f"{t_monai:.3f}", "", "", ""),
        (
            "Mvoxel / s",
            f"{vox / t_ours / 1e6:.3f}",
            f"{vox / t_monai / 1e6:.3f}",
            f"{ratio:.3f}",
            f">= {TARGET_RATIO}",
            "PASS" if ratio >= TARGET_RATIO else "FAIL",
        ),
        (
            "max |ours - MONAI|",
            f"{diff:.2e}",
            f"|logit| <= {scale:.1f}",
            "",
            f"< {TARGET_DIFF:g}",
            "PASS" if diff < TARGET_DIFF else "FAIL",
        ),
    ]
    head = ("metric", "ours", "MONAI", "ratio", "target", "result")
    widths = [max(len(str(r[i])) for r in (head, *rows)) for i in range(len(head))]
    for r in (head, tuple("-" * w for w in widths), *rows):
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0 if ratio >= TARGET_RATIO and diff < TARGET_DIFF else 1


if __name__ == "__main__":
    raise SystemExit(main())
