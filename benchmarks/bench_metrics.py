"""Benchmarks of the metrics engine against the plain-numpy floor and peer packages.

Run: ``python benchmarks/bench_metrics.py`` (about 10-15 minutes on 2 cores), or
name sections: ``python benchmarks/bench_metrics.py command`` (sections:
overlap, live, surface, command). The command section has two cases: (d) 14
organs (22 % of a 300x512x512 volume, .nii.gz) in this process, and (e) 14 small
structures (2 %, uncompressed .nii) with both sides run as fresh processes, so
start-up and imports count.
Each ratio times both sides after a warm-up call and takes medians; where the
machine load matters (structure growth, surface peers) both sides run alternately.
Peers (MONAI, DeepMind ``surface-distance``) come from the ``bench`` extra; a
missing peer is skipped and reported. Every ratio is measured side by side in
this run and printed with its target and PASS/FAIL.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import ndimage

from napari_segeval.metrics import LiveMetrics, confusion_matrix, surface_metrics

SHAPE = (300, 512, 512)
ROWS: list[tuple] = []


def best(fn, repeat=3, warmup=True):
    """Median wall time of ``repeat`` calls after one untimed warm-up call, and the output."""
    if warmup:
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def interleaved(fa, fb, repeat=7):
    """Medians of ``fa`` and ``fb`` timed alternately in one loop (same machine load)."""
    fa(), fb()
    ta, tb = [], []
    for _ in range(repeat):
        for fn, times in ((fa, ta), (fb, tb)):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return statistics.median(ta), statistics.median(tb)


def report(what, ours, theirs, ratio, target, ok, note=""):
    ROWS.append((what, ours, theirs, ratio, target, "PASS" if ok else "FAIL", note))
    print(
        f"  {what}: ours {ours:.4f}s  other {theirs:.4f}s  ratio {ratio:.2f}  ({target})",
        flush=True,
    )


def label_map(n_structures, seed, shape=SHAPE, fill=0.22):
    """Ellipsoidal organs of similar size, first come first served, ~20% foreground."""
    rng = np.random.default_rng(seed)
    ref = np.zeros(shape, np.uint8)
    vol = np.prod(shape) * fill / n_structures
    for k in range(1, n_structures + 1):
        r = (vol * 3 / (4 * np.pi)) ** (1 / 3) * rng.uniform(0.7, 1.3, 3)
        r = np.minimum(r, np.array(shape) / 2 - 2)
        c = [rng.uniform(r[i] + 1, shape[i] - r[i] - 1) for i in range(3)]
        box = tuple(
            slice(max(0, int(c[i] - r[i]) - 1), min(shape[i], int(c[i] + r[i]) + 2))
            for i in range(3)
        )
        g = np.ogrid[box]
        inside = sum(((g[i] - c[i]) / r[i]) ** 2 for i in range(3)) <= 1
        sub = ref[box]
        sub[inside & (sub == 0)] = k
    return ref


def predict(ref, seed):
    """A plausible prediction: shifted by a voxel or two, one structure confused, a false blob."""
    pred = np.roll(ref, (1, 2, -1), axis=(0, 1, 2))
    pred[pred == 3] = 4
    pred[10:30, 20:60, 20:60] = 5
    return pred


def per_class_loop(ref, pred, n):
    return [
        (
            int(np.count_nonzero((ref == k) & (pred == k))),
            int(np.count_nonzero(ref == k)),
            int(np.count_nonzero(pred == k)),
        )
        for k in range(1, n)
    ]


def bench_overlap():
    print("overlap (a) 14 structures and (b) 104 structures, 300x512x512", flush=True)
    a_ref = label_map(14, 0)
    a_pred = predict(a_ref, 0)
    print(f"  (a) foreground {np.count_nonzero(a_ref) / a_ref.size:.1%}", flush=True)
    t_plain, _ = best(
        lambda: int(a_ref.sum(dtype=np.uint64)) + int(a_pred.sum(dtype=np.uint64)), repeat=5
    )
    t_a, cm_a = best(lambda: confusion_matrix(a_ref, a_pred), repeat=5)
    t_loop_a, loop_a = best(lambda: per_class_loop(a_ref, a_pred, 15), repeat=1, warmup=False)
    same = all((cm_a[k, k], cm_a[k].sum(), cm_a[:, k].sum()) == loop_a[k - 1] for k in range(1, 15))
    report(
        "(a) overlap vs plain pass (floor)",
        t_a,
        t_plain,
        t_a / t_plain,
        "ours/plain <= 5",
        t_a / t_plain <= 5,
    )
    report(
        "(a) overlap vs per-class loop",
        t_a,
        t_loop_a,
        t_loop_a / t_a,
        ">= 3x",
        t_loop_a / t_a >= 3 and same,
        "identical counts" if same else "COUNTS DIFFER",
    )
    t_monai = _monai_dice(a_ref, a_pred, cm_a)
    if t_monai is not None:
        report(
            "(a) overlap vs MONAI DiceMetric",
            t_a,
            t_monai,
            t_monai / t_a,
            ">= 100x",
            t_monai / t_a >= 100,
            "MONAI on 60 of 300 slices x5",
        )
    b_ref = label_map(104, 1)
    b_pred = predict(b_ref, 1)
    fg_a = np.count_nonzero(a_ref | a_pred) / a_ref.size
    fg_b = np.count_nonzero(b_ref | b_pred) / b_ref.size
    print(
        f"  (b) foreground {np.count_nonzero(b_ref) / b_ref.size:.1%}; "
        f"union of both maps: (a) {fg_a:.1%}, (b) {fg_b:.1%}",
        flush=True,
    )
    # (a) and (b) have the same foreground fraction (~20%, the voxels that are counted), so
    # the ratio isolates the number of structures; both timed alternately, median of 7
    t_a2, t_b = interleaved(
        lambda: confusion_matrix(a_ref, a_pred), lambda: confusion_matrix(b_ref, b_pred)
    )
    cm_b = confusion_matrix(b_ref, b_pred)
    t_loop_b, loop_b = best(lambda: per_class_loop(b_ref, b_pred, 105), repeat=1, warmup=False)
    same = all(
        (cm_b[k, k], cm_b[k].sum(), cm_b[:, k].sum()) == loop_b[k - 1] for k in range(1, 105)
    )
    report(
        "(b) overlap vs per-class loop",
        t_b,
        t_loop_b,
        t_loop_b / t_b,
        ">= 15x",
        t_loop_b / t_b >= 15 and same,
        "identical counts" if same else "COUNTS DIFFER",
    )
    report(
        "(b)/(a) cost growth with structures",
        t_b,
        t_a2,
        t_b / t_a2,
        "<= 1.5",
        t_b / t_a2 <= 1.5,
        f"union foreground (a) {fg_a:.1%} (b) {fg_b:.1%}; alternate runs, median of 7",
    )
    return a_ref


def _monai_dice(ref, pred, cm):
    try:
        import torch
        from monai.metrics import DiceMetric
    except ImportError as exc:
        print(f"  MONAI skipped: not installed ({exc})")
        ROWS.append(
            (
                "(a) overlap vs MONAI DiceMetric",
                float("nan"),
                float("nan"),
                float("nan"),
                ">= 100x",
                "SKIP",
                "MONAI not installed",
            )
        )
        return None
    z = 60  # a 15-class float one-hot of the full volume needs ~10 GB: time 1/5 and scale
    r = torch.as_tensor(ref[:z].astype(np.int64))
    p = torch.as_tensor(pred[:z].astype(np.int64))

    def run(r=r, p=p):
        oh_r = torch.nn.functional.one_hot(r, 15).permute(3, 0, 1, 2)[None].float()
        oh_p = torch.nn.functional.one_hot(p, 15).permute(3, 0, 1, 2)[None].float()
        return DiceMetric(include_background=False, reduction="none")(oh_p, oh_r)

    run(r[:4], p[:4])  # warm-up on 4 slices
    t, _ = best(run, repeat=1, warmup=False)
    return t * ref.shape[0] / z


def liver_pair(shape=(140, 340, 300), spacing=(1.5, 0.8, 0.8)):
    """A liver-sized organ (~2 L at 1.5 x 0.8 x 0.8 mm) and a prediction off by a few mm."""
    g = np.ogrid[tuple(slice(0, s) for s in shape)]
    c = [s / 2 for s in shape]
    semi = (70 / spacing[0], 100 / spacing[1], 80 / spacing[2])

    def field(seed, lo_shape):
        lo = np.random.default_rng(seed).normal(size=lo_shape)
        return ndimage.zoom(lo, [a / b for a, b in zip(shape, lo_shape)], order=1).astype(
            np.float32
        )

    d = sum((((g[i] - c[i]) / semi[i]) ** 2).astype(np.float32) for i in range(3))
    base = 1 + 0.15 * field(0, (5, 7, 7))
    return d <= base, d <= base + 0.04 * field(1, (10, 20, 20)) + 0.02, spacing


def bench_surface():
    ref, pred, sp = liver_pair()
    print(f"surface (c) liver pair {ref.sum() * np.prod(sp) / 1e6:.2f} L at {sp} mm", flush=True)

    def ours():
        return surface_metrics(ref, pred, sp, tolerance_mm=2.0)

    # every comparison times ours and the peer alternately (warm-up, then median of 3 each)
    t_ours, m = best(ours, repeat=5)
    sd = _surface_distance()
    if sd is None:
        ROWS.append(
            (
                "(c) surface vs DeepMind",
                t_ours,
                float("nan"),
                float("nan"),
                ">= 5x",
                "SKIP",
                "not installed",
            )
        )
    else:

        def dm():
            d = sd.compute_surface_distances(ref, pred, sp)
            return (
                sd.compute_robust_hausdorff(d, 95),
                sd.compute_surface_dice_at_tolerance(d, 2.0),
                sd.compute_average_surface_distance(d),
            )

        t_ours, t_dm = interleaved(ours, dm, repeat=3)
        hd95, nsd, _ = dm()
        d95, dn = abs(hd95 - m["hd95"]), abs(nsd - m["nsd"])
        report(
            "(c) surface (hd,hd95,assd,nsd) vs DeepMind",
            t_ours,
            t_dm,
            t_dm / t_ours,
            ">= 5x",
            t_dm / t_ours >= 5,
            f"|dHD95|={d95:.1e} |dNSD|={dn:.1e}",
        )
        ROWS.append(
            (
                "(c) HD95 equal to DeepMind",
                m["hd95"],
                hd95,
                d95,
                "<= 1e-6 mm",
                "PASS" if d95 <= 1e-6 else "FAIL",
                "",
            )
        )
        ROWS.append(
            (
                "(c) NSD equal to DeepMind",
                m["nsd"],
                nsd,
                dn,
                "<= 1e-9",
                "PASS" if dn <= 1e-9 else "FAIL",
                "",
            )
        )
    try:
        import torch
        from monai.metrics import compute_hausdorff_distance, compute_surface_dice
    except ImportError as exc:
        print(f"  MONAI skipped: not installed ({exc})")
        ROWS.append(
            (
                "(c) surface vs MONAI",
                t_ours,
                float("nan"),
                float("nan"),
                ">= 5x",
                "SKIP",
                "not installed",
            )
        )
        return
    r = torch.as_tensor(ref[None, None])
    p = torch.as_tensor(pred[None, None])
    r2 = torch.cat([~r, r], 1).float()
    p2 = torch.cat([~p, p], 1).float()
    t_ours_hd, t_hd = interleaved(
        ours, lambda: compute_hausdorff_distance(p, r, percentile=95, spacing=sp), 3
    )
    hd_m = compute_hausdorff_distance(p, r, percentile=95, spacing=sp)
    t_ours_nsd, t_nsd = interleaved(
        ours, lambda: compute_surface_dice(p2, r2, class_thresholds=[2.0], spacing=sp), 3
    )
    report(
        "(c) surface vs MONAI HD95",
        t_ours_hd,
        t_hd,
        t_hd / t_ours_hd,
        ">= 5x",
        t_hd / t_ours_hd >= 5,
        f"MONAI HD95 {hd_m.item():.3f} vs ours {m['hd95']:.3f} (unweighted edge voxels)",
    )
    report(
        "(c) surface vs MONAI NSD",
        t_ours_nsd,
        t_nsd,
        t_nsd / t_ours_nsd,
        ">= 5x",
        t_nsd / t_ours_nsd >= 5,
    )


def _surface_distance():
    """DeepMind's ``surface-distance`` (bench extra), or None when it is not installed."""
    if not hasattr(np, "Inf"):
        setattr(np, "Inf", np.inf)  # noqa: B010  surface-distance 0.1 uses np.Inf, gone in numpy 2
    try:
        import surface_distance
    except ImportError as exc:
        print(f"  surface-distance skipped: not installed ({exc})")
        return None
    return surface_distance


COMMAND_SPACING = (1.5, 0.8, 0.8)  # z, y, x in mm


def write_command_pair(folder: Path) -> tuple[Path, Path]:
    """A 14-structure 300x512x512 reference and prediction as NIfTI files (deterministic)."""
    from napari_segeval.io import Geometry, write_labels

    ref = label_map(14, 0)
    pred = predict(ref, 0)  # shifted, structure 3 predicted as 4, a false blob of 5
    geometry = Geometry.identity(3, COMMAND_SPACING)
    return (
        write_labels(folder / "ref.nii.gz", ref, geometry),
        write_labels(folder / "pred.nii.gz", pred, geometry),
    )


def command_ours(ref_path: Path, pred_path: Path) -> dict:
    """``segeval metrics REF PRED --json`` in this process, as a fresh process would run it.

    The surfel table cache is emptied first, so every call pays the per-process
    table construction. Returns ``{label: row}`` from the printed JSON.
    """
    from napari_segeval.cli import main
    from napari_segeval.metrics._surfel_tables import _facets_3d

    _facets_3d.cache_clear()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["metrics", str(ref_path), str(pred_path), "--json"])
    if code != 0:
        raise RuntimeError(f"segeval metrics exited with {code}")
    return {r["label"]: r for r in json.loads(out.getvalue())["structures"]}


def command_common(ref_path: Path, pred_path: Path, sd) -> dict:
    """The same numbers the common way: nibabel, numpy Dice, DeepMind HD95 and NSD per structure."""
    import nibabel as nib

    ref_img, pred_img = nib.load(str(ref_path)), nib.load(str(pred_path))
    ref = np.asanyarray(ref_img.dataobj)
    pred = np.asanyarray(pred_img.dataobj)
    spacing = tuple(float(z) for z in ref_img.header.get_zooms())
    out = {}
    for k in range(1, max(int(ref.max()), int(pred.max())) + 1):
        a, b = ref == k, pred == k
        n = np.count_nonzero(a) + np.count_nonzero(b)
        if n == 0:
            continue
        d = sd.compute_surface_distances(a, b, spacing)
        out[k] = {
            "dice": 2 * np.count_nonzero(a & b) / n,
            "hd95": float(sd.compute_robust_hausdorff(d, 95)),
            "nsd": float(sd.compute_surface_dice_at_tolerance(d, 2.0)),
        }
    return out


def _differences(ours: dict, common: dict) -> dict[str, float]:
    """Max |ours - common| per metric over structures (equal infinities count as 0)."""
    if set(ours) != set(common):
        return {"structures": float("inf")}
    worst = {}
    for key in ("dice", "hd95", "nsd"):
        diffs = []
        for k, row in common.items():
            a = float(ours[k][key])  # JSON writes infinity as "inf"
            b = row[key]
            diffs.append(0.0 if a == b else abs(a - b))
        worst[key] = max(diffs)
    return worst


def bench_command(repeat=3):
    """End to end ``segeval metrics --json`` vs the common way, alternately, ``repeat`` times."""
    print(
        f"command (d) segeval metrics --json, 14 structures {SHAPE} at {COMMAND_SPACING} mm",
        flush=True,
    )
    sd = _surface_distance()
    if sd is None:
        ROWS.append(
            (
                "(d) segeval metrics vs common way",
                float("nan"),
                float("nan"),
                float("nan"),
                ">= 5x",
                "SKIP",
                "surface-distance not installed",
            )
        )
        return
    from napari_segeval.metrics._surfel_tables import _facets_3d, surfel_area_table_3d

    with tempfile.TemporaryDirectory(prefix="segeval-bench-") as tmp:
        ref_path, pred_path = write_command_pair(Path(tmp))
        # warm-up: imports of both sides (nibabel, scipy, surface-distance) on a small case
        small = Path(tmp) / "small"
        small.mkdir()
        s_ref, s_pred = write_small_pair(small)
        command_ours(s_ref, s_pred), command_common(s_ref, s_pred, sd)
        _facets_3d.cache_clear()
        t = time.perf_counter()
        surfel_area_table_3d(COMMAND_SPACING)
        t_table = time.perf_counter() - t
        print(f"  surfel area table, first call in a process: {t_table * 1000:.1f} ms", flush=True)
        t_ours, t_common, worst = [], [], {}
        for i in range(repeat):
            t = time.perf_counter()
            ours = command_ours(ref_path, pred_path)
            t_ours.append(time.perf_counter() - t)
            t = time.perf_counter()
            common = command_common(ref_path, pred_path, sd)
            t_common.append(time.perf_counter() - t)
            worst = _differences(ours, common)
            print(
                f"  run {i + 1}: ours {t_ours[-1]:.2f}s  common {t_common[-1]:.2f}s  "
                f"ratio {t_common[-1] / t_ours[-1]:.1f}  max |diff| "
                + "  ".join(f"{k} {v:.1e}" for k, v in worst.items()),
                flush=True,
            )
    ratios = [c / o for o, c in zip(t_ours, t_common)]
    diff = max(worst.values())
    same = diff <= 1e-9
    report(
        "(d) segeval metrics --json vs common way",
        statistics.median(t_ours),
        statistics.median(t_common),
        statistics.median(ratios),
        ">= 5x, equal values",
        min(ratios) >= 5 and same,
        f"ratio min {min(ratios):.1f} max {max(ratios):.1f} over {repeat} runs; max |diff| "
        + " ".join(f"{k} {v:.1e}" for k, v in worst.items()),
    )
    ROWS.append(
        (
            "(d) surfel table, first call in a process (ms)",
            t_table,
            float("nan"),
            t_table * 1000,
            "< 50 ms",
            "PASS" if t_table < 0.05 else "FAIL",
            "ratio column = ms",
        )
    )


#: The common way as a script of its own (run in a fresh process): nibabel, numpy
#: Dice, DeepMind's surface-distance per structure; prints {label: row} as JSON.
COMMON_SCRIPT = """
import json, sys
import nibabel as nib
import numpy as np
if not hasattr(np, "Inf"):
    np.Inf = np.inf
import surface_distance as sd
ref_img, pred_img = nib.load(sys.argv[1]), nib.load(sys.argv[2])
ref, pred = np.asanyarray(ref_img.dataobj), np.asanyarray(pred_img.dataobj)
spacing = tuple(float(z) for z in ref_img.header.get_zooms())
out = {}
for k in range(1, max(int(ref.max()), int(pred.max())) + 1):
    a, b = ref == k, pred == k
    n = np.count_nonzero(a) + np.count_nonzero(b)
    if n == 0:
        continue
    d = sd.compute_surface_distances(a, b, spacing)
    out[k] = {"dice": 2 * np.count_nonzero(a & b) / n,
              "hd95": float(sd.compute_robust_hausdorff(d, 95)),
              "nsd": float(sd.compute_surface_dice_at_tolerance(d, 2.0))}
print(json.dumps(out))
"""


def write_sparse_pair(folder: Path) -> tuple[Path, Path]:
    """14 small structures (2 % of 300x512x512) as uncompressed NIfTI (deterministic)."""
    from napari_segeval.io import Geometry, write_labels

    ref = label_map(14, 0, fill=0.02)
    pred = predict(ref, 0)
    geometry = Geometry.identity(3, COMMAND_SPACING)
    return (
        write_labels(folder / "ref.nii", ref, geometry),
        write_labels(folder / "pred.nii", pred, geometry),
    )


def _fresh(argv: list[str]) -> tuple[float, str]:
    """Wall time and standard output of ``argv`` run as a fresh process."""
    import subprocess

    t = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return time.perf_counter() - t, done.stdout


def bench_command_fresh(repeat=5):
    """(e) ``segeval metrics --json`` vs the common way, each a fresh process, small structures."""
    import shutil

    print(
        f"command (e) fresh processes, 14 small structures (2 %) {SHAPE}, uncompressed NIfTI",
        flush=True,
    )
    if _surface_distance() is None:
        ROWS.append(
            (
                "(e) segeval metrics, fresh, small structures",
                float("nan"),
                float("nan"),
                float("nan"),
                ">= 3x",
                "SKIP",
                "surface-distance not installed",
            )
        )
        return
    segeval = shutil.which("segeval") or str(Path(sys.executable).parent / "segeval")
    with tempfile.TemporaryDirectory(prefix="segeval-bench-") as tmp:
        ref_path, pred_path = write_sparse_pair(Path(tmp))
        ours_cmd = [segeval, "metrics", str(ref_path), str(pred_path), "--json"]
        common_cmd = [sys.executable, "-c", COMMON_SCRIPT, str(ref_path), str(pred_path)]
        _fresh(ours_cmd), _fresh(common_cmd)  # page cache and .pyc files warm for both
        t_ours, t_common = [], []
        for i in range(repeat):
            t, out_ours = _fresh(ours_cmd)
            t_ours.append(t)
            t, out_common = _fresh(common_cmd)
            t_common.append(t)
            print(
                f"  run {i + 1}: ours {t_ours[-1]:.2f}s  common {t_common[-1]:.2f}s  "
                f"ratio {t_common[-1] / t_ours[-1]:.2f}",
                flush=True,
            )
    ours = {r["label"]: r for r in json.loads(out_ours)["structures"]}
    common = {int(k): v for k, v in json.loads(out_common).items()}
    worst = _differences(ours, common)
    ratios = [c / o for o, c in zip(t_ours, t_common)]
    same = max(worst.values()) <= 1e-9
    report(
        "(e) segeval metrics, fresh, small structures",
        statistics.median(t_ours),
        statistics.median(t_common),
        statistics.median(ratios),
        ">= 3x, equal values",
        statistics.median(ratios) >= 3 and same,
        f"ratio min {min(ratios):.2f} max {max(ratios):.2f} over {repeat} runs; max |diff| "
        + " ".join(f"{k} {v:.1e}" for k, v in worst.items()),
    )


def write_small_pair(folder: Path) -> tuple[Path, Path]:
    """Two small label maps (warm-up of both sides' imports)."""
    from napari_segeval.io import Geometry, write_labels

    ref = label_map(3, 5, shape=(20, 40, 40))
    pred = np.roll(ref, 1, axis=1)
    geometry = Geometry.identity(3, COMMAND_SPACING)
    return (
        write_labels(folder / "ref.nii.gz", ref, geometry),
        write_labels(folder / "pred.nii.gz", pred, geometry),
    )


def bench_live(ref):
    pred = predict(ref, 2)
    live = LiveMetrics(ref, pred, (1.5, 0.8, 0.8))
    times = []
    rng = np.random.default_rng(0)
    for _ in range(30):
        z = int(rng.integers(0, ref.shape[0]))
        y, x = rng.integers(0, 480, 2)
        pred[z, y : y + 30, x : x + 30] = 2  # a brush stroke on one slice
        t = time.perf_counter()
        live.update(z)
        live.table()
        times.append(time.perf_counter() - t)
    med = statistics.median(times)
    expected = confusion_matrix(ref, pred)
    ok = all(r["tp"] == expected[r["label"], r["label"]] for r in live.table())
    ROWS.append(
        (
            "(a) live update after a one-slice edit (median of 30)",
            med,
            float("nan"),
            med * 1000,
            "< 20 ms",
            "PASS" if med < 0.020 and ok else "FAIL",
            "ratio column = ms; counts checked",
        )
    )


SECTIONS = ("overlap", "live", "surface", "command")


def main(argv: list[str] | None = None) -> int:
    sections = set(argv or SECTIONS)
    if not sections <= set(SECTIONS):
        print(f"unknown section(s) {sorted(sections - set(SECTIONS))}; sections: {SECTIONS}")
        return 2
    t0 = time.perf_counter()
    if sections & {"overlap", "live"}:
        a_ref = bench_overlap() if "overlap" in sections else label_map(14, 0)
        if "live" in sections:
            bench_live(a_ref)
        del a_ref
    if "surface" in sections:
        bench_surface()
    if "command" in sections:
        bench_command()
        bench_command_fresh()
    print(
        f"\n{'what':<52} {'ours (s)':>9} {'other (s)':>10} {'ratio':>9}  {'target':<16} result  note"
    )
    for what, ours, theirs, ratio, target, ok, note in ROWS:
        print(
            f"{what:<52} {ours:>9.4f} {theirs:>10.4f} {ratio:>9.3g}  {target:<16} {ok:<6}  {note}"
        )
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0 if all(r[5] != "FAIL" for r in ROWS) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
