"""The shared ViewerState: one per viewer, held weakly; its psygnal events hold panels weakly."""

from __future__ import annotations

import gc
import weakref

from napari_segeval._widgets._state import ViewerState, listen, shared_state


class _Viewer:
    """Stands in for napari.Viewer: hashable by identity, weak-referenceable."""


class _Panel:
    def __init__(self, state):
        self.heard = []
        self.stop = listen([(state.events.current, self.on_current)])

    def on_current(self):
        self.heard.append(self)


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


def test_panels_hear_changes_and_are_held_weakly():
    state = ViewerState()
    panel = _Panel(state)
    heard = []
    state.events.current.connect(lambda: heard.append(state.current))  # held as given
    state.set_current(3)
    assert panel.heard == [panel] and heard == [3]
    gone = weakref.ref(panel)
    del panel
    gc.collect()
    assert gone() is None  # the state does not keep a panel alive
    state.set_current(4)
    state.set_current(4)  # no change: no signal
    assert heard == [3, 4]


def test_a_closed_panel_stops_hearing():
    state = ViewerState()
    panel = _Panel(state)
    panel.stop()
    state.set_current(1)
    state.set_reference(None)
    assert panel.heard == []


def test_each_setter_emits_its_own_signal():
    from types import SimpleNamespace

    state = ViewerState()
    heard = []
    state.events.all.connect(lambda info: heard.append(info.signal.name))
    layer = SimpleNamespace(metadata={"structures": {1: "liver"}})
    state.set_image(layer)
    state.set_reference(layer)
    state.set_prediction("attacked", layer)
    state.set_prediction("clean", layer)
    state.set_attacked_image(layer)
    state.set_model(object(), None, "dense")
    state.set_uncertainty({1: 0.5})
    state.set_risk({})
    state.set_current(None)
    assert heard == [
        "image",
        "reference",
        "attacked",
        "clean",
        "attacked_image",
        "model",
        "uncertainty",
        "risk",
        "current",
    ]
