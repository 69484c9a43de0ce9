from pathlib import Path

import numpy as np
import pytest
import torch

from napari_segeval.attacks import AttackConfig, PromptTarget, attack_case
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.phantoms.ct import make_ct_case
from napari_segeval.prompts.from_labels import boxes_from_labels

from .conftest import crop_case

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"


@pytest.fixture(scope="module")
def ct_case():
    return make_ct_case(3, shape=(10, 40, 40))


def _mean(rows):
    return float(np.mean([r["dice"] for r in rows]))


def test_gradients_flow_through_the_propagation_chain(ct_case):
    boxes = boxes_from_labels(ct_case.labels, [1])
    t = PromptTarget(ThresholdPromptModel(), ct_case, boxes)
    x = t.x.clone().requires_grad_(True)
    logits = t.forward(x)
    assert logits.shape == (1, 2, *ct_case.image.shape)
    key = boxes[0].index
    # a loss on the first slice reaches slices it only sees through the chain
    logits[0, 1, 0].sum().backward()
    per_slice = x.grad[0].abs().sum(dim=(1, 2))
    assert per_slice[key] > 0 and per_slice[1] > 0


@pytest.mark.parametrize("model_name", ["threshold", "builtin"])
def test_per_slice_chain_conditions_on_the_clean_previous_mask(model_name):
    ct_case = make_ct_case(5, shape=(24, 80, 80))
    model = ThresholdPromptModel() if model_name == "threshold" else _builtin()
    boxes = boxes_from_labels(ct_case.labels, [1])
    full = PromptTarget(model, ct_case, boxes)
    per = PromptTarget(model, ct_case, boxes, chain="per-slice")
    assert per.describe()["chain"] == "per-slice" and full.describe()["chain"] == "full"
    # on the clean input both chains give the clean prediction
    with torch.no_grad():
        assert torch.allclose(per.forward(per.x), full.forward(full.x), atol=1e-5)
    # the clean priors are fixed: a slice's output depends only on its own frame
    # and the frame the model reads beside it, never on slices further along the chain
    key = boxes[0].index
    clean = per.priors[1]
    segmented = [z for z in range(clean.shape[0]) if (clean[z] > 0.5).any() and abs(z - key) >= 2]
    assert segmented, "the structure must reach two slices away from the key slice"
    far = max(segmented, key=lambda z: abs(z - key))
    for target, reaches in ((full, True), (per, False)):
        x = target.x.clone().requires_grad_(True)
        target.forward(x)[0, 1, far].sum().backward()
        g = x.grad[0].abs().sum(dim=tuple(range(1, x.grad[0].ndim)))
        assert g[far] > 0
        assert bool(g[key] > 0) is reaches


def test_per_slice_chain_attack_stays_in_budget_and_hurts(ct_case):
    boxes = boxes_from_labels(ct_case.labels, [1])
    t = PromptTarget(ThresholdPromptModel(), ct_case, boxes, chain="per-slice")
    res = attack_case(t, AttackConfig("pgd", eps=0.1, steps=3, random_start=False))
    assert np.abs(res.perturbation_normalized).max() <= 0.1
    assert res.params["target"]["chain"] == "per-slice"
    assert _mean(res.attacked_rows) <= _mean(res.clean_rows)


def test_medsam2_refuses_the_per_slice_chain():
    from napari_segeval import SegEvalError
    from napari_segeval.models.medsam2.model import MedSAM2Model
    from napari_segeval.models.walk import Walk
    from napari_segeval.prompts.box import Box

    with pytest.raises(SegEvalError, match="memory bank"):
        walk = Walk(0, Box(0, 0, 2, 2, index=0), prior_volume=np.zeros((2, 4, 4)))
        MedSAM2Model.walk_logits(object(), np.zeros((2, 4, 4)), [walk])


def test_one_structure_logits_give_back_the_probability(ct_case):
    from napari_segeval.propagation import propagate_case

    boxes = boxes_from_labels(ct_case.labels, [1])
    t = PromptTarget(ThresholdPromptModel(), ct_case, boxes)
    with torch.no_grad():
        logits = t.forward(t.x)
    prob = torch.softmax(logits, 1)[0, 1].numpy()
    ref = propagate_case(t.model, t.x[0], boxes).probabilities[1]
    assert np.allclose(prob, np.clip(ref, 1e-6, 1 - 1e-6), atol=1e-5)
    assert np.array_equal(t.labels(logits), propagate_case(t.model, t.x[0], boxes).labels)


@pytest.mark.parametrize("attack", ["fgsm", "pgd", "apgd-ce", "noise-uniform"])
def test_threshold_model_attacks_stay_in_budget(ct_case, attack):
    boxes = boxes_from_labels(ct_case.labels, [1, 2])
    t = PromptTarget(ThresholdPromptModel(), ct_case, boxes)
    res = attack_case(t, AttackConfig(attack, eps=0.1, steps=3, random_start=False), clamp=True)
    assert np.abs(res.perturbation_normalized).max() <= 0.1
    assert res.budget.eps_raw == pytest.approx(40.0)  # abdomen window: 400 HU per unit
    assert np.abs(res.perturbation).max() <= 40.0 * (1 + 1e-6)
    adv = t.x[0].numpy() + res.perturbation_normalized
    assert adv.min() >= -1e-6 and adv.max() <= 1 + 1e-6
    assert res.params["target"]["chain"] == "full"
    assert [r["label"] for r in res.attacked_rows] == [1, 2]
    if attack != "noise-uniform":
        assert _mean(res.attacked_rows) <= _mean(res.clean_rows)


def test_reference_target_maps_label_ids_to_classes(ct_case):
    t = PromptTarget(ThresholdPromptModel(), ct_case, boxes_from_labels(ct_case.labels, [2, 4]))
    ref = t.reference_target()[0].numpy()
    assert set(np.unique(ref)) <= {0, 1, 2}
    assert np.array_equal(ref == 1, ct_case.labels == 2)
    assert np.array_equal(ref == 2, ct_case.labels == 4)


def _builtin():
    from napari_segeval.models.builtin_prompt import BuiltinPromptModel

    return BuiltinPromptModel(device="cpu")


def test_builtin_prompt_on_the_bundled_ct_sample(sample_ct):
    model = _builtin()
    case = crop_case(sample_ct, (slice(14, 34), slice(None), slice(None)))
    t = PromptTarget(model, case, boxes_from_labels(case.labels, [1, 2]))
    res = attack_case(t, AttackConfig("pgd", eps=0.05, steps=2, random_start=False))
    assert _mean(res.attacked_rows) <= _mean(res.clean_rows)
    assert np.abs(res.perturbation_normalized).max() <= 0.05


def test_builtin_prompt_on_the_bundled_video():
    from napari_segeval.io import read_case

    pytest.importorskip("av")
    model = _builtin()
    case = read_case(
        SAMPLES / "video" / "echo_001.mp4", SAMPLES / "video" / "echo_001_labels.nii.gz"
    )
    t = PromptTarget(model, case, boxes_from_labels(case.labels, [1], mode="video"))
    assert t.mode == "video"
    res = attack_case(t, AttackConfig("fgsm", eps=0.05))
    assert res.budget.eps_raw == pytest.approx(0.05 * 255)
    assert _mean(res.attacked_rows) <= _mean(res.clean_rows)


def test_shared_pass_gives_the_gradient_of_separate_passes(sample_ct):
    """All structures in one pass (the default) vs one pass each: same logits and gradient."""
    case = crop_case(sample_ct, (slice(14, 34), slice(None), slice(None)))
    grads, outs = [], []
    for share in (True, False):
        t = PromptTarget(_builtin(), case, boxes_from_labels(case.labels, [1, 2, 5]))
        t.share = share
        x = t.x.clone().requires_grad_(True)
        logits = t.forward(x)
        logits[0, 1:].sum().backward()
        grads.append(x.grad)
        outs.append(logits.detach())
    assert torch.equal(outs[0], outs[1])
    assert grads[0].abs().sum() > 0
    # the same terms, summed in another order: equal to float32 rounding
    scale = float(grads[1].abs().max())
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-4, atol=1e-6 * scale)


@pytest.mark.slow
@pytest.mark.medsam2
def test_medsam2_shared_gradient_equals_separate_passes():
    """MedSAM2 shares each frame's image features between structures, in the gradient too
    (the network at 128 px instead of 512: the sharing does not depend on the input size,
    and a frame costs a sixteenth)."""
    pytest.importorskip("sam2")
    pytest.importorskip("hydra")
    from napari_segeval.models.medsam2 import MedSAM2Model
    from napari_segeval.models.medsam2._build import build_network

    torch.manual_seed(0)
    model = MedSAM2Model(build_network(image_size=128), device="cpu", encode_batch=2)
    case = crop_case(
        make_ct_case(5, shape=(8, 48, 48), tumour=False), (slice(2, 5), slice(None), slice(None))
    )
    boxes = boxes_from_labels(case.labels, [1, 4])  # liver and left kidney, keys 1 and 0
    grads, outs = [], []
    for share in (True, False):
        t = PromptTarget(model, case, boxes)
        t.share = share
        x = t.x.clone().requires_grad_(True)
        logits = t.forward(x)
        logits[0, 1:].sum().backward()
        grads.append(x.grad)
        outs.append(logits.detach())
    assert torch.equal(outs[0], outs[1])
    assert grads[0].abs().sum() > 0
    # one encoder graph per frame instead of one per structure: equal to float32 rounding
    scale = float(grads[1].abs().max())
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_attack_on_cuda(sample_ct):
    """PGD through the built-in model's propagation on a GPU: in budget, and the gradient
    agrees with the CPU one (cosine >= 0.99; convolutions may use TF32 on the GPU)."""
    from napari_segeval.models.builtin_prompt import BuiltinPromptModel

    case = crop_case(sample_ct, (slice(14, 34), slice(None), slice(None)))
    boxes = boxes_from_labels(case.labels, [1, 2])
    t = PromptTarget(BuiltinPromptModel(device="cuda"), case, boxes)
    assert t.x.device.type == "cuda"
    res = attack_case(t, AttackConfig("pgd", eps=0.05, steps=3, random_start=False))
    assert np.abs(res.perturbation_normalized).max() <= 0.05 * (1 + 1e-6)
    assert _mean(res.attacked_rows) <= _mean(res.clean_rows)
    grads = []
    for target in (t, PromptTarget(_builtin(), case, boxes)):
        x = target.x.clone().requires_grad_(True)
        target.forward(x)[0, 1:].sum().backward()
        grads.append(x.grad.detach().cpu().flatten())
    assert float(torch.nn.functional.cosine_similarity(grads[0], grads[1], dim=0)) >= 0.99
