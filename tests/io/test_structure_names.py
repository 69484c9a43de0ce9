"""One rule for naming structures and for finding the structure a person named."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._errors import InvalidLabelsError, SegEvalError
from napari_segeval.io import Case, Geometry, resolve_structure, structure_label

NAMES = {1: "liver", 2: "kidney_right", 5: "Liver Tumour"}


@pytest.mark.parametrize(
    "token, label",
    [
        ("1", 1),
        (2, 2),
        (" 5 ", 5),
        ("label 3", 3),
        ("Label 3", 3),
        ("label_3", 3),
        ("label-3", 3),
        ("LABEL3", 3),
        ("label 1", 1),  # a named structure keeps its generic name too
        ("liver", 1),
        ("LIVER", 1),
        ("Kidney Right", 2),
        ("kidney-right", 2),
        ("liver_tumour", 5),
        ("  liver   tumour ", 5),
    ],
)
def test_tokens(token, label):
    assert resolve_structure(token, NAMES) == label


def test_every_displayed_name_resolves_back_to_its_id():
    """The names inspect/metrics/Case show, for named and unnamed ids alike."""
    lab = np.array([[0, 1, 2], [5, 7, 9]], np.uint8)
    case = Case(
        lab.astype(np.float32), Geometry.identity(2), axes="yx", labels=lab, structures=dict(NAMES)
    )
    present = np.unique(lab)
    for i in present[present > 0]:
        for shown in (structure_label(i, NAMES), case.structure_name(i), f"label_{i}"):
            assert resolve_structure(shown, NAMES, present) == i


def test_present_restricts_and_errors_list_the_structures():
    present = [0, 1, 2]
    assert resolve_structure("kidney right", NAMES, present) == 2
    with pytest.raises(InvalidLabelsError) as err:
        resolve_structure("Liver Tumour", NAMES, present, source="seg.nii.gz")
    msg = str(err.value)
    assert msg == (
        "seg.nii.gz: structure 'Liver Tumour' (id 5) is not in the label map "
        "(structures: 1 liver, 2 kidney_right)"
    )
    with pytest.raises(
        InvalidLabelsError,
        match=r"unknown structure 'spleen' \(structures: "
        r"1 label 1, 3 label 3\)",
    ):
        resolve_structure("spleen", {}, [0, 1, 3])
    with pytest.raises(InvalidLabelsError, match="background, not a structure"):
        resolve_structure("0", NAMES)
    with pytest.raises(InvalidLabelsError, match="background, not a structure"):
        resolve_structure("Background", NAMES, present)
    with pytest.raises(SegEvalError, match=r"unknown structure 'x' \(structures: none\)"):
        resolve_structure("x", {})


def test_ambiguous_names_are_refused():
    with pytest.raises(InvalidLabelsError, match="ambiguous: ids 1, 2"):
        resolve_structure("kidney right", {1: "kidney_right", 2: "Kidney Right"})


def test_structure_label():
    assert [structure_label(i, NAMES) for i in (0, 1, 4)] == ["background", "liver", "label 4"]
