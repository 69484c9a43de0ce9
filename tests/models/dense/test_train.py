import json

import numpy as np
import pytest
import torch

from napari_segeval.models.dense import _train


def test_lr_schedule_warms_up_then_decays():
    lrs = [_train._lr_at(f, 1e-2) for f in np.linspace(0, 1, 101)]
    assert lrs[0] == pytest.approx(1e-3)
    peak = int(np.argmax(lrs))
    assert 1 <= peak <= 4 and lrs[peak] == pytest.approx(1e-2, rel=0.05)
    assert all(a >= b for a, b in zip(lrs[peak:], lrs[peak + 1:]))
    assert lrs[-1] == pytest.approx(1e-4)


def test_sampling_balances_small_classes():
    lab = np.zeros((16, 40, 40), np.uint8)
    lab[2:14, 2:30, 2:30] = 1  # large class
    lab[5:7, 35:37, 35:37] = 2  # 8 voxels
    img = lab.astype(np.float32)
    index = _train._class_index(lab, 3)
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(200):
        x, y = _train._sample(rng, img, lab, (8, 16, 16), index, fg_prob=1.0)
        assert x.shape == (8, 16, 16) and x.dtype == np.float32 and y.dtype == np.int64
        hits += bool((y == 2).any())
    assert hits >= 80  # about half the patches contain the 8-voxel class


def test_sampling_pads_small_volumes():
    lab = np.zeros((4, 6, 6), np.uint8)
    lab[1, 2, 2] = 1
    x, y = _train._sample(np.random.default_rng(1), lab.astype(np.float32), lab, (8, 8, 8),
                          _train._class_index(lab, 2), fg_prob=1.0)
    assert x.shape == y.shape == (8, 8, 8) and y.sum() == 1


def test_loss_counts_every_present_class():
    target = torch.zeros(1, 4, 8, 8, dtype=torch.long)
    target[0, :, :4] = 1
    target[0, 0, 5, 5] = 2  # one voxel of a small class
    perfect = torch.nn.functional.one_hot(target, 3).permute(0, 4, 1, 2, 3).float() * 20
    missed_small = perfect.clone()
    missed_small[0, 2, 0, 5, 5] = -20
    missed_small[0, 0, 0, 5, 5] = 20
    good = float(_train._loss(perfect, target, 3))
    bad = float(_train._loss(missed_small, target, 3))
    assert good < 0.01 and bad > 0.45  # half of the foreground Dice is lost


def test_train_writes_loadable_weights(tmp_path, monkeypatch):
    from napari_segeval.models.dense import load_dense_model, segment_case
    from napari_segeval.phantoms.ct import make_ct_case

    monkeypatch.setitem(_train.BUILTIN_PLANS, "spacing", [5.0, 4.8, 4.8])
    out = tmp_path / "w.pt"
    rec = _train.train(out, minutes=0.0, n_cases=2, threads=1, seed=0, batch=1,
                       cache=tmp_path / "c.npz", base_channels=2, patch_size=[8, 16, 16])
    assert rec["iterations"] == 0 and (tmp_path / "c.npz").exists()
    obj = torch.load(out, map_location="cpu", weights_only=True)
    assert obj["config"]["base_channels"] == 2 and obj["patch_size"] == [8, 16, 16]
    assert json.loads(json.dumps(obj["lesion_min_mm3"]))
    model = load_dense_model(str(out), device="cpu")
    case = make_ct_case(3000, shape=(16, 40, 40))
    assert segment_case(model, case).labels.shape == case.image.shape
