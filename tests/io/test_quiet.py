"""quiet() in parallel threads: each thread keeps its warnings, the process gets its state back."""

from __future__ import annotations

import logging
import os
import threading
import warnings

from napari_segeval.io._quiet import quiet


def test_overlapping_blocks_in_two_threads_restore_everything(capfd):
    filters, show = list(warnings.filters), warnings.showwarning
    levels = {n: logging.getLogger(n).level for n in ("nibabel", "pydicom")}
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    caught: dict[str, list] = {}

    def a() -> None:  # enters first, leaves first: the state must stay switched for b
        with quiet(native=True) as got:
            a_in.set()
            b_in.wait(5)
            warnings.warn("from a", stacklevel=1)
        caught["a"] = got
        a_out.set()

    def b() -> None:
        a_in.wait(5)
        with quiet(native=True) as got:
            b_in.set()
            a_out.wait(5)
            warnings.warn("from b", stacklevel=1)
            os.write(2, b"native noise\n")  # swallowed while any native block is open
        caught["b"] = got

    threads = [threading.Thread(target=f) for f in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert caught == {"a": ["from a"], "b": ["from b"]}
    assert warnings.filters == filters and warnings.showwarning is show
    assert {n: logging.getLogger(n).level for n in levels} == levels
    os.write(2, b"after\n")  # file descriptor 2 is the real one again
    err = capfd.readouterr().err
    assert "after" in err and "native noise" not in err


def test_warnings_of_other_threads_are_not_swallowed():
    inside, done = threading.Event(), threading.Event()

    def reader() -> None:
        with quiet():
            inside.set()
            done.wait(5)

    t = threading.Thread(target=reader)
    t.start()
    inside.wait(5)
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            warnings.warn("main thread warning", stacklevel=1)
    finally:
        done.set()
        t.join(10)
    assert [str(w.message) for w in seen] == ["main thread warning"]


def test_a_catch_warnings_block_overlapping_a_read_breaks_nothing(capfd):
    """Another thread's catch_warnings that outlives a read restores our hook: harmless."""
    inside, main_in, left = threading.Event(), threading.Event(), threading.Event()

    def reader() -> None:
        with quiet():
            inside.set()
            main_in.wait(5)
        left.set()

    t = threading.Thread(target=reader)
    t.start()
    inside.wait(5)
    with warnings.catch_warnings():  # saves quiet's hook; restores it after the read ended
        main_in.set()
        left.wait(5)
    t.join(10)
    warnings.warn("after the overlap", stacklevel=1)  # shown, not lost, no recursion
    with quiet() as got:
        warnings.warn("inside a read", stacklevel=1)
        other = threading.Thread(target=lambda: warnings.warn("from another thread", stacklevel=1))
        other.start()
        other.join(10)
    assert got == ["inside a read"]
    err = capfd.readouterr().err
    assert "after the overlap" in err and "from another thread" in err
