"""``bench_litemedsam.py --part encoder``: LiteMedSAM's image encoder, every path, one run.

On the same slices of the sample task (one process, interleaved rounds, best kept):

* GFLOP per slice (``torch.utils.flop_counter.FlopCounterMode`` on the module);
* the machine's matmul rate (2048 x 2048, fp32 and bf16; on a CPU both torch's ``mm``,
  which is MKL's, and oneDNN's, the faster giving the floor) and the floor it implies;
* for each path: seconds per slice (wall clock, and CPU seconds of this process, which
  other processes' load disturbs less; the speed-ups are of CPU seconds on a CPU, of the
  wall clock on a GPU), the speed-up over today's fp32 eager (the network module, BN
  folded on the fly, as before issue 40) and the masks' agreement: per-structure Dice of
  the CVPR 2024 3D loop against today's path on the sample cases;
* the mask decoder on one slice: its box and the 4 jittered boxes of the risk signal, by
  the module (two calls, as before) and by the backend's inference decoder (one call);
* with ``--e2e N``: ``segeval evaluate --protocol medsam2-3d --model litemedsam`` on the
  first N sample cases (``run_evaluation``, one worker), best of ``--repeat`` interleaved
  rounds: today's encoder and decoder, the fused encoder with the module's decoder, fp32
  (both fused) and ``auto``.

Paths: today's eager; fp32 on oneDNN's fused kernels; ``--precision openvino`` (fp32 on
OpenVINO, where the ``openvino`` extra is installed; ``auto`` takes it then);
``--precision bf16`` (bf16 GEMMs, fp32 residual stream; a GPU: autocast); and, measured
but not offered, OpenVINO with its bf16 hint, bf16 in the attention only, and
``torch.autocast`` on the module. Targets (two cores): fp32 within 1.5x of its floor and
>= 1.6x today's; auto >= 3x; the end-to-end run >= 2x; every path ``auto`` may take keeps
Dice >= 0.99.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"
FLOOR_TARGET, FP32_TARGET, AUTO_TARGET, E2E_TARGET, DICE = 1.5, 1.6, 3.0, 2.0, 0.99


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def matmul_rates(device, bf16: bool, n: int = 2048, repeat: int = 3) -> dict[str, float]:
    """GFLOP/s of ``n x n`` products: ``{"fp32 mm": ..., "fp32 onednn": ..., ...}`` (bf16's
    too when ``bf16``: oneDNN has no bf16 kernels on a CPU without AVX512)."""
    import torch

    out = {}
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    for dt in (torch.float32, torch.bfloat16) if bf16 else (torch.float32,):
        aa, bb = a.to(dt), b.to(dt)
        fns = {"mm": lambda aa=aa, bb=bb: aa @ bb}
        if device.type == "cpu":
            lin = torch.ops.mkldnn._linear_pointwise
            fns["onednn"] = lambda aa=aa, bb=bb, lin=lin: lin(aa, bb, None, "none", [], "")
        for name, fn in fns.items():
            fn()
            best = float("inf")
            for _ in range(repeat):
                _sync(device)
                t = time.perf_counter()
                fn()
                _sync(device)
                best = min(best, time.perf_counter() - t)
            out[f"{'fp32' if dt == torch.float32 else 'bf16'} {name}"] = 2 * n**3 / best / 1e9
    return out


def gflop(encoder, x) -> float:
    """GFLOP of one pass of ``encoder`` on ``x`` (torch's flop counter)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.inference_mode(), counter:
        encoder(x)
    return counter.get_total_flops() / 1e9 / x.shape[0]


def _openvino_bf16(encoder):
    """The encoder on OpenVINO with its bf16 hint (measured, not offered)."""
    import openvino as ov
    import torch

    from napari_segeval.models.litemedsam._asset import ENTRY
    from napari_segeval.models.litemedsam._openvino import cache_key, converted_model

    model = converted_model(encoder, cache_key(ENTRY.sha256, ov.__version__))
    config = {
        "INFERENCE_PRECISION_HINT": "bf16",
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_NUM_THREADS": torch.get_num_threads(),
    }
    request = ov.Core().compile_model(model, "CPU", config).create_infer_request()

    def run(images):
        x = images.contiguous().numpy()
        return torch.cat(
            [torch.from_numpy(request.infer([x[i : i + 1]])[0].copy()) for i in range(len(x))]
        )

    return run


def paths(lite, bf16: bool) -> dict:
    """``{name: (encoder callable or None for the module, offered by auto)}``."""
    import torch

    from napari_segeval.models.litemedsam._fused import FusedEncoder, inference_encoder
    from napari_segeval.models.precision import openvino_reason

    enc = lite.network.image_encoder
    out: dict = {"today: fp32 eager": (enc, False)}
    auto = inference_encoder(enc, "fp32", lite.device)
    out["fp32 fused" if auto is not None else "fp32 (module)"] = (auto or enc, True)
    if openvino_reason(lite.device) is None:
        from napari_segeval.models.litemedsam._asset import ENTRY
        from napari_segeval.models.litemedsam._openvino import openvino_encoder

        out["--precision openvino (fp32)"] = (openvino_encoder(enc, ENTRY.sha256), True)
        if bf16:
            out["openvino bf16 (not offered)"] = (_openvino_bf16(enc), False)
    if bf16:
        out["--precision bf16"] = (inference_encoder(enc, "bf16", lite.device), False)
        if lite.device.type == "cpu":
            out["bf16 attention only (not offered)"] = (
                FusedEncoder(enc, torch.bfloat16, parts=("attention",)),
                False,
            )

            def autocast(x):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return enc(x).float()

            out["bf16 autocast on the module (not offered)"] = (autocast, False)
    return out


def time_paths(fns: dict, slices: list, device, repeat: int) -> dict:
    """Best (wall, CPU) seconds per slice of each path, rounds interleaved."""
    import torch

    best = {k: [float("inf"), float("inf")] for k in fns}
    with torch.inference_mode():
        for fn in fns.values():
            fn(slices[0])  # warm-up
        for _ in range(repeat):
            for name, fn in fns.items():
                _sync(device)
                t, c = time.perf_counter(), time.process_time()
                for x in slices:
                    fn(x)
                _sync(device)
                wall, cpu = (time.perf_counter() - t, time.process_time() - c)
                best[name][0] = min(best[name][0], wall / len(slices))
                best[name][1] = min(best[name][1], cpu / len(slices))
    return best


def _dice(a: np.ndarray, b: np.ndarray) -> float:
    s = int(a.sum()) + int(b.sum())
    return 1.0 if s == 0 else 2.0 * float((a & b).sum()) / s


def agreement(lite, fns: dict, cases: list[str], crop: int = 0) -> dict[str, dict]:
    """Per-structure Dice of each path's 3D loop against today's, ``{path: {case/id: d}}``
    (``crop``: only that many slices around the middle of the labelled ones)."""
    from napari_segeval.io import read_case
    from napari_segeval.models.litemedsam import Box3D

    net = lite.network
    out: dict[str, dict] = {name: {} for name in fns}
    for cid in cases:
        case = read_case(
            TASK / "imagesTr" / f"{cid}.nii.gz", labels=TASK / "labelsTr" / f"{cid}.nii.gz"
        )
        labels, image = np.asarray(case.labels), np.asarray(case.image)
        if crop:
            mid = int(np.nonzero(labels.any(axis=(1, 2)))[0].mean())
            lo = max(0, mid - crop // 2)
            labels, image = labels[lo : lo + crop], image[lo : lo + crop]
        ids = [int(v) for v in np.unique(labels) if v]
        boxes = [Box3D.from_mask(labels == i, i, v) for v, i in enumerate(ids, start=1)]
        frames = lite.preprocess(image, "CT")
        masks = {}
        for name, fn in fns.items():
            net.fast_encoder = None if fn is net.image_encoder else fn
            masks[name] = lite.challenge_3d(frames, boxes)
        today = masks[next(iter(fns))]
        for name in fns:
            for i in ids:
                out[name][f"{cid}/{i}"] = _dice(masks[name][i], today[i])
    return out


def end_to_end(n_cases: int, device: str, auto: str, rounds: int = 1) -> dict[str, float]:
    """CPU seconds (wall on a GPU) of the medsam2-3d protocol with LiteMedSAM on the first
    ``n_cases`` sample cases, best of ``rounds`` interleaved: today's (the module's
    encoder and decoder), the fused fp32 encoder with the module's decoder (the first
    step of issue 40), fp32 (the fused encoder and decoder) and, when it is another,
    ``auto`` (``{path: seconds}``)."""
    import tempfile
    from unittest import mock

    from napari_segeval.evaluation import run_evaluation
    from napari_segeval.evaluation.layouts import load_layout
    from napari_segeval.evaluation.protocols import _common as C
    from napari_segeval.models.litemedsam import _fused, _fused_decoder

    specs = load_layout(TASK)[:n_cases]
    runs = {"today": "fp32", "fp32 encoder, module decoder": "fp32", "fp32": "fp32"}
    if auto != "fp32":
        runs[f"auto ({auto})"] = "auto"
    clock = time.perf_counter if device.startswith("cuda") else time.process_time
    best = {k: float("inf") for k in runs}
    for _ in range(rounds):
        for name, precision in runs.items():
            C.promptable_model.cache_clear()
            patch = contextlib.ExitStack()
            if name == "today":
                patch.enter_context(mock.patch.object(_fused, "inference_encoder", lambda *a: None))
            if name != "fp32" and not name.startswith("auto"):
                patch.enter_context(
                    mock.patch.object(_fused_decoder, "FusedDecoder", lambda net: None)
                )
            params = {"model": "litemedsam", "device": device, "precision": precision}
            with tempfile.TemporaryDirectory() as out, patch:
                t = clock()
                run_evaluation(specs, "medsam2-3d", out, params=params, workers=1, report=False)
                best[name] = min(best[name], clock() - t)
    C.promptable_model.cache_clear()
    return best


def decoder_times(lite, slices: list, repeat: int) -> dict[str, float]:
    """Seconds (CPU on a CPU) of one slice's decodes in the chain: its box and the four
    jittered boxes of the risk signal, by the module (one decode, then four, as before)
    and by the backend's decoder (one decode of the five), best of interleaved rounds."""
    import torch

    net = lite.network
    with torch.inference_mode():
        emb = net.encode(slices[0])
    box = [60, 70, 150, 180]
    jit = [[58, 72, 148, 183], [62, 69, 152, 178], [61, 71, 149, 181], [59, 68, 151, 182]]
    one, four = torch.tensor([box], dtype=torch.float32), torch.tensor(jit, dtype=torch.float32)
    five = torch.cat([one, four])
    fast = net.fast_decoder
    clock = time.perf_counter if lite.device.type == "cuda" else time.process_time

    def module():
        net.fast_decoder = None
        try:
            net.decode(emb, one)
            net.decode(emb, four)
        finally:
            net.fast_decoder = fast

    fns = {
        "module: box, then 4 jittered": module,
        "auto: the 5 boxes at once": lambda: net.decode(emb, five),
    }
    best = {k: float("inf") for k in fns}
    with torch.inference_mode():
        for fn in fns.values():
            fn()
        for _ in range(max(repeat, 3)):
            for name, fn in fns.items():
                _sync(lite.device)
                t = clock()
                fn()
                _sync(lite.device)
                best[name] = min(best[name], clock() - t)
    return best


def main(args: argparse.Namespace) -> int:
    """Print the encoder part; exit 3 when a path ``auto`` may take changes the masks."""
    import torch

    from napari_segeval.models.litemedsam import _recipe as R
    from napari_segeval.models.litemedsam import load_litemedsam
    from napari_segeval.models.precision import bf16_reason
    from napari_segeval.models.registry import precision_of

    if args.threads:
        torch.set_num_threads(args.threads)
    lite = load_litemedsam(args.device, precision="fp32")
    dev = lite.device
    from napari_segeval.io import read_case

    case = read_case(TASK / "imagesTr" / "abd_001.nii.gz")
    frames = lite.preprocess(np.asarray(case.image), "CT").to(dev)
    picks = np.linspace(4, frames.shape[0] - 5, args.slices).astype(int)
    slices = [R.model_input(frames[int(i)])[0][None] for i in picks]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"LiteMedSAM encoder on {dev}, {torch.get_num_threads()} threads, {len(slices)} "
        f"slices of abd_001, best of {args.repeat} interleaved rounds; load average "
        f"{load:.2f} on {os.cpu_count()} CPUs"
    )
    g = gflop(lite.network.image_encoder, slices[0])
    reason = bf16_reason(dev)
    rates = matmul_rates(dev, reason is None)
    fp32_rate = max(v for k, v in rates.items() if k.startswith("fp32"))
    bf16_rate = max((v for k, v in rates.items() if k.startswith("bf16")), default=float("nan"))
    print(f"  {g:.1f} GFLOP per slice (FlopCounterMode)")
    print("  matmul 2048^2: " + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in rates.items()))
    floor32, floor16 = g / fp32_rate, g / bf16_rate
    print(f"  floor at the best rate: fp32 {floor32:.3f} s/slice, bf16 {floor16:.3f} s/slice")
    if reason is not None:
        print(f"  bf16 not measured: {reason}")
    table = paths(lite, reason is None)
    fns = {k: v[0] for k, v in table.items()}
    offered = {k for k, v in table.items() if v[1]}
    best = time_paths(fns, slices, dev, args.repeat)
    # speed-ups from CPU seconds of this process on a CPU (other processes' load disturbs
    # them less than the wall clock), from the wall clock on a GPU
    col = 0 if dev.type == "cuda" else 1
    today = best[next(iter(best))][col]
    print(f"  {'path':<42} {'s/slice':>8} {'CPU s':>7} {'speed-up':>9} {'x floor':>8}")
    for name, times in best.items():
        floor = floor16 if "bf16" in name else floor32
        wall, cpu = times
        print(
            f"  {name:<42} {wall:8.3f} {cpu:7.3f} {today / times[col]:8.2f}x "
            f"{times[col] / floor:7.2f}x",
            flush=True,
        )
    chosen = str(precision_of("litemedsam", "auto", str(dev)))
    auto = next(
        k for k in best if k.startswith("--precision openvino" if chosen == "openvino" else "fp32")
    )
    fused = next(k for k in best if k.startswith("fp32"))
    print(f"  auto chooses {chosen}: {auto}")
    dec = decoder_times(lite, slices, args.repeat)
    first = next(iter(dec.values()))
    for name, sec in dec.items():
        print(f"  decoder, one slice, {name:<34} {sec:6.3f} s  {first / sec:5.2f}x")
    # the masks of the paths people can run (today's, auto's, --precision bf16)
    runnable = {k: v for k, v in fns.items() if "not offered" not in k}
    cases = sorted(p.name.split(".")[0] for p in (TASK / "imagesTr").glob("*.nii.gz"))
    agree = agreement(lite, runnable, cases[: args.cases], 4 if args.quick else 0)
    if not args.cases:  # timing only
        agree = {}
    wrong = False
    for name, dice in agree.items():
        low = min(dice.values())
        wrong |= name in offered and low < DICE
        worst = sorted(dice.items(), key=lambda kv: kv[1])[:3]
        print(
            f"  masks of {name:<33} min Dice {low:.4f} over {len(dice)} structures of "
            f"{min(args.cases, len(cases))} cases (lowest: "
            + ", ".join(f"{k} {v:.3f}" for k, v in worst)
            + ")",
            flush=True,
        )
    fp32_up = today / best[fused][col]
    auto_up = today / best[auto][col]
    # the fastest float32 path auto takes (OpenVINO's, where installed, is float32)
    fp32_best = auto if chosen in ("fp32", "openvino") else fused
    checks = [
        (
            best[fp32_best][col] / floor32 <= FLOOR_TARGET,
            f"fp32 ({fp32_best}) {best[fp32_best][col] / floor32:.2f}x its floor "
            f"(target <= {FLOOR_TARGET}x)",
        ),
        (fp32_up >= FP32_TARGET, f"fp32 {fp32_up:.2f}x today's eager (target >= {FP32_TARGET}x)"),
        (
            auto_up >= AUTO_TARGET,
            f"auto ({chosen}: bf16 does not keep the masks) {auto_up:.2f}x "
            f"today's eager (target >= {AUTO_TARGET}x)",
        ),
    ]
    if args.e2e:
        e2e = end_to_end(args.e2e, str(dev), chosen, args.repeat)
        t0 = e2e["today"]
        print(
            f"  medsam2-3d --model litemedsam, {args.e2e} sample case(s), "
            f"{'wall' if col == 0 else 'CPU'} s, best of {args.repeat}: "
            + ", ".join(f"{k} {v:.1f} ({t0 / v:.2f}x)" for k, v in e2e.items())
        )
        t1 = e2e[next(k for k in e2e if k.startswith("auto"))] if chosen != "fp32" else e2e["fp32"]
        checks.append(
            (t0 / t1 >= E2E_TARGET, f"end to end {t0 / t1:.2f}x (target >= {E2E_TARGET}x)")
        )
    for ok, text in checks:
        print(f"{'PASS' if ok else 'FAIL'} {text}")
    bf = best.get("--precision bf16") if agree else None
    bf_text = (
        f", bf16 {today / bf[col]:.2f}x (min Dice {min(agree['--precision bf16'].values()):.3f})"
        if bf
        else ""
    )
    print(
        f"SUMMARY litemedsam-encoder auto ({chosen}) {auto_up:.2f}x today{bf_text}, masks of "
        f"auto {'DIFFER' if wrong else 'kept'}"
    )
    return 3 if wrong else 0
