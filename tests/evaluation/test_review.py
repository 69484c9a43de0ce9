"""A review's progress in the results folder (evaluation.review: review.json)."""

from __future__ import annotations

import json

import pytest

from napari_segeval._errors import ReadError
from napari_segeval.evaluation.review import REVIEW_FILE, ReviewLog


def test_marks_are_written_at_once_and_read_back(tmp_path):
    log = ReviewLog.load(tmp_path)
    assert log.reviewed == {} and not (tmp_path / REVIEW_FILE).exists()  # nothing written yet
    log.mark("abd_002")
    log.mark("abd_001")
    saved = json.loads((tmp_path / REVIEW_FILE).read_text())
    assert saved["format"] == 1 and sorted(saved["reviewed"]) == ["abd_001", "abd_002"]
    again = ReviewLog.load(tmp_path)
    assert again.is_reviewed("abd_001") and not again.is_reviewed("abd_003")
    when = again.reviewed["abd_001"]
    again.mark("abd_001")  # marked twice: the first time is kept
    assert ReviewLog.load(tmp_path).reviewed["abd_001"] == when
    again.mark("abd_001", reviewed=False)
    assert sorted(ReviewLog.load(tmp_path).reviewed) == ["abd_002"]
    assert [p.name for p in tmp_path.iterdir()] == [REVIEW_FILE]  # no temporary left


def test_two_viewers_on_one_folder_keep_each_others_marks(tmp_path):
    first, second = ReviewLog.load(tmp_path), ReviewLog.load(tmp_path)
    first.mark("a")
    second.mark("b")  # read again before writing: "a" stays
    assert sorted(ReviewLog.load(tmp_path).reviewed) == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "cannot read JSON"),
        ('{"format": 1, "reviewed": ["a"]}', "not a review record"),
        ('{"format": 7, "reviewed": {}}', "review format 7"),
        ("[]", "not a review record"),
    ],
)
def test_an_unreadable_review_is_an_error_and_is_not_replaced(tmp_path, text, message):
    (tmp_path / REVIEW_FILE).write_text(text)
    with pytest.raises(ReadError, match=message):
        ReviewLog.load(tmp_path)
    log = ReviewLog(tmp_path / REVIEW_FILE)
    with pytest.raises(ReadError, match=message):
        log.mark("a")
    assert (tmp_path / REVIEW_FILE).read_text() == text
