"""The shared ViewerState: one per viewer, held weakly, weak listeners."""

from __future__ import annotations

import gc
import weakref

from napari_segeval._widgets._state import ViewerState, shared_state


class _Viewer:
    """Stands in for napari.Viewer: hashable by identity, weak-referenceable."""


class _Panel:
    def __init__(self, state):
        self.heard = []
        state.subscribe(self.on_state)

    def on_state(self, what):
        self.heard.append(what)


def test_one_state_per_viewer_while_a_panel_holds_it():
    viewer, other = _Viewer(), _Viewer()
    state = shared_state(viewer)
    assert shared_state(viewer) is state
    assert shared_state(other) is not state
    gone = weakref.ref(state)
    del state
    gc.collect()
    assert gone() is None  # no panel holds it: the registry does not either
    assert isinstance(shared_state(viewer), ViewerState)


def test_registry_does_not_keep_a_viewer_alive():
    viewer = _Viewer()
    state = shared_state(viewer)
    state.viewer_ref = viewer  # panels hold both: the state must not pin its viewer
    gone = weakref.ref(viewer)
    del viewer, state
    gc.collect()
    assert gone() is None


def test_listeners_hear_changes_and_are_held_weakly():
    state = ViewerState()
    panel = _Panel(state)
    heard = []
    state.subscribe(heard.append)  # a plain callable is held as given
    state.set_current(3)
    assert panel.heard == ["current"] and heard == ["current"]
    gone = weakref.ref(panel)
    del panel
    gc.collect()
    assert gone() is None
    state.set_current(4)
    assert heard == ["current", "current"]
    assert len(state._listeners) == 1
    state.unsubscribe(heard.append)
    state.set_current(5)
    assert heard == ["current", "current"]


def test_unsubscribe_a_bound_method():
    state = ViewerState()
    panel = _Panel(state)
    state.unsubscribe(panel.on_state)
    state.set_current(1)
    assert panel.heard == []
