"""DUO (Li et al. 2026): the authors' dynamic_uncertainty_aware_loss, ported to the built-in U-Net."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from napari_segeval.training import duo


def their_scales(logits):
    """compute_all_semantic_scales of github.com/Lry777/CVPR_AUV (svd_mode='D_HW'), as written."""
    b, c, d, h, w = logits.shape
    out = torch.zeros((b, c))
    for k in range(1, c):
        for i in range(b):
            mat = torch.nan_to_num(logits[i, k].reshape(d, h * w), nan=0.0, posinf=0.0, neginf=0.0)
            s = torch.linalg.svd(mat.float(), full_matrices=False)[1] + 1e-6
            p = s / s.sum()
            out[i, k] = -(p * torch.log(p)).sum() / torch.log(torch.tensor(float(len(s))))
    return out


def test_scales_are_the_released_codes():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 4, 6, 5, 7, generator=g) * 3
    logits[1, 2] = 0  # a zero map: their epsilon gives the largest scale, 1
    ours = duo.semantic_scales(logits)
    assert torch.allclose(ours, their_scales(logits), atol=1e-5)
    assert float(ours[1, 2]) == pytest.approx(1.0)
    assert torch.all(ours[:, 0] == 0)  # background is not weighted


def test_loss_divides_each_class_loss_by_one_plus_alpha_scale():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 3, 4, 6, 6, generator=g)
    y = torch.randint(0, 3, (2, 4, 6, 6), generator=g)
    noise = torch.full((2, 3, 4, 6, 6), duo.NOISE_BIAS)
    prob = logits.softmax(1)[:, 1:]
    t = F.one_hot(y, 3).permute(0, 4, 1, 2, 3).float()[:, 1:]
    base = F.binary_cross_entropy(prob, t, reduction="none").mean((2, 3, 4))
    inter = (prob * t).sum((2, 3, 4))
    base = base + 1 - (2 * inter + 1e-5) / (prob.sum((2, 3, 4)) + t.sum((2, 3, 4)) + 1e-5)
    s = their_scales(logits)[:, 1:]
    for alpha in (0.0, 0.5, 2.0):
        want = (base / (1 + alpha * s)).mean()
        got = duo.duo_loss(logits, noise, y, 3, alpha=alpha, denoise=False)
        assert float(got) == pytest.approx(float(want), rel=1e-5)


def test_gradient_reaches_the_scales_as_in_their_code():
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(1, 2, 4, 5, 5, generator=g, requires_grad=True)
    duo.semantic_scales(logits)[0, 1].backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0


def test_noise_head_learns_labels_the_network_confidently_contradicts():
    # the network gives class 1 a probability near 0 on the left half of its label
    y = torch.zeros(1, 2, 4, 8, dtype=torch.long)
    y[..., 2:6] = 1
    logits = torch.zeros(1, 2, 2, 4, 8)
    logits[:, 0, ..., :4] = 10.0  # background wins where x < 4
    logits[:, 1, ..., 4:] = 10.0
    noise_logits = torch.full((1, 2, 2, 4, 8), duo.NOISE_BIAS, requires_grad=True)
    opt = torch.optim.SGD([noise_logits], lr=50.0)
    for _ in range(30):
        opt.zero_grad()
        duo.duo_loss(logits, noise_logits, y, 2).backward()
        opt.step()
    n = torch.sigmoid(noise_logits.detach()[0, 1])
    assert float(n[..., 2:4].min()) > 0.9  # labelled 1, predicted 0 confidently: noisy
    assert float(n[..., 4:6].max()) < 0.05  # labelled 1 and predicted 1: clean
    denoised = F.one_hot(y, 2).permute(0, 4, 1, 2, 3).float()[:, 1] * (1 - n)
    assert float(denoised[..., 2:4].max()) < 0.1 and float(denoised[..., 4:6].min()) > 0.95


def test_noise_head_starts_near_zero():
    head = duo.noise_head(8, 3)
    out = torch.sigmoid(head(torch.randn(1, 8, 2, 3, 3)))
    assert torch.allclose(out, torch.full_like(out, 1 / (1 + math.exp(4))))


def test_train_dense_cases_with_duo_saves_a_plain_unet(tmp_path):
    from napari_segeval.models.registry import load_dense
    from napari_segeval.phantoms.ct import make_ct_case
    from napari_segeval.training.dense_cases import DenseTrainConfig, train_dense_cases

    cases = [make_ct_case(s, shape=(12, 40, 40)) for s in (0, 1)]
    cfg = DenseTrainConfig(iterations=4, patch_size=(8, 16, 16), threads=1, loss="duo")
    rec = train_dense_cases(
        [c.image for c in cases],
        [c.labels for c in cases],
        [c.spacing for c in cases],
        6,
        tmp_path / "m.pt",
        cfg,
    )
    assert rec["loss"].startswith("DUO") and rec["config"]["loss"] == "duo"
    assert math.isfinite(rec["final_loss"])
    model = load_dense(str(tmp_path / "m.pt"), device="cpu")  # no noise head in the file
    assert model.num_classes == 6
