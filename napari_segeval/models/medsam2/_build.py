"""Build the SAM2.1 Hiera-tiny 512 network from the project's config and load checkpoints.

Checkpoints are untrusted data: they are read with ``torch.load(...,
weights_only=True)`` (which needs torch >= 2.10 to be safe) and loaded with
``strict=True``; every way a file can be wrong becomes a :class:`ReadError`
that names the file.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from napari_segeval._errors import MissingDependencyError, ReadError, SegEvalError

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: The project's model config (SAM2.1 Hiera-tiny, 512 px, 7 memory frames).
CONFIG_PATH = Path(__file__).with_name("sam2.1_hiera_t512.yaml")
#: Oldest torch whose ``weights_only`` unpickler we trust.
MIN_TORCH = (2, 10)
#: ``fill_hole_area`` of MedSAM2's video predictor (low-res mask holes up to 8 px).
FILL_HOLE_AREA = 8

_PURPOSE = "The MedSAM2 backend"


def check_torch_version(version: str | None = None) -> None:
    """Refuse torch older than 2.10 (unsafe ``weights_only`` loading).

    Examples
    --------
    >>> check_torch_version("2.13.0+cpu")
    >>> check_torch_version("2.5.1")
    Traceback (most recent call last):
    ...
    napari_segeval._errors.SegEvalError: The MedSAM2 backend needs torch >= 2.10 ...
    """
    if version is None:
        import torch

        version = torch.__version__
    parts = []
    for piece in version.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    if tuple(parts) < MIN_TORCH:
        raise SegEvalError(
            f"{_PURPOSE} needs torch >= 2.10 to load checkpoints safely "
            f"(weights_only loading of older versions can execute code); found torch {version}"
        )


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
    """Read the ``"model"`` state dict of a MedSAM2/SAM2 checkpoint, safely.

    Raises
    ------
    ReadError
        Missing file, not a torch zip archive (corrupt or truncated), rejected by
        the ``weights_only`` unpickler, or a dict without a ``"model"`` entry.
    """
    import torch

    check_torch_version()
    path = Path(path)
    if not path.is_file():
        raise ReadError(f"{path}: MedSAM2 checkpoint not found (not a file)")
    if not zipfile.is_zipfile(path):
        raise ReadError(
            f"{path}: not a PyTorch checkpoint (expected a torch.save zip archive; "
            "the file is corrupt, truncated or of another format)"
        )
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is a bad file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ReadError(f"{path}: cannot read checkpoint safely: {first}") from exc
    if not isinstance(obj, dict) or "model" not in obj:
        found = sorted(map(str, obj))[:5] if isinstance(obj, dict) else type(obj).__name__
        raise ReadError(
            f"{path}: expected a dict with a 'model' state dict (MedSAM2 format), found {found}"
        )
    state = obj["model"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ReadError(f"{path}: the 'model' entry is not a state dict of tensors")
    return state


def load_weights(model: Any, state: dict[str, Any], path: str | Path) -> None:
    """``load_state_dict(strict=True)`` with errors that list offending keys."""
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    if missing or unexpected:
        raise ReadError(
            f"{path}: checkpoint does not match SAM2.1 Hiera-tiny 512 "
            f"({len(missing)} missing keys, {len(unexpected)} unexpected keys; "
            f"missing e.g. {missing[:3]}, unexpected e.g. {unexpected[:3]})"
        )
    wrong = [
        f"{k}: {tuple(state[k].shape)} vs {tuple(v.shape)}"
        for k, v in own.items()
        if tuple(state[k].shape) != tuple(v.shape)
    ]
    if wrong:
        raise ReadError(
            f"{path}: {len(wrong)} tensors have the wrong shape for SAM2.1 Hiera-tiny 512 "
            f"(checkpoint vs model), e.g. {'; '.join(wrong[:3])}"
        )
    model.load_state_dict(state, strict=True)


def load_network(path: str | Path, predictor: bool = False) -> Any:
    """Build the network and load a checkpoint strictly (CPU, eval mode)."""
    state = read_state_dict(path)
    import_sam2()
    model = build_network(predictor=predictor)
    load_weights(model, state, path)
    return model
