"""A review's progress, kept in the results folder: which cases a person has reviewed.

The *Results* panel writes each mark at once to ``DIR/review.json``, atomically, after
reading the file again (two viewers on one folder add to each other's marks)::

    {"format": 1, "reviewed": {"abd_001": "2026-12-04T21:03:12+00:00"}}

An unreadable ``review.json`` is a :class:`~napari_segeval.ReadError`, never replaced.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from napari_segeval._errors import ReadError
from napari_segeval.evaluation import store

#: The file of a results folder that holds its review's progress.
REVIEW_FILE = "review.json"
#: The version of its layout.
REVIEW_FORMAT = 1


@dataclass
class ReviewLog:
    """The reviewed cases of a results folder (``DIR/review.json``).

    Attributes
    ----------
    path : pathlib.Path
        The file.
    reviewed : dict of str to str
        Case id -> when it was marked reviewed (ISO 8601, UTC).
    """

    path: Path
    reviewed: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, folder: str | os.PathLike) -> ReviewLog:
        """The review of ``folder`` (nothing reviewed without a ``review.json``).

        Raises
        ------
        napari_segeval.ReadError
            The file is not a review record.
        """
        path = Path(folder) / REVIEW_FILE
        return cls(path, _read(path))

    def is_reviewed(self, case_id: str) -> bool:
        """Whether ``case_id`` is marked reviewed."""
        return case_id in self.reviewed

    def mark(self, case_id: str, reviewed: bool = True) -> None:
        """Mark ``case_id`` reviewed (or not) and write the file at once (read again first).

        Raises
        ------
        napari_segeval.ReadError
            The file on disk is not a review record (it is left as it is).
        napari_segeval.WriteError
            The folder cannot be written.
        """
        marks = _read(self.path)
        if reviewed:
            marks[case_id] = self.reviewed.get(case_id) or datetime.now(timezone.utc).isoformat(
                timespec="seconds"
            )
        else:
            marks.pop(case_id, None)
        store.write_json(self.path, {"format": REVIEW_FORMAT, "reviewed": marks})
        self.reviewed = marks


def _read(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    data = store.read_json(path)
    marks = data.get("reviewed") if isinstance(data, dict) else None
    if not isinstance(marks, dict):
        raise ReadError(f"{path}: not a review record (no 'reviewed' object of case ids)")
    if not isinstance(data.get("format"), int) or data["format"] > REVIEW_FORMAT:
        raise ReadError(
            f"{path}: review format {data.get('format')!r} is not one this installation "
            f"reads ({REVIEW_FORMAT}); update napari-segeval"
        )
    return {str(k): str(v) for k, v in marks.items()}


__all__ = ["REVIEW_FILE", "REVIEW_FORMAT", "ReviewLog"]
