"""Build the SAM2.1 Hiera-tiny 512 network from the project's config and load checkpoints.

Checkpoints are untrusted data: they are read by
:func:`~napari_segeval.models._checkpoint.read_checkpoint` (``weights_only``,
torch >= 2.10) and loaded with ``strict=True``; every way a file can be wrong
becomes a one-line :class:`ReadError` that names the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from napari_segeval._errors import MissingDependencyError
from napari_segeval.models._checkpoint import content_error, load_state_strict, read_checkpoint

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: The project's model config (SAM2.1 Hiera-tiny, 512 px, 7 memory frames).
CONFIG_PATH = Path(__file__).with_name("sam2.1_hiera_t512.yaml")
#: ``fill_hole_area`` of MedSAM2's video predictor (low-res mask holes up to 8 px).
FILL_HOLE_AREA = 8

_PURPOSE = "The MedSAM2 backend"
#: What a MedSAM2 checkpoint is called in messages.
WHAT = "MedSAM2 checkpoint"


def _has(module: str) -> bool:
    """Whether ``module`` can be imported (without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def import_sam2() -> None:
    """Import the optional packages (``sam2``, ``hydra``) or raise MissingDependencyError."""
    for name in ("sam2", "hydra", "omegaconf"):
        try:
            __import__(name)
        except ImportError as exc:
            hint = (
                "install Meta's SAM2 model code (SAM2_BUILD_CUDA=0 pip install --no-deps "
                "--no-build-isolation git+https://github.com/facebookresearch/sam2.git), "
                "then pip install 'napari-segeval[medsam2]'"
                if name == "sam2"
                else None
            )
            raise MissingDependencyError(name, "medsam2", _PURPOSE, hint) from exc
    import sam2.modeling.sam2_base  # noqa: F401


def build_network(predictor: bool = False, config: str | Path | None = None) -> Any:
    """Instantiate the (randomly initialised) network from the project's YAML config.

    Parameters
    ----------
    predictor : bool
        ``False``: a ``sam2.modeling.sam2_base.SAM2Base`` (what our loop drives).
        ``True``: Meta's ``SAM2VideoPredictor`` with MedSAM2's inference settings
        (``fill_hole_area=8``), the reference used by tests and benchmarks.
    config : path, optional
        Another YAML file with a top-level ``model`` node (defaults to
        :data:`CONFIG_PATH`).

    Returns
    -------
    torch.nn.Module in eval mode on the CPU.
    """
    import_sam2()
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(str(config or CONFIG_PATH))
    if predictor:
        cfg.model._target_ = "sam2.sam2_video_predictor.SAM2VideoPredictor"
        cfg.model.fill_hole_area = FILL_HOLE_AREA
    OmegaConf.resolve(cfg)
    model = instantiate(cfg.model, _recursive_=True)
    return model.eval()


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """Read the ``"model"`` state dict of a MedSAM2/SAM2 checkpoint, as data.

    Raises
    ------
    ReadError
        Missing file, not a readable torch file (corrupt or truncated), pickled
        Python objects (refused), or a dict without a ``"model"`` entry.
    """
    obj = read_checkpoint(path, WHAT)
    if not isinstance(obj, dict) or "model" not in obj:
        found = sorted(map(str, obj))[:5] if isinstance(obj, dict) else type(obj).__name__
        raise content_error(path, WHAT, f"expected a dict with a 'model' state dict, found {found}")
    return obj["model"]


def load_network(path: str | Path, predictor: bool = False) -> Any:
    """Build the network and load a checkpoint strictly (CPU, eval mode)."""
    state = read_state_dict(path)
    import_sam2()
    model = build_network(predictor=predictor)
    load_state_strict(model, state, path, WHAT, "SAM2.1 Hiera-tiny 512")
    return model
