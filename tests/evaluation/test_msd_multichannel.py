"""Multi-channel MSD tasks: read every channel, normalize each, feed and attack them all.

A generated two-channel task (``_two_channel``) in both forms data sets use -- one
4D NIfTI per case and one file per channel -- with a tiny two-channel U-Net trained
for a few steps.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _two_channel import (
    SPACING,
    train_two_channel_model,
    two_channel_volume,
    write_two_channel_task,
)

from napari_segeval._errors import InvalidImageError, ReadError, SegEvalError
from napari_segeval.evaluation import store
from napari_segeval.evaluation.layouts import load_layout
from napari_segeval.evaluation.protocols import _common as C
from napari_segeval.evaluation.results import ResultsFolder
from napari_segeval.io import Case, Geometry, read_image
from napari_segeval.metrics import ResultsTable


@pytest.fixture(scope="module")
def two_channel_model(tmp_path_factory):
    return train_two_channel_model(tmp_path_factory.mktemp("m2") / "two_channel.pt")


def test_both_forms_read_as_the_same_two_channel_case(tmp_path):
    a = load_layout(write_two_channel_task(tmp_path / "A", "4d", n=1))[0]
    b = load_layout(write_two_channel_task(tmp_path / "B", "files", n=1))[0]
    assert a.meta["channel_names"] == b.meta["channel_names"] == ["T2", "ADC"]
    assert (len(a.images), len(b.images)) == (1, 2)
    image, labels = two_channel_volume(0)
    ca, cb = C.load_case(a, channel=None), C.load_case(b, channel=None)
    for c in (ca, cb):
        assert c.axes == "czyx" and c.n_channels == 2 and c.spatial_shape == labels.shape
        np.testing.assert_array_equal(c.image, image)
        np.testing.assert_array_equal(c.labels, labels)
        assert c.spacing == SPACING and c.modality == "MR"
        assert c.structures == {1: "gland", 2: "lesion"}
    assert ca.geometry.matches(cb.geometry)
    for spec in (a, b):  # one channel on request, in both forms
        one = C.load_case(spec, channel=1)
        assert one.axes == "zyx"
        np.testing.assert_array_equal(one.image, image[1])
        with pytest.raises(SegEvalError, match="no channel 2 \\(has 2\\)"):
            C.load_case(spec, channel=2)
    # without a request a 4D file is still a time series
    assert read_image(a.images[0]).axes == "tzyx"


def test_channel_count_must_match_the_data_set(tmp_path):
    task = write_two_channel_task(tmp_path / "T", "4d", n=1)
    ds = json.loads((task / "dataset.json").read_text())
    ds["modality"] = {"0": "T2", "1": "ADC", "2": "DWI"}
    (task / "dataset.json").write_text(json.dumps(ds))
    spec = load_layout(task)[0]
    with pytest.raises(ReadError, match="names 3 channels, the image has 2"):
        C.load_case(spec, channel=None)


def test_models_refuse_the_wrong_number_of_channels(two_channel_model, tiny_dense_weights):
    from napari_segeval.models.dense import segment_case
    from napari_segeval.models.registry import load_dense

    image, labels = two_channel_volume(3)
    case = Case(image, Geometry.identity(3, SPACING), "czyx", "MR", labels)
    one = load_dense(str(tiny_dense_weights), device="cpu")
    with pytest.raises(
        InvalidImageError,
        match="2 image channel\\(s\\), .* takes 1 "
        "\\(evaluate one of them with --param channel=K\\)",
    ):
        segment_case(one, case)
    two = load_dense(str(two_channel_model), device="cpu")
    with pytest.raises(InvalidImageError, match="1 image channel\\(s\\), .* takes 2"):
        segment_case(two, Case(image[0], case.geometry, "zyx", "MR", labels))


def test_each_channel_is_normalized_with_its_own_statistics(two_channel_model):
    from napari_segeval.models.registry import load_dense

    model = load_dense(str(two_channel_model), device="cpu")
    s0, s1 = model.stats_per_channel
    assert s0.std != pytest.approx(s1.std, rel=0.5)  # very different scales
    image, labels = two_channel_volume(100)  # a training case: foreground stats known
    x, info = model.preprocess(Case(image, Geometry.identity(3, SPACING), "czyx", "MR", labels))
    assert tuple(x.shape[:2]) == (1, 2)
    assert info.channel_scale == (s0.std, s1.std)
    for c, s in enumerate((s0, s1)):
        lo, hi = info.channel_valid_range[c]
        assert lo == pytest.approx((s.lower - s.mean) / s.std)
        assert float(x[0, c].min()) >= lo - 1e-4 and float(x[0, c].max()) <= hi + 1e-4


@pytest.mark.parametrize("norm, eps", [("linf", 0.3), ("l2", 4.0)])
def test_the_attack_perturbs_every_channel_inside_one_ball(two_channel_model, norm, eps):
    from napari_segeval.attacks import AttackConfig, DenseTarget, attack_case
    from napari_segeval.models.registry import load_dense

    model = load_dense(str(two_channel_model), device="cpu")
    image, labels = two_channel_volume(7)
    case = Case(
        image, Geometry.identity(3, SPACING), "czyx", "MR", labels, {1: "gland", 2: "lesion"}
    )
    target = DenseTarget(model, case)
    assert target.channel_scales == tuple(s.std for s in model.stats_per_channel)
    res = attack_case(target, AttackConfig("pgd", eps=eps, norm=norm, steps=2), clamp=True)
    d = np.asarray(res.perturbation_normalized, np.float64)  # (C, *model grid)
    assert d.shape[0] == 2 and all(np.abs(d[c]).max() > 0 for c in range(2))
    raw = np.asarray(res.perturbation, np.float64)  # (C, *case grid), each in its raw units
    assert raw.shape == image.shape and res.perturbed_image.shape == image.shape
    if norm == "linf":
        assert np.abs(d).max() <= eps * (1 + 1e-6)
        assert [np.abs(d[c]).max() for c in range(2)] == pytest.approx([eps, eps], rel=1e-3)
        for c, scale in enumerate(target.channel_scales):
            assert np.abs(raw[c]).max() <= eps * scale * (1 + 1e-5)
    else:
        assert np.linalg.norm(d) <= eps * (1 + 1e-5)  # one ball over both channels
    assert res.budget.eps_raw == pytest.approx(eps * target.channel_scales[0])


def test_each_channel_is_clamped_to_its_own_range(two_channel_model):
    from napari_segeval.attacks import AttackConfig, DenseTarget, attack_case
    from napari_segeval.models.registry import load_dense

    model = load_dense(str(two_channel_model), device="cpu")
    image, labels = two_channel_volume(8)
    case = Case(
        image, Geometry.identity(3, SPACING), "czyx", "MR", labels, {1: "gland", 2: "lesion"}
    )
    target = DenseTarget(model, case)
    ranges = target.channel_valid_ranges
    assert len(ranges) == 2 and ranges[0] != ranges[1]
    res = attack_case(target, AttackConfig("pgd", eps=5.0, steps=2, random_start=False), clamp=True)
    assert res.params["attack"]["clamp"] == [pytest.approx(list(r)) for r in ranges]
    adv = np.asarray(target.x[0], np.float64) + np.asarray(res.perturbation_normalized, np.float64)
    x = np.asarray(target.x[0], np.float64)
    for c, (lo, hi) in enumerate(ranges):  # a big budget meets each channel's own bounds
        assert adv[c].min() >= min(lo, x[c].min()) - 1e-4
        assert adv[c].max() <= max(hi, x[c].max()) + 1e-4
    union = (min(r[0] for r in ranges), max(r[1] for r in ranges))
    narrow = int(np.argmin([hi - lo for lo, hi in ranges]))
    assert adv[narrow].max() < union[1] - 1e-3 or adv[narrow].min() > union[0] + 1e-3


def test_msd_robust_runs_clean_and_attacked_on_both_forms(two_channel_model, tmp_path, capsys):
    from napari_segeval.cli import main
    from napari_segeval.models.registry import load_dense

    stds = [s.std for s in load_dense(str(two_channel_model), device="cpu").stats_per_channel]
    cond = "pgd-linf eps=0.3 steps=2"
    dice = {}
    for variant in ("4d", "files"):
        task = write_two_channel_task(tmp_path / f"Task95_{variant}", variant, n=2)
        out = tmp_path / f"out_{variant}"
        code = main(
            [
                "evaluate",
                str(task),
                "--protocol",
                "msd-robust",
                "--param",
                f"model={two_channel_model}",
                "--attack",
                "pgd:eps=0.3,steps=2",
                "-o",
                str(out),
                "--workers",
                "1",
                "--json",
                "--no-report",
            ]
        )
        summary = json.loads(capsys.readouterr().out)
        assert code == 0, summary["failed"]
        assert summary["n_ok"] == 2 and summary["params"]["channel"] is None
        rows = ResultsTable.from_csv(out / "results.csv").rows
        assert {r["condition"] for r in rows} == {"clean", cond}
        clean = [r["dice"] for r in rows if r["condition"] == "clean"]
        assert np.mean(clean) > 0.5  # the model learned to use both channels
        for r in (r for r in rows if r["condition"] == cond):
            assert "eps_raw" not in r and r["eps"] == 0.3
            assert r["eps_raw_c0"] == pytest.approx(0.3 * stds[0])
            assert r["eps_raw_c1"] == pytest.approx(0.3 * stds[1])
        budget = summary["results"]["budget"][cond]
        assert budget["eps"] == 0.3
        assert budget["eps_raw"]["eps_raw_c1"]["max"] == pytest.approx(0.3 * stds[1])
        dice[variant] = sorted((r["case"], r["structure"], r["condition"], r["dice"]) for r in rows)
        # the results browser shows channel 0 with channel 0 of the saved 4D float images
        cid = rows[0]["case"]
        loaded = ResultsFolder(out).load(cid)
        files = store.read_case(out, cid)["files"]
        for kind, got in (("perturbed", loaded.perturbed), ("perturbation", loaded.perturbation)):
            assert f"{kind}:{cond}" in files, sorted(files)
            saved = read_image(out / files[f"{kind}:{cond}"]).image
            assert saved.shape == (2, *loaded.case.image.shape)
            np.testing.assert_array_equal(got, saved[0])
    assert dice["4d"] == dice["files"]  # the same numbers from either form
