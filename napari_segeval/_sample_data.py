"""napari sample-data contributions: the bundled phantoms with their reference labels."""

from __future__ import annotations

from napari_segeval._layer_data import case_to_layers


def _sample(name: str) -> list:
    from napari_segeval.io import read_case
    from napari_segeval.phantoms.samples import sample_info, sample_path

    info = sample_info(name)
    table = info.get("color_table")
    color_table = {tuple(rgb): int(k) for k, rgb in table.items()} if table else None
    case = read_case(
        sample_path(name, "image"),
        sample_path(name, "labels"),
        modality=info.get("modality"),
        color_table=color_table,
    )
    if not case.structures and info.get("structures"):
        case.structures = {int(k): v for k, v in info["structures"].items()}
    return case_to_layers(case, name)


def sample_ct() -> list:
    """Abdominal CT phantom (HU, anisotropic spacing) with liver, spleen, kidneys, tumour."""
    return _sample("ct")


def sample_video() -> list:
    """Cardiac-ultrasound-like clip (mp4) with LV cavity, myocardium and left atrium."""
    return _sample("video")


def sample_polyp() -> list:
    """RGB endoscopy-like image with neoplastic and non-neoplastic lesions."""
    return _sample("polyp")


def sample_skin() -> list:
    """RGB dermoscopy-like image with a binary lesion mask."""
    return _sample("skin")
