"""Generated data sets for the evaluation tests (tiny volumes, written in tmp_path)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _segeval_toy (workers too)

from _segeval_toy import write_msd


@pytest.fixture(scope="session")
def msd_task(tmp_path_factory) -> Path:
    """Four clean toy cases in MSD layout (written once per session: read them only)."""
    return write_msd(tmp_path_factory.mktemp("msd") / "Task99_Toy")
