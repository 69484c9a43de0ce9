"""Load MedSAM2 and SAM2.1 checkpoints into :class:`~.model.MedSAM2Model` (safely, strictly)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._build import ARCHITECTURES, load_network
from .model import MedSAM2Model


def load_sam2(
    arch: str,
    path: str | Path,
    device: Any = None,
    encode_batch: int = 4,
    image_size: int | None = None,
) -> MedSAM2Model:
    """Load a checkpoint (``{"model": state_dict}``) of a :data:`._build.ARCHITECTURES` network.

    ``image_size`` is that of :func:`._build.build_network`: ``None`` (default) is the
    network's own input size (512 for MedSAM2, 1024 for SAM2.1), the one its weights were
    trained at; a smaller size serves tests that compare two implementations on a CPU.

    Raises
    ------
    MissingDependencyError
        The ``medsam2`` extra (``sam2``, ``hydra-core``) is not installed.
    ReadError
        One line naming the file: missing, not a readable torch file, refused
        because it contains pickled Python objects (code), no ``"model"`` entry,
        weights of another SAM2.1 size, or keys/shapes that do not match ``arch``.
    SegEvalError
        torch is older than 2.10.

    Examples
    --------
    >>> load_sam2("sam2.1-small", "no/such/sam2.1_hiera_small.pt")
    Traceback (most recent call last):
    ...
    napari_segeval._errors.ReadError: no/such/sam2.1_hiera_small.pt: SAM2.1 checkpoint not found
    """
    network = load_network(path, arch=arch, image_size=image_size)
    return MedSAM2Model(
        network, device=device, encode_batch=encode_batch, name=ARCHITECTURES[arch].name
    )


def load_medsam2(path: str | Path, device: Any = None, encode_batch: int = 4) -> MedSAM2Model:
    """Load a MedSAM2 checkpoint strictly and safely: :func:`load_sam2` of ``"medsam2"``.

    Examples
    --------
    >>> load_medsam2("no/such/MedSAM2_latest.pt")
    Traceback (most recent call last):
    ...
    napari_segeval._errors.ReadError: no/such/MedSAM2_latest.pt: MedSAM2 checkpoint not found
    """
    return load_sam2("medsam2", path, device=device, encode_batch=encode_batch)
