"""Build the SAM2-family networks (MedSAM2, SAM2.1 in four sizes) and load checkpoints.

From their YAML configs with ``build_sam2_video_predictor(apply_postprocessing=True)``'s
settings; checkpoints are read as data and loaded strictly; another size's weights are named.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from napari_segeval._errors import MissingDependencyError, ReadError
from napari_segeval.models._checkpoint import content_error, load_state_strict, read_checkpoint

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: The project's model config (SAM2.1 Hiera-tiny, 512 px, 7 memory frames).
CONFIG_PATH = Path(__file__).with_name("sam2.1_hiera_t512.yaml")
#: ``fill_hole_area`` of MedSAM2's and SAM2.1's video predictors (low-res mask holes up to 8 px).
FILL_HOLE_AREA = 8
#: Settings Meta's ``build_sam2_video_predictor`` adds to every config (``apply_postprocessing``).
POSTPROCESSING = {
    "sam_mask_decoder_extra_args": {
        "dynamic_multimask_via_stability": True,
        "dynamic_multimask_stability_delta": 0.05,
        "dynamic_multimask_stability_thresh": 0.98,
    },
    "binarize_mask_from_pts_for_mem_enc": True,
}

_PURPOSE = "The MedSAM2/SAM2.1 backend"
#: What a MedSAM2 checkpoint is called in messages.
WHAT = "MedSAM2 checkpoint"


@dataclass(frozen=True)
class Architecture:
    """One network of the SAM2 family that this backend builds."""

    name: str
    label: str
    config: str
    what: str
    trunk: tuple[int, int]
    image_size: int


_META = "sam2:configs/sam2.1/sam2.1_hiera_{}.yaml"
#: Every network by registry name.
ARCHITECTURES: dict[str, Architecture] = {
    a.name: a
    for a in (
        Architecture("medsam2", "SAM2.1 Hiera-tiny 512", CONFIG_PATH.name, WHAT, (96, 12), 512),
        *(
            Architecture(
                f"sam2.1-{size}",
                f"SAM2.1 Hiera-{size} 1024",
                _META.format(key),
                "SAM2.1 checkpoint",
                trunk,
                1024,
            )
            for size, key, trunk in (
                ("tiny", "t", (96, 12)),
                ("small", "s", (96, 16)),
                ("base-plus", "b+", (112, 24)),
                ("large", "l", (144, 48)),
            )
        ),
    )
}


def import_sam2() -> None:
    """Import the optional packages (``sam2``, ``hydra``) or raise MissingDependencyError."""
    hint = (
        "install Meta's SAM2 model code (SAM2_BUILD_CUDA=0 pip install --no-deps "
        "--no-build-isolation git+https://github.com/facebookresearch/sam2.git), "
        "then pip install 'napari-segeval[medsam2]'"
    )
    for name in ("sam2", "hydra", "omegaconf"):
        try:
            __import__(name)
        except ImportError as exc:
            raise MissingDependencyError(
                name, "medsam2", _PURPOSE, hint if name == "sam2" else None
            ) from exc
    import sam2.modeling.sam2_base  # noqa: F401


def config_file(arch: Architecture) -> Path:
    """The YAML file of ``arch``: beside this module, or in the installed ``sam2`` package."""
    if not arch.config.startswith("sam2:"):
        return Path(__file__).with_name(arch.config)
    import_sam2()
    from importlib.resources import files

    inside = arch.config.split(":", 1)[1]
    path = Path(str(files("sam2").joinpath(inside)))
    if not path.is_file():
        hint = f"the installed sam2 package has no {inside}; install Meta's SAM2.1 code"
        hint += " (see the README)"
        raise MissingDependencyError("sam2", "medsam2", arch.label, hint)
    return path


def _at_size(model: Any, image_size: int) -> None:
    """Set a config's ``model`` node to ``image_size`` px; the RoPE feature sizes follow."""
    size = int(image_size)
    stride = int(model.get("backbone_stride", 16))
    if size <= 0 or size % 32:  # the Hiera trunk halves a stride-4 map three times
        raise ValueError(f"image_size must be a positive multiple of 32, got {image_size!r}")
    model.image_size = size
    layer = model.memory_attention.layer
    for attention in ("self_attention", "cross_attention"):
        if "feat_sizes" in layer[attention]:
            layer[attention].feat_sizes = [size // stride, size // stride]


def build_network(
    predictor: bool = False,
    config: str | Path | None = None,
    arch: str = "medsam2",
    image_size: int | None = None,
) -> Any:
    """A randomly initialised network from its YAML config, CPU, eval mode.

    ``predictor=True``: Meta's ``SAM2VideoPredictor`` (the tests' reference); ``image_size``:
    another input size, a multiple of 32 (the weights do not depend on it).
    """
    import_sam2()
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(str(config or config_file(ARCHITECTURES[arch])))
    cfg.model = OmegaConf.merge(cfg.model, POSTPROCESSING)
    if image_size is not None:
        _at_size(cfg.model, image_size)
    if predictor:
        cfg.model._target_ = "sam2.sam2_video_predictor.SAM2VideoPredictor"
        cfg.model.fill_hole_area = FILL_HOLE_AREA
    OmegaConf.resolve(cfg)
    model = instantiate(cfg.model, _recursive_=True)
    return model.eval()


def read_state_dict(path: str | Path, what: str = WHAT) -> dict[str, torch.Tensor]:
    """Read the ``"model"`` state dict of a MedSAM2/SAM2 checkpoint, as data."""
    obj = read_checkpoint(path, what)
    if not isinstance(obj, dict) or "model" not in obj:
        found = sorted(map(str, obj))[:5] if isinstance(obj, dict) else type(obj).__name__
        raise content_error(path, what, f"expected a dict with a 'model' state dict, found {found}")
    return obj["model"]


def identify(state: Any) -> tuple[int, int] | None:
    """``(embed_dim, blocks)`` of the Hiera encoder a state dict holds (None: not SAM2)."""
    try:
        dim = int(state["image_encoder.trunk.patch_embed.proj.weight"].shape[0])
        prefix = "image_encoder.trunk.blocks."
        blocks = 1 + max(int(k[len(prefix) :].split(".")[0]) for k in state if k.startswith(prefix))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None
    return dim, blocks


def other_size(arch: Architecture, state: Any, path: str | Path) -> ReadError | None:
    """The one-line error for weights of another SAM2.1 size than ``arch`` (None otherwise)."""
    found = identify(state)
    if found is None or found == arch.trunk:
        return None
    names = [a.name for a in ARCHITECTURES.values() if a.trunk == found]
    if not names:
        return None
    kind = "Hiera-" + names[-1].split("-", 1)[1]
    use = " or ".join(names)
    return ReadError(
        f"{path}: this {arch.what} holds SAM2.1 {kind} weights, not {arch.label} "
        f"weights: use --model {use} (the model name decides the network)"
    )


def load_network(
    path: str | Path, predictor: bool = False, arch: str = "medsam2", image_size: int | None = None
) -> Any:
    """Build the network of ``arch`` and load a checkpoint strictly (CPU, eval mode)."""
    spec = ARCHITECTURES[arch]
    state = read_state_dict(path, spec.what)
    wrong = other_size(spec, state, path)
    if wrong is not None:
        raise wrong
    import_sam2()
    model = build_network(predictor=predictor, arch=arch, image_size=image_size)
    load_state_strict(model, state, path, spec.what, spec.label)
    return model
