"""The examples of the evaluation package's internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace with
the flags of the package's own doctests but NUMBER (a pytest extension).
"""

import pytest

EXAMPLES = {
    "napari_segeval.evaluation._figures.png_data_uri": """\
>>> png_data_uri(np.zeros((2, 2, 3), np.uint8)).startswith("data:image/png;base64,")
True
""",
    "napari_segeval.evaluation._layouts_3d.detect_3d": """\
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp()); (d / "case_00000").mkdir()
>>> _ = (d / "case_00000" / "imaging.nii.gz").write_bytes(b"")
>>> detect_3d(d), detect_3d(pathlib.Path(tempfile.mkdtemp()))
('kits23', None)
""",
    "napari_segeval.evaluation._layouts_3d.read_structure_folder": """\
>>> import tempfile, pathlib
>>> from napari_segeval.io import write_labels, Geometry
>>> d = pathlib.Path(tempfile.mkdtemp()); g = Geometry.identity(3, (1.0, 1.0, 1.0))
>>> a = np.zeros((2, 3, 3), np.uint8); a[0, 0, 0] = 1
>>> _ = write_labels(d / "liver.nii.gz", a, g); _ = write_labels(d / "aorta.nii.gz", a[::-1], g)
>>> lab, geom = read_structure_folder(d, {1: "aorta", 2: "liver"})
>>> int(lab[0, 0, 0]), int(lab[1, 0, 0]), lab.dtype
(2, 1, dtype('uint8'))
""",
    "napari_segeval.evaluation._report_sections.table": """\
>>> "<th" in table(["a"], [[1.5]]) and "1.5000" in table(["a"], [[1.5]])
True
""",
    "napari_segeval.evaluation._report_sections._per_round": """\
>>> _per_round({"falls_per_round": [0.07, 0.5]}), _per_round({})
('r1 7% · r2 50%', '')
""",
    "napari_segeval.evaluation._spec.spec_maker": """\
>>> spec = spec_maker("isic", "/d", {1: "lesion"}, "dermoscopy")
>>> s = spec("a", Path("/d/a.jpg"), None, "test", group="p")
>>> s.images, s.labels, s.structures, s.split, s.group
(('/d/a.jpg',), None, {1: 'lesion'}, 'test', 'p')
""",
    "napari_segeval.evaluation._spec.inside": """\
>>> inside("/data/Task01", "./imagesTr/a.nii.gz").as_posix()
'/data/Task01/imagesTr/a.nii.gz'
>>> inside("/data/Task01", "../../etc/passwd")
Traceback (most recent call last):
...
napari_segeval._errors.SegEvalError: path '../../etc/passwd' escapes the data-set folder /data/Task01
""",
    "napari_segeval.evaluation._spec.moved": """\
>>> CaseSpec("a", ("/d/a.nii",), "/d/l/a.nii", root="/d").moved("/d", "/e").labels
'/e/l/a.nii'
""",
    "napari_segeval.evaluation.curves.round_rows": """\
>>> rows = [{"condition": "clean", "round": r} for r in (0, 1, 2)]
>>> [r["condition"] for r in round_rows(rows)]
['clean', 'clean round 2']
>>> [str(r["key"]) for r in round_rows([{**r, "model": "m"} for r in rows], models=True)]
['clean @ m', 'round2:clean @ m']
""",
    "napari_segeval.evaluation.store.relative_path": """\
>>> relative_path("abd_001", "clean", ".nii.gz")
'predictions/abd_001/clean.nii.gz'
""",
    "napari_segeval.evaluation.layouts.channel_meta": """\
>>> channel_meta({"modality": {"0": "T2", "1": "ADC"}}), channel_meta({"modality": {"0": "CT"}})
({'channel_names': ['T2', 'ADC']}, {})
""",
    "napari_segeval.evaluation.loaded.float_key": """\
>>> float_key({"perturbed:pgd": "a", "perturbation:pgd": "b"}, "pgd")
'perturbation:pgd'
>>> float_key({"perturbed:pgd": "a"}, "pgd"), float_key({}, None)
('perturbed:pgd', None)
>>> float_key({"perturbed:pgd": "a"}, "round2:pgd")  # an interactive run's round
'perturbed:pgd'
""",
    "napari_segeval.evaluation.loaded.both_images": """\
>>> img = np.array([[-1000, 40]], np.int16)
>>> p, d = both_images(img, None, np.array([[0.5, -0.25]], np.float32))
>>> p.tolist(), d.tolist()
([[-999.5, 39.75]], [[0.5, -0.25]])
>>> both_images(img, p, None)[1].tolist()
[[0.5, -0.25]]
""",
    "napari_segeval.evaluation.loaded.largest_magnitude": """\
>>> largest_magnitude(np.array([0.5, -2.0])), largest_magnitude(None)
(2.0, 0.0)
""",
    "napari_segeval.evaluation.loaded.compare_pair": """\
>>> compare_pair(["clean", "pgd", "fgsm"], None), compare_pair(["clean", "pgd", "fgsm"], "fgsm")
(('clean', 'pgd'), ('clean', 'fgsm'))
>>> keys = ["clean @ a", "pgd @ a", "clean @ b", "pgd @ b"]
>>> compare_pair(keys, "clean @ a"), compare_pair(keys, "pgd @ b")
(('clean @ a', 'clean @ b'), ('clean @ b', 'pgd @ b'))
>>> compare_pair(keys, "clean @ b"), compare_pair(keys, "clean @ a", other="pgd @ b")
(('clean @ b', 'clean @ a'), ('clean @ a', 'pgd @ b'))
>>> compare_pair(keys + ["round1:clean @ b"], "round1:clean @ b")  # against its round 0
('clean @ b', 'round1:clean @ b')
""",
    "napari_segeval.evaluation.report.file_links": """\
>>> file_links({"clean": "predictions/a/clean.nii.gz"}, [PredictionKey("clean")])
'<a href="predictions/a/clean.nii.gz" title="clean prediction">clean</a>'
>>> file_links({}, [PredictionKey("clean")])
'-'
>>> file_links({"round2:clean": "predictions/a/r2.nii.gz"}, [PredictionKey("clean", 2)])
'<a href="predictions/a/r2.nii.gz" title="clean round 2 prediction">clean r2</a>'
""",
    "napari_segeval.evaluation.results.version_key": """\
>>> version_key("1.10") > version_key("1.9"), version_key("beta")
(True, None)
""",
    "napari_segeval.evaluation.runner.gpu_for_worker": """\
>>> gpu_for_worker(3, 2), gpu_for_worker(1, 2, "4,6"), gpu_for_worker(0, 1, "GPU-ab12")
('1', '6', 'GPU-ab12')
""",
    "napari_segeval.evaluation.splits.load_nnunet_splits": """\
>>> import tempfile, pathlib, json
>>> p = pathlib.Path(tempfile.mkdtemp()) / "splits_final.json"
>>> _ = p.write_text(json.dumps([{"train": ["b"], "val": ["a"]}, {"train": ["a"], "val": ["b"]}]))
>>> load_nnunet_splits(p)
{'a': 0, 'b': 1}
""",
    "napari_segeval.evaluation.store.case_filename": """\
>>> case_filename("abd_001")
'abd_001'
>>> case_filename("a/b c").startswith("a_b_c-")
True
""",
    "napari_segeval.evaluation.store.write_json": """\
>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "x.json"
>>> read_json(write_json(p, {"hd95": float("inf"), "dice": float("nan")}))
{'hd95': 'inf', 'dice': None}
""",
    "napari_segeval.evaluation.summary.is_absent": """\
>>> is_absent({"absent": True}), is_absent({"absent": "False"})
(True, False)
>>> is_absent({"volume_ref_ml": 0.0, "volume_pred_ml": 0.0}), is_absent({"dice": 0.0})
(True, False)
""",
    "napari_segeval.evaluation.summary.dice_and_uncertainty": """\
>>> rows = [{"case": c, "condition": "clean", "structure": s, "dice": d, "uncertainty": u}
...         for c, d, u in [("b", 0.5, 0.6), ("a", 0.9, 0.1)] for s in ("background", "x")]
>>> dice_and_uncertainty(rows)
([0.1, 0.6], [0.9, 0.5], ['x'])
""",
    "napari_segeval.evaluation.summary.by_model": """\
>>> rows = [{"structure": "liver", "model": m, "condition": "clean", "dice": d}
...         for m, d in (("a", 0.8), ("a", 0.9), ("b", 0.5))]
>>> s = by_model(rows, ("dice",))
>>> s["models"], [(t["model"], t["median"]) for t in s["dice"]]
(['a', 'b'], [('a', 0.8500000000000001), ('b', 0.5)])
""",
    "napari_segeval.evaluation.summary.percent_scores": """\
>>> rows = [{"case": "a", "condition": "clean", "structure": "x", "dice": 0.5, "iou": 0.25}]
>>> percent_scores(rows)
{'dice': 50.0, 'iou': 25.0, 'n_cases': 1}
""",
    "napari_segeval.evaluation.summary.pooled_scores": """\
>>> rows = [{"structure": "a", "n_tp": 3, "n_ref": 4, "n_pred": 4},
...         {"structure": "a", "n_tp": 0, "n_ref": 0, "n_pred": 2},
...         {"structure": "b", "n_tp": 1, "n_ref": 2, "n_pred": 1}]
>>> s = pooled_scores(rows, ("dice",))
>>> round(s["per_class"]["a"]["dice"], 2), round(s["average"]["dice"], 2), round(s["micro"]["dice"], 2)
(60.0, 63.33, 61.54)
""",
    "napari_segeval.evaluation.summary.accumulated_scores": """\
>>> rows = [{"structure": "background", "n_tp": 90, "n_ref": 92, "n_pred": 94},
...         {"structure": "a", "n_tp": 6, "n_ref": 8, "n_pred": 6},
...         {"structure": "b", "n_tp": 0, "n_ref": 0, "n_pred": 0}]
>>> s = accumulated_scores(rows, ("dice", "precision"))
>>> round(s["per_class"]["a"]["dice"], 2), s["per_class"]["b"]["dice"]
(85.71, nan)
>>> round(s["average"]["dice"], 2), s["average"]["precision"]
(91.24, 97.87234042553192)
""",
    "napari_segeval.evaluation.summary.over_folds": """\
>>> rows = [{"fold": f, "structure": "a", "n_tp": t, "n_ref": 4, "n_pred": 4}
...         for f, t in ((0, 4), (1, 2))]
>>> over_folds(rows, pooled_scores, ("average", "micro"), ("dice",))["dice"]["average"]
{'folds': [100.0, 50.0], 'mean': 75.0, 'std': 35.35533905932738}
>>> over_folds(rows, accumulated_scores, metrics=("dice",))["dice"]["average"]["folds"]
[100.0, 50.0]
""",
    "napari_segeval.evaluation.summary.holdout_scores": """\
>>> rows = [{"case": c, "condition": "clean", "structure": "a", "dice": d}
...         for c, d in (("x", 0.5), ("y", 1.0))]
>>> h = holdout_scores(rows, ("dice",))
>>> h["n_cases"], h["dice"]["per_class"]["a"]["mean"], h["dice"]["average"]["mean"]
(2, 75.0, 75.0)
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
