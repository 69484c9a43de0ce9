"""Prediction keys: one format, one parse, and no second parser in the package."""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import napari_segeval
from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation.keys import FileKind, PredictionKey, is_image_key

# conditions and models as users and attacks name them: ':' and '=' allowed, ' @ ' not
_TEXT = st.text(st.sampled_from("abc xyz:=.-_0123456789@"), min_size=1, max_size=24)
_CONDITIONS = _TEXT.filter(
    lambda s: " @ " not in s and not re.match(r"(perturbed|perturbation|round\d+):", s)
)
_MODELS = st.none() | _TEXT.filter(lambda s: " @ " not in s and not s.startswith("@ "))


@example("a @", None, "b", FileKind.LABELS)  # the separator after a condition's own " @"
@given(_CONDITIONS, st.none() | st.integers(0, 50), _MODELS, st.sampled_from(list(FileKind)))
def test_every_key_reads_back_as_written(condition, k, model, kind):
    key = PredictionKey(condition, k, model, kind)
    assert PredictionKey.parse(key.format()) == key
    assert PredictionKey.parse(key) is key
    assert is_image_key(str(key)) == kind.is_image


@pytest.mark.parametrize(
    "text,fields",
    [
        ("clean", ("clean", None, None, FileKind.LABELS)),
        ("round2:clean", ("clean", 2, None, FileKind.LABELS)),
        ("round3:pgd @ builtin", ("pgd", 3, "builtin", FileKind.LABELS)),
        ("perturbed:fgsm-linf eps=0.5", ("fgsm-linf eps=0.5", None, None, FileKind.PERTURBED)),
        ("perturbation:pgd @ b:x.pt", ("pgd", None, "b:x.pt", FileKind.PERTURBATION)),
        (
            "mod:blur sigma=1.5 @ pkg:Model",
            ("mod:blur sigma=1.5", None, "pkg:Model", FileKind.LABELS),
        ),
    ],
)
def test_keys_results_folders_hold(text, fields):
    """The texts of results folders written before keys were typed read as they meant."""
    key = PredictionKey.parse(text)
    assert (key.condition, key.round, key.model, key.kind) == fields
    assert key.format() == text


def test_related_keys():
    key = PredictionKey.parse("round3:pgd @ builtin")
    assert str(key.first_round()) == "pgd @ builtin"
    assert str(key.image(FileKind.PERTURBATION)) == "perturbation:pgd @ builtin"
    assert key.image(FileKind.PERTURBED).labels() == key.first_round()
    assert key.label() == "pgd @ builtin round 3"
    assert PredictionKey("clean", 0) == PredictionKey("clean") and PredictionKey("clean").is_clean


@pytest.mark.parametrize(
    "args",
    [
        ("",),
        ("a @ b",),
        ("round2:clean",),
        ("perturbed:x",),
        ("clean", -1),
        ("clean", 1.5),
        ("clean", True),
        ("clean", None, ""),
        ("clean", None, "a @ b"),
        ("clean", None, "@ b"),
    ],
)
def test_keys_that_would_not_read_back_are_refused(args):
    with pytest.raises(SegEvalError, match="cannot name a prediction|whole number"):
        PredictionKey(*args)


#: What a hand-written key parser or formatter looks like in a string literal.
_HAND_WRITTEN = [
    re.compile(p)
    for p in (
        r"""^[rfbRFB]*['"] @ ['"]$""",  # " @ " alone: splitting or joining on it
        r"perturb(ed|ation):\{",  # f"perturbed:{cond}"
        r"round\{",  # f"round{k}:{cond}"
        r"round\(?\\d|round\(\[",  # a regex reading rounds
    )
]


def _segment(lines: list[str], node: ast.expr) -> str:
    """The source text of ``node``, as :func:`ast.get_source_segment` gives it, from the
    module's lines split once (that function splits the whole module again on every call:
    quadratic in a module's size, seconds over the package)."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    start, end = node.col_offset, node.end_col_offset
    if first == last:
        return lines[first].encode()[start:end].decode()
    head = lines[first].encode()[start:].decode()
    return head + "".join(lines[first + 1 : last]) + lines[last].encode()[:end].decode()


def _literals(path: Path) -> list[tuple[int, str]]:
    """(line, source text) of the string literals and f-strings of a module, docstrings
    (examples, not code) left out."""
    source = path.read_text()
    tree = ast.parse(source)
    lines = io.StringIO(source, newline="").readlines()  # no split at \f, as ast's own
    docs = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Expr)
        and isinstance(n.value, ast.Constant)
        and isinstance(n.value.value, str)
    }
    inner = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    skip = docs | inner
    return [
        (n.lineno, _segment(lines, n))
        for n in ast.walk(tree)
        if id(n) not in skip
        and (
            isinstance(n, ast.JoinedStr)
            or (isinstance(n, ast.Constant) and isinstance(n.value, str))
        )
    ]


def _hand_written(path: Path) -> list[str]:
    return [
        f"{line}: {text}"
        for line, text in _literals(path)
        if any(p.search(text) for p in _HAND_WRITTEN)
    ]


def test_no_second_key_parser_in_the_package():
    """Keys are formatted and parsed in evaluation/keys.py only (as the import contract
    keeps the layers): a literal that splits, joins or matches keys elsewhere fails."""
    root = Path(napari_segeval.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() == "evaluation/keys.py":
            continue
        found += [f"{path.relative_to(root)}:{hit}" for hit in _hand_written(path)]
    assert not found, "prediction keys written by hand (use evaluation.keys):\n" + "\n".join(found)


#: The modules where ``"clean"`` stays a literal: its one definition (``CLEAN``), and the
#: fields named after the clean/attacked pair of an attack's records (``dice_records``,
#: ``robustness_summary``, ``segeval attack``'s JSON, FAB's history), not a condition.
CLEAN_LITERALS = {
    "_names.py": 1,
    "attacks/fab.py": 1,
    "attacks/robustness.py": 3,
    "attacks/run.py": 1,
    "cli/_attack.py": 3,  # the JSON key and the dice_records fields of the text table
}


def test_the_clean_condition_is_spelled_once_in_the_package():
    """Code names the clean condition by ``_names.CLEAN``; docstrings (prose, examples of
    stored rows) may spell it."""
    root = Path(napari_segeval.__file__).parent
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        n = sum(text in ('"clean"', "'clean'") for _, text in _literals(path))
        if n:
            found[path.relative_to(root).as_posix()] = n
    assert found == CLEAN_LITERALS


def test_the_guard_reads_literals_as_ast_does(tmp_path):
    code = tmp_path / "m.py"
    # non-ASCII before a literal, a literal over two lines, a form feed (not a line break)
    code.write_text('x = "é" + " @ "\ny = (f"a{x}"\n     "b")\n# \f\nz = """one\ntwo"""\n')
    source = code.read_text()
    tree = ast.parse(source)
    inner = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    want = [
        (n.lineno, ast.get_source_segment(source, n))
        for n in ast.walk(tree)
        if id(n) not in inner
        and (isinstance(n, ast.JoinedStr) or isinstance(getattr(n, "value", None), str))
        and not isinstance(n, ast.Expr)
    ]
    assert _literals(code) == want
    assert sorted(want) == [
        (1, '" @ "'),
        (1, '"é"'),
        (2, 'f"a{x}"\n     "b"'),
        (5, '"""one\ntwo"""'),
    ]


def test_the_guard_sees_a_hand_written_parser(tmp_path):
    code = tmp_path / "m.py"
    code.write_text('def f(k):\n    return k.split(" @ ")[0], f"round{2}:{k}"\n')
    assert len(_hand_written(code)) == 2
