"""Many structures for the price of one? Shared propagation vs one pass per structure vs MedSAM2.

For each case (the bundled CT with its five structures; a larger synthetic CT from
the phantom generator) and each backend:

* **MedSAM2** (random SAM2.1 Hiera-tiny 512 weights): our loop with all structures in
  one shared pass (each frame encoded once, ``share=True``), our loop one structure
  at a time (``share=False``, which also gives the time of each single structure),
  and MedSAM2's own way: Meta's ``SAM2VideoPredictor`` with one inference state per
  object (forward, reset, reverse). Walks run to the ends of the volume (MedSAM2's
  script does not stop early). Prints time(all) / time(1 structure) (target
  <= 1.5), the speed-up over MedSAM2's own way (target >= 3), and whether the masks
  are identical (shared vs separate: every logit; ours vs the reference: ``logit > 0``).
* **built-in model** (shipped weights, its own recipe): shared with one walk per
  network call (the CPU default, bit-identical) and with the walks of a step batched
  (the GPU default), vs one structure; masks compared with one pass per structure.

Run: ``.venv/bin/python benchmarks/bench_multi_structure.py [--case ct|synthetic|both]
[--slices 64 --size 160] [--backend medsam2|builtin|both] [--device cpu] [--repeat 3]``.
``--quick``: one 32 px slice of a phantom, two structures, one repeat, no reference
predictor, MedSAM2 at 128 px (a smoke run; ``--image-size`` sets MedSAM2's input size). ``--threads 1`` and the CPU-time columns are the way to measure
on a loaded machine.
Masks must be identical on the CPU; on a GPU (bf16 autocast, batched walks) they must
agree on at least 99.9 % of the voxels (99.5 % against the reference predictor).

Memory (``--memory``): the built-in model on a CT-sized synthetic volume
(``--memory-shape 300,512,512``, fourteen organ-like structures), one structure vs all
fourteen, each configuration in a fresh subprocess; prints the peak RSS of the whole run
and of the propagation alone (Linux ``VmHWM`` reset before it) next to the times.
Target: fourteen structures peak at most 1.5x one structure. The label map must equal
the full-size merge of the full-size probabilities (the path before results were
cropped), checked on a smaller volume (``--memory-check 48,160,160``);
``--baseline-src DIR`` also runs another source tree (e.g. the code before this change)
in the same subprocesses, for its peaks and its label map.
The last lines start with ``SUMMARY`` (read by ``scripts/gpu-check.sh``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TQDM_DISABLE", "1")  # the reference predictor's progress bars
import _medsam2_ref as ref

RATIO_TARGET = 1.5
SPEEDUP_TARGET = 3.0
SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "ct"


def load_case(name: str, args):
    """``(label, image, labels, boxes)`` of the bundled CT or the synthetic volume."""
    from napari_segeval.io import read_case
    from napari_segeval.phantoms.ct import make_ct_case
    from napari_segeval.prompts.from_labels import boxes_from_labels

    if name == "ct":
        case = read_case(SAMPLE / "ct_001.nii.gz", SAMPLE / "ct_001_labels.nii.gz")
        image, labels = case.image, case.labels
    elif args.quick:  # one slice of a small phantom: every code path, little work
        case = make_ct_case(4242, shape=(8, 32, 32), tumour=True)
        image, labels = case.image[4:5], case.labels[4:5]
    else:
        case = make_ct_case(4242, shape=(args.slices, args.size, args.size), tumour=True)
        image, labels = case.image, case.labels
    present = [lab for lab in range(1, 6) if (labels == lab).any()][: args.structures]
    boxes = boxes_from_labels(labels, present)
    title = f"{name} {tuple(image.shape)}, {len(boxes)} structures, keys " + ",".join(
        str(b.index) for b in boxes
    )
    return title, image, boxes


def _walks(boxes):
    from napari_segeval.models.walk import Walk

    return [Walk(b.index, b, o) for b in boxes for o in ("forward", "backward")]


def bench_medsam2(title, image, boxes, args, device, tmp: Path) -> dict:
    import torch

    from napari_segeval.models.medsam2 import load_sam2
    from napari_segeval.models.medsam2._build import load_network

    ckpt = tmp / "random.pt"
    if not ckpt.exists():
        ref.random_checkpoint(tmp)
    model = load_sam2("medsam2", ckpt, device=device, image_size=args.image_size)
    frames = model.preprocess(image, "CT")
    n, h, w = frames.shape[:3]
    folder = ref.jpeg_folder(tmp / f"{n}_{h}_{w}", n, (h, w)) if not args.no_reference else None
    pred = (
        load_network(ckpt, predictor=True, image_size=args.image_size).to(device)
        if folder
        else None
    )
    images = model.model_input(frames) if folder else None
    stats: dict = {}
    ref.instrument(model.network, stats, "ours")
    if pred is not None:
        ref.instrument(pred, stats, "ref")
    times: dict[str, list[float]] = {"shared": [], "separate": [], "single": [], "ref": []}
    cpu: dict[str, list[float]] = {k: [] for k in times}
    seen: dict[str, dict] = {}
    singles = boxes[:1] if args.first_only else boxes
    for rep in range(args.repeat):
        order = ("shared", "separate", "ref") if rep % 2 == 0 else ("ref", "separate", "shared")
        for name in order:
            if name == "ref" and pred is None:
                continue
            before = dict(stats)
            if name == "shared":
                shared, t, c = ref.timed(lambda: model.walk_logits(frames, _walks(boxes)), device)
            elif name == "separate":  # one structure at a time; the first one is time(1)
                separate, t, c = [], 0.0, 0.0
                for i, b in enumerate(singles):
                    out, ti, ci = ref.timed(
                        lambda b=b: model.walk_logits(frames, _walks([b])), device
                    )
                    separate += out
                    t, c = t + ti, c + ci
                    if i == 0:
                        times["single"].append(ti)
                        cpu["single"].append(ci)
                if args.first_only:
                    continue
            else:
                reference, t, c = ref.timed(
                    lambda: ref.reference_per_object(pred, folder, images, boxes, device), device
                )
            times[name].append(t)
            cpu[name].append(c)
            seen[name] = {k: stats[k] - before.get(k, 0) for k in stats}
        if device.type == "cuda":
            torch.cuda.empty_cache()
    identical = all(torch.equal(a, b) for a, b in zip(shared, separate))
    agree = float(
        np.mean([float((a > 0).eq(b > 0).float().mean()) for a, b in zip(shared, separate)])
    )
    vs_ref = None
    if pred is not None:
        ours = dict(zip([(b.label, r) for b in boxes for r in (False, True)], shared))
        vs_ref = float(
            np.mean([float((ours[k] > 0).eq(reference[k] > 0).float().mean()) for k in ours])
        )
    best = {k: min(v) for k, v in times.items() if v}
    bcpu = {k: min(v) for k, v in cpu.items() if v}
    ratio = best["shared"] / best["single"]
    speedup = best["ref"] / best["shared"] if "ref" in best else float("nan")
    ratio_cpu = bcpu["shared"] / bcpu["single"]
    speedup_cpu = bcpu["ref"] / bcpu["shared"] if "ref" in bcpu else float("nan")
    print(
        f"\nMedSAM2 (random Hiera-tiny at {model.image_size} px), {title}, device {device}, "
        f"best of {args.repeat} [min-max]"
    )
    print(f"{'pipeline':<40}{'wall s':>22}{'CPU s':>22}{'encoder frames':>16}{'track steps':>13}")
    rows = (
        ("ours, all structures shared", "shared", "ours"),
        ("ours, one pass per structure", "separate", "ours"),
        ("ours, first structure alone", "single", "ours"),
        ("MedSAM2's own way (state per object)", "ref", "ref"),
    )
    for label, key, who in rows:
        if times[key]:
            d = seen.get(key, {})
            enc = d.get(who, n if key == "single" else 0)
            steps = d.get(who + "/track_n", "")
            print(
                f"{label:<40}{ref.spread(times[key]):>22}{ref.spread(cpu[key]):>22}{enc:>16}"
                f"{steps:>13}"
            )
    d = seen["shared"]
    clock = "cpu" if device.type == "cpu" else "s"
    enc_s = d[f"ours/encoder_{clock}"] / max(1, d["ours"])
    trk_s = d[f"ours/track_{clock}"] / max(1, d["ours/track_n"])
    k = len(boxes)
    print(
        f"profile (shared run, {'CPU' if clock == 'cpu' else 'wall'} s): encoder E = "
        f"{enc_s:.3f} s per frame, tracking T = {trk_s:.3f} s per walk step "
        f"({d['ours/track_n']} steps incl. key frames); with the encoder shared and each walk "
        f"tracked on its own, time({k}) / time(1) >= (E + {k} T) / (E + T) = "
        f"{(enc_s + k * trk_s) / (enc_s + trk_s):.2f}"
    )
    for what, r, s_ in (("wall", ratio, speedup), ("CPU", ratio_cpu, speedup_cpu)):
        line = (
            f"[{what}] time(all {k}) / time(1 structure) = {r:.2f} "
            f"(target <= {RATIO_TARGET}); speed-up over MedSAM2's own way {s_:.2f}x "
            f"(target >= {SPEEDUP_TARGET}x)"
        )
        clocks = best if what == "wall" else bcpu
        if times["separate"]:
            line += f"; over one pass per structure {clocks['separate'] / clocks['shared']:.2f}x"
        print(line)
    print(
        f"masks identical shared vs separate: {identical} (mask agreement {agree:.6f}); "
        f"vs reference: mask agreement {vs_ref if vs_ref is None else f'{vs_ref:.6f}'}"
    )
    if device.type == "cpu":  # on a shared CPU, other processes inflate wall time
        ratio, speedup = ratio_cpu, speedup_cpu
    met = ratio <= RATIO_TARGET and speedup >= SPEEDUP_TARGET
    if device.type == "cpu":
        correct = identical and vs_ref in (None, 1.0)
    else:
        correct = agree >= 0.999 and (vs_ref is None or vs_ref >= 0.995)
    return {
        "backend": "medsam2",
        "case": title.split()[0],
        "ratio_all_vs_1": ratio,
        "speedup_vs_medsam2": speedup,
        "encoder_s_per_frame": enc_s,
        "track_s_per_step": trk_s,
        "mask_agreement": agree,
        "vs_reference": -1.0 if vs_ref is None else vs_ref,
        "identical": identical,
        "correct": correct,
        "targets": "met" if met else "missed",
    }


def bench_builtin(title, image, boxes, args, device) -> dict:
    from napari_segeval.models.builtin_prompt import BuiltinPromptModel
    from napari_segeval.propagation import PropagationOptions, propagate_case

    model = BuiltinPromptModel(device=device)
    frames = model.preprocess(image, "CT")
    propagate_case(model, frames[:2], [dataclasses.replace(boxes[0], index=0)])  # warm-up
    runs = {}
    times: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for name, batch, bs, share in (
            ("shared", False, boxes, True),
            ("shared, batched", True, boxes, True),
            ("separate", False, boxes, False),
            ("single", False, boxes[:1], True),
            ("single, batched", True, boxes[:1], True),
        ):
            model.batch_walks = batch
            runs[name], t, c = ref.timed(
                lambda bs=bs, share=share: propagate_case(
                    model, frames, bs, PropagationOptions(share=share)
                ),
                device,
            )
            times.setdefault(name, []).append(t)
            cpu.setdefault(name, []).append(c)
    same = all(
        np.array_equal(
            runs["shared"].probabilities[b.label], runs["separate"].probabilities[b.label]
        )
        for b in boxes
    )
    masks = np.array_equal(runs["shared, batched"].labels, runs["separate"].labels)
    print(f"\nbuilt-in model, {title}, device {device}, best of {args.repeat} [min-max]")
    print(f"  {'pipeline':<34}{'wall s':>22}{'CPU s':>22}")
    for name, values in times.items():
        print(f"  {name:<34}{ref.spread(values):>22}{ref.spread(cpu[name]):>22}")
    out = {}
    for what, clocks in (("wall", times), ("CPU", cpu)):
        best = {k: min(v) for k, v in clocks.items()}
        out[what] = (
            best["shared"] / best["single"],
            best["shared, batched"] / best["single, batched"],
        )
        print(
            f"[{what}] time(all {len(boxes)}) / time(1): one walk per call {out[what][0]:.2f}, "
            f"batched {out[what][1]:.2f}; batched / one walk per call "
            f"{best['shared, batched'] / best['shared']:.2f}"
        )
    print(
        f"probabilities identical shared vs separate: {same}; "
        f"label maps identical batched vs separate: {masks}"
    )
    ratio, ratio_b = out["CPU" if device.type == "cpu" else "wall"]
    agree = float(np.mean(runs["shared, batched"].labels == runs["separate"].labels))
    correct = same and masks if device.type == "cpu" else agree >= 0.999
    return {
        "backend": "builtin",
        "case": title.split()[0],
        "ratio_all_vs_1": ratio,
        "ratio_batched": ratio_b,
        "label_agreement": agree,
        "identical": same and masks,
        "correct": correct,
    }


def organ_volume(shape: tuple[int, int, int], k: int = 14, seed: int = 0):
    """A CT-like int16 volume (HU) with ``k`` non-overlapping ellipsoids of different
    sizes and contrasts in a soft-tissue body, and their labels (uint8), built without
    a full-size float array."""
    rng = np.random.default_rng(seed)
    n, h, w = shape
    image = np.full(shape, -1000, np.int16)
    yy, xx = np.ogrid[:h, :w]
    body = ((yy - h / 2) / (0.45 * h)) ** 2 + ((xx - w / 2) / (0.47 * w)) ** 2 <= 1
    image[:, body] = 40
    labels = np.zeros(shape, np.uint8)
    cols = int(np.ceil(np.sqrt(k)))
    cell = (0.7 * h / cols, 0.7 * w / cols)
    for i in range(k):
        r, c = divmod(i, cols)
        cy, cx = 0.15 * h + (r + 0.5) * cell[0], 0.15 * w + (c + 0.5) * cell[1]
        cz = rng.uniform(0.3, 0.7) * n
        rz = rng.uniform(0.08, 0.25) * n
        ry, rx = (rng.uniform(0.25, 0.42) * cell[0], rng.uniform(0.25, 0.42) * cell[1])
        z0, z1 = int(max(cz - rz, 0)), int(min(cz + rz + 1, n))
        y0, y1, x0, x1 = int(cy - ry), int(cy + ry + 1), int(cx - rx), int(cx + rx + 1)
        zz, yb, xb = np.ogrid[z0:z1, y0:y1, x0:x1]
        inside = ((zz - cz) / rz) ** 2 + ((yb - cy) / ry) ** 2 + ((xb - cx) / rx) ** 2 <= 1
        labels[z0:z1, y0:y1, x0:x1][inside] = i + 1
        image[z0:z1, y0:y1, x0:x1][inside] = int(rng.integers(130, 260))
    image += rng.integers(-15, 16, shape, dtype=np.int16)
    return image, labels


def _vm_peak() -> int:
    """Peak resident bytes since the last reset (Linux VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def memory_child(shape: tuple[int, int, int], k: int, out: str | None, threads: int = 0) -> dict:
    """One configuration: ``k`` structures of :func:`organ_volume` with the built-in model."""
    import resource
    import time

    import torch

    from napari_segeval.models.builtin_prompt import BuiltinPromptModel
    from napari_segeval.prompts.from_labels import boxes_from_labels
    from napari_segeval.propagation import propagate_case

    if threads:
        torch.set_num_threads(threads)
    image, labels = organ_volume(shape)
    model = BuiltinPromptModel(device="cpu")
    frames = model.preprocess(image, "CT")
    boxes = boxes_from_labels(labels, list(range(1, k + 1)))
    del image
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM: the propagation alone
    except OSError:
        pass
    t0, c0 = time.perf_counter(), time.process_time()
    res = propagate_case(model, frames, boxes)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    result = {
        "k": k,
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_propagation": _vm_peak(),
        "peak_run": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    if out:
        np.save(out, res.labels)
        if hasattr(res, "structures"):  # this tree: the merge of full-size arrays as before
            result["labels_equal_full_merge"] = bool(
                np.array_equal(_full_merge(dict(res.probabilities), dict(res.masks)), res.labels)
            )
    return result


def _full_merge(probs: dict, masks: dict, nested_fraction: float = 0.5) -> np.ndarray:
    """The merge on full-size arrays, as it was before results were cropped."""
    ids = sorted(probs)
    size = {lab: int(masks[lab].sum()) for lab in ids}
    outers = {
        lab: [
            o
            for o in ids
            if o != lab
            and 0 < size[lab] < size[o]
            and (masks[lab] & masks[o]).sum() >= nested_fraction * size[lab]
        ]
        for lab in ids
    }
    best = np.zeros(probs[ids[0]].shape, np.float32)
    out = np.zeros(best.shape, np.uint8)
    for lab in sorted(ids, key=lambda i: (-size[i], i)):
        win = masks[lab] & (probs[lab] > best)
        if outers[lab]:
            win |= masks[lab] & np.isin(out, outers[lab])
        out[win] = lab
        best[win] = probs[lab][win]
    return out


def _child(shape: str, k: int, src: str | None, out: str | None, threads: int) -> dict:
    import json
    import subprocess

    env = dict(os.environ, PYTHONPATH=src or str(Path(__file__).resolve().parents[1]))
    cmd = [
        sys.executable,
        __file__,
        "--memory-child",
        shape,
        "--structures",
        str(k),
        "--threads",
        str(threads),
    ]
    if out:
        cmd += ["--memory-out", out]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_memory(args) -> dict:
    """Peak RSS of one vs all structures (fresh subprocesses), labels vs the full-size merge."""
    trees = [("this tree", None)] + (
        [("baseline", args.baseline_src)] if args.baseline_src and not args.baseline_small else []
    )
    gib = 2.0**30
    rows = {}
    print(f"\nmemory: built-in model, synthetic CT {args.memory_shape}, fresh process per run")
    print(
        f"  {'source':<10}{'structures':>11}{'wall s':>9}{'CPU s':>9}"
        f"{'peak run GiB':>14}{'peak propagation GiB':>22}"
    )
    for name, src in trees:
        for k in (1, args.memory_structures):
            r = _child(args.memory_shape, k, src, None, args.threads)
            rows[(name, k)] = r
            print(
                f"  {name:<10}{k:>11}{r['wall_s']:>9.1f}{r['cpu_s']:>9.1f}"
                f"{r['peak_run'] / gib:>14.2f}{r['peak_propagation'] / gib:>22.2f}"
            )
    k = args.memory_structures
    ratio = rows[("this tree", k)]["peak_run"] / rows[("this tree", 1)]["peak_run"]
    print(f"peak({k}) / peak(1) = {ratio:.2f} (target <= {RATIO_TARGET})")
    with tempfile.TemporaryDirectory() as tmp:
        ours = _child(args.memory_check, k, None, f"{tmp}/ours.npy", args.threads)
        same = ours["labels_equal_full_merge"]
        line = f"labels on {args.memory_check}: equal to the full-size merge: {same}"
        if args.baseline_src:
            _child(args.memory_check, k, args.baseline_src, f"{tmp}/base.npy", args.threads)
            old = np.array_equal(np.load(f"{tmp}/ours.npy"), np.load(f"{tmp}/base.npy"))
            same = same and old
            line += f"; equal to the baseline's: {old}"
        print(line)
    return {
        "backend": "builtin",
        "case": "memory",
        "peak_ratio": ratio,
        "peak_1_gib": rows[("this tree", 1)]["peak_run"] / gib,
        f"peak_{k}_gib": rows[("this tree", k)]["peak_run"] / gib,
        "identical": same,
        "correct": same,
        "targets": "met" if ratio <= RATIO_TARGET else "missed",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=("ct", "synthetic", "both"), default="both")
    ap.add_argument("--slices", type=int, default=64, help="synthetic volume: slices")
    ap.add_argument("--size", type=int, default=160, help="synthetic volume: in-plane size")
    ap.add_argument("--structures", type=int, default=5)
    ap.add_argument("--backend", choices=("medsam2", "builtin", "both"), default="both")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    ap.add_argument("--no-reference", action="store_true", help="skip MedSAM2's own way")
    ap.add_argument(
        "--first-only",
        action="store_true",
        help="MedSAM2: time only the first structure alone (not each one)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="one 32 px slice, 2 structures, once, MedSAM2 at 128 px",
    )
    ap.add_argument(
        "--image-size",
        type=int,
        default=None,
        help="MedSAM2's input size (default: its 512; smaller: a smoke run)",
    )
    ap.add_argument("--memory", action="store_true", help="peak RSS, one vs many structures")
    ap.add_argument("--memory-shape", default="300,512,512")
    ap.add_argument("--memory-check", default="48,160,160")
    ap.add_argument("--memory-structures", type=int, default=14)
    ap.add_argument(
        "--baseline-src",
        default=None,
        help="another source tree to compare (--memory; its peaks at "
        "--memory-shape too unless --baseline-small)",
    )
    ap.add_argument(
        "--baseline-small",
        action="store_true",
        help="run the baseline tree on --memory-check only (its full-size peak "
        "may not fit the machine)",
    )
    ap.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--memory-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.memory_child:
        import json

        shape = tuple(int(v) for v in args.memory_child.split(","))
        print(json.dumps(memory_child(shape, args.structures, args.memory_out, args.threads)))
        return 0
    if args.memory:
        r = bench_memory(args)
        print(
            "SUMMARY multi-structure "
            + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items())
        )
        return 0 if r["correct"] else 3
    if args.quick:  # MedSAM2's reference is exercised by bench_medsam2_speed's quick run
        args.case, args.structures, args.repeat = "synthetic", 2, 1
        args.first_only, args.no_reference = True, True
        args.image_size = args.image_size or 128

    import torch

    from napari_segeval.models._device import pick_device

    warnings.filterwarnings("ignore")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    print(f"torch {torch.__version__}, device {device}, CPU threads {torch.get_num_threads()}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("ct", "synthetic") if args.case == "both" else (args.case,):
            title, image, boxes = load_case(name, args)
            if args.backend in ("builtin", "both"):
                results.append(bench_builtin(title, image, boxes, args, device))
            if args.backend in ("medsam2", "both"):
                ref.use_cpu_hole_filling()
                results.append(bench_medsam2(title, image, boxes, args, device, Path(tmp)))
    for r in results:
        print(
            "SUMMARY multi-structure "
            + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items())
        )
    return 0 if all(r["correct"] for r in results) else 3


if __name__ == "__main__":
    raise SystemExit(main())
