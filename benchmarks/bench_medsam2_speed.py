"""Slices per second: our MedSAM2 loop vs Meta's SAM2VideoPredictor (same weights, frames).

Random SAM2.1 Hiera-tiny 512 weights, a synthetic CT volume, key slice in the middle,
forward + backward propagation (MedSAM2's 3D protocol). The reference is timed from
``init_state`` (frames replaced by the same 512 px tensor) to the end of the backward
pass; ours from the native normalized frames to both walks' native-size logits.

Run: ``.venv/bin/python benchmarks/bench_medsam2_speed.py [--slices 16] [--size 128]``
Needs the ``medsam2`` extra (sam2, hydra-core). Target: ratio >= 1.5 with identical masks.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

TARGET = 1.5


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", type=int, default=16)
    ap.add_argument("--size", type=int, default=128, help="native in-plane size")
    ap.add_argument("--repeat", type=int, default=2, help="runs per pipeline (best kept)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = ap.parse_args(argv)

    import sam2.utils.misc as sam2_misc
    import torch
    from PIL import Image

    from napari_segeval.models.medsam2._build import build_network, load_network
    from napari_segeval.models.medsam2._loop import connected_components
    from napari_segeval.models.registry import load_promptable
    from napari_segeval.prompts.box import Box

    warnings.filterwarnings("ignore")
    # the reference fills mask holes with an optional CUDA kernel: give it the CPU equivalent
    sam2_misc.get_connected_components = connected_components
    if args.threads:
        torch.set_num_threads(args.threads)
    n, s = args.slices, args.size
    key = n // 2
    box = Box(s // 4, s // 4, 3 * s // 4, 3 * s // 4, index=key)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        torch.manual_seed(0)
        ckpt = tmp / "random.pt"
        torch.save({"model": build_network().state_dict()}, ckpt)
        yy, xx = np.mgrid[:s, :s]
        rng = np.random.default_rng(0)
        r2 = (yy - s / 2) ** 2 + (xx - s / 2) ** 2
        vol = np.stack([np.where(r2 < (s / 5) ** 2 * (1 - abs(z - key) / n), 80.0, -100.0)
                        + rng.normal(0, 20, (s, s)) for z in range(n)])
        model = load_promptable("medsam2", checkpoint=ckpt, device="cpu")
        frames = model.preprocess(vol, "CT", "abdomen")
        for i in range(n):
            Image.fromarray(np.zeros((s, s, 3), np.uint8)).save(tmp / f"{i:05d}.jpg")
        pred = load_network(ckpt, predictor=True)
        images = model.model_input(frames)
        calls = {"ours": 0, "ref": 0}
        _count(model.network, calls, "ours")
        _count(pred, calls, "ref")

        def ours():
            model._cache = None  # no reuse across repeats
            return (model.propagate_logits(frames, key, box, "forward"),
                    model.propagate_logits(frames, key, box, "backward"))

        def reference():
            xyxy = [box.x0, box.y0, box.x1 - 1, box.y1 - 1]
            out = {}
            with torch.inference_mode():
                state = pred.init_state(video_path=str(tmp))
                state["images"] = images
                state["cached_features"] = {}
                for reverse in (False, True):
                    pred.reset_state(state)
                    pred.add_new_points_or_box(state, frame_idx=key, obj_id=1, box=xyxy)
                    for t, _, m in pred.propagate_in_video(state, reverse=reverse):
                        out[(reverse, t)] = m[0, 0].clone()
            return out

        best = {"ours": (float("inf"),) * 2, "ref": (float("inf"),) * 2}
        for rep in range(args.repeat):  # alternate the order; keep each pipeline's best
            for name in (("ours", "ref") if rep % 2 == 0 else ("ref", "ours")):
                t0, c0 = time.perf_counter(), time.process_time()
                result = ours() if name == "ours" else reference()
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                best[name] = min(best[name], (wall, cpu))
                if name == "ours":
                    fwd, bwd = result
                else:
                    ref = result
        (ours_s, ours_cpu), (ref_s, ref_cpu) = best["ours"], best["ref"]

    ref_f = torch.stack([ref[(False, t)] for t in range(key, n)])
    ref_b = torch.stack([ref[(True, t)] for t in range(key, -1, -1)])
    same = torch.equal(fwd > 0, ref_f > 0) and torch.equal(bwd > 0, ref_b > 0)
    diff = max(float((fwd - ref_f).abs().max()), float((bwd - ref_b).abs().max()))
    ratio = ref_s / ours_s
    print(f"MedSAM2 propagation, {n} slices of {s}x{s}, key {key}, forward+backward, "
          f"CPU threads {torch.get_num_threads()}, best of {args.repeat}")
    print(f"{'pipeline':<28}{'wall s':>10}{'slices/s':>10}{'s/slice':>10}{'CPU s':>10}")
    for name, sec, cpu in (("sam2 SAM2VideoPredictor", ref_s, ref_cpu),
                           ("napari-segeval loop", ours_s, ours_cpu)):
        print(f"{name:<28}{sec:>10.2f}{n / sec:>10.3f}{sec / n:>10.3f}{cpu:>10.2f}")
    print(f"image-encoder frames per run: reference {calls['ref'] // args.repeat}, "
          f"ours {calls['ours'] // args.repeat}")
    print(f"CPU-time ratio {ref_cpu / ours_cpu:.2f}x")
    print(f"ratio {ratio:.2f}x (wall; target >= {TARGET}x); masks identical: {same}; "
          f"max |logit diff| {diff:.2e}; foreground voxels {int((fwd > 0).sum() + (bwd > 0).sum())}")
    ok = same and ratio >= TARGET
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def _count(net, calls: dict, name: str) -> None:
    """Count the frames each network's image encoder sees."""
    inner = net.forward_image

    def counted(img):
        calls[name] += int(img.shape[0])
        return inner(img)

    net.forward_image = counted


if __name__ == "__main__":
    raise SystemExit(main())
