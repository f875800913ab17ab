"""Decoding every kind of upload people send, and encoding with dpi."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from app.errors import ApiError
import app.imageio
from app.imageio import ACCEPTED_NAMES, decode, encode, with_filler
from tests.conftest import jpeg_bytes, png_bytes

MAX = 10_000_000


def save(image: Image.Image, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    if fmt == "HEIF":  # pillow-heif's encoder; the app reads HEIC with the decode-only pi-heif
        import pillow_heif

        pillow_heif.from_pillow(image).save(buffer, **options)
    else:
        image.save(buffer, fmt, **options)
    return buffer.getvalue()


def status_of(data: bytes) -> tuple[int, str]:
    with pytest.raises(ApiError) as info:
        decode(data, max_pixels=MAX)
    return info.value.status, info.value.code


def test_rgb_jpeg_png_webp(astronaut: np.ndarray) -> None:
    for data, fmt in ((jpeg_bytes(astronaut), "jpeg"), (png_bytes(astronaut), "png"), (save(Image.fromarray(astronaut), "WEBP", lossless=True), "webp")):
        decoded = decode(data, max_pixels=MAX)
        assert decoded.rgb.shape == (512, 512, 3) and decoded.rgb.dtype == np.uint8 and decoded.source_format == fmt
    assert np.array_equal(decode(png_bytes(astronaut), max_pixels=MAX).rgb, astronaut)


def test_exif_orientation_is_applied(astronaut: np.ndarray) -> None:
    tall = astronaut[:, :300]
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    decoded = decode(jpeg_bytes(tall, exif=exif.tobytes()), max_pixels=MAX)
    assert decoded.rgb.shape == (300, 512, 3)


def test_corrupt_exif_is_ignored(astronaut: np.ndarray) -> None:
    data = jpeg_bytes(astronaut, exif=b"Exif\x00\x00II*\x00\xff\xff\xff\xff garbage")
    assert decode(data, max_pixels=MAX).rgb.shape == (512, 512, 3)


def test_modes_are_converted_to_rgb() -> None:
    grey = Image.fromarray(np.tile(np.arange(256, dtype=np.uint8), (4, 1)))
    assert decode(png_bytes(grey), max_pixels=MAX).rgb[0, 255].tolist() == [255, 255, 255]
    sixteen = Image.fromarray(np.full((4, 4), 65535, dtype=np.uint16))
    assert decode(png_bytes(sixteen), max_pixels=MAX).rgb[0, 0].tolist() == [255, 255, 255]
    half = Image.fromarray(np.full((4, 4), 32768, dtype=np.uint16))
    assert decode(png_bytes(half), max_pixels=MAX).rgb[0, 0].tolist() == [128, 128, 128]
    cmyk = Image.new("CMYK", (8, 8), (0, 255, 255, 0))  # red
    red = decode(save(cmyk, "JPEG"), max_pixels=MAX).rgb[4, 4]
    assert red[0] > 200 and red[1] < 60 and red[2] < 60


def test_transparency_is_flattened_on_white() -> None:
    rgba = np.zeros((4, 4, 4), np.uint8)
    rgba[:2] = (255, 0, 0, 255)  # top half opaque red, bottom half fully transparent black
    rgb = decode(png_bytes(rgba), max_pixels=MAX).rgb
    assert rgb[0, 0].tolist() == [255, 0, 0] and rgb[3, 3].tolist() == [255, 255, 255]
    palette = Image.new("P", (4, 4), 1)
    palette.putpalette([0, 0, 0, 0, 0, 255] + [0] * 762)
    palette.info["transparency"] = 1
    assert decode(save(palette, "PNG", transparency=1), max_pixels=MAX).rgb[0, 0].tolist() == [255, 255, 255]


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: b"", (400, "empty_image")),
        (lambda: b"plain text, named photo.jpg", (415, "unsupported_media_type")),
        (lambda: save(Image.new("RGB", (8, 8)), "GIF"), (415, "unsupported_media_type")),
        (lambda: save(Image.new("RGB", (8, 8)), "PCX"), (415, "unsupported_media_type")),
        (lambda: b"P6\n30000 30000\n255\n" + bytes(64), (413, "image_too_large")),
        (lambda: b"BM" + bytes(64), (400, "invalid_image")),
        (lambda: png_bytes(Image.new("1", (20000, 20000))), (413, "image_too_large")),
        (lambda: jpeg_bytes(np.zeros((64, 64, 3), np.uint8))[:200], (400, "invalid_image")),
        (lambda: png_bytes(np.zeros((64, 64, 3), np.uint8))[:60], (400, "invalid_image")),
    ],
)
def test_bad_uploads(make: object, expected: tuple[int, str]) -> None:
    assert status_of(make()) == expected  # type: ignore[operator]


def test_encode_writes_dpi_and_flattens_jpeg(astronaut: np.ndarray) -> None:
    png = Image.open(io.BytesIO(encode(astronaut, "png", dpi=300)))
    assert png.format == "PNG" and round(png.info["dpi"][0]) == 300
    rgba = np.dstack([astronaut, np.zeros((512, 512), np.uint8)])
    jpeg = Image.open(io.BytesIO(encode(rgba, "jpeg", dpi=600)))
    assert jpeg.mode == "RGB" and jpeg.info["dpi"] == (600, 600)
    assert np.asarray(jpeg).min() > 245  # fully transparent -> white
    webp = Image.open(io.BytesIO(encode(rgba, "webp")))
    assert webp.format == "WEBP" and webp.mode == "RGBA"


# ---------- the formats people have: HEIC/HEIF, AVIF, TIFF, BMP, PPM/PGM/PBM ----------

NEW_FORMATS = [
    # (Pillow writer, options, our name, lossless?)
    ("HEIF", {"quality": 90}, "heif", False),
    ("AVIF", {"quality": 90}, "avif", False),
    ("TIFF", {"compression": "tiff_deflate"}, "tiff", True),
    ("TIFF", {}, "tiff", True),
    ("BMP", {}, "bmp", True),
    ("PPM", {}, "ppm", True),
]


@pytest.mark.parametrize(("writer", "options", "name", "lossless"), NEW_FORMATS, ids=[f"{w}-{len(o)}" for w, o, _, _ in NEW_FORMATS])
def test_new_formats_round_trip(astronaut: np.ndarray, writer: str, options: dict[str, object], name: str, lossless: bool) -> None:
    decoded = decode(save(Image.fromarray(astronaut), writer, **options), max_pixels=MAX)
    assert decoded.source_format == name and decoded.rgb.shape == (512, 512, 3) and decoded.rgb.dtype == np.uint8
    if lossless:
        assert np.array_equal(decoded.rgb, astronaut)
    else:  # HEVC / AV1 at quality 90, 4:2:0: close, not equal
        assert np.abs(decoded.rgb.astype(int) - astronaut).mean() < 6


def test_pgm_and_pbm() -> None:
    ramp = np.tile(np.arange(0, 256, 16, dtype=np.uint8), (4, 1))
    grey = decode(save(Image.fromarray(ramp), "PPM"), max_pixels=MAX)  # mode L is written as P5 (PGM)
    assert grey.source_format == "ppm" and grey.rgb[0, :, 0].tolist() == ramp[0].tolist()
    ascii_pbm = b"P1\n4 2\n1 0 1 0\n0 0 0 0\n"  # 1 is black
    bits = decode(ascii_pbm, max_pixels=MAX).rgb
    assert bits[0, 0].tolist() == [0, 0, 0] and bits[1, 0].tolist() == [255, 255, 255]
    sixteen = b"P5\n2 1\n65535\n" + np.array([65535, 32768], ">u2").tobytes()  # 16-bit PGM
    assert decode(sixteen, max_pixels=MAX).rgb[0, :, 0].tolist() == [255, 128]


@pytest.mark.parametrize(("writer", "options", "name", "lossless"), NEW_FORMATS, ids=[f"{w}-{len(o)}" for w, o, _, _ in NEW_FORMATS])
def test_new_formats_too_large_before_decoding(
    astronaut: np.ndarray, monkeypatch: pytest.MonkeyPatch, writer: str, options: dict[str, object], name: str, lossless: bool
) -> None:
    """The pixel cap is read from the header: with every decoder made to fail, the answer is still 413."""
    data = save(Image.fromarray(astronaut[:100, :120]), writer, **options)
    opened = []
    real_open = Image.open

    def open_without_decoding(*args: object, **kwargs: object) -> Image.Image:
        image = real_open(*args, **kwargs)  # type: ignore[arg-type]

        def no_decoding(*_: object) -> None:
            raise AssertionError("pixels were decoded before the size check")

        image.load = no_decoding  # type: ignore[method-assign]
        opened.append(image)
        return image

    monkeypatch.setattr(app.imageio.Image, "open", open_without_decoding)
    with pytest.raises(ApiError) as info:
        decode(data, max_pixels=120 * 100 - 1)
    assert (info.value.status, info.value.code) == (413, "image_too_large") and "120x100" in info.value.message
    assert opened and opened[0].format.lower() == name
    with pytest.raises(AssertionError, match="decoded"):  # and at the cap itself it goes on to decode
        decode(data, max_pixels=120 * 100)


def test_415_lists_the_accepted_formats() -> None:
    with pytest.raises(ApiError) as info:
        decode(save(Image.new("RGB", (8, 8)), "GIF"), max_pixels=MAX)
    assert info.value.status == 415 and ACCEPTED_NAMES in info.value.message
    assert all(name in ACCEPTED_NAMES for name in ("JPEG", "PNG", "WebP", "HEIC", "AVIF", "TIFF", "BMP", "PPM"))


def test_multi_frame_tiff_keeps_the_first_page(astronaut: np.ndarray) -> None:
    pages = [Image.fromarray(astronaut), Image.fromarray(255 - astronaut), Image.fromarray(astronaut[::-1].copy())]
    data = save(pages[0], "TIFF", save_all=True, append_images=pages[1:])
    assert Image.open(io.BytesIO(data)).n_frames == 3
    assert np.array_equal(decode(data, max_pixels=MAX).rgb, astronaut)


def test_heic_keeps_the_primary_image(astronaut: np.ndarray) -> None:
    import pillow_heif

    heif = pillow_heif.HeifFile()
    heif.add_from_pillow(Image.fromarray(255 - astronaut))
    heif.add_from_pillow(Image.fromarray(astronaut))
    buffer = io.BytesIO()
    heif.save(buffer, quality=90, primary_index=1)  # the second image is the one a phone shows
    assert Image.open(io.BytesIO(buffer.getvalue())).n_frames == 2
    rgb = decode(buffer.getvalue(), max_pixels=MAX).rgb
    assert np.abs(rgb.astype(int) - astronaut).mean() < 6


def test_exif_orientation_in_heic_and_avif(astronaut: np.ndarray) -> None:
    tall = Image.fromarray(astronaut[:, :300])  # 300 wide, 512 high
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    for writer in ("HEIF", "AVIF"):
        decoded = decode(save(tall, writer, quality=90, exif=exif.tobytes()), max_pixels=MAX)
        assert decoded.rgb.shape == (300, 512, 3), writer
        # rotated clockwise: the stored top-left corner is now the top-right one
        assert np.abs(decoded.rgb[:40, -40:].astype(int) - astronaut[:40, :40][::-1].transpose(1, 0, 2)).mean() < 12, writer


def test_sixteen_bit_and_cmyk_tiff(astronaut: np.ndarray) -> None:
    import tifffile

    grey16 = (np.asarray(Image.fromarray(astronaut).convert("L"), np.uint16) * 257).astype(np.uint16)
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, grey16)
    rgb = decode(buffer.getvalue(), max_pixels=MAX).rgb
    assert np.array_equal(rgb[:, :, 0], (grey16 / 257).round().astype(np.uint8))
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, astronaut.astype(np.uint16) * 257, photometric="rgb")  # 16 bits per channel RGB
    rgb = decode(buffer.getvalue(), max_pixels=MAX).rgb
    assert rgb.shape == (512, 512, 3) and np.abs(rgb.astype(int) - astronaut).max() <= 1
    cmyk = Image.new("CMYK", (8, 8), (0, 255, 255, 0))  # red
    red = decode(save(cmyk, "TIFF"), max_pixels=MAX).rgb[4, 4]
    assert red[0] > 200 and red[1] < 60 and red[2] < 60


def forged_heif(coded: tuple[int, int], declared: tuple[int, int]) -> bytes:
    """A HEIC coded at `coded` (w, h) whose `ispe` box declares `declared`: the size a pixel cap reads."""
    import struct

    from skimage import data as samples

    data = save(Image.fromarray(samples.astronaut()).resize(coded), "HEIF", quality=20)
    at = data.index(b"ispe")
    assert data.count(b"ispe") == 1 and struct.unpack(">II", data[at + 8 : at + 16]) == coded
    return data[: at + 8] + struct.pack(">II", *declared) + data[at + 16 :]


def test_a_heif_coded_larger_than_it_declares_is_refused_before_its_buffer_is_made() -> None:
    """Issue 34: the pixel cap reads the declared size. A file that declares 100 x 60 but codes 3000 x
    3000 (27 MB of RGB) is refused 400, and the process grows by far less than that buffer (measured
    in a fresh interpreter: its peak RSS before and after the decode)."""
    import subprocess
    import sys

    liar = forged_heif((3000, 3000), (100, 60))
    assert Image.open(io.BytesIO(liar)).size == (100, 60)
    assert status_of(liar) == (400, "invalid_image")
    assert status_of(forged_heif((640, 480), (600, 480))) == (400, "invalid_image")  # a small lie: the decoded size is checked
    probe = (
        "import resource, sys\n"
        "from app.imageio import decode\n"
        "from app.errors import ApiError\n"
        "data = sys.stdin.buffer.read()\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n    decode(data, max_pixels=50_000_000)\nexcept ApiError as exc:\n    print(exc.status)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], input=liar, capture_output=True, timeout=120, check=True).stdout.split()
    assert out[0] == b"400" and int(out[1]) < 8 * 1024, f"peak RSS grew by {int(out[1]) / 1024:.0f} MiB for a 100 x 60 file"


@pytest.mark.parametrize("grow", [0, 4, 5, 65537, 65538, 65541, 140_000])
def test_with_filler_grows_a_jpeg_exactly_inside_its_structure(grow: int) -> None:
    """Comment segments (at most 65537 bytes each, at least 4) before the tables: the same pixels,
    exactly the size, the file still ending at its EOI."""
    pixels = np.random.default_rng(1).integers(0, 255, (64, 48, 3), np.uint8)
    jpeg = encode(pixels, "jpeg", dpi=300)
    grown = with_filler(jpeg, len(jpeg) + grow)
    assert len(grown) == len(jpeg) + grow and grown.endswith(b"\xff\xd9")
    assert (np.asarray(Image.open(io.BytesIO(grown))) == np.asarray(Image.open(io.BytesIO(jpeg)))).all()
    for short in (1, 2, 3):
        with pytest.raises(ValueError):
            with_filler(jpeg, len(jpeg) + short)
