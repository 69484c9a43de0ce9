"""Training stacks of the built-in promptable model and the frames it sees of them: ``scene``
(:mod:`.shapes`, rendered afresh each time), ``ct`` (phantoms under a random window), ``us`` (echo
clips) and ``rgb`` (colour phantoms turned grey); :func:`frames` also pastes objects."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from napari_segeval.models.dense.unet2d import resize2d
from napari_segeval.phantoms.ct import make_ct_case
from napari_segeval.phantoms.echo import make_echo_clip
from napari_segeval.phantoms.images2d import make_polyp_image, make_skin_image
from napari_segeval.training import appearance, shapes

#: In-plane sizes of generated stacks (their objects scale with them only in part).
SCENE_SIZES = (96, 128, 160)
CT_SHAPES = ((40, 112, 112), (32, 96, 96), (48, 128, 128), (40, 128, 112), (36, 144, 144))
CT_SPACINGS = ((2.5, 1.2, 1.2), (3.0, 1.4, 1.4), (2.0, 1.0, 1.0))


@dataclass
class Stack:
    """One training stack: labels ``(n, H, W)`` plus an image or a class map to render."""

    kind: str
    labels: torch.Tensor
    image: torch.Tensor | None = None
    classes: torch.Tensor | None = None
    n_classes: int = 0
    present: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        lab = self.labels.numpy()
        for k in np.unique(lab):
            if k:
                self.present[int(k)] = np.nonzero((lab == k).any(axis=(1, 2)))[0]


def scene_stack(rng: np.random.Generator, depth: tuple[int, int] = (12, 40)) -> Stack:
    """A generated scene as a stack (``depth`` slices, one of :data:`SCENE_SIZES` in-plane)."""
    side = int(rng.choice(SCENE_SIZES))
    nz = int(rng.integers(depth[0], depth[1] + 1))
    s = shapes.make_scene(rng, (nz, side, side))
    classes = torch.from_numpy(s.classes.astype(np.int16))
    return Stack("scene", torch.from_numpy(s.labels), classes=classes, n_classes=s.n_classes)


def phantom_stacks(n_ct: int, n_echo: int, n_rgb: int, log=print) -> list[Stack]:
    """CT, echo and 2D colour phantoms of seeds ``0 .. n-1`` (all below 1000)."""
    out = []
    for seed in range(n_ct):
        shape = CT_SHAPES[seed % len(CT_SHAPES)]
        spacing = CT_SPACINGS[(seed // len(CT_SHAPES)) % len(CT_SPACINGS)]
        case = make_ct_case(seed, shape=shape, spacing=spacing)
        image = torch.from_numpy(case.image.astype(np.float32))
        out.append(Stack("ct", torch.from_numpy(case.labels), image=image))
    for seed in range(n_echo):
        case = make_echo_clip(seed, shape=(112, 112) if seed % 2 else (128, 144))
        img = case.image[..., :3].mean(axis=-1) if case.image.ndim == 4 else case.image
        image = torch.from_numpy(img.astype(np.float32) / 255.0)
        out.append(Stack("us", torch.from_numpy(case.labels), image=image))
    for seed in range(n_rgb):
        make = make_polyp_image if seed % 2 else make_skin_image
        case = make(seed, shape=(128, 160))
        grey = case.image[..., :3].astype(np.float32).mean(axis=-1) / 255.0
        assert case.labels is not None  # a phantom has its labels
        image = torch.from_numpy(grey[None])
        out.append(Stack("rgb", torch.from_numpy(case.labels[None]), image=image))
    log(f"phantom stacks: {n_ct} CT, {n_echo} echo, {n_rgb} colour")
    return out


def ct_window(rng: np.random.Generator, hu: torch.Tensor, volume: torch.Tensor) -> torch.Tensor:
    """HU to ``[0, 1]`` through a random window (abdomen-like, wide, narrow, min-max, percentiles)."""
    r = rng.random()
    if r < 0.55:
        lo, width = rng.uniform(-20, 80), rng.uniform(250, 500)
        lo -= width / 2
    elif r < 0.65:
        width = rng.uniform(500, 2000)
        lo = rng.uniform(-200, 300) - width / 2
    elif r < 0.75:
        width = rng.uniform(100, 250)
        lo = rng.uniform(0, 100) - width / 2
    elif r < 0.9:  # min-max of the volume clipped to a window (MedSAM2's preset)
        level, width = rng.uniform(-50, 100), rng.uniform(300, 2500)
        lo = max(float(volume.min()), level - width / 2)
        width = min(float(volume.max()), level + width / 2) - lo
    else:  # percentiles, as MR normalization would do
        sample = volume.flatten()[::97].float()
        lo, hi = (float(v) for v in torch.quantile(sample, torch.tensor([0.005, 0.995])))
        width = hi - lo
    return ((hu - lo) / max(width, 1e-3)).clamp(0, 1)


def _paste(rng: np.random.Generator, bg: torch.Tensor, obj: torch.Tensor) -> torch.Tensor:
    """``obj`` (bool ``(S, H, W)``) with its own intensity and texture on ``bg``."""
    _, h, w = bg.shape
    o = obj.float()[:, None]
    ring = (F.max_pool2d(o, 7, 1, 3)[:, 0] > 0.5) & ~obj
    base = float(bg[ring].mean()) if ring.any() else float(bg.mean())
    sign = 1.0 if rng.random() < 0.5 else -1.0
    value = base + sign * rng.uniform(0.06, 0.45)
    if not 0.0 <= value <= 1.0:
        value = base - sign * rng.uniform(0.06, 0.45)
    tex = appearance.smooth_noise(rng, 1, h, w, int(rng.integers(4, 24)))
    alpha = appearance.blur(obj.float(), float(rng.uniform(0.3, 1.2)))
    inside = value + rng.uniform(0, 0.1) * tex + rng.uniform(0, 0.5) * (bg - base)
    return bg * (1 - alpha) + inside * alpha


def frames(
    rng: np.random.Generator,
    stack: Stack,
    idx: list[int],
    label: int,
    background: Stack | None = None,
) -> torch.Tensor:
    """Frames ``idx`` of ``stack`` in ``[0, 1]`` with a random appearance, object ``label`` kept
    visible in a scene; with a phantom ``background``, the scene's object pasted on its frames."""
    target = stack.labels[idx] == label
    if background is not None:
        bz = int(rng.integers(background.labels.shape[0]))
        bidx = [min(max(bz + i - idx[0], 0), background.labels.shape[0] - 1) for i in idx]
        bg = _unit(rng, background, bidx)
        bg = resize2d(bg[:, None], target.shape[1:], "bilinear")[:, 0]
        img = _paste(rng, bg, target)
        return appearance.restyle(rng, img, strength=float(rng.uniform(0.2, 1.0)))
    if stack.kind == "scene":
        assert stack.classes is not None  # a scene stack has its class map
        contrast, rgb = float(rng.uniform(0.04, 0.2)), rng.random() < 0.2
        classes = stack.classes[idx]
        img = appearance.render(
            rng, classes, stack.n_classes, target=target, min_contrast=contrast, rgb=rgb
        )
        return appearance.restyle(rng, img)
    img = _unit(rng, stack, idx)
    ct = stack.kind == "ct"
    if rng.random() < (0.5 if ct else 0.3):  # as the phantom is
        return img
    style = stack.kind if rng.random() < 0.7 else None  # a phantom's kind is its style
    strength = float(rng.uniform(0.0, 0.7 if ct else 1.0))
    return appearance.restyle(rng, img, style=style, strength=strength)


def _unit(rng: np.random.Generator, stack: Stack, idx: list[int]) -> torch.Tensor:
    assert stack.image is not None  # only a scene stack has none, and it is rendered
    img = stack.image[idx]
    return ct_window(rng, img, stack.image) if stack.kind == "ct" else img.clone()
