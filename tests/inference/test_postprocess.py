import numpy as np
import pytest

from napari_segeval.inference.postprocess import (
    PostprocessConfig,
    config_from_mapping,
    keep_largest_component,
    largest_component_volume,
    min_volume_from_references,
    postprocess,
    remove_small_components,
)


def _organs():
    lab = np.zeros((10, 20, 20), np.uint8)
    lab[2:8, 2:10, 2:10] = 1  # big liver
    lab[0, 18, 18] = 1  # stray voxel
    lab[5, 15:17, 15:17] = 1  # small island
    lab[2:6, 12:18, 2:6] = 2  # spleen
    lab[8, 0, 0] = 2
    return lab


def test_largest_component_per_structure():
    lab = _organs()
    out = keep_largest_component(lab, [1, 2])
    assert (out == 1).sum() == 6 * 8 * 8
    assert (out == 2).sum() == 4 * 6 * 4
    assert out[0, 18, 18] == 0 and out[8, 0, 0] == 0
    # structures not listed are untouched
    out1 = keep_largest_component(lab, [1])
    assert out1[8, 0, 0] == 2


def test_connectivity_choice():
    lab = np.zeros((1, 4, 4), np.uint8)
    lab[0, 0, 0] = lab[0, 1, 1] = lab[0, 2, 2] = 1
    lab[0, 3, 0] = 1
    assert (keep_largest_component(lab, [1]) == 1).sum() == 3  # diagonal neighbours joined
    assert (keep_largest_component(lab, [1], connectivity=1) == 1).sum() == 1


def test_small_lesions_removed_by_mm3():
    lab = np.zeros((10, 10, 10), np.uint8)
    lab[0:2, 0:2, 0:2] = 5  # 8 voxels
    lab[5:9, 5:9, 5:9] = 5  # 64 voxels
    out, n = remove_small_components(lab, 5, 8 * 2.0 + 1, (2.0, 1.0, 1.0))  # 16 < 17 mm^3
    assert n == 1 and (out == 5).sum() == 64
    out, n = remove_small_components(lab, 5, 16.0, (2.0, 1.0, 1.0))  # not strictly smaller
    assert n == 0 and (out == 5).sum() == 72


def test_small_lesions_merged_into_neighbour():
    lab = np.zeros((1, 8, 8), np.uint8)
    lab[0, :, :4] = 1
    lab[0, 2, 3] = 5  # inside liver border -> merged into liver
    lab[0, 6, 7] = 5  # isolated -> background
    lab[0, 0:3, 5:8] = 5  # 9 voxels, kept
    out, n = remove_small_components(lab, 5, 2.0, (1, 1, 1), mode="merge")
    assert n == 2 and out[0, 2, 3] == 1 and out[0, 6, 7] == 0 and (out == 5).sum() == 9
    with pytest.raises(ValueError):
        remove_small_components(lab, 5, 2.0, (1, 1, 1), mode="fuse")


def test_threshold_learned_from_references():
    a = np.zeros((6, 6, 6), np.uint8)
    a[:3, :3, :3] = 5  # largest 27
    a[5, 5, 5] = 5
    b = np.zeros((6, 6, 6), np.uint8)
    b[:2, :2, :3] = 5  # largest 12
    c = np.zeros((6, 6, 6), np.uint8)  # no lesion: skipped
    thr = min_volume_from_references([(a, (1, 1, 1)), (b, (2, 1, 1)), (c, (1, 1, 1))], [5, 7])
    assert thr == {5: 24.0, 7: 0.0}
    assert largest_component_volume(a, 5, (1, 1, 1)) == 27.0


def test_postprocess_records_each_step():
    lab = _organs()
    lab[9, 19, 19] = 5
    cfg = PostprocessConfig(organs=(1, 2), lesions=(5,), lesion_min_mm3={5: 2.0})
    out, rec = postprocess(lab, (1, 1, 1), cfg)
    assert rec["largest_component"] == [1, 2] and rec["small_lesions"] == {"5": 1}
    assert (out == 5).sum() == 0 and out[0, 18, 18] == 0
    same, rec = postprocess(lab, (1, 1, 1), PostprocessConfig())
    np.testing.assert_array_equal(same, lab)
    assert rec["small_lesions"] == {} and rec["largest_component"] == []
    assert config_from_mapping(cfg.to_dict()) == cfg


def test_merge_fuses_a_small_lesion_into_the_structure_it_touches_most():
    """The rog preset's fusing (``lesion_mode="merge"``): most touching voxels win."""
    lab = np.zeros((1, 7, 7), np.uint8)
    lab[0, :, :3] = 1  # organ 1 on the left
    lab[0, :2, 3:] = 2  # organ 2 on top
    lab[0, 2:4, 3] = 5  # 2-voxel lesion: its ring holds 4 voxels of organ 1, 2 of organ 2
    out, n = remove_small_components(lab, 5, 3.0, (1, 1, 1), mode="merge")
    assert n == 1 and out[0, 2, 3] == 1 and out[0, 3, 3] == 1 and not (out == 5).any()
    from napari_segeval.inference.postprocess import PostprocessConfig, postprocess

    cfg = PostprocessConfig(lesions=(5,), lesion_min_mm3={5: 3.0}, lesion_mode="merge")
    fused, record = postprocess(lab, (1, 1, 1), cfg)
    np.testing.assert_array_equal(fused, out)
    assert record["small_lesions"] == {"5": 1} and record["config"]["lesion_mode"] == "merge"
