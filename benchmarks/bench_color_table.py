"""Colour-table label masks: the packed-colour unique against NumPy's row-wise unique.

:func:`napari_segeval.io._labels.apply_color_table` maps each pixel of an RGB mask
(a NeoPolyp or ISIC-style colour mask, JPEG noise included) to the nearest table
colour through the mask's distinct colours. It finds them by packing each 8-bit RGB
pixel into one integer (:func:`~napari_segeval.io._labels._unique_rows`); the
competitor is ``np.unique(pixels, axis=0, return_inverse=True)`` on the same pixels,
in the same process. Prints both times, the ratio, and that both agree.

Usage::

    python benchmarks/bench_color_table.py --size 1024 1280 --repeat 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def noisy_mask(h: int, w: int, seed: int = 0) -> np.ndarray:
    """An RGB mask with two coloured regions and +-3 JPEG-like noise on every pixel."""
    rng = np.random.default_rng(seed)
    px = np.zeros((h, w, 3), np.int16)
    px[h // 5 : 3 * h // 5, w // 4 : 3 * w // 4] = (250, 3, 4)
    px[7 * h // 10 : 9 * h // 10, w // 10 : w // 2] = (10, 240, 20)
    return np.clip(px + rng.integers(-3, 4, px.shape), 0, 255).astype(np.uint8)


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, nargs=2, default=(1024, 1280), metavar=("H", "W"))
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    from napari_segeval.io._labels import _unique_rows, apply_color_table

    flat = noisy_mask(*args.size).reshape(-1, 3)
    ours, theirs = _unique_rows(flat), np.unique(flat, axis=0, return_inverse=True)
    same = np.array_equal(ours[0], theirs[0]) and np.array_equal(ours[1].ravel(), theirs[1].ravel())
    t_ours = best(lambda: _unique_rows(flat), args.repeat)
    t_theirs = best(lambda: np.unique(flat, axis=0, return_inverse=True), args.repeat)
    table = {(255, 0, 0): 1, (0, 255, 0): 2, (0, 0, 0): 0}
    t_all = best(lambda: apply_color_table(flat.reshape(*args.size, 3), table, "mask"), args.repeat)
    print(
        f"{args.size[0]} x {args.size[1]} RGB mask, {len(ours[0])} distinct colours "
        f"(best of {args.repeat})"
    )
    print(f"  packed unique      {t_ours * 1e3:8.1f} ms")
    print(f"  np.unique(axis=0)  {t_theirs * 1e3:8.1f} ms")
    print(f"  ratio              {t_theirs / t_ours:8.1f}x faster; same result: {same}")
    print(f"  apply_color_table  {t_all * 1e3:8.1f} ms (whole mapping)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
