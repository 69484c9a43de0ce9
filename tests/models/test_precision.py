"""--precision: parsing, what auto chooses, and the one-line refusals (models/precision.py)."""

from __future__ import annotations

import pytest

from napari_segeval._errors import SegEvalError
from napari_segeval.models import precision as P
from napari_segeval.models.base import Capabilities
from napari_segeval.models.precision import Precision, model_precision, resolve_precision

BOTH = Capabilities(precisions=(Precision.BF16, Precision.FP32))
FAST = Capabilities(
    precisions=(Precision.BF16, Precision.FP32), auto_precisions=(Precision.BF16, Precision.FP32)
)


@pytest.fixture
def with_bf16(monkeypatch):
    monkeypatch.setattr(P, "bf16_reason", lambda device=None: None)


@pytest.fixture
def without_bf16(monkeypatch):
    monkeypatch.setattr(P, "bf16_reason", lambda device=None: "no bf16 on this test machine")


def test_names_parse_and_others_are_one_line():
    assert [P.parse_precision(v) for v in ("auto", "FP32", " bf16 ", None)] == [
        Precision.AUTO,
        Precision.FP32,
        Precision.BF16,
        Precision.AUTO,
    ]
    with pytest.raises(
        SegEvalError, match="unknown precision 'int4': use one of auto, fp32, bf16, openvino"
    ):
        P.parse_precision("int4")


def test_auto_takes_only_a_precision_that_keeps_the_masks(with_bf16):
    assert model_precision("auto", BOTH, "cpu", "m") is Precision.FP32  # bf16 offered, not kept
    assert model_precision("auto", FAST, "cpu", "m") is Precision.BF16
    assert model_precision("bf16", BOTH, "cpu", "m") is Precision.BF16  # asked for by name
    assert model_precision(Precision.FP32, FAST, "cpu", "m") is Precision.FP32


def test_auto_falls_back_where_the_machine_has_no_bf16(without_bf16):
    assert model_precision("auto", FAST, "cpu", "m") is Precision.FP32


def test_bf16_without_support_is_one_line_saying_what_auto_chooses(without_bf16):
    with pytest.raises(SegEvalError) as exc:
        model_precision("bf16", FAST, "cpu", "m")
    assert str(exc.value) == (
        "--precision bf16: no bf16 on this test machine; --precision auto chooses fp32"
    )


def test_a_model_without_bf16_refuses_it(with_bf16):
    with pytest.raises(SegEvalError, match="^--precision bf16: builtin runs in fp32 only; "):
        resolve_precision("bf16", (Precision.FP32,), "cpu", "builtin")
    assert model_precision("fp32", None, "cpu", "builtin") is Precision.FP32


def test_the_machine_check_reads_torch():
    torch = pytest.importorskip("torch")
    reason = P.bf16_reason("cpu")
    supported = (
        torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()
    )
    assert (reason is None) == bool(supported)
    assert P.precision_reason(Precision.FP32, "cpu") is None


def test_the_registry_refuses_before_loading(with_bf16, monkeypatch):
    from napari_segeval.models import registry
    from napari_segeval.models.threshold import ThresholdPromptModel

    fail = classmethod(lambda *a: pytest.fail("loaded"))
    monkeypatch.setattr(ThresholdPromptModel, "from_registry", fail)
    with pytest.raises(SegEvalError, match="^--precision bf16: threshold runs in fp32 only"):
        registry.precision_of("threshold", "bf16", "cpu")
    with pytest.raises(SegEvalError, match="unknown precision"):
        registry.load_promptable("threshold", precision="half")


OV = Capabilities(
    precisions=(Precision.OPENVINO, Precision.BF16, Precision.FP32),
    auto_precisions=(Precision.OPENVINO, Precision.FP32),
)


def test_auto_takes_openvino_only_where_its_extra_is_installed(monkeypatch):
    monkeypatch.setattr(P, "openvino_reason", lambda device=None: None)
    assert model_precision("auto", OV, "cpu", "m") is Precision.OPENVINO
    monkeypatch.setattr(P, "openvino_reason", lambda device=None: "not installed (test)")
    assert model_precision("auto", OV, "cpu", "m") is Precision.FP32


def test_openvino_without_its_extra_is_one_line_saying_what_auto_chooses(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "openvino" else real(name, *a)
    )
    with pytest.raises(SegEvalError) as exc:
        model_precision("openvino", OV, "cpu", "m")
    assert str(exc.value) == (
        "--precision openvino: openvino needs the optional package 'openvino', which is not "
        "installed: pip install 'napari-segeval[openvino]'; --precision auto chooses fp32"
    )
    assert "\n" not in str(exc.value)


def test_openvino_is_refused_off_a_cpu(monkeypatch):
    monkeypatch.setattr(P, "_device_type", lambda device: "cuda")
    assert P.openvino_reason("cuda") == "openvino runs on a CPU only, not on cuda"
    with pytest.raises(SegEvalError, match="^--precision openvino: openvino runs on a CPU only"):
        model_precision("openvino", OV, "cuda", "m")
