"""Write or ``--check`` the committed sample data set
(``python -m napari_segeval.phantoms.make_samples [--out sample_data] [--check]``).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from napari_segeval._atomic import atomic_write_bytes
from napari_segeval.io.case import Case
from napari_segeval.phantoms import (
    POLYP_COLORS,
    POLYP_STRUCTURES,
    SAMPLE_SEED_BASE,
    SKIN_STRUCTURES,
    labels_to_rgb_mask,
    make_ct_case,
    make_echo_clip,
    make_polyp_image,
    make_skin_image,
)
from napari_segeval.phantoms._encode import (
    VIDEO_CODEC,
    decode_mp4_grey,
    metaimage_files,
    mp4_bytes,
    nifti_gz_bytes,
    png_bytes,
)
from napari_segeval.phantoms.echo import ECHO_FPS

#: Seed of each sample (all >= SAMPLE_SEED_BASE, so training never sees them).
SEEDS: dict[str, int] = {
    "ct": SAMPLE_SEED_BASE + 1,
    "msd": SAMPLE_SEED_BASE + 101,
    "echo": SAMPLE_SEED_BASE + 201,
    "polyp": SAMPLE_SEED_BASE + 301,
    "skin": SAMPLE_SEED_BASE + 401,
}
MSD_TASK = "Task90_AbdomenPhantom"
MSD_SHAPE = (32, 96, 96)
#: Spacing of the MSD-style cases (varied like a real multi-scanner data set).
MSD_SPACINGS = (
    (2.5, 1.4, 1.4),
    (3.0, 1.3, 1.3),
    (2.5, 1.5, 1.5),
    (2.0, 1.4, 1.4),
    (3.0, 1.5, 1.5),
    (2.5, 1.3, 1.3),
)
N_2D = 20
#: Outcome of :func:`check_samples` per file; the last three fail the check.
OK_STATES = ("identical", "same content")


def _structures_json(structures: dict[int, str]) -> dict[str, str]:
    return {str(k): v for k, v in sorted(structures.items())}


def _colors_json(colors: dict) -> dict[str, list]:
    return {str(k): list(v) for k, v in colors.items()}


def _folder_dataset_json(
    name: str, modality: str, structures: dict[int, str], colors: dict | None = None
) -> bytes:
    """A minimal MSD-style ``dataset.json`` so readers find structure names and modality
    (and the colours of a colour-coded mask, ``"color_table"``)."""
    dataset = {
        "name": name,
        "description": "napari-segeval generated sample (no patient data)",
        "licence": "CC0-1.0",
        "modality": {"0": modality},
        "labels": {"0": "background", **_structures_json(structures)},
    }
    if colors:
        dataset["color_table"] = _colors_json(colors)
    return (json.dumps(dataset, indent=4) + "\n").encode()


def _labels(case: Case) -> np.ndarray:
    """A phantom's labels (a generator always makes them)."""
    if case.labels is None:
        raise ValueError("a phantom without labels")
    return case.labels


def _nifti_pair(files: dict, image: str, labels: str, case: Case, seed: int, what: str) -> None:
    for path, array, part in ((image, case.image, ""), (labels, _labels(case), " labels")):
        files[path] = nifti_gz_bytes(array, case.geometry, f"{what} phantom{part} seed {seed}")


def _ct(files: dict, index: dict, rows: list) -> None:
    seed = SEEDS["ct"]
    case = make_ct_case(seed, tumour=True)
    _nifti_pair(files, "ct/ct_001.nii.gz", "ct/ct_001_labels.nii.gz", case, seed, "CT")
    index["ct"] = {"image": "ct/ct_001.nii.gz", "labels": "ct/ct_001_labels.nii.gz"}
    index["ct"].update(modality="CT", structures=_structures_json(case.structures), seed=seed)
    files["ct/dataset.json"] = _folder_dataset_json("CT phantom", "CT", case.structures)
    rows.append(("ct/ct_001.nii.gz (+ _labels)", case, f"make_ct_case({seed}, tumour=True)"))


def _msd(files: dict, index: dict, rows: list) -> None:
    root = f"msd_task/{MSD_TASK}"
    training: list[dict[str, str]] = []
    names: dict[int, str] = {}
    for i, spacing in enumerate(MSD_SPACINGS, start=1):
        seed, name = SEEDS["msd"] + i - 1, f"abd_{i:03d}.nii.gz"
        case = make_ct_case(seed, shape=MSD_SHAPE, spacing=spacing, tumour=i != 3)
        names = case.structures
        _nifti_pair(files, f"{root}/imagesTr/{name}", f"{root}/labelsTr/{name}", case, seed, "CT")
        training.append({"image": f"./imagesTr/{name}", "label": f"./labelsTr/{name}"})
        call = f"make_ct_case({seed}, shape={MSD_SHAPE}, spacing={spacing}, tumour={i != 3})"
        rows.append((f"{root}/imagesTr/{name} (+ labelsTr)", case, call))
    dataset: dict = {
        "name": "AbdomenPhantom",
        "description": "Synthetic contrast-enhanced abdominal CT phantoms (napari-segeval)",
        "reference": "napari-segeval phantoms (generated, no patient data)",
    }
    dataset.update(licence="CC0-1.0", release="1.0", tensorImageSize="3D", modality={"0": "CT"})
    dataset.update(labels={"0": "background", **_structures_json(names)})
    dataset.update(numTraining=len(training), numTest=0, training=training, test=[])
    files[f"{root}/dataset.json"] = (json.dumps(dataset, indent=4) + "\n").encode()
    index["msd_task"] = root


def _echo(files: dict, index: dict, rows: list, video: bool) -> None:
    seed = SEEDS["echo"]
    clip = make_echo_clip(seed)
    files["video/echo_001_labels.nii.gz"] = nifti_gz_bytes(
        _labels(clip), clip.geometry, f"echo phantom labels seed {seed}"
    )
    common = {"modality": "US", "structures": _structures_json(clip.structures)}
    if video:
        files["video/echo_001.mp4"] = mp4_bytes(clip.image, ECHO_FPS)
        video_files = {"image": "video/echo_001.mp4", "labels": "video/echo_001_labels.nii.gz"}
        index["video"] = {**video_files, **common, "fps": ECHO_FPS, "codec": VIDEO_CODEC}
        index["video"]["seed"] = seed
    for name, arr in (("echo_001_sequence", clip.image), ("echo_001_sequence_gt", _labels(clip))):
        for fname, data in metaimage_files(arr, clip.spacing, name).items():
            files[f"video/{fname}"] = data
    files["video/dataset.json"] = _folder_dataset_json("Echo phantom", "US", clip.structures)
    sequence = {"image": "video/echo_001_sequence.mhd", "labels": "video/echo_001_sequence_gt.mhd"}
    frames = {k: clip.meta[k] for k in ("ed_frame", "es_frame")}
    index["echo_sequence"] = {**sequence, **common, **frames, "seed": seed}
    what = "video/echo_001.mp4, echo_001_labels.nii.gz, echo_001_sequence[_gt].mhd/.raw"
    rows.append((what, clip, f"make_echo_clip({seed})"))


def _isic_mask(labels: np.ndarray) -> np.ndarray:
    return (labels > 0).astype(np.uint8) * 255


#: The 2D samples: generator, mask name suffix, mask encoding, modality, structures.
_SAMPLES_2D = {
    "polyp": (make_polyp_image, "mask", labels_to_rgb_mask, "endoscopy", POLYP_STRUCTURES),
    "skin": (make_skin_image, "segmentation", _isic_mask, "dermoscopy", SKIN_STRUCTURES),
}


def _images2d(files: dict, index: dict, rows: list) -> None:
    for kind, (make, suffix, mask, modality, structures) in _SAMPLES_2D.items():
        for i in range(1, N_2D + 1):
            seed, stem = SEEDS[kind] + i - 1, f"{kind}/{kind}_{i:03d}"
            case = make(seed)
            files[f"{stem}.png"] = png_bytes(case.image)
            files[f"{stem}_{suffix}.png"] = png_bytes(mask(_labels(case)))
            rows.append((f"{stem}.png (+ _{suffix}.png)", case, f"{make.__name__}({seed})"))
        index[f"{kind}_folder"] = kind
        colors = POLYP_COLORS if kind == "polyp" else None
        name = f"{kind.capitalize()} phantom"
        files[f"{kind}/dataset.json"] = _folder_dataset_json(name, modality, structures, colors)
        first = {"image": f"{kind}/{kind}_001.png", "labels": f"{kind}/{kind}_001_{suffix}.png"}
        index[kind] = {**first, "modality": modality, "structures": _structures_json(structures)}
        if colors:
            index[kind]["color_table"] = _colors_json(colors)
        else:
            index[kind]["label_values"] = {"0": 0, "255": 1}
        index[kind]["seed"] = SEEDS[kind]


#: ``sample_data/README.md``, rendered from the generated cases so it stays true.
_HEAD = """\
# napari-segeval sample data

Small synthetic cases (no patient data; CC0) used by the viewer's *File > Open Sample*,
the documentation, the tests and the benchmarks. Every file is made by
`napari_segeval.phantoms` from a fixed seed and encoded deterministically (gzip with
mtime 0, PNG without metadata, uncompressed MetaImage, MP4 with `bitexact` flags), so

    python -m napari_segeval.phantoms.make_samples --out sample_data          # rewrite
    python -m napari_segeval.phantoms.make_samples --out sample_data --check  # verify

reproduces them byte for byte (`--check` exits 1 on any difference; a compressed file
whose bytes differ only because of another zlib/encoder build but decodes to the same
data passes with a note).

**Seeds.** Samples use seeds >= `SAMPLE_SEED_BASE` = 1000 ({seeds}); training scripts
must use seeds < 1000, so the shipped samples are held out from every built-in model.

**Geometry.** Arrays are slowest-axis first. NIfTI files hold the array transposed to
(x, y, z) with a RAS affine `diag(-1, -1, 1, 1) @ affine_LPS` (qform = sform code 1, mm);
read with `napari_segeval.io` they come back as (z, y, x) in LPS. The CT phantoms have
identity direction: x increases toward the patient's **left** (the liver and right kidney
are at small x, on the image's left as in radiological display), y toward **posterior**,
z toward **superior**.

## Files

| file | modality | axes | shape | dtype | spacing (mm) | structures | made by |
|---|---|---|---|---|---|---|---|
"""

_TAIL = """
## What the phantoms look like

* **CT** (`make_ct_case`): contrast-enhanced abdomen in HU (int16). Air -1000, skin,
  subcutaneous fat (about -100), muscle wall (about 45), intra-abdominal fat and bowel
  with gas pockets (-950), vertebra (cancellous 300-400, cortex 800-1000, discs), ribs
  (650-850), aorta and IVC, liver 55-65, spleen 45-52, kidneys (cortex 145-165, medulla
  95-110), hypodense liver tumour 20-32. Organs are ellipsoids deformed by smooth random
  fields; each spans only part of the slices. Partial-volume blur (Gaussian, 0.7 voxel)
  and Gaussian noise (10-15 HU). Labels: uint8 ids as listed.
* **MSD task** (`msd_task/{task}`): the same phantom at {msd_shape} with per-case
  spacing, MSD layout (`dataset.json`, `imagesTr/`, `labelsTr/`); `abd_003` has no tumour.
* **Echo** (`make_echo_clip`): apical cardiac ultrasound, sector field of view, speckle
  (Rayleigh magnitude of smoothed complex noise, correlated across frames), log
  compression; LV contracts and relaxes with a seed-dependent period and phase.
  `echo_001.mp4` is the grey clip ({codec}, yuv420p, {fps} fps: lossy, so pixel values
  differ slightly from the MetaImage); `echo_001_labels.nii.gz` is the (t, y, x) label
  sequence with spacing (1, 1.4, 1.4); `echo_001_sequence.mhd/.raw` and
  `echo_001_sequence_gt.mhd/.raw` are the same clip and labels CAMUS-style (lossless).
  End-diastole frame {ed}, end-systole frame {es}.
* **Polyp** (`make_polyp_image`): endoscopy RGB with mucosa texture, vessels, lumen,
  vignetting and specular highlights; 1-2 polyps. Masks are NeoPolyp-style RGB:
  red (255, 0, 0) = neoplastic, green (0, 255, 0) = non-neoplastic; `polyp/dataset.json`
  holds these colours under `"color_table"`, so readers and `segeval` decode the masks.
* **Skin** (`make_skin_image`): dermoscopy RGB with hairs and one pigmented lesion;
  ISIC-style masks, 0 = background, 255 = lesion.

## index.json

Maps a sample name to its files (paths relative to this folder) and facts about it:
{names}. Use `napari_segeval.phantoms.samples.sample_path(name, part)` to get a path.
"""


def _row(path: str, case: Case, call: str) -> str:
    shape = "×".join(str(s) for s in case.image.shape)
    spacing = "×".join(f"{s:g}" for s in case.spacing)
    names = ", ".join(f"{k} {v}" for k, v in sorted(case.structures.items()))
    cells = (case.modality, case.axes, shape, str(case.image.dtype), spacing, names)
    return f"| `{path}` | " + " | ".join(cells) + f" | `{call}` |\n"


def render_readme(rows: list, index: dict, seeds: dict[str, int]) -> str:
    """Markdown describing every generated file."""
    seq = index.get("echo_sequence", {})
    video = index.get("video", {})
    head = _HEAD.replace("{seeds}", ", ".join(f"{k} {v}" for k, v in seeds.items()))
    body = "".join(_row(*r) for r in rows)
    tail = _TAIL.format(
        task=index.get("msd_task", "").split("/")[-1],
        msd_shape="32×96×96",
        codec=video.get("codec", "not written"),
        fps=video.get("fps", "-"),
        ed=seq.get("ed_frame", "-"),
        es=seq.get("es_frame", "-"),
        names=", ".join(f"`{k}`" for k in index),
    )
    return head + body + tail


def build_samples(video: bool = True) -> dict[str, bytes]:
    """Every sample file's bytes by ``/``-separated relative path, ``index.json`` and
    ``README.md`` included. ``video``: the MP4 and its ``"video"`` entry (PyAV)."""
    files: dict[str, bytes] = {}
    index: dict = {}
    rows: list = []
    _ct(files, index, rows)
    _echo(files, index, rows, video)
    _images2d(files, index, rows)
    _msd(files, index, rows)
    index = {k: index[k] for k in sorted(index)}
    files["index.json"] = (json.dumps(index, indent=2) + "\n").encode()
    files["README.md"] = render_readme(rows, index, SEEDS).encode()
    return dict(sorted(files.items()))


def write_samples(out: str | os.PathLike, video: bool = True) -> list[Path]:
    """Generate the samples and write them under ``out`` (atomically; no other file deleted)."""
    out = Path(out)
    written = []
    for rel, data in build_samples(video=video).items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data, overwrite=True)
        written.append(path)
    return written


def _same_content(rel: str, have: bytes, want: bytes) -> bool:
    """True when two encodings decode to the same data (lossy video: within 2 grey levels)."""
    try:
        if rel.endswith(".gz"):
            return gzip.decompress(have) == gzip.decompress(want)
        if rel.endswith(".png"):
            from PIL import Image

            a, b = Image.open(io.BytesIO(have)), Image.open(io.BytesIO(want))
            return a.mode == b.mode and np.array_equal(np.asarray(a), np.asarray(b))
        if rel.endswith(".mp4"):
            va, vb = decode_mp4_grey(have), decode_mp4_grey(want)
            diff = np.abs(va.astype(np.int16) - vb.astype(np.int16))
            return va.shape == vb.shape and float(diff.mean()) <= 2.0
    except (OSError, ValueError, EOFError):
        return False
    return False


def check_samples(root: str | os.PathLike) -> dict[str, str]:
    """Regenerate into a temporary folder and compare: per relative path ``"identical"``,
    ``"same content"`` (another encoder build), ``"different"``, ``"missing"`` or
    ``"unexpected"`` (not made by the generator)."""
    root = Path(root)
    states: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="segeval-samples-") as tmp:
        fresh = Path(tmp)
        write_samples(fresh)
        expected = sorted(p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file())
        for rel in expected:
            if not (root / rel).is_file():
                states[rel] = "missing"
                continue
            have, want = (root / rel).read_bytes(), (fresh / rel).read_bytes()
            same = have == want or _same_content(rel, have, want)
            states[rel] = ("identical" if have == want else "same content") if same else "different"
    if root.is_dir():
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).as_posix()
            if p.is_file() and rel not in states:
                states[rel] = "unexpected"
    return states


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m napari_segeval.phantoms.make_samples",
        description="Write the napari-segeval sample data, or check it is up to date.",
    )
    parser.add_argument("--out", default="sample_data", help="sample folder (default: %(default)s)")
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate in a temporary folder and compare; exit 1 on difference",
    )
    args = parser.parse_args(argv)
    if not args.check:
        paths = write_samples(args.out)
        total = sum(p.stat().st_size for p in paths)
        print(f"wrote {len(paths)} files ({total / 1e6:.2f} MB) under {args.out}")
        return 0
    states = check_samples(args.out)
    bad = {rel: s for rel, s in states.items() if s not in OK_STATES}
    for rel, state in states.items():
        if state != "identical":
            print(f"{state:>12}  {rel}")
    n_same = sum(s == "identical" for s in states.values())
    print(f"{n_same}/{len(states)} files byte-identical; {len(bad)} problem(s) in {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
