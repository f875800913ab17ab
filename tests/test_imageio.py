"""Decoding every kind of upload people send, and encoding with dpi."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from app.errors import ApiError
from app.imageio import decode, encode
from tests.conftest import jpeg_bytes, png_bytes

MAX = 10_000_000


def save(image: Image.Image, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
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
        (lambda: save(Image.new("RGB", (8, 8)), "TIFF"), (415, "unsupported_media_type")),
        (lambda: save(Image.new("RGB", (8, 8)), "BMP"), (415, "unsupported_media_type")),
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
