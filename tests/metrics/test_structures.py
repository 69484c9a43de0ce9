"""Which structures are scored: the named ones, then every other id present as "label N"."""

import numpy as np

from napari_segeval.metrics import structures_to_score


def test_named_structures_come_first_and_stay_when_absent():
    ref = np.zeros((2, 3, 3), np.uint8)
    ref[0, 0, 0] = 1
    ref[1, 1, 1] = 4
    got = structures_to_score({3: "spleen", 1: "liver"}, ref)
    assert got == {3: "spleen", 1: "liver", 4: "label 4"}
    assert list(got) == [3, 1, 4]  # names in their order, then the unnamed ids ascending


def test_ids_of_every_map_are_scored_and_a_name_is_never_overwritten():
    ref = np.array([[0, 2], [2, 0]], np.uint8)
    pred = np.array([[7, 2], [0, 0]], np.uint8)
    assert structures_to_score({2: "kidney"}, ref, pred) == {2: "kidney", 7: "label 7"}
    assert structures_to_score({2: "kidney"}, ref) == {2: "kidney"}


def test_without_names_every_present_id_and_never_background():
    ref = np.array([0, 5, 1, 0])
    assert structures_to_score(None, ref) == {1: "label 1", 5: "label 5"}
    assert structures_to_score({}, np.zeros(4, int)) == {}
    assert structures_to_score({1: "a"}) == {1: "a"}  # no map: only the names
    assert structures_to_score(None, np.array([True, False])) == {1: "label 1"}
