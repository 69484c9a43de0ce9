"""Colour tables of colour-coded masks: JSON form, dataset.json lookup, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from napari_segeval._errors import InvalidLabelsError, ReadError
from napari_segeval.io import load_color_table, read_case, read_labels
from napari_segeval.io._dataset_json import dataset_color_table, parse_json_color_table

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
TABLE = {"1": [255, 0, 0], "2": [0, 255, 0]}


def _mask(tmp_path: Path, name: str = "m.png") -> tuple[Path, np.ndarray]:
    from PIL import Image

    ids = np.zeros((12, 16), np.uint8)
    ids[2:6, 3:9] = 1
    ids[7:11, 9:15] = 2
    rgb = np.zeros((12, 16, 3), np.uint8)
    rgb[ids == 1] = (255, 0, 0)
    rgb[ids == 2] = (0, 255, 0)
    Image.fromarray(rgb).save(tmp_path / name)
    return tmp_path / name, ids


def _dataset(folder: Path, **extra) -> Path:
    data = {"labels": {"0": "background", "1": "neoplastic", "2": "non_neoplastic"}, **extra}
    (folder / "dataset.json").write_text(json.dumps(data))
    return folder / "dataset.json"


def test_dataset_json_beside_the_mask(tmp_path):
    path, ids = _mask(tmp_path)
    _dataset(tmp_path, color_table=TABLE)
    labels, _, names = read_labels(path)
    np.testing.assert_array_equal(labels, ids)
    assert names == {1: "neoplastic", 2: "non_neoplastic"}


def test_dataset_json_two_folders_up_and_in_read_case(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    path, ids = _mask(tmp_path / "a" / "b")
    _dataset(tmp_path, color_table=TABLE)
    np.testing.assert_array_equal(read_labels(path)[0], ids)
    image = tmp_path / "a" / "b" / "img.png"
    from PIL import Image

    Image.fromarray(np.full((12, 16, 3), 90, np.uint8)).save(image)
    case = read_case(image, path)
    np.testing.assert_array_equal(case.labels, ids)
    assert case.structures[2] == "non_neoplastic"
    # an explicit dataset.json given to read_case is the one used
    other = {
        "labels": {"0": "background", "1": "a", "2": "b"},
        "color_table": {"2": [255, 0, 0], "1": [0, 255, 0]},
    }
    swapped = read_case(image, path, dataset_json=other)
    np.testing.assert_array_equal(swapped.labels, np.choose(ids, [0, 2, 1]))


def test_default_table_wins_and_grey_masks_ignore_it(tmp_path):
    path, ids = _mask(tmp_path)
    _dataset(tmp_path, color_table={"1": [0, 255, 0], "2": [255, 0, 0]})
    table = load_color_table(_write(tmp_path / "t.json", TABLE))
    labels, _, _ = read_labels(path, default_color_table=table)
    np.testing.assert_array_equal(labels, ids)
    from PIL import Image

    grey = tmp_path / "g.png"
    Image.fromarray((ids > 0).astype(np.uint8) * 255).save(grey)
    np.testing.assert_array_equal(read_labels(grey, default_color_table=table)[0], ids > 0)


def test_sample_polyp_folder_has_its_table():
    labels, _, names = read_labels(SAMPLES / "polyp" / "polyp_005_mask.png")
    assert set(np.unique(labels)) == {0, 1, 2}
    assert names == {1: "neoplastic", 2: "non_neoplastic"}


def test_missing_table_message_is_actionable(tmp_path):
    path, _ = _mask(tmp_path)
    _dataset(tmp_path)  # names but no colours
    with pytest.raises(InvalidLabelsError) as err:
        read_labels(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: colour-coded mask needs a colour table")
    assert '"color_table": {"1": [255, 0, 0]' in msg and "--color-table FILE" in msg
    assert "\n" not in msg


def _write(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path


def test_load_color_table_forms(tmp_path):
    assert load_color_table(_write(tmp_path / "a.json", TABLE)) == {(255, 0, 0): 1, (0, 255, 0): 2}
    ds = _dataset(tmp_path, color_table=TABLE)
    assert load_color_table(ds) == {
        (255, 0, 0): (1, "neoplastic"),
        (0, 255, 0): (2, "non_neoplastic"),
    }
    assert load_color_table(_write(tmp_path / "g.json", {"1": 255, "2": [128]})) == {255: 1, 128: 2}
    assert dataset_color_table({"labels": {}}, "d.json") is None


@pytest.mark.parametrize(
    "table, message",
    [
        ({}, "must be a JSON object"),
        ([1, 2], "must be a JSON object"),
        ({"one": [1, 2, 3]}, 'key "one" is not a label id'),
        ({"1": [1, 2]}, 'entry "1": expected'),
        ({"1": [-1, 0, 0]}, 'entry "1": expected'),
        ({"1": [True, 0, 0]}, 'entry "1": expected'),
        ({"1": None}, 'entry "1": expected'),
        ({"1": [1, 2, 3], "2": [1, 2, 3]}, "given to two label ids"),
        ({"1": [1, 2, 3], "2": 7}, "mixes RGB and grey"),
    ],
)
def test_bad_tables(table, message):
    with pytest.raises(InvalidLabelsError) as err:
        parse_json_color_table(table, "t.json")
    assert message in str(err.value) and str(err.value).startswith("t.json: ")
    assert "\n" not in str(err.value)


def test_unreadable_table_file(tmp_path):
    with pytest.raises(ReadError, match="not found"):
        load_color_table(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{1: [255")
    with pytest.raises(ReadError, match="cannot read colour table"):
        load_color_table(bad)
