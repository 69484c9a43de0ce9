"""The examples of the training package's helpers (not in the API docs), run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace with
the flags of the package's own doctests but NUMBER (a pytest extension).
"""

import pytest

EXAMPLES = {
    "napari_segeval.training.dense_cases.DenseTrainConfig": """\
>>> DenseTrainConfig(iterations=10).to_dict()["optimizer"]
'sgd-poly'
""",
    "napari_segeval.training.builtin_ct.prepare_cases": """\
>>> img = np.arange(4 * 8 * 8, dtype=np.float32).reshape(4, 8, 8)
>>> lab = (img > 100).astype(np.uint8)
>>> cases, stats, spacing = prepare_cases([img, img], [lab, lab], [(2, 1, 1), (4, 1, 1)])
>>> spacing, cases[0][0].shape, cases[1][0].shape
((3.0, 1.0, 1.0), (3, 8, 8), (5, 8, 8))
""",
    "napari_segeval.training.heldout.make_tuning_volume": """\
>>> image, labels = make_tuning_volume(500, shape=(8, 48, 48))
>>> image.shape
(8, 48, 48)
""",
    "napari_segeval.training.prompt_sources.frames": """\
>>> st = scene_stack(np.random.default_rng(0))
>>> lab = next(iter(st.present)); z = int(st.present[lab][0])
>>> f = frames(np.random.default_rng(1), st, [z, z], lab)
>>> f.shape[0], float(f.min()) >= 0, float(f.max()) <= 1
(2, True, True)
""",
    "napari_segeval.training.appearance.smooth_noise": """\
>>> smooth_noise(np.random.default_rng(0), 2, 20, 30, 4).shape
torch.Size([2, 20, 30])
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
