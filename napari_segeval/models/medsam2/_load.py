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

    ``image_size`` None: the network's own (512 MedSAM2, 1024 SAM2.1); smaller sizes serve
    CPU tests. MissingDependencyError without the ``medsam2`` extra; ReadError (one line
    naming the file) for a missing, unreadable, pickled-code, mismatched or other-size file.

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
