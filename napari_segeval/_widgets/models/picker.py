"""The model picker of the Prompt and Attack tabs: every promptable model, its state, its card.

The pickers of one viewer share one cache signal (:func:`cache_signal`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qtpy.QtCore import QObject, Qt, Signal
from qtpy.QtGui import QColor, QStandardItem, QStandardItemModel
from qtpy.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from napari_segeval._widgets.jobs.tasks import load_model, pull_model
from napari_segeval._widgets.jobs.worker import JobRunner
from napari_segeval._widgets.models.rows import (
    card_html,
    catalogue_rows,
    entry_named,
    entry_of,
    install_hint,
    package_installed,
    row_state,
)
from napari_segeval.models.registry import PROMPTABLE

#: Item data role of a row's :class:`dict` (``kind``, ``name``, ``path``).
ROW = Qt.ItemDataRole.UserRole + 1
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


# ----------------------------------------------------------------------------- the widget
class ModelPicker(QWidget):
    """Choose a promptable model; download a catalogue entry; open a checkpoint file.

    Parameters
    ----------
    napari_viewer : napari.Viewer
    device : callable, optional
        The device an opened checkpoint is loaded on to check it (default ``"auto"``).
    first : (str, str), optional
        A row (label, state) before the models whose choice is ``("", None)``.

    Attributes
    ----------
    combo : QComboBox
        The list (name, state); its text is a registry label, an entry's or a file's name.
    card : QLabel
        The selected entry's model card.
    runner : JobRunner
        Downloads and checkpoint checks.
    changed : Signal()
        The choice, or the state of the choice, changed.
    loaded : Signal(tuple, object)
        An opened checkpoint loaded: ``(spec, model)``, ``spec = (label, path, device)``.
    """

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
        self.files: list[dict] = []
        self.items = QStandardItemModel(0, 2, self)
        self.combo = QComboBox()
        view = QTreeView()
        view.setHeaderHidden(True)
        view.setRootIsDecorated(False)
        view.setItemsExpandable(False)
        self.combo.setView(view)
        self.combo.setModel(self.items)
        self.combo.setModelColumn(0)
        self.state = QLabel("")
        self.state.setWordWrap(True)
        self.download_button = QPushButton("Download")
        self.download_button.setToolTip(
            "download the selected checkpoint from the model hub "
            "(once: SHA-256 checked, kept in the hub's cache)"
        )
        self.download_button.clicked.connect(self._guarded(self.download))
        self.open_button = QPushButton("Open checkpoint…")
        self.open_button.setToolTip(
            "a checkpoint file of the selected network (checked by loading it before it is listed)"
        )
        self.open_button.clicked.connect(self._guarded(self.open_checkpoint))
        self.card_button = QPushButton("Card")
        self.card_button.setCheckable(True)
        self.card_button.setChecked(True)
        self.card_button.setToolTip(
            "show or hide the model card (training data, intended use, what it is not for, licence)"
        )
        self.card = QLabel("")
        self.card_button.toggled.connect(self.card.setVisible)
        self.card.setWordWrap(True)
        self.card.setTextFormat(Qt.TextFormat.RichText)
        self.card.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # the dock's width is the other panels': the card wraps to it, never widens it
        self.card.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.runner = JobRunner(viewer=napari_viewer)
        self.runner.setVisible(False)  # shown while a download or a check runs
        self.runner.job_done.connect(lambda _n, _o: self._show())
        self._build()
        self.fill()
        self.combo.currentIndexChanged.connect(lambda _i: self._picked())
        cache_signal(napari_viewer).changed.connect(self.refresh)

    def _build(self) -> None:
        top = QHBoxLayout()
        top.addWidget(self.combo, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.state, 1)
        buttons.addWidget(self.download_button)
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.card_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addLayout(buttons)
        layout.addWidget(self.card)
        layout.addWidget(self.runner)

    @staticmethod
    def _guarded(fn: Callable[[], Any]) -> Callable[[], Any]:
        from napari_segeval._widgets.jobs.worker import run_guarded

        return lambda *_: run_guarded(fn.__name__.replace("_", " "), fn)

    # -- rows -----------------------------------------------------------------------------
    def rows(self) -> list[dict]:
        """Every row of the list, in order (the ``first`` row has kind ``"first"``)."""
        return [self.items.item(i, 0).data(ROW) for i in range(self.items.rowCount())]

    def fill(self) -> None:
        """(Re)build the list, keeping the selection."""
        keep = self.current()
        self.items.blockSignals(True)
        self.combo.blockSignals(True)
        self.items.removeRows(0, self.items.rowCount())
        first = (
            [{"kind": "first", "name": "", "label": self.first[0], "path": None}]
            if self.first
            else []
        )
        for row in [*first, *catalogue_rows(), *self.files]:
            name = QStandardItem(row["label"])
            name.setData(row, ROW)
            state = QStandardItem(self.first[1] if row["kind"] == "first" else row_state(row))
            state.setEditable(False)
            state.setForeground(QColor("gray"))  # a click on it still chooses the row
            self.items.appendRow([name, state])
        self.items.blockSignals(False)
        rows = self.rows()
        index = next((i for i, r in enumerate(rows) if keep is not None and r == keep), 0)
        self.combo.setCurrentIndex(index)
        self.combo.blockSignals(False)
        view = self.combo.view()
        for column in (0, 1):
            view.resizeColumnToContents(column)
            view.setColumnWidth(column, view.columnWidth(column) + 24)  # the popup's margins
        view.setMinimumWidth(view.columnWidth(0) + view.columnWidth(1) + 40)
        self._show()

    def refresh(self) -> None:
        """Read the states again (the cache changed); say so when the choice's changed."""
        before = self.state.text()
        self.fill()
        if self.state.text() != before:
            self.changed.emit()

    def current(self) -> dict | None:
        """The selected row."""
        i = self.combo.currentIndex()
        return None if i < 0 else self.items.item(i, 0).data(ROW)

    def choice(self) -> tuple[str, str | None]:
        """``(model name, checkpoint or None)`` of the selection (``("", None)`` for ``first``)."""
        row = self.current()
        if row is None or row["kind"] == "first":
            return "", None
        if row["kind"] == "catalogue":
            return row["name"], None
        return row["name"], row["path"]

    def ready(self) -> bool:
        """False when the selection is a catalogue checkpoint not downloaded yet."""
        row = self.current()
        if row is not None and not package_installed(row):
            return False
        entry = None if row is None else entry_of(row)
        if entry is None:
            return True
        from napari_segeval.models.hub import local_path

        return local_path(entry) is not None

    def require(self) -> None:
        """Refuse (one line) a catalogue checkpoint not downloaded yet, before any job starts."""
        if not self.ready():
            from napari_segeval._errors import SegEvalError
            from napari_segeval.models.catalogue import size_text

            if not package_installed(self.current()):
                raise SegEvalError(install_hint(self.current()))
            entry = entry_of(self.current())
            raise SegEvalError(
                f"the checkpoint {entry.name} is not downloaded yet: click "
                f"Download ({size_text(entry.size)}, once; segeval models pull "
                f"{entry.name} on the command line) or choose another model"
            )

    def choose(self, ref: str | None) -> bool:
        """Select the row of a registry name or label, a catalogue name or ``NAME:PATH``.

        Returns False when there is none.
        """
        from napari_segeval.models.registry import split_ref

        if not ref:
            return False
        name, path = split_ref(ref)
        if path:
            if name not in PROMPTABLE:
                return False
            self.use_file(path, name)
            return True
        entry = entry_named(name)
        for i, row in enumerate(self.rows()):
            if row["kind"] == "file":
                continue
            if name in (row["name"], row["label"]) or (
                entry is not None and entry_of(row) is entry
            ):
                self.combo.setCurrentIndex(i)
                return True
        return False

    def use_file(self, path: str | Path, network: str | None = None) -> None:
        """Add (or select) the row of ``path`` read by ``network``, without loading it."""
        network = network or self.network()
        if network not in PROMPTABLE:
            raise ValueError(f"{path}: choose the network the checkpoint is for first")
        row = {"kind": "file", "name": network, "label": Path(path).name, "path": str(path)}
        if row not in self.files:
            self.files.append(row)
            self.fill()
        self.combo.setCurrentIndex(self.rows().index(row))

    def network(self) -> str:
        """The registry name of the network the selected row reads ("" for ``first``)."""
        row = self.current()
        if row is None or row["kind"] == "first":
            return ""
        entry = entry_named(row["name"]) if row["kind"] == "catalogue" else None
        return entry.architecture if entry is not None else row["name"]

    def _picked(self) -> None:
        self._show()
        self.changed.emit()

    def _show(self) -> None:
        row = self.current()
        if row is None:
            return
        text = self.items.item(self.combo.currentIndex(), 1).text()
        self.state.setText(text)
        entry = entry_of(row)
        busy = self.runner.running
        self.runner.setVisible(busy)
        self.download_button.setEnabled(not busy and entry is not None and not self.ready())
        net = self.network()
        self.open_button.setEnabled(not busy and bool(net) and PROMPTABLE[net].checkpoint != "none")
        self.card.setText(self.first[1] if row["kind"] == "first" else card_html(row))
        self.combo.setToolTip(f"{row['label']}: {text}")

    # -- actions --------------------------------------------------------------------------
    def download(self) -> Any:
        """Download the selected catalogue checkpoint in a job (never on its own)."""
        row = self.current()
        entry = None if row is None else entry_of(row)
        if entry is None:
            raise ValueError(f"{self.combo.currentText()} has nothing to download")
        if self.ready():
            raise ValueError(f"{entry.name} is here already")
        job = self.runner.start(
            f"download {entry.name}",
            pull_model,
            entry.name,
            on_done=lambda _result: cache_signal(self.viewer).changed.emit(),
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
            f"checking {Path(path).name}",
            load_model,
            *spec,
            on_done=lambda model: self._opened(spec, network, model),
        )
        self._show()
        return job

    def _opened(self, spec: tuple, network: str, model: Any) -> None:
        self.loaded.emit(spec, model)  # first: the panel keeps the model before it is chosen
        self.use_file(spec[1], network)
