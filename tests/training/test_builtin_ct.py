"""The training script of the built-in CT model: schedule, sampling, loss, output, resume."""

import json
import pathlib

import numpy as np
import pytest
import torch

from napari_segeval._errors import ReadError
from napari_segeval.training import builtin_ct


def test_lr_schedule_warms_up_then_decays():
    lrs = [builtin_ct.lr_at(f, 1e-2) for f in np.linspace(0, 1, 101)]
    assert lrs[0] == pytest.approx(1e-3)
    peak = int(np.argmax(lrs))
    assert 1 <= peak <= 4 and lrs[peak] == pytest.approx(1e-2, rel=0.05)
    assert all(a >= b for a, b in zip(lrs[peak:], lrs[peak + 1 :]))
    assert lrs[-1] == pytest.approx(1e-4)


def test_sampling_balances_small_classes():
    lab = np.zeros((16, 40, 40), np.uint8)
    lab[2:14, 2:30, 2:30] = 1  # large class
    lab[5:7, 35:37, 35:37] = 2  # 8 voxels
    img = lab.astype(np.float32)
    index = builtin_ct.class_index(lab, 3)
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(200):
        x, y = builtin_ct.sample_patch(rng, img, lab, (8, 16, 16), index, fg_prob=1.0)
        assert x.shape == (8, 16, 16) and x.dtype == np.float32 and y.dtype == np.int64
        hits += bool((y == 2).any())
    assert hits >= 80  # about half the patches contain the 8-voxel class


def test_sampling_pads_small_volumes():
    lab = np.zeros((4, 6, 6), np.uint8)
    lab[1, 2, 2] = 1
    x, y = builtin_ct.sample_patch(
        np.random.default_rng(1),
        lab.astype(np.float32),
        lab,
        (8, 8, 8),
        builtin_ct.class_index(lab, 2),
        fg_prob=1.0,
    )
    assert x.shape == y.shape == (8, 8, 8) and y.sum() == 1


def test_loss_counts_every_present_class():
    target = torch.zeros(1, 4, 8, 8, dtype=torch.long)
    target[0, :, :4] = 1
    target[0, 0, 5, 5] = 2  # one voxel of a small class
    perfect = torch.nn.functional.one_hot(target, 3).permute(0, 4, 1, 2, 3).float() * 20
    missed_small = perfect.clone()
    missed_small[0, 2, 0, 5, 5] = -20
    missed_small[0, 0, 0, 5, 5] = 20
    good = float(builtin_ct.ce_soft_dice(perfect, target, 3))
    bad = float(builtin_ct.ce_soft_dice(missed_small, target, 3))
    assert good < 0.01 and bad > 0.45  # half of the foreground Dice is lost


@pytest.mark.slow
def test_train_writes_loadable_weights(tmp_path, monkeypatch):
    from napari_segeval.models.dense import BUILTIN_PLANS, segment_case
    from napari_segeval.models.registry import load_dense
    from napari_segeval.phantoms.ct import make_ct_case

    monkeypatch.setitem(BUILTIN_PLANS, "spacing", [5.0, 4.8, 4.8])
    out = tmp_path / "w.pt"
    rec = builtin_ct.train(
        out,
        minutes=0.0,
        n_cases=2,
        threads=1,
        seed=0,
        batch=1,
        cache=tmp_path / "c.npz",
        base_channels=2,
        patch_size=[8, 16, 16],
    )
    assert rec["iterations"] == 0 and (tmp_path / "c.npz").exists()
    obj = torch.load(out, map_location="cpu", weights_only=True)
    assert obj["config"]["base_channels"] == 2 and obj["patch_size"] == [8, 16, 16]
    assert json.loads(json.dumps(obj["lesion_min_mm3"]))
    model = load_dense(str(out), device="cpu")
    case = make_ct_case(3000, shape=(16, 40, 40))
    assert segment_case(model, case).labels.shape == case.image.shape


def test_resume_refuses_a_checkpoint_with_code(tmp_path):
    class Payload:
        def __reduce__(self):
            return (pathlib.Path.touch, (tmp_path / "MARKER",))

    init = tmp_path / "evil.pt"
    torch.save({"state_dict": {}, "x": Payload()}, init)
    with pytest.raises(
        ReadError,
        match=r"evil\.pt: refused: this built-in CT model weight file "
        r"contains Python code",
    ):
        builtin_ct.train(
            tmp_path / "w.pt",
            minutes=0.0,
            n_cases=1,
            threads=1,
            seed=0,
            batch=1,
            init=init,
            base_channels=2,
            patch_size=[8, 16, 16],
        )
    assert not (tmp_path / "MARKER").exists()
