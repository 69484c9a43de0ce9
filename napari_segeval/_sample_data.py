"""napari sample-data contributions: the bundled phantoms with their reference labels."""

from __future__ import annotations

from functools import partial

from napari_segeval._layer_data import case_to_layers


def _sample(name: str) -> list:
    from napari_segeval.io import read_case
    from napari_segeval.phantoms.samples import sample_info, sample_path

    info = sample_info(name)  # a colour mask's table: its folder's dataset.json
    case = read_case(
        sample_path(name, "image"), sample_path(name, "labels"), modality=info.get("modality")
    )
    if not case.structures and info.get("structures"):
        case.structures = {int(k): v for k, v in info["structures"].items()}
    return case_to_layers(case, name)


# The samples of napari.yaml (its display names say what each one is).
sample_ct = partial(_sample, "ct")
sample_video = partial(_sample, "video")
sample_polyp = partial(_sample, "polyp")
sample_skin = partial(_sample, "skin")
