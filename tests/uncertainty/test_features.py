"""Class-wise decoded maps of promptable models and their semantic perception scales."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from napari_segeval.models.base import Capabilities, PromptableModel
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.models.walk import WALK_DEFAULTS
from napari_segeval.prompts import Box
from napari_segeval.uncertainty import class_scales, decoded_map, feature_kind


class LogitModel(PromptableModel):
    """A promptable stub whose logits are the frame itself plus the visit position."""

    name = "stub"
    capabilities = Capabilities()
    device = "cpu"

    def __init__(self) -> None:
        self.calls = []

    def preprocess(self, image, modality, window=None):
        import torch

        return torch.as_tensor(np.asarray(image, np.float32))

    def walk_logits(self, frames, walks, options=WALK_DEFAULTS):
        import torch

        frames = torch.as_tensor(frames)
        outs = []
        for w in walks:
            self.calls.append((w.order, options.stop_when_empty))
            idx = w.frames(int(frames.shape[0])).tolist()
            outs.append(torch.stack([frames[i] + 10.0 * w.label for i in idx]))
            if options.progress is not None:
                options.progress(len(idx), len(idx))
        return outs

    def propagate_walks(self, *a, **k):  # pragma: no cover - must not be used
        raise AssertionError("walk_logits should be used")


def volume_case(labels, image=None, structures=None):
    from napari_segeval.io.case import Case, Geometry

    image = labels.astype(np.float32) * 100 if image is None else image
    return Case(
        image=image,
        labels=labels,
        geometry=Geometry.identity(labels.ndim, (1.0,) * labels.ndim),
        axes="zyx" if labels.ndim == 3 else "yx",
        modality="CT",
        structures=structures or {},
    )


def test_decoded_map_walks_both_ways_in_slice_order():
    model = LogitModel()
    frames = np.arange(5, dtype=np.float32)[:, None, None] * np.ones((5, 3, 4), np.float32)
    out = decoded_map(model, frames, Box(0, 0, 2, 2, index=2, label=1))
    assert feature_kind(model) == "logits"
    assert out.shape == (5, 3, 4)
    np.testing.assert_allclose(out[:, 0, 0], [10, 11, 12, 13, 14])  # frame i + 10 at slice i
    assert sorted(model.calls) == [("backward", False), ("forward", False)]  # no early stop


def test_decoded_map_of_a_video_starts_at_the_prompt():
    model = LogitModel()
    frames = np.ones((4, 2, 2), np.float32)
    out = decoded_map(model, frames, Box(0, 0, 1, 1, index=1, label=1), mode="video")
    np.testing.assert_allclose(out[:, 0, 0], [11, 11, 11, 11])  # frame 0 gets the smallest value


def test_class_scales_rows_and_explicit_unscored_classes():
    lab = np.zeros((6, 16, 16), np.uint8)
    lab[1:5, 3:9, 3:9] = 1
    lab[2:4, 11:14, 10:14] = 2
    lab[3, 14, 14] = 3  # one voxel
    case = volume_case(lab)
    rows = class_scales(ThresholdPromptModel(), case, {1: "a", 2: "b", 3: "dot", 4: "gone"})
    by = {r["name"]: r for r in rows}
    assert [r["label"] for r in rows] == [1, 2, 3, 4]
    assert 0.0 <= by["a"]["scale"] <= 1.0 and 0.0 <= by["b"]["scale"] <= 1.0
    assert by["a"]["n_voxels"] == 4 * 36 and by["a"]["note"] == ""
    assert math.isnan(by["dot"]["scale"]) and "fewer than 2" in by["dot"]["note"]
    assert math.isnan(by["gone"]["scale"]) and "absent" in by["gone"]["note"]


def test_ids_the_case_does_not_name_are_scored_as_label_n():
    """The one rule (metrics.structures_to_score): a case that names some ids does not hide
    the others (the old default scored the named ones only)."""
    lab = np.zeros((6, 16, 16), np.uint8)
    lab[1:5, 3:9, 3:9] = 1
    lab[2:4, 11:14, 10:14] = 2
    rows = class_scales(ThresholdPromptModel(), volume_case(lab, structures={1: "a", 5: "gone"}))
    assert [(r["label"], r["name"]) for r in rows] == [(1, "a"), (5, "gone"), (2, "label 2")]
    assert 0.0 <= rows[2]["scale"] <= 1.0 and "absent" in rows[1]["note"]
    rows = class_scales(ThresholdPromptModel(), volume_case(lab))
    assert [r["name"] for r in rows] == ["label 1", "label 2"]


def test_auv_scoring_scores_the_ids_a_data_set_does_not_name(monkeypatch):
    from dataclasses import replace

    from napari_segeval.evaluation.layouts import load_layout
    from napari_segeval.evaluation.protocols import auv_scores
    from napari_segeval.models import registry
    from napari_segeval.phantoms.samples import sample_root

    monkeypatch.setattr(registry, "load_promptable", lambda *a, **k: ThresholdPromptModel())
    spec = load_layout(sample_root() / "msd_task" / "Task90_AbdomenPhantom")[0]
    spec = replace(spec, structures={1: "liver"})  # the other organs are named by nothing
    rec = auv_scores.score_cases([spec], model="threshold", power=1, grid=[8, 8, 8], threads=1)
    names = [c["name"] for c in rec["cases"][0]["classes"]]
    assert names[0] == "liver" and "label 2" in names and len(names) > 2


def test_class_scales_of_a_2d_image_use_the_height_by_width_map():
    lab = np.zeros((20, 24), np.uint8)
    lab[4:12, 5:15] = 1
    case = volume_case(lab)
    rows = class_scales(LogitModel(), case, {1: "lesion"})
    m = lab.astype(np.float32) * 100 + 10.0  # the stub's decoded map of the single frame
    from napari_segeval.uncertainty import semantic_scale

    assert rows[0]["scale"] == pytest.approx(semantic_scale(m))


def test_progress_reaches_the_total_and_cancel_stops():
    import threading

    from napari_segeval._cancel import Cancelled

    lab = np.zeros((5, 10, 10), np.uint8)
    lab[1:4, 2:6, 2:6] = 1
    lab[1:4, 6:9, 6:9] = 2
    seen = []
    class_scales(
        ThresholdPromptModel(),
        volume_case(lab),
        {1: "a", 2: "b"},
        progress=lambda d, t: seen.append((d, t)),
    )
    assert seen[-1][0] == seen[-1][1] == 2 * (5 + 1)
    assert all(d <= t for d, t in seen)
    stop = threading.Event()
    stop.set()
    with pytest.raises(Cancelled):
        class_scales(ThresholdPromptModel(), volume_case(lab), {1: "a"}, cancel=stop)


@pytest.mark.slow
def test_medsam2_decoded_map_is_its_mask_decoder_logits(medsam2_checkpoint):

    from napari_segeval.models.medsam2 import load_sam2

    # MedSAM2's network and loader at 128 px (the decoding does not depend on the size)
    model = load_sam2("medsam2", medsam2_checkpoint, device="cpu", image_size=128)
    lab = np.zeros((3, 40, 48), np.uint8)  # one slice each way after the key slice
    lab[:, 12:28, 14:34] = 1
    case = volume_case(lab, image=np.where(lab > 0, 80.0, -100.0).astype(np.float32))
    box = Box(12, 14, 28, 34, index=1, label=1)  # the middle slice of the extent 0..2
    frames = model.preprocess(case.image, "CT")
    walks, real = {}, model.propagate_logits

    def spy(f, key, b, order, **kwargs):  # the mask decoder's logits of each walk, kept
        assert f is frames and key == 1 and b is box
        assert kwargs["options"].stop_when_empty is False
        walks[order] = real(f, key, b, order, **kwargs)
        return walks[order]

    model.propagate_logits = spy
    out = decoded_map(model, frames, box)
    fwd, bwd = walks["forward"].numpy(), walks["backward"].numpy()
    assert feature_kind(model) == "logits" and out.shape == (3, 40, 48)
    assert fwd.shape == bwd.shape == (2, 40, 48)  # whole walks, no early stop
    np.testing.assert_allclose(out[2], fwd[1], atol=1e-5)
    np.testing.assert_allclose(out[1], np.maximum(fwd[0], bwd[0]), atol=1e-5)
    np.testing.assert_allclose(out[0], bwd[1], atol=1e-5)
    from napari_segeval.uncertainty import class_matrix, semantic_scale

    assert 0.0 <= semantic_scale(class_matrix(out)) <= 1.0


def test_grid_resamples_each_decoded_volume_before_the_svd():
    from napari_segeval.uncertainty.features import resample_map

    lab = np.zeros((6, 16, 16), np.uint8)
    lab[1:5, 4:12, 5:11] = 1
    rows = class_scales(ThresholdPromptModel(), volume_case(lab), {1: "a"}, grid=(12, 8, 8))
    assert 0.0 <= rows[0]["scale"] <= 1.0
    m = np.arange(6 * 4 * 4, dtype=np.float32).reshape(6, 4, 4)
    r = resample_map(m, (3, 8, 8))
    assert r.shape == (3, 8, 8) and r.min() >= m.min() and r.max() <= m.max()
    assert resample_map(m, None) is not None and resample_map(m, None).shape == m.shape


class MinmaxSpy(ThresholdPromptModel):
    """The threshold model recording the preprocessing it is asked for, with MedSAM2's options."""

    def __init__(self) -> None:
        super().__init__()
        self.resize, self.mappings = "float", []

    capabilities = replace(ThresholdPromptModel.capabilities, resize_modes=("float", "pillow"))

    def with_options(self, *, resize=None):
        self.resize = resize
        return self

    def preprocess(self, image, modality, window=None, ct_mapping="window"):
        self.mappings.append(ct_mapping)
        return super().preprocess(image, modality, window, ct_mapping)


def test_auv_scoring_uses_medsam2s_preprocessing_when_asked(monkeypatch):
    from napari_segeval.evaluation.layouts import load_layout
    from napari_segeval.evaluation.protocols import auv_scores
    from napari_segeval.models import registry
    from napari_segeval.phantoms.samples import sample_root

    spy = MinmaxSpy()
    monkeypatch.setattr(registry, "load_promptable", lambda *a, **k: spy)
    specs = load_layout(sample_root() / "msd_task" / "Task90_AbdomenPhantom")[:2]
    rec = auv_scores.score_cases(
        specs,
        model="threshold",
        ct_mapping="minmax",
        resize="pillow",
        power=1,
        grid=[16, 16, 16],
        threads=1,
    )
    assert spy.mappings == ["minmax", "minmax"] and rec["resize"] == "pillow"
    assert rec["ct_mapping"] == "minmax" and rec["energy_power"] == 1
    assert rec["grid"] == [16, 16, 16]
