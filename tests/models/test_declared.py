"""What a backend can do is declared, not guessed; one builder of model rows.

Like the import contract, these read the source: they fail when generic code guesses a
capability (``getattr``/``hasattr`` on what a backend takes, a signature inspected in
propagation) or when a second model-row builder appears beside
:func:`napari_segeval.models.records.model_rows`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "napari_segeval"

#: Declared facts of a backend (``Capabilities`` fields, protocol attributes).
DECLARED = (
    "takes_points",
    "points",
    "masks",
    "boxes",
    "capabilities",
    "corrections",
    "stop_confidence",
    "propagate_logits",
    "walk_logits",
    "propagate_walks",
    "feature_cache",
    "structures",
    "num_classes",
    "raw_per_normalized_unit",
    "name",
    # MedSAM2's resize option (Capabilities.resize_modes), an attack target's
    # channels (attacks.run.AttackTarget), a dense segmentation's record
    "with_options",
    "resize",
    "channel_valid_ranges",
    "channel_axis",
    "channel_valid_range",
    "channel_scale",
    "params",
    "sets",
)


def _sources() -> list[tuple[Path, ast.AST]]:
    return [(p, ast.parse(p.read_text(), str(p))) for p in sorted(PACKAGE.rglob("*.py"))]


def _guesses(tree: ast.AST) -> list[tuple[int, str]]:
    """``getattr(x, "NAME", ...)`` / ``hasattr(x, "NAME")`` with a declared NAME."""
    out = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in DECLARED
        ):
            out.append((node.lineno, f"{node.func.id}(..., {node.args[1].value!r})"))
    return out


def test_no_capability_is_guessed():
    found = [
        f"{p.relative_to(PACKAGE)}:{line}: {what}"
        for p, tree in _sources()
        for line, what in _guesses(tree)
    ]
    assert found == [], "read the declared attribute instead:\n" + "\n".join(found)


def test_propagation_inspects_no_signature():
    found = [
        f"{p.relative_to(PACKAGE)}:{node.lineno}"
        for p, tree in _sources()
        if "propagation" in p.parts or p.name == "features.py"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ("signature", "getfullargspec")
    ]
    assert found == []


def test_the_guard_sees_a_guess():
    tree = ast.parse(
        'if getattr(model, "takes_points", True):\n    pass\nok = hasattr(m, "walk_logits")\n'
    )
    assert [w for _, w in _guesses(tree)] == [
        "getattr(..., 'takes_points')",
        "hasattr(..., 'walk_logits')",
    ]


ROW_KEYS = re.compile(r'"(size_bytes|shipped|repo_id)"\s*:')


def test_one_model_row_builder():
    """Rows of models are built once (records.model_rows); the CLI and the picker render
    them, and neither reads the catalogue's tables to build rows of its own."""
    builders = [
        p.relative_to(PACKAGE).as_posix()
        for p in sorted(PACKAGE.rglob("*.py"))
        if len(ROW_KEYS.findall(p.read_text())) >= 2
    ]
    assert builders == ["cli/_models.py"]  # the renderer of --json's keys
    for renderer in ("cli/_models.py", "_widgets/models/rows.py", "_widgets/models/picker.py"):
        text = (PACKAGE / renderer).read_text()
        assert re.search(r"\b(BUILTIN_CARDS|PACKAGED|CATALOGUE)\b", text) is None, renderer
        assert re.search(r"models(\.| import )_(cache|hub)\b", text) is None, renderer
    assert "def model_rows" in (PACKAGE / "models" / "records.py").read_text()


@pytest.mark.parametrize("name", ["threshold", "litemedsam", "medsam2", "sam2.1-large"])
def test_a_records_capabilities_are_its_backends(name):
    from napari_segeval.models.records import record

    caps = record(name).capabilities
    assert caps is not None and caps.boxes
    if name == "threshold":
        from napari_segeval.models.registry import load_promptable

        assert load_promptable(name).capabilities is caps


def test_implemented_parts_are_read_from_the_class():
    """``logits``, ``frame_features`` and ``box3d`` cannot be declared: they are whether the
    class overrides ``walk_logits``, ``feature_cache`` and ``challenge_3d``."""
    from napari_segeval import SegEvalError
    from napari_segeval.models.base import Capabilities
    from napari_segeval.models.registry import declared_capabilities
    from napari_segeval.models.threshold import ThresholdPromptModel

    for flag in ("logits", "frame_features", "box3d"):
        with pytest.raises(TypeError):
            Capabilities(**{flag: True})

    class Keeping(ThresholdPromptModel):
        def feature_cache(self):
            return {}

    plain = ThresholdPromptModel.capabilities
    assert Keeping.capabilities.frame_features and not plain.frame_features
    assert Keeping.capabilities.points == plain.points
    flags = {
        name: tuple(
            getattr(declared_capabilities(name), f) for f in ("logits", "frame_features", "box3d")
        )
        for name in ("threshold", "litemedsam", "medsam2")
    }
    assert flags == {
        "threshold": (False, False, False),
        "litemedsam": (False, True, True),
        "medsam2": (True, True, False),
    }
    with pytest.raises(SegEvalError, match="^threshold does not run the CVPR 2024"):
        ThresholdPromptModel().challenge_3d(None, [])


def test_a_model_without_resize_modes_keeps_its_one_resize():
    """``with_options`` of a backend offering no ``resize_modes``: the model itself, no
    ``resize``; asking for a resize mode is refused in one line."""
    from napari_segeval import SegEvalError
    from napari_segeval.models.threshold import ThresholdPromptModel

    m = ThresholdPromptModel()
    assert not m.capabilities.resize_modes
    assert m.with_options() is m and m.with_options(resize=None) is m
    assert m.resize is None
    with pytest.raises(SegEvalError, match="^threshold offers no resize option, got resize='pil"):
        m.with_options(resize="pillow")
