"""The examples of the LiteMedSAM and MedSAM2 backends' internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace with
the flags of the package's own doctests but NUMBER (a pytest extension).
"""

import pytest

pytest.importorskip("torch")

EXAMPLES = {
    "napari_segeval.models.litemedsam.model.to_uint8": """\
>>> to_uint8(np.array([[-200.0, 40.0, 500.0]]), "CT").tolist()
[[0, 127, 255]]
>>> to_uint8(np.array([[0.0, 10.0, 20.0, 30.0]]), "MR").tolist()
[[0, 0, 127, 255]]
>>> to_uint8(np.array([[0, 1000, 4000]]), "US").tolist()
[[0, 63, 255]]
""",
    "napari_segeval.models.litemedsam.model.Box3D_from_mask": """\
>>> m = np.zeros((5, 6, 6), bool); m[1, 1, 2] = m[3, 4, 1] = True
>>> Box3D.from_mask(m, 2, 1)
Box3D(label=2, value=1, xyxy=(1, 1, 2, 4), z0=1, z1=3)
""",
    "napari_segeval.models.litemedsam.model.LiteMedSAMModel_preprocess": """\
>>> m = LiteMedSAMModel.__new__(LiteMedSAMModel)
>>> round(m.preprocess(np.full((2, 8, 8), 40.0), "CT").max().item(), 6)
0.498039
""",
    "napari_segeval.models.litemedsam._chain.box_xyxy": """\
>>> box_xyxy(Box(2, 3, 6, 9))
(3, 2, 8, 5)
""",
    "napari_segeval.models.litemedsam._chain.jittered_boxes": """\
>>> boxes = jittered_boxes([10, 20, 50, 40], 3, seed=7)
>>> len(boxes), all(b[0] < b[2] and b[1] < b[3] for b in boxes)
(3, True)
>>> boxes == jittered_boxes([10, 20, 50, 40], 3, seed=7)
True
""",
    "napari_segeval.models.litemedsam._chain.agreement": """\
>>> a = torch.full((1, 4, 4), -1.0); a[0, :2] = 1.0
>>> b = torch.stack([a, torch.full((1, 4, 4), 1.0)])
>>> round(agreement(a, b), 3)
0.833
""",
    "napari_segeval.models.litemedsam._chain.correction_reach": """\
>>> correction_reach(10, frozenset({4, 13}), "forward"), correction_reach(10, frozenset({4}), "backward")
(2, 3)
>>> correction_reach(10, frozenset({4}), "forward") is None
True
""",
    "napari_segeval.models.litemedsam._recipe.resized_size": """\
>>> resized_size(512, 512), resized_size(96, 96), resized_size(300, 200)
((256, 256), (256, 256), (256, 171))
""",
    "napari_segeval.models.litemedsam._recipe.axis_weights": """\
>>> axis_weights(4, 2, "blocks").tolist()
[[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]]
>>> axis_weights(2, 4, "linear").tolist()
[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]
""",
    "napari_segeval.models.litemedsam._recipe.round_u8": """\
>>> round_u8(torch.tensor([0.5, 1.5, 2.5, 300.0])).tolist()
[0.0, 2.0, 2.0, 255.0]
>>> round_u8(torch.tensor([0.5, 2.5]), half_up=True).tolist()
[1.0, 3.0]
""",
    "napari_segeval.models.litemedsam._recipe.resize_area": """\
>>> x = torch.tensor([[0., 1., 2., 4.], [4., 3., 2., 0.]])
>>> resize_area(x, (1, 2)).tolist()
[[2.0, 2.0]]
""",
    "napari_segeval.models.litemedsam._recipe.model_input": """\
>>> x, size = model_input(torch.rand(96, 64))
>>> tuple(x.shape), size, float(x.max())
((3, 256, 256), (256, 171), 1.0)
""",
    "napari_segeval.models.litemedsam._recipe.scale_box": """\
>>> scale_box((10, 20, 50, 95), (96, 96))
[26, 53, 133, 253]
""",
    "napari_segeval.models.litemedsam._recipe.mask_to_256": """\
>>> m = np.zeros((128, 128), bool); m[10:20, 30:40] = True
>>> np.argwhere(mask_to_256(m)).min(axis=0).tolist(), int(mask_to_256(m).sum())
([20, 60], 400)
""",
    "napari_segeval.models.litemedsam._recipe.box_of_256": """\
>>> m = np.zeros((256, 256), bool); m[1:5, 250:254] = True
>>> box_of_256(m)
[247, 0, 256, 7]
""",
    "napari_segeval.models.litemedsam._asset.installed_version": """\
>>> installed_version(ENTRY) in (None, "0.1.1") or isinstance(installed_version(), str)
True
""",
    "napari_segeval.models.litemedsam._network.rows_per_band": """\
>>> rows_per_band(256, 256), rows_per_band(256, 256, floats=1)
(32, 1)
""",
    "napari_segeval.models.litemedsam._fused.inference_encoder": """\
>>> enc = TinyViTEncoder().eval()
>>> type(inference_encoder(enc, "fp32", torch.device("cpu"))).__name__
'FusedEncoder'
""",
    "napari_segeval.models.litemedsam._openvino.cache_key": """\
>>> a, b = cache_key("ab" * 32, "2026.1"), cache_key("ab" * 32, "2026.2")
>>> a.startswith("encoder-abababababab") and a != b
True
""",
    "napari_segeval.models.medsam2.model.load_sam2": """\
>>> load_sam2("sam2.1-small", "no/such/sam2.1_hiera_small.pt")
Traceback (most recent call last):
...
napari_segeval._errors.ReadError: no/such/sam2.1_hiera_small.pt: SAM2.1 checkpoint not found
""",
    "napari_segeval.models.medsam2.model.load_medsam2": """\
>>> load_medsam2("no/such/MedSAM2_latest.pt")
Traceback (most recent call last):
...
napari_segeval._errors.ReadError: no/such/MedSAM2_latest.pt: MedSAM2 checkpoint not found
""",
    "napari_segeval.models.medsam2.model.MedSAM2Model_with_options": """\
>>> m = MedSAM2Model.__new__(MedSAM2Model); m.resize = "float"
>>> m.with_options(resize="pillow").resize, m.resize
('pillow', 'float')
""",
    "napari_segeval.models.medsam2._condition.prompt_points": """\
>>> p = prompt_points([(10.0, 20.0)], [1], (100, 200), 512, "cpu")
>>> p["point_coords"].tolist(), p["point_labels"].tolist()
([[[25.600000381469727, 102.4000015258789]]], [[1]])
""",
    "napari_segeval.models.medsam2._condition.reading_order": """\
>>> from napari_segeval.prompts.prompt_set import Point
>>> reading_order(PromptSet.of([Box(0, 0, 2, 2, index=5), Point(1, 1, index=2),
...                             Point(1, 1, index=5)]))
[5, 2]
""",
    "napari_segeval.models.medsam2._loop.connected_components": """\
>>> import torch
>>> m = torch.tensor([[[[1, 0, 0], [0, 1, 0], [0, 0, 0]]]])
>>> labels, areas = connected_components(m)
>>> labels[0, 0].tolist(), int(areas.max())
([[1, 0, 0], [0, 1, 0], [0, 0, 0]], 2)
""",
    "napari_segeval.models.medsam2._build.identify": """\
>>> import torch
>>> identify({"image_encoder.trunk.patch_embed.proj.weight": torch.zeros(144, 3, 7, 7),
...           "image_encoder.trunk.blocks.47.norm1.weight": torch.zeros(1152)})
(144, 48)
>>> identify({"w": torch.zeros(1)}) is None
True
""",
    "napari_segeval.models.medsam2._build.other_size": """\
>>> import torch
>>> large = {"image_encoder.trunk.patch_embed.proj.weight": torch.zeros(144, 3, 7, 7),
...          "image_encoder.trunk.blocks.47.norm1.weight": torch.zeros(1)}
>>> print(other_size(ARCHITECTURES["sam2.1-tiny"], large, "l.pt"))
l.pt: this SAM2.1 checkpoint holds SAM2.1 Hiera-large weights, not SAM2.1 Hiera-tiny 1024 weights: use --model sam2.1-large (the model name decides the network)
""",
    "napari_segeval.models.medsam2._preprocess.to_uint8_range": """\
>>> to_uint8_range(np.array([[-200.0, 40.0, 500.0]]), "CT").tolist()
[[0, 127, 255]]
>>> to_uint8_range(np.array([[-100.0, 0.0, 100.0]]), "CT", ct_mapping="minmax").tolist()
[[0, 127, 255]]
""",
    "napari_segeval.models.medsam2._preprocess.pillow_resize": """\
>>> import torch
>>> pillow_resize(torch.zeros(2, 3, 5, 7), 8).shape
torch.Size([2, 3, 8, 8])
""",
    "napari_segeval.models.medsam2._preprocess.pil_bicubic_matrix": """\
>>> m = pil_bicubic_matrix(4, 8)
>>> m.shape, bool(np.allclose(m.sum(axis=1), 1.0))
((8, 4), True)
>>> pil_bicubic_matrix(5, 5).round(6).tolist() == np.eye(5).tolist()
True
""",
    "napari_segeval.models.medsam2._preprocess.resize_bicubic": """\
>>> import torch
>>> resize_bicubic(torch.ones(2, 3, 5, 7), (8, 8)).shape
torch.Size([2, 3, 8, 8])
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
