"""Prompt sets: order, per-frame semantics, validation, JSON round trip, bad files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from napari_segeval import InvalidPromptError, ReadError, WriteError
from napari_segeval.prompts import (
    Box,
    MaskPrompt,
    Point,
    PromptFile,
    PromptSet,
    read_prompts,
    write_prompts,
)
from napari_segeval.prompts.prompt_file import decode_mask, encode_mask

SHAPE = (10, 32, 40)


def _full_set(label: int = 2) -> PromptSet:
    m = np.zeros(SHAPE[1:], bool)
    m[5:9, 7:20] = True
    m[0, 0] = True  # a run that starts at the first pixel
    return PromptSet.of(
        [
            Box(4, 5, 20, 30, index=5, label=label),
            Point(12.5, 14, index=7, label=label, positive=False),
            Point(10, 10, index=7, label=label),
            MaskPrompt(m, index=2, label=label),
            Box(1, 1, 8, 8, index=9, label=label),
        ]
    )


def test_order_and_frames_are_kept() -> None:
    s = _full_set()
    assert s.frames == (2, 5, 7, 9)
    assert (s.first_frame, s.last_frame) == (2, 9)
    assert [type(p).__name__ for p in s] == ["Box", "Point", "Point", "MaskPrompt", "Box"]
    assert [p.positive for p in s.on(7)] == [False, True]
    assert len(s.boxes) == 2 and len(s.points) == 2


def test_box_and_mask_replace_earlier_prompts_on_their_frame() -> None:
    s = PromptSet.of(
        [
            Point(1, 1, index=3),
            Box(0, 0, 5, 5, index=3),
            Point(2, 2, index=3, positive=False),
            Point(9, 9, index=4),
        ]
    )
    assert [type(p).__name__ for p in s.active(3)] == ["Box", "Point"]
    m = MaskPrompt(np.ones((8, 8), bool), index=3)
    s2 = s.add(m).add(Point(4, 4, index=3))
    assert s2.active(3) == (m, Point(4, 4, index=3))
    assert s2.active(4) == (Point(9, 9, index=4),)
    assert s2.active(0) == ()


def test_add_relabels_and_remove_is_undo() -> None:
    s = PromptSet.from_box(Box(0, 0, 4, 4, index=1, label=3))
    s2 = s.add(Point(1, 1, index=2))  # label 1 -> relabelled to the set's structure
    assert s2.points[0].label == 3
    assert s2.remove(-1) == s
    with pytest.raises(ValueError, match="structure 1, not 3"):
        PromptSet(3, (Point(1, 1),))
    with pytest.raises(TypeError):
        PromptSet(1, ("box",))


@pytest.mark.parametrize(
    ("prompt", "match"),
    [
        (Point(3, 40, index=1), "outside the 32 x 40 slice"),
        (Point(-0.6, 3, index=1), "outside"),
        (Point(3, 3, index=10), "slice 10 does not exist"),
        (Box(40, 0, 50, 5, index=0), "outside the 32 x 40 slice"),
        (MaskPrompt(np.ones((4, 4), bool), index=0), "has shape 4 x 4, the slices are 32 x 40"),
    ],
)
def test_validate_refuses_prompts_that_do_not_fit(prompt, match) -> None:
    s = PromptSet.of([Box(0, 0, 4, 4, index=0), prompt], label=1)
    with pytest.raises(InvalidPromptError, match=match):
        s.validate(SHAPE, name="liver")


def test_validate_refuses_sets_that_do_not_locate_the_structure() -> None:
    neg = PromptSet.of([Point(3, 3, index=1, positive=False)])
    with pytest.raises(InvalidPromptError, match="only negative points"):
        neg.validate(SHAPE)
    empty_mask = PromptSet.of([MaskPrompt(np.zeros(SHAPE[1:], bool), index=1)])
    with pytest.raises(InvalidPromptError, match="only negative points"):
        empty_mask.validate(SHAPE)
    with pytest.raises(InvalidPromptError, match="no prompts"):
        PromptSet(1).validate(SHAPE)
    PromptSet.of([Point(3, 3, index=1)]).validate(SHAPE)  # one positive click is enough
    # a box partly outside the slice still prompts the part inside
    PromptSet.of([Box(-5, -5, 3, 3, index=0)]).validate(SHAPE)


def test_a_partial_set_is_checked_prompt_by_prompt() -> None:
    # a person's first click may be a negative one: only where it lies is checked
    PromptSet.of([Point(3, 3, index=1, positive=False)]).validate(SHAPE, partial=True)
    PromptSet(1).validate(SHAPE, partial=True)
    with pytest.raises(InvalidPromptError, match="- point .* slice 10 does not exist"):
        PromptSet.of([Point(3, 3, index=10, positive=False)]).validate(SHAPE, partial=True)


@pytest.mark.parametrize("seed", range(5))
def test_mask_run_length_round_trip(seed) -> None:
    rng = np.random.default_rng(seed)
    m = rng.random((7, 11)) < rng.random()
    assert np.array_equal(decode_mask(encode_mask(m)), m)
    assert sum(encode_mask(m)["counts"]) == m.size


def test_json_round_trip_is_exact(tmp_path) -> None:
    pf = PromptFile(
        {2: _full_set(2), 1: PromptSet.from_box(Box(1, 2, 3, 4, index=0))}, SHAPE, {2: "spleen"}
    )
    path = write_prompts(tmp_path / "prompts.json", pf)
    back = read_prompts(path)
    assert back == pf
    assert list(back.sets) == [2, 1]  # structure order kept
    assert back.sets[2].prompts == pf.sets[2].prompts
    with pytest.raises(WriteError):
        write_prompts(path, pf)  # never over an existing file unless asked
    write_prompts(path, pf, overwrite=True)


def test_check_against_the_case(tmp_path) -> None:
    pf = PromptFile({2: _full_set(2)}, SHAPE, {2: "spleen"})
    pf.check(SHAPE, {2: "spleen"}, present=[0, 2])
    with pytest.raises(
        InvalidPromptError, match=r"shape \[10, 32, 40\], this one is \[10, 32, 41\]"
    ):
        pf.check((10, 32, 41))
    with pytest.raises(InvalidPromptError, match="'spleen' in the prompts file but 'liver'"):
        pf.check(SHAPE, {2: "liver"})
    with pytest.raises(InvalidPromptError, match="unknown structure 2"):
        pf.check(SHAPE, {1: "liver"}, present=[0, 1])


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{", "not a JSON prompts file"),
        ('{"format": "other"}', "not a prompts file"),
        ('{"format": "napari-segeval/prompts/1", "shape": [4, 8, 8]}', "missing key 'structures'"),
        (
            (
                '{"format": "napari-segeval/prompts/1", "structures": [{"label": 1, "prompts": '
                '[{"type": "circle", "index": 0}]}]}'
            ),
            "unknown prompt type 'circle'",
        ),
        (
            (
                '{"format": "napari-segeval/prompts/1", "structures": [{"label": 1, "prompts": '
                '[{"type": "point", "index": 0.5, "y": 1, "x": 1}]}]}'
            ),
            "index must be an integer",
        ),
        (
            (
                '{"format": "napari-segeval/prompts/1", "structures": [{"label": 1, "prompts": '
                '[{"type": "mask", "index": 0, "rle": {"size": [2, 2], "counts": [1, 1]}}]}]}'
            ),
            "runs cover 2 pixels",
        ),
        (
            (
                '{"format": "napari-segeval/prompts/1", "structures": [{"label": 1, "prompts": []}, '
                '{"label": 1, "prompts": []}]}'
            ),
            "listed twice",
        ),
        (
            '{"format": "napari-segeval/prompts/1", "shape": [4, 8], "structures": []}',
            "shape must be",
        ),
        (
            '{"format": "napari-segeval/prompts/1", "structures": {"a": 1}}',
            r"malformed prompts file: structures must be a list of objects, got \{'a': 1\}$",
        ),
        (
            '{"format": "napari-segeval/prompts/1", "structures": [{"label": 1, "prompts": 5}]}',
            "malformed prompts file: prompts of structure 1 must be a list of objects, got 5$",
        ),
        (
            '{"format": "napari-segeval/prompts/1", "structures": [{"label": 1, "prompts": [3]}]}',
            r"malformed prompts file: prompts of structure 1 must be a list of objects, got \[3\]$",
        ),
    ],
)
def test_malformed_files_fail_with_one_line(tmp_path, text, match) -> None:
    path = tmp_path / "p.json"
    path.write_text(text)
    with pytest.raises((InvalidPromptError, ReadError), match=match) as err:
        read_prompts(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_missing_file(tmp_path) -> None:
    with pytest.raises(ReadError, match="no such prompts file"):
        read_prompts(tmp_path / "none.json")


def test_napari_coordinates_round_trip() -> None:
    p = Point(3.0, 4.5, index=6, label=2, positive=False)
    assert Point.from_napari(p.to_napari(), label=2, positive=False) == p
    assert Point.from_napari(p.to_napari(2), label=2, positive=False) == Point(
        3.0, 4.5, 0, 2, False
    )
    assert json.loads(json.dumps(PromptFile({2: PromptSet.of([p])}).to_json()))
