"""The examples of the models package's internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace with
the flags of the package's own doctests but NUMBER (a pytest extension).
"""

import pytest

EXAMPLES = {
    "napari_segeval.models._blocks.conv_block": """\
>>> import torch
>>> b = conv_block(1, 4, dims=3)
>>> b(torch.zeros(1, 1, 4, 4, 4)).shape
torch.Size([1, 4, 4, 4, 4])
>>> sorted(conv_block(4, 8, dims=2, norm="batch").state_dict())[:3]
['0.weight', '1.bias', '1.num_batches_tracked']
""",
    "napari_segeval.models._cache.cache_dir": """\
>>> cache_dir({"HF_HOME": "/data/hf"}), cache_dir({"HF_HUB_CACHE": "/tmp/hub"})
(PosixPath('/data/hf/hub'), PosixPath('/tmp/hub'))
""",
    "napari_segeval.models._cache.snapshot_path": """\
>>> from napari_segeval.models.catalogue import CATALOGUE
>>> snapshot_path(CATALOGUE["MedSAM2_latest"], Path("/c")).as_posix()
'/c/models--wanglab--MedSAM2/snapshots/e4a6f35edd7e091619cbc0750f462f1574e23955/MedSAM2_latest.pt'
""",
    "napari_segeval.models._frame_cache.FrameCache": """\
>>> import torch
>>> cache = FrameCache(lambda a, b: [[torch.full((1,), float(i))] for i in range(a, b)],
...                    3, 1, None, [[0, 1], [1, 2]])
>>> [float(cache.get(t)[0]) for t in (0, 1, 1, 2)], cache.encoded
([0.0, 1.0, 1.0, 2.0], 3)
""",
    "napari_segeval.models._frame_cache.FrameStore": """\
>>> import torch
>>> store, frames = FrameStore(), torch.zeros(2, 3)
>>> store.bind(frames, "float"), store.bind(frames, "float"), store.bind(frames, "pillow")
(False, True, False)
>>> _ = frames.add_(1)  # changed in place: the features no longer hold
>>> store.bind(frames, "float")
False
""",
    "napari_segeval.models._prompt_corrections.confident": """\
>>> confident(torch.tensor([0.9, 0.6, 0.1]), 0.8), confident(torch.zeros(3), 0.8)
(False, True)
""",
    "napari_segeval.models._prompt_corrections.shared": """\
>>> a = torch.zeros(4, 4, dtype=torch.bool); a[:2] = True
>>> b = torch.zeros(4, 4, dtype=torch.bool); b[1:3] = True
>>> shared(a, a), shared(a, b), shared(a, b, 0.3), shared(a, ~a)
(True, False, True, False)
""",
    "napari_segeval.models._prompt_net.PromptUNet": """\
>>> net = PromptUNet(width=8, depth=2).eval()
>>> net(torch.zeros(2, 4, 32, 32)).shape
torch.Size([2, 1, 32, 32])
>>> net6 = PromptUNet(width=8, depth=2, in_channels=6).eval()
>>> net6.takes_points
True
>>> x = torch.rand(1, 4, 32, 32)
>>> torch.equal(net6(x), net6(torch.cat([x, torch.zeros(1, 2, 32, 32)], 1)))
True
""",
    "napari_segeval.models._prompt_net.click_maps": """\
>>> w = torch.tensor([[8.0, 8.0, 8.0]])  # a 16-pixel window at the origin
>>> m = click_maps([[(3, 3, True), (12, 12, False)]], w, 16)
>>> m.shape, int(m[0, 0].sum()), int(m[0, 1].sum()), bool(m[0, 0, 3, 5])
(torch.Size([1, 2, 16, 16]), 21, 21, True)
""",
    "napari_segeval.models.builtin_prompt.load_network": """\
>>> net, config = load_network()
>>> config["size"]
64
""",
    "napari_segeval.models.dense._loaders.load_path": """\
>>> from napari_segeval.models.dense import BUILTIN_CT_WEIGHTS
>>> load_path(BUILTIN_CT_WEIGHTS, "cpu").name == str(BUILTIN_CT_WEIGHTS)
True
""",
    "napari_segeval.models.dense._loaders.load_unet_weights": """\
>>> from napari_segeval.models.dense import BUILTIN_CT_WEIGHTS
>>> load_unet_weights(BUILTIN_CT_WEIGHTS, "cpu").structures[2]
'spleen'
""",
    "napari_segeval.models.dense._plans.channel_stats": """\
>>> n, stats = channel_stats({"in_channels": 2, "intensity": [
...     {"lower": 0, "upper": 1, "mean": 0.5, "std": 0.2}, None]}, "toy")
>>> n, stats[0].std, stats[1]
(2, 0.2, None)
""",
    "napari_segeval.models.dense._plans.model_from_plans": """\
>>> import torch
>>> plans = {"num_classes": 2, "patch_size": [4, 4, 4], "structures": {"1": "blob"}}
>>> m = model_from_plans(plans, torch.nn.Conv3d(1, 2, 1), "toy", "cpu", {})
>>> m.num_classes, m.structures, m.patch_size, m.spacing
(2, {1: 'blob'}, (4, 4, 4), None)
""",
    "napari_segeval.models.dense.unet.UNet3D": """\
>>> net = UNet3D(UNetConfig(num_classes=3, base_channels=4, levels=2))
>>> net(torch.zeros(1, 1, 8, 8, 8)).shape
torch.Size([1, 3, 8, 8, 8])
""",
    "napari_segeval.models.dense.unet2d.TorchThreads": """\
>>> import torch
>>> before = torch.get_num_threads()
>>> with TorchThreads(1):
...     torch.get_num_threads()
1
>>> torch.get_num_threads() == before
True
""",
    "napari_segeval.models.dense.unet2d.as_channels": """\
>>> as_channels(np.zeros((4, 5, 4), np.uint8)).shape, as_channels(np.zeros((4, 5)), 3).shape
((3, 4, 5), (3, 4, 5))
""",
    "napari_segeval.models.dense.unet2d.build_network": """\
>>> import torch
>>> build_network(3, 2, width=4, levels=2)(torch.zeros(1, 3, 8, 8)).shape
torch.Size([1, 2, 8, 8])
""",
    "napari_segeval.models.threshold.ThresholdPromptModel": """\
>>> frames = np.zeros((4, 8, 8), np.float32); frames[:, 2:6, 2:6] = 1
>>> m = ThresholdPromptModel()
>>> p = m.propagate(frames, 1, Box(2, 2, 6, 6, index=1), "forward")
>>> p.shape, int((p > 0.5).sum())
(torch.Size([3, 8, 8]), 48)
""",
    "napari_segeval.models.threshold.normalize_info": """\
>>> ThresholdPromptModel().normalize_info("US").raw_per_normalized_unit
255.0
""",
    "napari_segeval.models.threshold.preprocess": """\
>>> ThresholdPromptModel().preprocess(np.array([[[0, 255]]], np.uint8), "US").tolist()
[[[0.0, 1.0]]]
>>> from napari_segeval.models.builtin_prompt import BuiltinPromptModel
>>> builtin = BuiltinPromptModel(device="cpu")
>>> builtin.preprocess(np.full((2, 4, 4, 3), 255, np.uint8), "US").shape
torch.Size([2, 4, 4])
>>> builtin.normalize_info("CT", "abdomen").raw_per_normalized_unit
400.0
""",
    "napari_segeval.models.walk.Walk": """\
>>> w = Walk(3, Box(0, 0, 2, 2, index=3), "backward")
>>> w.frames(10).tolist(), w.last_conditioning_step()
([3, 2, 1, 0], 0)
>>> from napari_segeval.prompts.prompt_set import Point, PromptSet
>>> s = PromptSet.of([Box(0, 0, 4, 4, index=2), Point(1, 1, index=6, positive=False)])
>>> Walk.of(s, "backward").start, Walk.of(s, "forward").frames(8).tolist()
(6, [2, 3, 4, 5, 6, 7])
""",
    "napari_segeval.models.walk.WalkOptions": """\
>>> WalkOptions(stop_when_empty=True).grad
False
""",
    "napari_segeval.models.walk.WalkOutput": """\
>>> import torch
>>> out = WalkOutput([3, 4], [(1, 1, 2, 3), None], [torch.ones(1, 2), None], (3, 4))
>>> out.full().sum(dim=(1, 2)).tolist()
[2.0, 0.0]
>>> WalkOutput.from_full([0], torch.ones(1, 2, 2)).boxes
[(0, 0, 2, 2)]
""",
    "napari_segeval.models.walk.last_conditioning_step": """\
>>> from napari_segeval.prompts.prompt_set import Point, PromptSet
>>> s = PromptSet.of([Box(0, 0, 4, 4, index=2), Point(1, 1, index=6)])
>>> Walk.of(s, "forward").last_conditioning_step(), Walk.of(s, "backward").last_conditioning_step()
(4, 4)
""",
    "napari_segeval.models.walk.n_visited": """\
>>> n_visited(10, 4, "forward"), n_visited(10, 4, "backward")
(6, 5)
""",
    "napari_segeval.models.walk.visit_indices": """\
>>> visit_indices(5, 2, "backward").tolist()
[2, 1, 0]
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
