"""Training the 2D U-Net of ``cv5-2d``: it learns, it is deterministic, it checks labels."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._errors import SegEvalError
from napari_segeval.models.dense.unet2d import TrainConfig2D
from napari_segeval.models.registry import load_dense
from napari_segeval.training.unet2d import train_unet2d

CFG = TrainConfig2D(iterations=40, batch_size=2, lr=0.01, size=(16, 16), width=4, levels=3)


def squares(n: int, rgb: bool) -> tuple[list, list]:
    rng = np.random.default_rng(0)
    images, labels = [], []
    for _ in range(n):
        lab = np.zeros((16, 20), np.uint8)
        y, x = rng.integers(1, 7, size=2)
        lab[y : y + 8, x : x + 8] = 1
        img = np.where(lab > 0, 200.0, 40.0) + rng.normal(0, 5, lab.shape)
        images.append(np.repeat(img[..., None], 3, axis=2).astype(np.uint8) if rgb else img)
        labels.append(lab)
    return images, labels


@pytest.mark.parametrize("rgb", [False, True])
def test_learns_squares_and_is_deterministic(rgb):
    images, labels = squares(6, rgb)
    a = train_unet2d(images, labels, 2, CFG, case_ids=["a"])
    b = train_unet2d(images, labels, 2, CFG, case_ids=["a"])
    assert a.meta["in_channels"] == (3 if rgb else 1) and a.meta["train_cases"] == ["a"]
    assert all(
        np.array_equal(a.state_dict[k].numpy(), b.state_dict[k].numpy()) for k in a.state_dict
    )
    pred = a.probabilities(images[0]).argmax(0)
    inter = np.logical_and(pred == 1, labels[0] == 1).sum()
    assert pred.shape == (16, 20) and 2 * inter / ((pred == 1).sum() + labels[0].sum()) > 0.8


def test_rejects_bad_labels():
    images, labels = squares(2, False)
    with pytest.raises(SegEvalError, match="label ids"):
        train_unet2d(images, [lab * 3 for lab in labels], 2, CFG)
    with pytest.raises(SegEvalError, match="matching images and labels"):
        train_unet2d(images, labels[:1], 2, CFG)


def test_trained_model_saves_and_loads(tmp_path):
    images, labels = squares(3, True)
    m = train_unet2d(
        images,
        labels,
        2,
        TrainConfig2D(iterations=2, size=(16, 16), width=4, levels=2),
        structures={1: "square"},
    )
    back = load_dense(str(m.save(tmp_path / "m.pt")), device="cpu")
    assert back.structures == {1: "square"} and back.config == m.config
    np.testing.assert_array_equal(back.probabilities(images[1]), m.probabilities(images[1]))
