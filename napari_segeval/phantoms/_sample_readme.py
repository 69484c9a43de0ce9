"""Text of ``sample_data/README.md``, rendered from the generated cases so it stays true."""

from __future__ import annotations

from napari_segeval.io.case import Case

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
