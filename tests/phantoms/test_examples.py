"""The examples of the phantoms package's internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace with
the flags of the package's own doctests but NUMBER (a pytest extension).
"""

import pytest

EXAMPLES = {
    "napari_segeval.phantoms._fields.smooth_field": """\
>>> f = smooth_field(np.random.default_rng(0), (8, 20), (3, 4))
>>> f.shape, f.dtype
((8, 20), dtype('float32'))
""",
    "napari_segeval.phantoms._fields.ellipsoid_level": """\
>>> y, x = np.ogrid[-2:3, -2:3]
>>> inside = ellipsoid_level((y, x), (0, 0), (1.5, 2.5)) < 1
>>> int(inside.sum())
11
""",
    "napari_segeval.phantoms._fields.mm_grid": """\
>>> z, x = mm_grid((3, 4), (2.0, 0.5))
>>> z.ravel().tolist(), x.ravel().tolist()
([-2.0, 0.0, 2.0], [-0.75, -0.25, 0.25, 0.75])
""",
    "napari_segeval.phantoms.make_samples.render_readme": """\
>>> text = render_readme([], {"video": {"codec": "libx264", "fps": 25}}, {"ct": 1001})
>>> text.startswith("# napari-segeval sample data")
True
""",
    "napari_segeval.phantoms._encode.mp4_bytes": """\
>>> clip = np.zeros((2, 16, 16), np.uint8)
>>> mp4_bytes(clip, 25) == mp4_bytes(clip, 25)
True
""",
    "napari_segeval.phantoms._encode.decode_mp4_grey": """\
>>> clip = np.full((2, 16, 16), 128, np.uint8)
>>> decode_mp4_grey(mp4_bytes(clip, 25)).shape
(2, 16, 16)
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
