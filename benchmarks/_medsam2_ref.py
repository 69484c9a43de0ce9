"""Shared pieces of the MedSAM2 benchmarks: random weights, the reference, timing.

Not a benchmark itself (imported by ``bench_medsam2_speed.py`` and
``bench_multi_structure.py`` from this folder).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import numpy as np


def random_checkpoint(folder: Path) -> Path:
    """SAM2.1 Hiera-tiny 512 with random weights (seed 0), saved as ``{"model": ...}``."""
    import torch

    from napari_segeval.models.medsam2._build import build_network

    torch.manual_seed(0)
    path = Path(folder) / "random.pt"
    torch.save({"model": build_network().state_dict()}, path)
    return path


def jpeg_folder(folder: Path, n: int, hw: tuple[int, int]) -> Path:
    """A folder of ``n`` blank JPEG frames: the reference reads its frame count and size here."""
    from PIL import Image

    folder = Path(folder) / "jpg"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.fromarray(np.zeros((*hw, 3), np.uint8)).save(folder / f"{i:05d}.jpg")
    return folder


def use_cpu_hole_filling() -> None:
    """The reference fills mask holes with an optional CUDA kernel: give it the CPU equivalent."""
    import sam2.utils.misc as sam2_misc

    from napari_segeval.models.medsam2._loop import connected_components

    sam2_misc.get_connected_components = connected_components


def autocast(device) -> contextlib.AbstractContextManager:
    """bf16 autocast on CUDA, as MedSAM2's inference script (and our backend) use."""
    from napari_segeval.models._device import autocast_context

    return autocast_context(device)


def reference_per_object(pred, folder: Path, images, boxes, device) -> dict:
    """MedSAM2's own way: one inference state per object, forward, reset, reverse.

    Returns ``{(label, reverse): logits (n_visited, H, W)}`` in visit order.
    """
    import torch

    out = {}
    with torch.inference_mode(), autocast(device):
        for b in boxes:
            state = pred.init_state(video_path=str(folder))
            state["images"] = images
            state["cached_features"] = {}
            xyxy = [b.x0, b.y0, b.x1 - 1, b.y1 - 1]
            for reverse in (False, True):
                pred.reset_state(state)
                pred.add_new_points_or_box(state, frame_idx=b.index, obj_id=1, box=xyxy)
                rows = {
                    t: m[0, 0].float().clone()
                    for t, _, m in pred.propagate_in_video(state, reverse=reverse)
                }
                if not rows:  # the predictor skips a reverse walk from frame 0
                    rows = {b.index: out[(b.label, False)][0]}
                out[(b.label, reverse)] = torch.stack(
                    [rows[t] for t in sorted(rows, reverse=reverse)]
                )
            del state
    return out


def instrument(net, stats: dict, name: str) -> None:
    """Count the frames ``net``'s image encoder sees into ``stats[name]``, and time the
    encoder and ``track_step`` (``stats[name + "/encoder_s"]``, ``.../track_s``,
    ``.../track_n``): the profile that explains the ratios."""
    encode, track = net.forward_image, net.track_step
    for key in ("", "/encoder_s", "/encoder_cpu", "/track_s", "/track_cpu", "/track_n"):
        stats.setdefault(name + key, 0)

    def counted(img):
        stats[name] += int(img.shape[0])
        sync(img.device)
        t0, c0 = time.perf_counter(), time.process_time()
        out = encode(img)
        sync(img.device)
        stats[name + "/encoder_s"] += time.perf_counter() - t0
        stats[name + "/encoder_cpu"] += time.process_time() - c0
        return out

    def tracked(*args, **kwargs):
        t0, c0 = time.perf_counter(), time.process_time()
        out = track(*args, **kwargs)
        sync(out["pred_masks"].device)
        stats[name + "/track_s"] += time.perf_counter() - t0
        stats[name + "/track_cpu"] += time.process_time() - c0
        stats[name + "/track_n"] += int(out["pred_masks"].shape[0])
        return out

    net.forward_image = counted
    net.track_step = tracked


def sync(device) -> None:
    import torch

    if getattr(device, "type", str(device)) == "cuda":
        torch.cuda.synchronize()


def timed(fn, device):
    """``(result, wall seconds, process CPU seconds)`` of ``fn()``."""
    sync(device)
    t0, c0 = time.perf_counter(), time.process_time()
    result = fn()
    sync(device)
    return result, time.perf_counter() - t0, time.process_time() - c0


def spread(values: list[float]) -> str:
    """``best [min-max]`` of repeated measurements."""
    return f"{min(values):.2f} [{min(values):.2f}-{max(values):.2f}]"
