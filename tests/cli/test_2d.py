"""2D images from the command line, as a new user types them, on both bundled 2D samples.

Masks are decoded here independently of the reader (0/255 skin masks, red/green
polyp masks), Dice is recomputed from its definition, and the command line's
prediction must equal what the viewer's job computes for the same boxes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from napari_segeval.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
#: name -> (image, mask, modality in its dataset.json, structure names)
CASES = {
    "skin": ("skin/skin_001.png", "skin/skin_001_segmentation.png", "dermoscopy", {1: "lesion"}),
    "polyp": (
        "polyp/polyp_005.png",
        "polyp/polyp_005_mask.png",
        "endoscopy",
        {1: "neoplastic", 2: "non_neoplastic"},
    ),
}


def _decode(sample: str) -> np.ndarray:
    """Label ids of a sample mask, decoded with numpy only."""
    px = np.asarray(Image.open(SAMPLES / CASES[sample][1]))
    if sample == "skin":
        assert set(np.unique(px)) == {0, 255}
        return (px == 255).astype(np.uint8)
    r, g, b = (px[..., i].astype(int) for i in range(3))
    out = np.zeros(px.shape[:2], np.uint8)
    out[(r > 127) & (g < 128) & (b < 128)] = 1
    out[(g > 127) & (r < 128) & (b < 128)] = 2
    assert np.all((out > 0) | (px.max(axis=-1) < 128))
    return out


def _dice(a: np.ndarray, b: np.ndarray) -> float:
    return 2 * float(np.sum(a & b)) / float(a.sum() + b.sum())


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def model():
    from napari_segeval.models.builtin_prompt import BuiltinPromptModel

    return BuiltinPromptModel(device="cpu")


@pytest.mark.parametrize("sample", sorted(CASES))
def test_inspect_image_and_mask(sample, capsys):
    image, mask, modality, names = CASES[sample]
    assert main(["inspect", str(SAMPLES / image), "--labels", str(SAMPLES / mask), "--json"]) == 0
    p = _json(capsys)
    assert (p["kind"], p["axes"], p["shape"], p["modality"]) == (
        "image",
        "yxc",
        [128, 160, 3],
        modality,
    )
    assert p["aligned"] is True
    ref = _decode(sample)
    assert [(r["id"], r["name"], r["voxels"]) for r in p["labels"]] == [
        (int(i), "background" if i == 0 else names[int(i)], int((ref == i).sum()))
        for i in np.unique(ref)
    ]


@pytest.mark.parametrize("sample", sorted(CASES))
def test_propagate_then_metrics(sample, model, tmp_path, capsys):
    from napari_segeval.prompts.box import Box
    from napari_segeval.propagation import propagate_image

    image, mask, modality, names = CASES[sample]
    out = tmp_path / "pred.png"
    assert (
        main(
            [
                "propagate",
                str(SAMPLES / image),
                "--labels",
                str(SAMPLES / mask),
                "--output",
                str(out),
                "--device",
                "cpu",
                "--json",
            ]
        )
        == 0
    )
    payload = _json(capsys)
    pred = np.asarray(Image.open(out))
    ref = _decode(sample)
    assert pred.shape == ref.shape == (128, 160) and pred.dtype == np.uint8
    ids = [int(i) for i in np.unique(ref) if i]
    assert [(r["label"], r["name"]) for r in payload["structures"]] == [(i, names[i]) for i in ids]
    for row in payload["structures"]:
        assert row["dice"] == pytest.approx(_dice(ref == row["label"], pred == row["label"]))
        assert row["dice"] > 0.5
    # what the viewer computes for the same boxes (tight boxes of the reference)
    boxes = []
    for i in ids:
        ys, xs = np.nonzero(ref == i)
        boxes.append(Box(ys.min(), xs.min(), ys.max() + 1, xs.max() + 1, index=0, label=i))
    rgb = np.asarray(Image.open(SAMPLES / image).convert("RGB"))
    np.testing.assert_array_equal(
        propagate_image(model, rgb, boxes, kind="image", modality=modality).labels, pred
    )
    # the metrics command on the written PNG gives the same rows
    assert main(["metrics", str(SAMPLES / mask), str(out), "--json"]) == 0
    assert _json(capsys)["structures"] == payload["structures"]
    # and the text form names the structures
    assert main(["metrics", str(SAMPLES / mask), str(out)]) == 0
    text = capsys.readouterr().out
    assert all(names[i] in text for i in ids)


def test_propagate_2d_box_and_structure_names(tmp_path, capsys):
    image, mask, _, _ = CASES["polyp"]
    ref = _decode("polyp")
    ys, xs = np.nonzero(ref == 2)
    box = f"0,{ys.min()},{xs.min()},{ys.max() + 1},{xs.max() + 1}"
    out = tmp_path / "p.png"
    assert (
        main(
            [
                "propagate",
                str(SAMPLES / image),
                "--box",
                box,
                "--structure",
                "Non-Neoplastic",
                "--device",
                "cpu",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "2 non_neoplastic: box" in text and "2D image as one frame" in text
    assert set(np.unique(np.asarray(Image.open(out)))) == {0, 2}
    rc = main(
        [
            "propagate",
            str(SAMPLES / image),
            "--box",
            "1,10,10,20,20",
            "--device",
            "cpu",
            "-o",
            str(tmp_path / "never.png"),
        ]
    )
    assert rc == 2 and "outside 0..0" in capsys.readouterr().err
    assert (
        main(
            [
                "propagate",
                str(SAMPLES / image),
                "--labels",
                str(SAMPLES / mask),
                "--structure",
                "label 2",
                "--structure",
                "1",
                "--device",
                "cpu",
                "-o",
                str(tmp_path / "both.png"),
                "--json",
            ]
        )
        == 0
    )
    assert [r["label"] for r in _json(capsys)["structures"]] == [1, 2]


def test_output_that_cannot_hold_the_map_is_refused_before_the_model_runs(tmp_path, capsys):
    image, mask, _, _ = CASES["skin"]
    ct = SAMPLES / "ct" / "ct_001.nii.gz"
    for img, lab, out, message in (
        (SAMPLES / image, SAMPLES / mask, tmp_path / "p.jpg", "cannot write a label map"),
        (SAMPLES / image, SAMPLES / mask, tmp_path / "no" / "p.png", "does not exist"),
        (ct, SAMPLES / "ct" / "ct_001_labels.nii.gz", tmp_path / "p.png", "2D label maps"),
    ):
        rc = main(
            [
                "propagate",
                str(img),
                "--labels",
                str(lab),
                "--model",
                "medsam2",
                "--checkpoint",
                str(tmp_path / "missing.pt"),
                "-o",
                str(out),
            ]
        )
        err = capsys.readouterr().err
        assert rc == 2 and message in err and len(err.strip().splitlines()) == 1
        assert not out.exists()


def test_attack_on_a_2d_sample_matches_propagate(tmp_path, capsys):
    image, mask, _, _ = CASES["skin"]
    pred = tmp_path / "pred.png"
    assert (
        main(
            [
                "propagate",
                str(SAMPLES / image),
                "--labels",
                str(SAMPLES / mask),
                "--output",
                str(pred),
                "--device",
                "cpu",
                "--json",
            ]
        )
        == 0
    )
    clean_dice = _json(capsys)["structures"][0]["dice"]
    out = tmp_path / "runs" / "skin"  # does not exist yet
    assert (
        main(
            [
                "attack",
                str(SAMPLES / image),
                "--labels",
                str(SAMPLES / mask),
                "--model",
                "builtin-prompt",
                "--structure",
                "Lesion",
                "--attack",
                "fgsm",
                "--eps-raw",
                "8",
                "--output-dir",
                str(out),
                "--device",
                "cpu",
                "--json",
            ]
        )
        == 0
    )
    p = _json(capsys)
    outs = {k: Path(v) for k, v in p["outputs"].items()}
    assert {k: v.name for k, v in outs.items()} == {
        "perturbed_image": "skin_001_perturbed.tif",
        "perturbation": "skin_001_perturbation.tif",
        "clean_prediction": "skin_001_clean_pred.png",
        "attacked_prediction": "skin_001_attacked_pred.png",
    }
    assert all(v.parent == out for v in outs.values())
    assert p["target"]["input"] == "image" and p["target"]["mode"] == "video"
    clean = np.asarray(Image.open(outs["clean_prediction"]))
    np.testing.assert_array_equal(clean, np.asarray(Image.open(pred)))
    assert p["clean"][0]["dice"] == pytest.approx(clean_dice)
    attacked = np.asarray(Image.open(outs["attacked_prediction"]))
    assert p["attacked"][0]["dice"] == pytest.approx(_dice(_decode("skin") == 1, attacked == 1))
    from napari_segeval.io import read_image

    rgb = np.asarray(Image.open(SAMPLES / image).convert("RGB")).astype(np.float32)
    adv, pert = read_image(outs["perturbed_image"]), read_image(outs["perturbation"])
    assert adv.image.shape == (128, 160, 3) and pert.image.shape == (128, 160)
    assert 0 < np.abs(pert.image).max() <= 8 * (1 + 1e-5)
    np.testing.assert_allclose(adv.image, rgb + pert.image[..., None], atol=1e-3)


def _copy_polyp(tmp_path: Path) -> tuple[Path, Path]:
    image, mask, _, _ = CASES["polyp"]
    for rel in (image, mask):
        shutil.copy(SAMPLES / rel, tmp_path / Path(rel).name)
    return tmp_path / Path(image).name, tmp_path / Path(mask).name


def test_colour_mask_without_table_says_what_to_do(tmp_path, capsys):
    image, mask = _copy_polyp(tmp_path)  # no dataset.json beside them
    for argv in (
        ["inspect", str(image), "--labels", str(mask)],
        ["metrics", str(mask), str(mask)],
        ["propagate", str(image), "--labels", str(mask), "-o", str(tmp_path / "p.png")],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert str(mask) in err and "--color-table" in err and '"color_table"' in err
        assert "(255, 0, 0):" not in err  # no Python dict a user cannot pass


def test_color_table_file(tmp_path, capsys):
    image, mask = _copy_polyp(tmp_path)
    table = tmp_path / "colours.json"
    table.write_text(json.dumps({"1": [255, 0, 0], "2": [0, 255, 0]}))
    assert (
        main(["inspect", str(image), "--labels", str(mask), "--color-table", str(table), "--json"])
        == 0
    )
    rows = _json(capsys)["labels"]
    ref = _decode("polyp")
    assert [(r["id"], r["name"], r["voxels"]) for r in rows] == [
        (0, "background", int((ref == 0).sum())),
        (1, "label 1", int((ref == 1).sum())),
        (2, "label 2", int((ref == 2).sum())),
    ]
    # a dataset.json works as a colour table file, names included
    assert (
        main(
            [
                "metrics",
                str(mask),
                str(mask),
                "--color-table",
                str(SAMPLES / "polyp" / "dataset.json"),
                "--json",
                "--no-surface",
            ]
        )
        == 0
    )
    rows = _json(capsys)["structures"]
    assert [(r["name"], r["dice"]) for r in rows] == [("neoplastic", 1.0), ("non_neoplastic", 1.0)]
    assert (
        main(
            [
                "propagate",
                str(image),
                "--labels",
                str(mask),
                "--color-table",
                str(table),
                "--structure",
                "label 1",
                "--device",
                "cpu",
                "-o",
                str(tmp_path / "p.png"),
                "--json",
            ]
        )
        == 0
    )
    assert [r["label"] for r in _json(capsys)["structures"]] == [1]


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "cannot read colour table"),
        ('{"1": "red"}', 'entry "1": expected [R, G, B]'),
        ('{"red": [255, 0, 0]}', 'key "red" is not a label id'),
        ('{"1": [255, 0]}', 'entry "1": expected [R, G, B]'),
        ('{"1": [300, 0, 0]}', 'entry "1": expected [R, G, B]'),
        ('{"1": [255, 0, 0], "2": [255, 0, 0]}', "given to two label ids"),
        ("[[255, 0, 0]]", "must be a JSON object"),
        ('{"1": [255, 0, 0]}', "farther than"),  # green pixels have no entry
    ],
)
def test_bad_colour_table_is_one_line_error(tmp_path, capsys, content, message):
    image, mask = _copy_polyp(tmp_path)
    table = tmp_path / "bad.json"
    table.write_text(content)
    assert main(["inspect", str(image), "--labels", str(mask), "--color-table", str(table)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert message in err
    assert str(table) in err or str(mask) in err
