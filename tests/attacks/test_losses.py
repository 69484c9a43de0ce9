import numpy as np
import pytest
import torch
import torch.nn.functional as F

from napari_segeval.attacks.losses import (
    case_dice,
    cross_entropy,
    dlr_loss,
    get_loss,
    soft_dice_loss,
    voxel_weights,
)
from napari_segeval.metrics import overlap_metrics


def _data(n=2, c=4, shape=(5, 6), seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, c, *shape, generator=g), torch.randint(0, c, (n, *shape), generator=g)


def test_cross_entropy_is_the_per_case_voxel_mean():
    z, t = _data()
    expected = torch.stack([F.cross_entropy(z[i : i + 1], t[i : i + 1]) for i in range(2)])
    assert torch.allclose(cross_entropy(z, t), expected)
    w = torch.rand(t.shape)
    manual = (F.cross_entropy(z, t, reduction="none") * w).reshape(2, -1).mean(1)
    assert torch.allclose(cross_entropy(z, t, w), manual)


def test_dlr_matches_its_definition_voxel_by_voxel():
    z, t = _data(n=1, c=5, shape=(7,))
    out = dlr_loss(z, t)
    vals = []
    for v in range(7):
        zz = z[0, :, v]
        y = int(t[0, v])
        srt = torch.sort(zz, descending=True).values
        other = max(float(zz[i]) for i in range(5) if i != y)
        vals.append(-(float(zz[y]) - other) / (float(srt[0]) - float(srt[2]) + 1e-12))
    assert np.isclose(float(out[0]), np.mean(vals), rtol=1e-5)
    with pytest.raises(ValueError, match="3 classes"):
        dlr_loss(torch.zeros(1, 2, 4), torch.zeros(1, 4, dtype=torch.long))


def test_soft_dice_loss_range_and_perfect_prediction():
    z, t = _data()
    loss = soft_dice_loss(z, t)
    assert ((loss > 0) & (loss < 1)).all()
    perfect = F.one_hot(t, 4).movedim(-1, 1).float() * 40
    assert torch.allclose(soft_dice_loss(perfect, t), torch.zeros(2), atol=1e-4)
    with pytest.raises(ValueError, match="weights"):
        soft_dice_loss(z, t, torch.ones(t.shape))


def test_case_dice_equals_the_metrics_engine():
    z, t = _data(n=3, c=4, shape=(6, 7, 5), seed=3)
    d = case_dice(z, t)
    pred = z.argmax(1).numpy()
    for i in range(3):
        m = overlap_metrics(t[i].numpy(), pred[i], labels=[1, 2, 3])
        dice = [m[k]["dice"] for k in (1, 2, 3)]
        assert np.isclose(float(d[i]), np.mean(dice), atol=1e-6)


def test_case_dice_skips_classes_absent_from_both():
    z = torch.tensor([[[5.0, 5.0, -5.0], [-5.0, -5.0, 5.0], [-9.0, -9.0, -9.0]]])
    t = torch.tensor([[0, 0, 1]])
    assert case_dice(z, t).tolist() == [1.0]
    assert case_dice(torch.zeros(1, 3, 4), torch.zeros(1, 4, dtype=torch.long)).tolist() == [1.0]


def test_voxel_weights_segpgd_schedule_and_cospgd():
    z, t = _data(n=1, c=3, shape=(9,))
    correct = z.argmax(1) == t
    for step, lam in ((0, 0.0), (5, 0.25), (9, 0.45)):
        w = voxel_weights("segpgd", z, t, step, 10)
        assert torch.allclose(w[correct], torch.full_like(w[correct], 1 - lam))
        assert torch.allclose(w[~correct], torch.full_like(w[~correct], lam))
    cos = voxel_weights("cospgd", z, t, 0, 10)
    p = torch.softmax(z, 1)[0]
    onehot = F.one_hot(t[0], 3).T.float()
    expected = (p * onehot).sum(0) / p.norm(dim=0)
    assert torch.allclose(cos[0], expected, atol=1e-6)
    assert voxel_weights(None, z, t, 0, 1) is None
    with pytest.raises(ValueError):
        get_loss("hinge")
