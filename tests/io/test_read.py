import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from napari_segeval._errors import (
    GeometryMismatchError,
    InvalidLabelsError,
    ReadError,
    SegEvalError,
)
from napari_segeval.io import (
    Geometry,
    read_case,
    read_image,
    read_labels,
    write_image,
    write_labels,
)

G = Geometry((3.0, 0.8, 0.8), (1.0, 2.0, 3.0), np.eye(3).ravel())


def test_missing_and_unsupported(tmp_path):
    with pytest.raises(ReadError, match="nope.nii.gz: no such file"):
        read_image(tmp_path / "nope.nii.gz")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ReadError, match="notes.txt: unsupported file type"):
        read_image(tmp_path / "notes.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReadError, match="no DICOM files or image frames"):
        read_image(tmp_path / "empty")


def test_read_case_checks_shape_and_geometry(tmp_path):
    img = write_image(tmp_path / "ct.nii.gz", np.zeros((2, 4, 5), np.int16), G)
    seg = write_labels(tmp_path / "seg.nii.gz", np.zeros((2, 4, 4), np.uint8), G)
    with pytest.raises(
        GeometryMismatchError,
        match=r"seg.nii.gz do not match image .*ct.nii.gz: shape \(2, 4, 4\) vs \(2, 4, 5\)",
    ):
        read_case(img, seg)
    other = Geometry((3.0, 0.8, 0.8), (1.0, 2.0, 9.0), np.eye(3).ravel())
    moved = write_labels(tmp_path / "moved.mha", np.zeros((2, 4, 5), np.uint8), other)
    with pytest.raises(GeometryMismatchError, match=r"origin \(1, 2, 9\) vs .*origin \(1, 2, 3\)"):
        read_case(img, moved)


def test_read_case_negative_and_fractional_labels(tmp_path):
    img = write_image(tmp_path / "ct.mha", np.zeros((2, 3, 3), np.float32), G)
    write_image(tmp_path / "neg_seg.mha", np.full((2, 3, 3), -1, np.int16), G)
    with pytest.raises(InvalidLabelsError, match="neg_seg.mha: label map has negative ids"):
        read_case(img, tmp_path / "neg_seg.mha")
    write_image(tmp_path / "frac_seg.mha", np.full((2, 3, 3), 0.5, np.float32), G)
    with pytest.raises(InvalidLabelsError, match="frac_seg.mha: label map has non-integer"):
        read_case(img, tmp_path / "frac_seg.mha")


def test_png_labels_take_image_geometry_and_vice_versa(tmp_path, make):
    g2 = Geometry((0.5, 0.25), (3.0, 4.0), np.eye(2).ravel())
    img = write_image(tmp_path / "us.mha", np.zeros((4, 5), np.uint8), g2)
    m = np.zeros((4, 5), np.uint8)
    m[1, 1] = 255
    case = read_case(img, make.png(tmp_path / "us_gt.png", m))
    assert case.labels.sum() == 1 and case.geometry == g2
    seg = write_labels(tmp_path / "seg.mha", m // 255, g2)
    case = read_case(make.png(tmp_path / "photo.png", np.zeros((4, 5, 3), np.uint8)), seg)
    assert case.geometry == g2 and case.axes == "yxc"


def test_read_case_video_with_colour_table(tmp_path, make):
    frames = tmp_path / "f"
    masks = tmp_path / "m"
    frames.mkdir(), masks.mkdir()
    for i in range(2):
        make.png(frames / f"{i}.png", make.blocks(1)[0])
        mk = np.zeros((32, 48, 3), np.uint8)
        mk[4:10, 4:10] = (255, 0, 0)
        make.png(masks / f"{i}.png", mk)
    case = read_case(frames, masks, color_table={(255, 0, 0): (1, "polyp")})
    assert case.labels.shape == (2, 32, 48) and case.structures == {1: "polyp"}
    assert int(case.labels.sum()) == 2 * 36


def _valid_files(tmp_path, make):
    rng = np.random.default_rng(0)
    vol = rng.integers(0, 500, (4, 16, 16)).astype(np.int16)
    files = [
        write_image(tmp_path / "v.nii.gz", vol, G),
        write_image(tmp_path / "v.nii", vol, G),
        write_image(tmp_path / "v.mha", vol, G),
        write_image(tmp_path / "v.nrrd", vol, G),
        make.png(tmp_path / "p.png", rng.integers(0, 255, (16, 16, 3)).astype(np.uint8)),
        make.png(tmp_path / "j.jpg", rng.integers(0, 255, (16, 16, 3)).astype(np.uint8)),
        make.multiframe_dicom(
            tmp_path / "m.dcm", rng.integers(0, 255, (3, 16, 16)).astype(np.uint8)
        ),
    ]
    import tifffile

    tifffile.imwrite(tmp_path / "t.tif", vol)
    files.append(tmp_path / "t.tif")
    try:
        files.append(make.video(tmp_path / "c.mp4", make.blocks(4)))
        files.append(make.video(tmp_path / "c.avi", make.blocks(4)))
    except ImportError:
        pass
    return files


EXTS = [
    ".nii",
    ".nii.gz",
    ".mha",
    ".mhd",
    ".nrrd",
    ".dcm",
    ".png",
    ".jpg",
    ".tif",
    ".mp4",
    ".avi",
    ".dcm.gz",
    ".hdr",
    ".mnc",
]
_CLASS_NAME = re.compile(r"\b[A-Z]\w*(Error|Exception)\b|Traceback")


def _one_line(exc: BaseException) -> None:
    msg = str(exc)
    assert "\n" not in msg and not _CLASS_NAME.search(msg), msg


_FUZZ = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_FUZZ
@given(data=st.binary(min_size=0, max_size=2048), ext=st.sampled_from(EXTS))
def test_random_bytes_give_segeval_error(tmp_path, data, ext):
    path = tmp_path / f"junk{ext}"
    path.write_bytes(data)
    with pytest.raises(SegEvalError) as info:
        read_image(path)
    _one_line(info.value)


@_FUZZ
@given(fraction=st.floats(0.0, 0.97), which=st.integers(0, 99))
def test_truncated_files_give_segeval_error(tmp_path, make, fraction, which):
    src = tmp_path / "src"  # tmp_path is shared by the examples: build the files once
    if not src.exists():
        src.mkdir()
        _valid_files(src, make)
    files = sorted(p for p in src.iterdir() if not p.name.endswith("raw"))
    original = files[which % len(files)]
    read_image(original)  # the intact file reads
    cut = tmp_path / f"cut_{which}_{original.name}"
    data = original.read_bytes()
    cut.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(SegEvalError) as info:
        read_image(cut)
    _one_line(info.value)
    with pytest.raises(SegEvalError):
        read_labels(cut)


def test_refusals_print_nothing_and_are_one_line(tmp_path, capfd):
    import gzip

    files = {
        "t1.mnc": b"junk",
        "v.mha": b"ObjectType = Image\nNDims = 3\nDimSize = 1 2 3\nElementType = MET_FLOAT\n"
        b"ElementDataFile = LOCAL\n",
        "a.hdr": b"\0" * 348,
        "b.dcm": b"\0" * 128 + b"DICM" + b"\xff" * 40,
        "c.dcm.gz": gzip.compress(b"\x08\x00\x16\x00UI\x04\x001.2" + b"\xff" * 30),
        "d.nii": b"\x5c\x01\x00\x00" + b"\0" * 400,
        "surf.gii": b"<GIFTI/>",
        "fibres.tck": b"mrtrix tracks\n",
    }
    capfd.readouterr()
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(SegEvalError) as info:
            read_image(tmp_path / name)
        _one_line(info.value)
        assert name in str(info.value)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_non_grid_formats_named(tmp_path):
    (tmp_path / "lh.pial.gii").write_bytes(b"<GIFTI/>")
    with pytest.raises(
        ReadError, match=r"GIFTI surfaces are not supported \(not an image on a grid\)"
    ):
        read_image(tmp_path / "lh.pial.gii")
