"""``Cancelled`` is public (``from napari_segeval import Cancelled``) and one class."""

import threading

import pytest

import napari_segeval
from napari_segeval import Cancelled
from napari_segeval._cancel import check_cancel


def test_cancelled_is_exported_and_the_same_class():
    assert Cancelled is napari_segeval._cancel.Cancelled
    assert "Cancelled" in napari_segeval.__all__
    ev = threading.Event()
    check_cancel(ev, "job")
    ev.set()
    with pytest.raises(Cancelled, match="job cancelled"):
        check_cancel(ev, "job")
