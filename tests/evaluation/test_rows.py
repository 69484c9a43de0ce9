"""The columns of results.csv: one schema per protocol family, checked when rows are written."""

from __future__ import annotations

import dataclasses

import pytest

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation.protocols import REGISTRY, get_protocol
from napari_segeval.evaluation.rows import FAMILIES, ROUNDS, SCORE, Column, RowSchema
from napari_segeval.evaluation.runner import evaluate_case
from napari_segeval.metrics import ROW_KEYS


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_protocol_declares_its_rows(name):
    rows = get_protocol(name).rows
    assert rows is not None and rows.family in FAMILIES
    assert {c.name for c in SCORE.columns} <= {c.name for c in rows.columns}


def test_every_metric_column_is_declared_once():
    """structure_table's columns (but its ``name``, written as ``structure``) are SCORE's."""
    declared = [c.name for c in SCORE.columns]
    assert len(declared) == len(set(declared))
    assert set(ROW_KEYS) - {"name"} <= set(declared)


def test_a_family_inherits_its_bases_columns_in_order():
    names = [c.name for c in ROUNDS.columns]
    assert names[: len(SCORE.columns)] == [c.name for c in SCORE.columns]
    assert {"key_slice", "round", "eps"} <= set(names) and len(names) == len(set(names))
    assert ROUNDS.column("dice") is SCORE.column("dice")


def test_indexed_columns_and_the_one_line_refusal():
    schema = RowSchema("t", (Column("eps_raw_c", float, "", indexed=True),), (SCORE,))
    schema.check([{"case": "a", "eps_raw_c0": 1.0, "eps_raw_c12": 2.0}])
    with pytest.raises(SegEvalError, match="columns it does not declare: eps_raw_cx, foo"):
        schema.check([{"eps_raw_cx": 1.0}, {"foo": 1, "dice": 0.5}])


def test_a_run_writing_an_undeclared_column_fails_its_case(tmp_path):
    """A misspelt column fails the run that writes it (the case's record says why)."""
    from napari_segeval.evaluation.layouts import load_layout
    from napari_segeval.phantoms.samples import sample_root

    protocol = get_protocol("medsam2-3d")

    def misspelt(spec, params):
        out = protocol.run_case(spec, params)
        out.rows[0]["dcie"] = out.rows[0]["dice"]
        return out

    spec = load_layout(sample_root() / "msd_task" / "Task90_AbdomenPhantom")[0]
    bad = dataclasses.replace(protocol, run_case=misspelt)
    rec = evaluate_case(bad, spec.to_dict(), {"model": "threshold"}, save_files=False)
    assert rec["status"] == "error" and "does not declare: dcie" in rec["error"]
    good = evaluate_case(protocol, spec.to_dict(), {"model": "threshold"}, save_files=False)
    assert good["status"] == "ok" and good["rows"]
