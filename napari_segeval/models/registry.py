"""The model registry: the names and paths people type, turned into models.

Every caller that turns a user's model reference into a model - the ``segeval``
commands, the viewer's panels, the evaluation protocols - calls
:func:`load_promptable` or :func:`load_dense`. The known names live here, in
:data:`PROMPTABLE` and :data:`DENSE`, and nowhere else; error messages and
``segeval info`` list them from here.

Promptable references (a box prompt in, a propagated mask out):

* ``builtin`` - the built-in box-prompted U-Net (weights shipped; another weight
  file of the same format with ``checkpoint=`` or ``builtin:PATH``);
  ``builtin-prompt`` is the same model;
* ``threshold`` - the weight-free thresholded region-growing baseline;
* ``medsam2`` - MedSAM2 (extra ``medsam2``): needs a checkpoint, ``checkpoint=PATH``
  or ``medsam2:PATH`` (the command line's ``--model medsam2 --checkpoint PATH``);
* ``module:factory`` - ``factory()`` from an importable module.

Dense references (no prompt, sliding window):

* ``builtin-ct`` - the built-in 3D CT U-Net (weights shipped);
* ``builtin-2d`` - the built-in 2D U-Net of the ``cv5-2d`` protocol, which trains
  one per fold (no shipped weights; a saved fold model loads by its path);
* a weights file of the built-in 3D U-Net (our format, or a plain state dict with
  an optional ``FILE.json`` plans sidecar), or a saved ``builtin-2d`` model;
* an nnU-Net v2 result folder (extra ``nnunet``);
* a TorchScript file with ``FILE.json`` plans - it runs code, so only with
  ``trust_torchscript=True``;
* ``module:factory`` - ``factory()`` from an importable module.

Every weight file is read as data by
:func:`~napari_segeval.models._checkpoint.read_checkpoint`. Importing this module
imports neither torch nor any backend.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from napari_segeval._errors import SegEvalError


@dataclass(frozen=True)
class ModelName:
    """A model name users can type.

    Attributes
    ----------
    name : str
        What people type (``"builtin"``).
    kind : {"promptable", "dense"}
        Which loader takes it.
    summary : str
        One line for help texts and ``segeval info``.
    checkpoint : {"none", "optional", "required"}
        Whether a checkpoint file goes with the name.
    package : str or None
        The optional package it needs (for ``segeval info``), None when none.
    label : str
        Its name in the viewer's backend list (promptable models).
    """

    name: str
    kind: str
    summary: str
    checkpoint: str = "none"
    package: str | None = None
    label: str = ""


#: Promptable models by name (order: the viewer's backend list).
PROMPTABLE: dict[str, ModelName] = {m.name: m for m in (
    ModelName("builtin", "promptable", "built-in box-prompted U-Net, weights shipped "
              "(optional checkpoint: another weight file of its format)", "optional",
              label="built-in"),
    ModelName("threshold", "promptable", "weight-free thresholded region growing (baseline)",
              label="threshold (no weights)"),
    ModelName("medsam2", "promptable", "MedSAM2, SAM2.1 Hiera-tiny 512 (extra medsam2; "
              "checkpoint required, e.g. MedSAM2_latest.pt)", "required", package="sam2",
              label="MedSAM2 checkpoint"),
)}
#: Dense models by name.
DENSE: dict[str, ModelName] = {m.name: m for m in (
    ModelName("builtin-ct", "dense", "built-in 3D CT U-Net (liver, spleen, kidneys, liver "
              "tumour), weights shipped"),
    ModelName("builtin-2d", "dense", "built-in 2D U-Net of the cv5-2d protocol: no shipped "
              "weights, trained per fold by segeval evaluate --protocol cv5-2d "
              "(DIR/models/fold{k}.pt; such a file loads by its path)"),
)}
#: Other spellings of a name.
ALIASES: dict[str, str] = {"builtin-prompt": "builtin"}
#: The references that are not names, by kind: form -> what it is.
FORMS: dict[str, dict[str, str]] = {
    "promptable": {
        "NAME:CHECKPOINT": "builtin or medsam2 with a checkpoint file",
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
    names = PROMPTABLE if kind == "promptable" else DENSE
    return ", ".join([*names, *FORMS[kind]])


def _canonical(name: str) -> str:
    return ALIASES.get(name, name)


def split_ref(ref: str) -> tuple[str, str | None]:
    """``"medsam2:PATH"`` -> ``("medsam2", "PATH")``; any other reference -> ``(ref, None)``.

    Only the names of :data:`PROMPTABLE` that take a checkpoint are split, so
    ``module:factory`` references and paths pass through unchanged.

    Examples
    --------
    >>> split_ref("medsam2:/models/MedSAM2_latest.pt")
    ('medsam2', '/models/MedSAM2_latest.pt')
    >>> split_ref("builtin-prompt"), split_ref("mypkg.models:build")
    (('builtin', None), ('mypkg.models:build', None))
    """
    head, sep, tail = str(ref).partition(":")
    name = _canonical(head)
    if sep and name in PROMPTABLE and PROMPTABLE[name].checkpoint != "none":
        return name, tail
    return _canonical(str(ref)), None


def model_names(kind: str) -> list[str]:
    """The names (aliases included) users can type for ``kind`` (``"promptable"``/``"dense"``).

    The command line's ``--model`` options list and accept these (with the
    reference forms of :data:`FORMS`), so a name added here reaches every command.

    Examples
    --------
    >>> model_names("promptable")[:3], "builtin-prompt" in model_names("promptable")
    (['builtin', 'threshold', 'medsam2'], True)
    """
    table = PROMPTABLE if kind == "promptable" else DENSE
    return [*table, *(alias for alias, name in ALIASES.items() if name in table)]


def is_reference(ref: str, kind: str) -> bool:
    """Whether ``ref`` can name a model of ``kind`` without looking at the file system.

    Promptable: a name, an alias, ``NAME:CHECKPOINT`` or ``module:factory``.
    Dense: anything (a path is only checked when the model is loaded).

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
    """Whether ``ref`` names a promptable model (a name, an alias or ``NAME:CHECKPOINT``).

    ``module:factory`` references are not recognised here: callers that accept both
    kinds treat them as dense, as the command line does.

    Examples
    --------
    >>> is_promptable("builtin-prompt"), is_promptable("medsam2:m.pt"), is_promptable("builtin-ct")
    (True, True, False)
    """
    return split_ref(ref)[0] in PROMPTABLE


def resolve_factory(ref: str) -> Any:
    """``"package.module:callable"`` -> the callable (a factory or function given by a user).

    Examples
    --------
    >>> resolve_factory("os.path:join")("a", "b")
    'a/b'
    >>> resolve_factory("os.path:nope")
    Traceback (most recent call last):
    ...
    napari_segeval._errors.SegEvalError: cannot import model factory 'os.path:nope': ...
    """
    module, _, attr = str(ref).partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise SegEvalError(f"cannot import model factory {ref!r}: {exc}") from exc


def _auto(device: Any) -> bool:
    return device is None or str(device) == "auto"


def load_promptable(ref: str, *, checkpoint: str | Path | None = None,
                    device: Any = "auto") -> Any:
    """A promptable model from what a person typed.

    Parameters
    ----------
    ref : str
        A name of :data:`PROMPTABLE` (or an alias), ``NAME:CHECKPOINT`` or
        ``module:factory``.
    checkpoint : str or Path, optional
        The checkpoint of ``builtin`` (optional) or ``medsam2`` (required).
    device : str or torch.device, optional
        ``"auto"``/None (default): CUDA, then MPS, then CPU (the threshold baseline:
        CPU).

    Returns
    -------
    PromptableModel

    Raises
    ------
    napari_segeval.SegEvalError
        Unknown names (the message lists the known ones), a checkpoint missing or
        not expected; :class:`~napari_segeval.ReadError` for bad checkpoint files.

    Examples
    --------
    >>> load_promptable("builtin", device="cpu").name
    'builtin'
    >>> load_promptable("threshold").device
    device(type='cpu')
    >>> load_promptable("medsam2")
    Traceback (most recent call last):
    ...
    napari_segeval._errors.SegEvalError: model 'medsam2' needs a checkpoint: ...
    """
    name, inline = split_ref(ref)
    if inline is not None and checkpoint is not None and Path(inline) != Path(checkpoint):
        raise SegEvalError(f"model {ref!r}: two checkpoints given ({inline} and {checkpoint})")
    ckpt = checkpoint if checkpoint is not None else (inline or None)
    info = PROMPTABLE.get(name)
    if info is None:
        if _FACTORY.match(name):
            return resolve_factory(name)()
        raise SegEvalError(f"unknown promptable model {ref!r}: use one of {_known('promptable')}")
    if info.checkpoint == "none" and ckpt is not None:
        raise SegEvalError(f"model {name!r} takes no checkpoint (got {ckpt})")
    if info.checkpoint == "required" and ckpt is None:
        raise SegEvalError(f"model {name!r} needs a checkpoint: pass {name}:PATH, or "
                           f"--checkpoint PATH on the command line (e.g. MedSAM2_latest.pt)")
    if name == "builtin":
        from napari_segeval.models.builtin_prompt import BuiltinPromptModel

        return BuiltinPromptModel(ckpt, device="auto" if _auto(device) else device)
    if name == "threshold":
        from napari_segeval.models.threshold import ThresholdPromptModel

        return ThresholdPromptModel(device="cpu" if _auto(device) else device)
    from napari_segeval.models.medsam2 import load_medsam2

    return load_medsam2(Path(ckpt), device=None if _auto(device) else device)


def load_dense(ref: str, *, trust_torchscript: bool = False, device: Any = None) -> Any:
    """A dense model from what a person typed.

    Parameters
    ----------
    ref : str
        A name of :data:`DENSE`, a weights file, an nnU-Net v2 result folder, a
        TorchScript file (with ``trust_torchscript``) or ``module:factory``.
    trust_torchscript : bool
        Allow TorchScript archives (they execute code).
    device : str or torch.device, optional
        None/``"auto"`` (default): CUDA, then MPS, then CPU.

    Returns
    -------
    DenseModel
        (or whatever a ``module:factory`` returns).

    Raises
    ------
    napari_segeval.SegEvalError
        Unknown references (the message lists the known forms), TorchScript without
        trust; :class:`~napari_segeval.ReadError` for bad files.

    Examples
    --------
    >>> m = load_dense("builtin-ct", device="cpu")
    >>> m.num_classes, m.structures[1], m.patch_size
    (6, 'liver', (32, 48, 48))
    >>> load_dense("no/such/model.pt")
    Traceback (most recent call last):
    ...
    napari_segeval._errors.ReadError: no/such/model.pt: no such model file or folder ...
    """
    from napari_segeval._errors import ReadError

    ref = str(ref)
    path = Path(ref).expanduser()
    if ref in DENSE or path.exists():
        from napari_segeval.models._device import pick_device
        from napari_segeval.models.dense._loaders import load_path, load_unet_weights
        from napari_segeval.models.dense._plans import BUILTIN_CT_WEIGHTS

        if ref == "builtin-2d":
            raise SegEvalError("builtin-2d has no shipped weights: segeval evaluate --protocol "
                               "cv5-2d trains one per fold (DIR/models/fold{k}.pt); give such "
                               "a file's path")
        dev = pick_device(None if _auto(device) else str(device))
        if ref == "builtin-ct":
            return load_unet_weights(BUILTIN_CT_WEIGHTS, dev, name=ref)
        return load_path(path, dev, trust_torchscript=trust_torchscript)
    if _FACTORY.match(ref):
        return resolve_factory(ref)()
    raise ReadError(f"{ref}: no such model file or folder (dense models: {_known('dense')})")


def describe() -> list[dict]:
    """Every known name and reference form, for ``segeval info``.

    Examples
    --------
    >>> [row["name"] for row in describe() if row["kind"] == "dense"][:1]
    ['builtin-ct']
    """
    rows = [{"name": m.name, "kind": m.kind, "checkpoint": m.checkpoint, "package": m.package,
             "summary": m.summary} for m in (*PROMPTABLE.values(), *DENSE.values())]
    rows += [{"name": alias, "kind": PROMPTABLE[name].kind, "checkpoint": None, "package": None,
              "summary": f"same as {name}"} for alias, name in ALIASES.items()]
    rows += [{"name": form, "kind": kind, "checkpoint": None, "package": None, "summary": text}
             for kind, forms in FORMS.items() for form, text in forms.items()]
    return rows


__all__ = ["ALIASES", "DENSE", "FORMS", "PROMPTABLE", "ModelName", "describe", "is_promptable",
           "is_reference", "load_dense", "load_promptable", "model_names", "resolve_factory",
           "split_ref"]
