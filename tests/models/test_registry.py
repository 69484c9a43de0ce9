"""The model registry: every name and reference form people type, and the errors."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval.models import registry
from napari_segeval.models.builtin_prompt import DEFAULT_WEIGHTS, BuiltinPromptModel
from napari_segeval.models.dense import DenseModel
from napari_segeval.models.registry import (
    is_promptable,
    load_dense,
    load_promptable,
    resolve_factory,
    split_ref,
)
from napari_segeval.models.threshold import ThresholdPromptModel


@pytest.fixture
def factories(tmp_path, monkeypatch):
    (tmp_path / "segeval_test_factories.py").write_text(
        "from napari_segeval.models.threshold import ThresholdPromptModel\n"
        "def promptable():\n    return ThresholdPromptModel(level=0.25)\n"
        "def dense():\n    return 'a dense model'\n"
        "from napari_segeval.models.dense import DenseBackend\n"
        "class Toy(DenseBackend):\n    num_classes = 2\n"
        "    def segment(self, case, *, probabilities=False):\n        return None\n"
        "def declared():\n    return Toy()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return "segeval_test_factories"


def test_import_is_light():
    code = (
        "import sys, napari_segeval.models.registry as r; r.describe();"
        "print(sorted(m for m in ('torch', 'sam2') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_names_are_listed_once():
    assert list(registry.PROMPTABLE) == [
        "builtin",
        "threshold",
        "litemedsam",
        "medsam2",
        "sam2.1-tiny",
        "sam2.1-small",
        "sam2.1-base-plus",
        "sam2.1-large",
    ]
    assert list(registry.DENSE) == ["builtin-ct", "builtin-2d"]
    assert all(m.kind == "promptable" for m in registry.PROMPTABLE.values())
    assert set(registry.ALIASES.values()) <= set(registry.PROMPTABLE)
    names = [row["name"] for row in registry.describe()]
    for name in [*registry.PROMPTABLE, *registry.DENSE, *registry.ALIASES]:
        assert name in names


@pytest.mark.parametrize(
    "ref, expected",
    [
        ("builtin", ("builtin", None)),
        ("builtin-prompt", ("builtin", None)),
        ("builtin:w.pt", ("builtin", "w.pt")),
        ("builtin-prompt:w.pt", ("builtin", "w.pt")),
        ("medsam2:/m/MedSAM2_latest.pt", ("medsam2", "/m/MedSAM2_latest.pt")),
        ("medsam2:C:\\m\\x.pt", ("medsam2", "C:\\m\\x.pt")),
        ("threshold:x", ("threshold:x", None)),  # takes no checkpoint: not split
        ("pkg.mod:factory", ("pkg.mod:factory", None)),
        ("builtin-ct", ("builtin-ct", None)),
    ],
)
def test_split_ref(ref, expected):
    assert split_ref(ref) == expected


def test_is_promptable():
    assert all(
        is_promptable(r)
        for r in (
            "builtin",
            "builtin-prompt",
            "threshold",
            "medsam2",
            "medsam2:x.pt",
            "sam2.1-large",
            "sam2.1-tiny:x.pt",
            "MedSAM2_CTLesion",
            "medsam2_latest",
        )
    )
    assert not any(is_promptable(r) for r in ("builtin-ct", "w.pt", "pkg:factory"))


def test_builtin_with_and_without_checkpoint(tiny_prompt_weights):
    shipped = load_promptable("builtin", device="cpu")
    assert isinstance(shipped, BuiltinPromptModel) and shipped.weights == DEFAULT_WEIGHTS
    for model in (
        load_promptable("builtin", checkpoint=tiny_prompt_weights, device="cpu"),
        load_promptable(f"builtin:{tiny_prompt_weights}", device="cpu"),
        load_promptable("builtin-prompt", checkpoint=str(tiny_prompt_weights)),
    ):
        assert model.weights == tiny_prompt_weights and model.config["width"] == 4
    with pytest.raises(SegEvalError, match="two checkpoints given"):
        load_promptable(f"builtin:{tiny_prompt_weights}", checkpoint="other.pt")


def test_threshold_and_its_checkpoint_refusal():
    model = load_promptable("threshold", device="auto")
    assert isinstance(model, ThresholdPromptModel) and model.device.type == "cpu"
    with pytest.raises(SegEvalError, match="model 'threshold' takes no checkpoint"):
        load_promptable("threshold", checkpoint="x.pt")


def test_medsam2_needs_a_checkpoint_and_reads_it_safely(tmp_path):
    with pytest.raises(SegEvalError) as info:
        load_promptable("medsam2")  # nothing pulled (tests use an empty cache)
    assert str(info.value) == (
        "model 'medsam2' needs a checkpoint: segeval models pull MedSAM2_latest (156 MB, once; "
        "then --model medsam2 uses it), or pass medsam2:PATH / --checkpoint PATH"
    )
    with pytest.raises(
        SegEvalError,
        match="model 'sam2.1-large' needs a checkpoint: segeval "
        r"models pull sam2\.1-large \(898 MB",
    ):
        load_promptable("sam2.1-large")
    with pytest.raises(
        SegEvalError, match="MedSAM2_CTLesion is not here: segeval models pull MedSAM2_CTLesion"
    ):
        load_promptable("medsam2_ctlesion")
    with pytest.raises(ReadError, match=r"nope\.pt: MedSAM2 checkpoint not found$"):
        load_promptable(f"medsam2:{tmp_path / 'nope.pt'}")
    with pytest.raises(ReadError, match=r"nope\.pt: MedSAM2 checkpoint not found$"):
        load_promptable("medsam2", checkpoint=tmp_path / "nope.pt")


def test_unknown_names_list_the_known_ones():
    with pytest.raises(SegEvalError) as info:
        load_promptable("sam3")
    assert str(info.value) == (
        "unknown promptable model 'sam3': use one of builtin, threshold, "
        "litemedsam, medsam2, sam2.1-tiny, sam2.1-small, sam2.1-base-plus, "
        "sam2.1-large, CATALOGUE_NAME, NAME:CHECKPOINT, module:factory"
    )
    with pytest.raises(
        SegEvalError,
        match=r"unknown promptable model 'sam2\.1-tinny' "
        r"\(closest: sam2\.1-tiny",
    ):
        load_promptable("sam2.1-tinny")
    with pytest.raises(ReadError) as info:
        load_dense("builtin-mr")
    assert str(info.value) == (
        "builtin-mr: no such model file or folder (dense models: "
        "builtin-ct, builtin-2d, WEIGHTS.pt, NNUNET_FOLDER, SCRIPT.pt, module:factory)"
    )


def test_factories(factories):
    model = load_promptable(f"{factories}:promptable")
    assert isinstance(model, ThresholdPromptModel) and model.level == 0.25
    toy = load_dense(f"{factories}:declared")
    assert (toy.num_classes, toy.name, dict(toy.structures), toy.raw_per_normalized_unit) == (
        2,
        "",
        {},
        1.0,
    )  # declared, or the protocol's defaults
    assert resolve_factory(f"{factories}:dense")() == "a dense model"
    with pytest.raises(
        SegEvalError,
        match=f"^model factory '{factories}:dense' returned a str "
        "without segment, name, num_classes, structures",
    ):
        load_dense(f"{factories}:dense")  # declares nothing: refused in one line
    with pytest.raises(SegEvalError, match="cannot import model factory 'no_such_module:f'"):
        load_dense("no_such_module:f")
    with pytest.raises(SegEvalError, match="cannot import model factory"):
        load_promptable(f"{factories}:missing")


def test_dense_names_and_paths(tmp_path):
    model = load_dense("builtin-ct", device="auto")
    assert isinstance(model, DenseModel) and model.name == "builtin-ct"
    assert model.meta["file"].endswith("builtin_ct_unet3d.pt")
    from napari_segeval.models.dense import BUILTIN_CT_WEIGHTS

    again = load_dense(str(BUILTIN_CT_WEIGHTS), device="cpu")
    assert again.name == str(BUILTIN_CT_WEIGHTS) and again.num_classes == model.num_classes
    assert load_dense(BUILTIN_CT_WEIGHTS, device=torch.device("cpu")).device.type == "cpu"


def test_common_caches_one_model_per_process():
    from napari_segeval.evaluation.protocols import _common as C

    assert C.promptable_model("threshold") is C.promptable_model("threshold")
    assert C.dense_model("builtin-ct", "cpu") is C.dense_model("builtin-ct", "cpu")
    assert C.resolve_factory is resolve_factory


def test_a_pulled_catalogue_name_loads_its_network(monkeypatch, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    pytest.importorskip("huggingface_hub")
    from hub_server import serve, tiny_checkpoint, tiny_entry

    from napari_segeval.models import _hub

    data = tiny_checkpoint()
    server = serve(monkeypatch, tmp_path / "cache", tiny_entry(data), data)
    try:
        assert is_promptable("test-tiny")
        with pytest.raises(SegEvalError, match="test-tiny is not here"):
            load_promptable("test-tiny")
        path = Path(_hub.pull("test-tiny")["path"])
    finally:
        server.close()
    model = load_promptable("test-tiny", device="cpu")  # the built-in network, pulled weights
    assert isinstance(model, BuiltinPromptModel) and model.weights == path
    assert model.config["width"] == 4
    with pytest.raises(
        SegEvalError,
        match="'test-tiny' is a pulled checkpoint and takes no "
        "other .got x.pt.: use --model builtin --checkpoint",
    ):
        load_promptable("test-tiny", checkpoint="x.pt")


def test_the_published_file_of_another_network_is_named(monkeypatch, tmp_path):
    from dataclasses import replace

    from napari_segeval.models import catalogue

    data = b"pretend these are the published SAM2.1-tiny weights"
    entry = replace(
        catalogue.CATALOGUE["sam2.1-tiny"], size=len(data), sha256=hashlib.sha256(data).hexdigest()
    )
    monkeypatch.setitem(catalogue.CATALOGUE, "sam2.1-tiny", entry)
    ckpt = tmp_path / "sam2.1_hiera_tiny.pt"
    ckpt.write_bytes(data)
    with pytest.raises(ReadError) as info:
        load_promptable("medsam2", checkpoint=ckpt)
    assert str(info.value) == (
        f"{ckpt}: this is the published sam2.1_hiera_tiny.pt "
        "(sam2.1-tiny), which sam2.1-tiny reads, not medsam2: use --model "
        "sam2.1-tiny"
    )


def test_what_a_name_takes_is_its_backends_declaration():
    from napari_segeval.models.litemedsam.model import LiteMedSAMModel
    from napari_segeval.models.medsam2.model import MedSAM2Model

    declared = registry.declared_capabilities
    assert declared("threshold") is ThresholdPromptModel.capabilities
    assert declared("litemedsam") is LiteMedSAMModel.capabilities
    assert all(
        declared(n) is MedSAM2Model.capabilities
        for n in registry.PROMPTABLE
        if n.startswith(("medsam2", "sam2.1"))
    )
    assert ThresholdPromptModel.capabilities.points is MedSAM2Model.capabilities.points is True
    # the built-in model: its weights say (the shipped ones have click channels)
    assert declared("builtin") is None and declared("builtin-prompt") is None
    assert BuiltinPromptModel(DEFAULT_WEIGHTS, device="cpu").capabilities.points is True
