"""What ends a panel's job from outside: a removed layer, a closed window or panel (each
``watch_*`` function returns the function that stops watching)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from qtpy.QtCore import QEvent, QObject, QTimer, Slot

if TYPE_CHECKING:
    from napari_segeval._widgets.jobs.worker import Job

Stop = Callable[[], None]


def qt_alive(obj: Any) -> bool:
    """False once the C++ side of a Qt object has been deleted."""
    try:
        obj.objectName()
    except RuntimeError:
        return False
    return True


def watch_layers(viewer: Any, job: Job, on_cancel: Callable[[Job], None]) -> Stop:
    """Cancel ``job``, then call ``on_cancel(job)``, when a layer it needs leaves ``viewer``."""
    if viewer is None or not job.needs:
        return lambda: None

    def removed(event: Any) -> None:
        layer = getattr(event, "value", None)
        if layer is not None and job.gone is None and any(layer is need for need in job.needs):
            job.cancel(f"layer '{layer.name}' was removed")
            on_cancel(job)

    emitter = viewer.layers.events.removed
    emitter.connect(removed)
    return lambda: emitter.disconnect(removed)


class _WindowWatch(QObject):
    """Event filter on a widget's ancestors: their close, hide or new parent."""

    def __init__(self, widget: Any, on_closed: Callable[[str], object]) -> None:
        super().__init__()
        self.widget = weakref.ref(widget)
        self.top = weakref.ref(widget.window())
        self.on_closed: Callable[[str], object] | None = on_closed
        self.ancestors: list[Any] = []
        parent = widget.parentWidget()
        while parent is not None:
            parent.installEventFilter(self)
            self.ancestors.append(parent)
            parent = parent.parentWidget()

    def eventFilter(self, obj: Any, event: Any) -> bool:
        """Check the window once a close, hide or new parent of an ancestor took effect."""
        if event.type() in (QEvent.Type.Close, QEvent.Type.Hide, QEvent.Type.ParentChange):
            QTimer.singleShot(0, self.check)
        return False

    def check(self) -> None:
        """Call ``on_closed`` when the widget is no longer in a shown window."""
        widget = self.widget()
        if widget is None or not qt_alive(widget) or self.on_closed is None:
            return
        window = widget.window()
        if window.isVisible():  # another tab, a floated dock: still shown
            return
        on_closed, self.on_closed = self.on_closed, None
        on_closed("its window was closed" if window is self.top() else "its panel was closed")

    def stop(self) -> None:
        self.on_closed = None
        for ancestor in self.ancestors:
            if qt_alive(ancestor):
                ancestor.removeEventFilter(self)
        self.ancestors = []


def watch_window(widget: Any, on_closed: Callable[[str], object]) -> Stop:
    """Call ``on_closed(reason)`` once ``widget`` leaves the shown window it is in now (another
    tab or a floated dock stay shown; a widget in no shown window is not watched)."""
    window = widget.window()
    if window is widget or not window.isVisible():
        return lambda: None
    return _WindowWatch(widget, on_closed).stop


class _Closer(QObject):
    """Closes a job and its activity-dock bar when its runner is destroyed: a slot without
    arguments, so the dying runner is never wrapped for Python (a lambda crashes in the GC)."""

    def __init__(self, job: Job, bar: Any) -> None:
        super().__init__()
        self.job, self.bar = job, bar

    @Slot()
    def close_job(self) -> None:
        """Close the job (cancel, join) and its bar."""
        self.job.close("its panel was closed")
        if self.bar is not None:
            self.bar.close()


#: Closers of jobs that may still run (dropped at a later watch once their job ended).
_CLOSERS: set[_Closer] = set()


def watch_destroyed(widget: Any, job: Job, bar: Any = None) -> Stop:
    """Close ``job`` (and ``bar``, its activity-dock bar) when ``widget`` is destroyed."""
    _CLOSERS.difference_update([c for c in _CLOSERS if c.job.closed and not c.job.alive])
    closer = _Closer(job, bar)
    _CLOSERS.add(closer)
    widget.destroyed.connect(closer.close_job)

    def stop() -> None:
        _CLOSERS.discard(closer)
        try:
            widget.destroyed.disconnect(closer.close_job)
        except (TypeError, RuntimeError):  # the widget is being deleted
            pass

    return stop
