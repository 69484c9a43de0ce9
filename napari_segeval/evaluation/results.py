"""Browse a results folder (finished or not): its rows, and one case with its files.

The napari *Results* panel is a thin front end over :class:`ResultsFolder`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval._names import CLEAN
from napari_segeval.evaluation import store
from napari_segeval.evaluation.keys import PredictionKey, is_image_key
from napari_segeval.evaluation.layouts import CaseSpec
from napari_segeval.evaluation.loaded import (
    LoadedCase,
    MissingFilesError,
    float_key,
    focus_key,
    read_case_files,
)
from napari_segeval.metrics.catalog import as_float

#: Metric columns of :meth:`ResultsFolder.rows` besides the identifiers (their titles,
#: units and display: :data:`napari_segeval.metrics.METRICS`).
METRICS = ("dice", "delta_dice", "hd95", "nsd", "uncertainty", "risk")


class ResultsFolderError(SegEvalError):
    """A folder is not a usable results folder (no ``run.json``, unreadable, no cases)."""


class NewerResultsError(ResultsFolderError):
    """The results were written by a protocol version newer than this installation's."""


def version_key(version: str) -> tuple[int, ...] | None:
    """``"1.10"`` -> ``(1, 10)``; None when it is not dotted numbers."""
    parts = str(version).strip().split(".")
    return tuple(map(int, parts)) if all(p.isdecimal() for p in parts) else None


class ResultsFolder:
    """A results folder written by ``segeval evaluate`` (``DIR``), opened for browsing.

    It checks every file of a case before reading any, finds a moved data set
    (:meth:`remap_data`) and saves corrections beside the results, never over a file.
    ResultsFolderError: not a usable results folder; NewerResultsError: an unknown protocol.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        from napari_segeval.evaluation.protocols import get_protocol

        self.path = p = Path(path).absolute()
        if not p.is_dir():
            raise ResultsFolderError(f"{p}: not a folder")
        if not (p / "run.json").is_file():
            raise ResultsFolderError(
                f"{p}: not a results folder (no run.json; make one "
                "with segeval evaluate DATA --output-dir DIR)"
            )
        try:
            self.run = store.read_json(p / "run.json")
            name, version = str(self.run["protocol"]), str(self.run["protocol_version"])
        except (ReadError, KeyError, TypeError) as exc:
            raise ResultsFolderError(f"{p / 'run.json'}: not a results record ({exc})") from exc
        try:
            proto = get_protocol(name)
        except SegEvalError as exc:
            raise NewerResultsError(
                f"{p}: protocol {name} {version} is unknown to this "
                f"installation ({exc}); update napari-segeval"
            ) from exc
        mine, theirs = version_key(proto.version), version_key(version)
        if theirs is None or mine is None or theirs > mine:
            raise NewerResultsError(
                f"{p}: written by {name} {version}, newer than the {name} {proto.version} "
                "this installation knows; update napari-segeval to browse it"
            )
        if not (p / "cases.json").is_file():
            raise ResultsFolderError(
                f"{p}: the run holds no case list yet (no cases.json): it stopped before "
                "the first case"
            )
        try:
            cases, records = store.load_records(p)
            self.specs = {c["case_id"]: CaseSpec.from_dict(c) for c in cases}
        except (ReadError, KeyError, TypeError) as exc:
            raise ResultsFolderError(f"{p}: unreadable case records ({exc})") from exc
        self.records = {r["case"]: r for r in records}
        #: The run's parameters, as its ``run.json`` wrote them (typed; defaults for the rest).
        self.params = proto.params.stored(self.run.get("params") or {})
        self.data_root: str | None = None
        self._rows: list[dict] | None = None

    # -- what is in it -------------------------------------------------------------------
    @property
    def protocol(self) -> str:
        """Protocol name and version, e.g. ``"msd-robust 1.0"``."""
        return f"{self.run['protocol']} {self.run['protocol_version']}"

    @property
    def failed(self) -> list[str]:
        """Ids of cases whose record is an error."""
        return [c for c, r in self.records.items() if r.get("status") != "ok"]

    def rows(self) -> list[dict]:
        """One row per case x structure x condition of the finished ok cases: the identifiers
        (``key``: a PredictionKey), the floats of :data:`METRICS` (``delta_dice``: attacked -
        clean Dice of the same case, structure, model and round) and ``absent``.
        """
        from napari_segeval.evaluation.summary import is_absent

        if self._rows is not None:
            return self._rows
        raw = self.raw_rows()
        several, rounds = bool(self.models), self.has_rounds

        def where(r: dict) -> tuple:
            return r["case"], r["structure"], r.get("model"), r.get("round")

        clean = {where(r): as_float(r.get("dice")) for r in raw if r.get("condition") == CLEAN}
        self._rows = []
        for r in raw:
            values = {k: as_float(r.get(k)) for k in METRICS}  # delta_dice: below
            if r["condition"] != CLEAN:
                values["delta_dice"] = values["dice"] - clean.get(where(r), math.nan)
            k = int(r["round"]) if rounds and r.get("round") not in (None, "") else None
            key = PredictionKey(r["condition"], k, r.get("model") if several else None)
            self._rows.append(
                {
                    "case": r["case"],
                    "structure": str(r["structure"]),
                    "label": None if r.get("label") is None else int(r["label"]),
                    "condition": r["condition"],
                    "key": key,
                    "round": k,
                    "model": r.get("model"),
                    "fold": r.get("fold"),
                    **values,
                    "absent": is_absent(r),
                }
            )
        return self._rows

    def raw_rows(self, case_id: str | None = None) -> list[dict]:
        """The ok result rows as the run wrote them (all cases, or ``case_id``'s)."""
        records = [r for c, r in self.records.items() if case_id in (None, c)]
        return [r for r in store.result_rows(records) if r.get("status") == "ok"]

    def rounds(
        self, case_id: str, label: int, condition: str = CLEAN, model: str | None = None
    ) -> list:
        """An ``interactive`` run's rounds of one structure of a case
        (:func:`~napari_segeval.evaluation.curves.case_rounds`); [] for other runs.
        """
        from napari_segeval.evaluation.curves import case_rounds

        if not self.has_rounds:
            return []
        axis = "frame" if self.params.per_frame() else "slice"
        return case_rounds(self.raw_rows(case_id), case_id, label, condition, model, axis)

    @property
    def has_rounds(self) -> bool:
        """Whether the run has correction rounds."""
        from napari_segeval.evaluation.protocols import run_has_rounds

        return run_has_rounds(self.run)

    @property
    def models(self) -> list[str]:
        """The models of a run of several (``--model A --model B``), else []."""
        return self.params.run_models()

    @property
    def has_risk(self) -> bool:
        """Whether the run estimated risks."""
        return any(math.isfinite(r["risk"]) for r in self.rows())

    @property
    def has_reference(self) -> bool:
        """Whether some finished case has reference labels."""
        return any(self.specs[c].labels for c in self.cases())

    def case_risks(
        self, case_id: str, condition: str = CLEAN, model: str | None = None
    ) -> dict[int, Any]:
        """StructureRisk by label of one prediction of ``case_id``; empty without risks, and for
        the rounds after the first (their slices are not recorded).
        """
        from napari_segeval.evaluation.triage import structure_risks

        rows = [
            r
            for r in self.raw_rows(case_id)
            if r.get("condition") == condition
            and model in (None, r.get("model"))
            and r.get("round") in (None, "", 0, "0")
        ]
        risks = structure_risks(rows, store.slice_rows([self.records.get(case_id, {})]))
        return {r.label: r for r in risks.values()}

    def cases(self) -> list[str]:
        """Ids of the cases with an ok record, in case-list order."""
        return [c for c in self.specs if self.records.get(c, {}).get("status") == "ok"]

    # -- data root ---------------------------------------------------------------------
    def remap_data(self, new_root: str | os.PathLike) -> None:
        """Read data-set files from folder ``new_root`` (else ResultsFolderError) from now on."""
        root = Path(new_root).absolute()
        if not root.is_dir():
            raise ResultsFolderError(f"{root}: not a folder")
        self.data_root = str(root)

    def spec(self, case_id: str) -> CaseSpec:
        """The case's spec, with paths moved to :attr:`data_root` when remapped."""
        if case_id not in self.specs:
            raise ResultsFolderError(f"{self.path}: no case {case_id!r}")
        s = self.specs[case_id]
        if self.data_root is None:
            return s
        return s.moved(os.path.abspath(s.root or self.run.get("data") or ""), self.data_root)

    # -- loading -----------------------------------------------------------------------
    def check_files(
        self, case_id: str, focus: str | PredictionKey | None = None
    ) -> dict[str, Path]:
        """Paths :meth:`load` reads (``image``, ``reference``, the record's file keys; of the
        focus's float images only :func:`~.loaded.float_key`'s); MissingFilesError lists every
        missing one.
        """
        record = self.records.get(case_id)
        if record is None or record.get("status") != "ok":
            raise ResultsFolderError(f"{self.path}: case {case_id} has no finished record")
        spec, files = self.spec(case_id), record.get("files") or {}
        paths = {"image": Path(spec.images[min(self.params.image_channel(), len(spec.images) - 1)])}
        if spec.labels:
            paths["reference"] = Path(spec.labels)
        wanted = float_key(files, focus_key(files, focus))
        paths.update(
            {k: self.path / rel for k, rel in files.items() if not is_image_key(k) or k == wanted}
        )
        own = ("image", "reference")
        data = [str(p) for k, p in paths.items() if k in own and not p.exists()]
        saved = [str(p) for k, p in paths.items() if k not in own and not p.is_file()]
        if data or saved:
            raise MissingFilesError(case_id, data + saved, bool(data))
        return paths

    def load(
        self,
        case_id: str,
        focus: str | PredictionKey | None = None,
        *,
        progress: Callable[[int, int], None] | None = None,
        cancel: Any = None,
    ) -> LoadedCase:
        """Read a case with its saved files, all checked against the image's grid.

        ``focus``: the prediction in focus (an attack's loads its float images; default: the
        first attack); ``progress(done, total)`` per file; ``cancel`` stops between files.
        """
        paths, files = self.check_files(case_id, focus), self.records[case_id].get("files") or {}
        spec, channel = self.spec(case_id), self.params.image_channel()
        focus = focus_key(files, focus)
        return read_case_files(
            case_id, spec, paths, channel, focus, files, self.path, progress=progress, cancel=cancel
        )

    def save_correction(
        self, loaded: LoadedCase, name: str, labels: np.ndarray, prompts: Any = None
    ) -> Path:
        """Save a corrected label map of ``loaded`` under ``DIR/corrections/<case>/``
        (:func:`~napari_segeval.evaluation.store.save_correction`: never over a file).
        """
        geometry, ext = loaded.case.geometry, loaded.label_ext
        return store.save_correction(
            self.path, loaded.case_id, name, labels, geometry, ext, prompts
        )


__all__ = [
    "METRICS",
    "LoadedCase",
    "MissingFilesError",
    "NewerResultsError",
    "ResultsFolder",
    "ResultsFolderError",
    "version_key",
]
