"""DICOM files written with pydicom for the tests (every DICOM case is generated here).

Imported by ``tests/io/conftest.py`` (the ``make`` fixture) and by other test
modules after putting this folder on ``sys.path``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

_UID_ROOT = "1.2.826.0.1.3680043.8.498."


def pydicom_file(
    path: Path,
    pixels: np.ndarray,
    *,
    modality: str = "CT",
    series_uid: str = _UID_ROOT + "1",
    instance: int = 1,
    iop=(1, 0, 0, 0, 1, 0),
    ipp=(0.0, 0.0, 0.0),
    spacing=(0.7, 0.6),
    thickness: float | None = 2.5,
    preamble: bool = True,
    gz: bool = False,
    implicit: bool = False,
    frames: bool = False,
    **tags,
) -> Path:
    """Write ``pixels`` ((rows, cols) or (frames, rows, cols) [+ colour]) with pydicom.

    Geometry tags are omitted when their argument is None; ``tags`` are set as
    given (``None`` deletes). ``preamble=False`` writes no 128-byte preamble and no
    file meta group; ``gz`` gzips the file to ``path`` (name it ``*.dcm.gz``).
    """
    import gzip
    import io

    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, ImplicitVRLittleEndian

    arr = np.asarray(pixels)
    colour = arr.shape[-1] == 3 and arr.ndim >= 3 and tags.get("SamplesPerPixel") == 3
    ds = Dataset()
    ds.SOPClassUID = (
        "1.2.840.10008.5.1.4.1.1.2" if modality == "CT" else "1.2.840.10008.5.1.4.1.1.7"
    )
    ds.SOPInstanceUID = f"{series_uid}.{instance}"
    ds.StudyInstanceUID = _UID_ROOT + "9"
    ds.SeriesInstanceUID = series_uid
    ds.Modality = modality
    ds.SeriesNumber = 1
    ds.InstanceNumber = instance
    if iop is not None:
        ds.ImageOrientationPatient = [float(v) for v in iop]
    if ipp is not None:
        ds.ImagePositionPatient = [float(v) for v in ipp]
    if spacing is not None:
        ds.PixelSpacing = [float(v) for v in spacing]
    if thickness is not None:
        ds.SliceThickness = thickness
    multi = frames or arr.ndim == (4 if colour else 3)
    shape = arr.shape[1:] if multi else arr.shape
    ds.Rows, ds.Columns = int(shape[0]), int(shape[1])
    if multi:
        ds.NumberOfFrames = int(arr.shape[0])
    ds.SamplesPerPixel = 3 if colour else 1
    ds.PhotometricInterpretation = "RGB" if colour else "MONOCHROME2"
    if colour:
        ds.PlanarConfiguration = 0
    ds.BitsAllocated = ds.BitsStored = arr.dtype.itemsize * 8
    ds.HighBit = ds.BitsStored - 1
    ds.PixelRepresentation = 1 if arr.dtype.kind == "i" else 0
    ds.PixelData = np.ascontiguousarray(arr).tobytes()
    for key, value in tags.items():
        if value is None:
            if key in ds:
                delattr(ds, key)
        else:
            setattr(ds, key, value)
    syntax = ImplicitVRLittleEndian if implicit else ExplicitVRLittleEndian
    if preamble:
        ds.file_meta = FileMetaDataset()
        ds.file_meta.MediaStorageSOPClassUID = ds.SOPClassUID
        ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
        ds.file_meta.TransferSyntaxUID = syntax
        ds.preamble = b"\0" * 128
    buf = io.BytesIO()
    ds.save_as(buf, implicit_vr=implicit, little_endian=True, enforce_file_format=preamble)
    data = buf.getvalue()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def pydicom_series(
    folder: Path,
    volume: np.ndarray,
    *,
    spacing=(2.5, 0.7, 0.6),
    origin=(-10.0, 20.0, 30.0),
    iop=(1, 0, 0, 0, 1, 0),
    prefix: str = "img",
    series_uid: str = _UID_ROOT + "1",
    **kw,
) -> Path:
    """One pydicom file per slice of a (z, y, x) volume, positions along the normal."""
    folder.mkdir(parents=True, exist_ok=True)
    r, c = np.asarray(iop[:3], float), np.asarray(iop[3:], float)
    n = np.cross(r, c)
    for k in range(volume.shape[0]):
        pos = np.asarray(origin, float) + k * spacing[0] * n
        pydicom_file(
            folder / f"{prefix}{k:03d}.dcm",
            volume[k],
            iop=iop,
            ipp=tuple(pos),
            spacing=spacing[1:],
            thickness=spacing[0],
            instance=k + 1,
            series_uid=series_uid,
            **kw,
        )
    return folder


def gdcm_jpeg_lossless(path: Path, pixels: np.ndarray, **meta: str) -> Path:
    """``pixels`` written by GDCM (SimpleITK) as JPEG lossless (1.2.840.10008.1.2.4.70),
    which pydicom cannot decode without a plugin; ``meta``: DICOM tags ``"gggg|eeee"``."""
    import SimpleITK as sitk

    img = sitk.GetImageFromArray(pixels)
    for key, value in meta.items():
        img.SetMetaData(key, value)
    writer = sitk.ImageFileWriter()
    writer.SetImageIO("GDCMImageIO")
    writer.SetFileName(str(path))
    writer.UseCompressionOn()
    writer.SetCompressor("JPEG")
    writer.Execute(img)
    return path


# --- colour and 12-bit JPEG ---------------------------------------------------------------


def palette_tags(red, green, blue, bits: int = 16, first: int = 0) -> dict:
    """PALETTE COLOR tags for a palette of ``len(red)`` entries of ``bits`` bits each."""
    dtype = "<u2" if bits == 16 else "u1"
    n = len(red)
    tags = {"PhotometricInterpretation": "PALETTE COLOR"}
    for name, lut in (("Red", red), ("Green", green), ("Blue", blue)):
        tags[f"{name}PaletteColorLookupTableDescriptor"] = [n % 65536, first, bits]
        tags[f"{name}PaletteColorLookupTableData"] = np.asarray(lut).astype(dtype).tobytes()
    return tags


def ybr_full_422(rgb: np.ndarray) -> bytes:
    """Uncompressed YBR_FULL_422 pixel data of ``(..., rows, cols, 3)`` uint8 RGB: each
    pair of pixels of a row as ``Y1 Y2 Cb Cr``, the chroma of the pair's first pixel."""
    from pydicom.pixels import convert_color_space

    ybr = convert_color_space(np.asarray(rgb), "RGB", "YBR_FULL")
    y, cb, cr = ybr[..., 0], ybr[..., 1], ybr[..., 2]
    packed = np.stack([y[..., 0::2], y[..., 1::2], cb[..., 0::2], cr[..., 0::2]], axis=-1)
    return np.ascontiguousarray(packed).tobytes()


_ZIGZAG = np.array(
    [
        0,
        1,
        8,
        16,
        9,
        2,
        3,
        10,
        17,
        24,
        32,
        25,
        18,
        11,
        4,
        5,
        12,
        19,
        26,
        33,
        40,
        48,
        41,
        34,
        27,
        20,
        13,
        6,
        7,
        14,
        21,
        28,
        35,
        42,
        49,
        56,
        57,
        50,
        43,
        36,
        29,
        22,
        15,
        23,
        30,
        37,
        44,
        51,
        58,
        59,
        52,
        45,
        38,
        31,
        39,
        46,
        53,
        60,
        61,
        54,
        47,
        55,
        62,
        63,
    ]
)


def _dct() -> np.ndarray:
    k = np.arange(8)
    t = np.cos((2 * k[None, :] + 1) * k[:, None] * np.pi / 16) / 2
    t[0] /= np.sqrt(2)
    return t


def _blocks(pixels: np.ndarray):
    """8 x 8 blocks (edges replicated) of 12-bit samples, level-shifted by 2048."""
    a = np.asarray(pixels, np.float64)
    h, w = a.shape
    a = np.pad(a, ((0, -h % 8), (0, -w % 8)), mode="edge") - 2048
    for by in range(0, a.shape[0], 8):
        for bx in range(0, a.shape[1], 8):
            yield by, bx, a[by : by + 8, bx : bx + 8]


def jpeg12_expected(pixels: np.ndarray, quant: np.ndarray) -> np.ndarray:
    """What an exact decoder gives for :func:`jpeg12` of ``pixels`` (float inverse DCT)."""
    t, q = _dct(), np.asarray(quant, np.float64).reshape(8, 8)
    h, w = np.shape(pixels)
    out = np.zeros((h + -h % 8, w + -w % 8))
    for by, bx, block in _blocks(pixels):
        coef = np.round(t @ block @ t.T / q) * q
        out[by : by + 8, bx : bx + 8] = t.T @ coef @ t
    return np.clip(np.round(out + 2048), 0, 4095)[:h, :w]


def _huffman(symbols: set[int], length: int) -> tuple[bytes, dict[int, int]]:
    """A table giving every symbol a code of ``length`` bits (no all-ones code)."""
    syms = sorted(symbols)
    assert len(syms) < (1 << length) - 1
    counts = [0] * 16
    counts[length - 1] = len(syms)
    return bytes(counts) + bytes(syms), {s: i for i, s in enumerate(syms)}


def jpeg12(pixels: np.ndarray, quant: np.ndarray) -> bytes:
    """One grey 12-bit JPEG Extended (process 4: DCT, Huffman) image of ``(rows, cols)``
    samples in 0..4095, quantised by the 8 x 8 table ``quant`` (row-major, 1..255).

    No library at hand writes this syntax (Pillow and GDCM's writer in SimpleITK encode
    8-bit or lossless JPEG only), so the tests encode it here by ITU-T T.81.
    """
    import struct

    t, q = _dct(), np.asarray(quant, np.float64).reshape(8, 8)
    events, prev = [], 0  # (table, symbol, value)
    for _, _, block in _blocks(pixels):
        zz = np.round(t @ block @ t.T / q).astype(int).ravel()[_ZIGZAG]
        diff, prev = zz[0] - prev, zz[0]
        events.append(("dc", int(abs(diff)).bit_length(), diff))
        nonzero = np.flatnonzero(zz[1:]) + 1
        run = 0
        for i in range(1, (nonzero[-1] if nonzero.size else 0) + 1):
            if zz[i] == 0:
                run += 1
                continue
            while run > 15:
                events.append(("ac", 0xF0, 0))
                run -= 16
            events.append(("ac", (run << 4) | int(abs(zz[i])).bit_length(), zz[i]))
            run = 0
        if not nonzero.size or nonzero[-1] < 63:
            events.append(("ac", 0x00, 0))
    dc_table, dc = _huffman({s for k, s, _ in events if k == "dc"}, 5)
    ac_table, ac = _huffman({s for k, s, _ in events if k == "ac"}, 8)
    bits = []
    for k, sym, value in events:
        code, n = (dc[sym], 5) if k == "dc" else (ac[sym], 8)
        bits.append(format(code, f"0{n}b"))
        size = sym if k == "dc" else sym & 15
        if size:
            v = int(value) if value >= 0 else int(value) + (1 << size) - 1
            bits.append(format(v, f"0{size}b"))
    stream = "".join(bits)
    stream += "1" * (-len(stream) % 8)
    scan = bytes(int(stream[i : i + 8], 2) for i in range(0, len(stream), 8))
    scan = scan.replace(b"\xff", b"\xff\x00")

    def segment(marker: int, payload: bytes) -> bytes:
        return struct.pack(">HH", marker, len(payload) + 2) + payload

    h, w = np.shape(pixels)
    qz = bytes(int(v) for v in np.asarray(quant).ravel()[_ZIGZAG])
    return (
        b"\xff\xd8"
        + segment(0xFFDB, b"\x00" + qz)
        + segment(0xFFC1, struct.pack(">BHHB", 12, h, w, 1) + b"\x01\x11\x00")
        + segment(0xFFC4, b"\x00" + dc_table)
        + segment(0xFFC4, b"\x10" + ac_table)
        + segment(0xFFDA, b"\x01\x01\x00\x00\x3f\x00")
        + scan
        + b"\xff\xd9"
    )


def jpeg12_file(path: Path, pixels: np.ndarray, quant: np.ndarray, **kw) -> Path:
    """A DICOM file of 12-bit samples (``(rows, cols)`` or ``(frames, rows, cols)``)
    in transfer syntax JPEG Extended 12-bit (1.2.840.10008.1.2.4.51)."""
    from pydicom import dcmread
    from pydicom.encaps import encapsulate
    from pydicom.uid import JPEGExtended12Bit

    arr = np.asarray(pixels, np.uint16)
    gz = kw.pop("gz", False)
    pydicom_file(path, arr, **kw)
    ds = dcmread(path)
    ds.BitsStored, ds.HighBit = 12, 11
    frames = arr if arr.ndim == 3 else arr[None]
    ds.PixelData = encapsulate([jpeg12(f, quant) for f in frames])
    ds["PixelData"].VR = "OB"
    ds.file_meta.TransferSyntaxUID = JPEGExtended12Bit
    ds.save_as(path)
    if gz:
        import gzip

        path.write_bytes(gzip.compress(path.read_bytes()))
    return path
