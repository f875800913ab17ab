"""The bad-input corpus, through the real gunicorn: every case gets its status and the JSON error
shape (or, for odd but valid images, a correct answer), the worker that took it keeps its pid, and
the next good request succeeds."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest
from PIL import Image

from tests.conftest import RunningServer, jpeg_bytes, png_bytes
from tests.support.harness import Server

pytestmark = pytest.mark.server

IDPHOTO = "/api/v1/idphoto"
CUTOUT = "/api/v1/remove-background"


@dataclass(frozen=True)
class Case:
    name: str
    path: str
    status: int
    code: str | None = None  # the error code expected (None: a successful image answer)
    files: Callable[[np.ndarray], dict[str, tuple[str, bytes, str]]] | None = None
    data: dict[str, str] = field(default_factory=dict)
    body: Callable[[np.ndarray], dict[str, object]] | None = None  # raw requests kwargs instead of files
    check: Callable[[Image.Image], None] | None = None


def save(image: Image.Image, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def upload(name: str, data: bytes, mime: str = "image/jpeg") -> dict[str, tuple[str, bytes, str]]:
    return {"image": (name, data, mime)}


def photo(rgb: np.ndarray) -> dict[str, tuple[str, bytes, str]]:
    return upload("me.jpg", jpeg_bytes(rgb))


def animated_gif(rgb: np.ndarray) -> bytes:
    frames = [Image.fromarray(rgb).resize((64, 64)), Image.fromarray(255 - rgb).resize((64, 64))]
    return save(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)


def cmyk_jpeg(rgb: np.ndarray) -> bytes:
    return save(Image.fromarray(rgb).convert("CMYK"), "JPEG", quality=92)


def sixteen_bit_png(rgb: np.ndarray) -> bytes:
    grey = np.asarray(Image.fromarray(rgb).convert("L"), dtype=np.uint16) * 257
    return png_bytes(Image.fromarray(grey))


def palette_png(rgb: np.ndarray) -> bytes:
    image = Image.fromarray(rgb).convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    return save(image, "PNG", transparency=0)


def rgba_png(rgb: np.ndarray) -> bytes:
    alpha = np.full(rgb.shape[:2], 255, np.uint8)
    alpha[:40] = 0
    return png_bytes(np.dstack([rgb, alpha]))


def rotated_jpeg(rgb: np.ndarray) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways, displayed rotated 90 degrees clockwise
    return jpeg_bytes(np.ascontiguousarray(np.rot90(rgb[:, :400])), exif=exif.tobytes())


def corrupt_exif_jpeg(rgb: np.ndarray) -> bytes:
    return jpeg_bytes(rgb, exif=b"Exif\x00\x00MM\x00*\x00\x00\x00\x08\xff\xff garbage")


def size_is(width: int, height: int) -> Callable[[Image.Image], None]:
    def check(image: Image.Image) -> None:
        assert image.size == (width, height)

    return check


def heic_bytes(rgb: np.ndarray) -> bytes:
    import pillow_heif  # the encoder (the app reads HEIC with the decode-only pi-heif)

    buffer = io.BytesIO()
    pillow_heif.from_pillow(Image.fromarray(rgb).resize((128, 128))).save(buffer, quality=80)
    return buffer.getvalue()


def heic_header() -> bytes:
    return b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + b"\x00" * 64


def avif_bytes(rgb: np.ndarray) -> bytes:
    return save(Image.fromarray(rgb).resize((128, 128)), "AVIF", quality=80)


def ppm_bomb_header() -> bytes:
    return b"P6\n30000 30000\n255\n" + bytes(300)


CASES = [
    Case("empty body", CUTOUT, 415, "expected_multipart", body=lambda _: {}),
    Case("json body instead of multipart", IDPHOTO, 415, "expected_multipart", body=lambda _: {"json": {"image": "aGk=", "spec": "icao"}}),
    Case("no image field", IDPHOTO, 400, "missing_image", files=lambda rgb: {"photo": ("a.jpg", jpeg_bytes(rgb), "image/jpeg")}, data={"spec": "icao"}),
    Case("two files", CUTOUT, 400, "too_many_images", body=lambda rgb: {"files": [("image", ("a.jpg", jpeg_bytes(rgb), "image/jpeg")), ("image", ("b.jpg", jpeg_bytes(rgb), "image/jpeg"))]}),
    Case("plain text named .jpg", CUTOUT, 415, "unsupported_media_type", files=lambda _: upload("photo.jpg", b"just some text, honestly")),
    Case("truncated jpeg", CUTOUT, 400, "invalid_image", files=lambda rgb: upload("a.jpg", jpeg_bytes(rgb)[:5000])),
    Case("truncated png", CUTOUT, 400, "invalid_image", files=lambda rgb: upload("a.png", png_bytes(rgb)[:3000], "image/png")),
    Case("zero-byte file", CUTOUT, 400, "empty_image", files=lambda _: upload("a.jpg", b"")),
    Case("1x1 image, cut-out", CUTOUT, 200, files=lambda _: upload("dot.png", png_bytes(np.zeros((1, 1, 3), np.uint8)), "image/png"), check=size_is(1, 1)),
    Case("1x1 image, id photo", IDPHOTO, 422, "no_face", files=lambda _: upload("dot.png", png_bytes(np.zeros((1, 1, 3), np.uint8)), "image/png"), data={"spec": "icao"}),
    Case("tiny file, 20000x20000 pixels", CUTOUT, 413, "image_too_large", files=lambda _: upload("bomb.png", png_bytes(Image.new("1", (20000, 20000))), "image/png")),
    Case("over MAX_UPLOAD_MB", CUTOUT, 413, "payload_too_large", files=lambda _: upload("big.jpg", bytes(3 * 1024 * 1024))),
    Case("animated gif", CUTOUT, 415, "unsupported_media_type", files=lambda rgb: upload("a.gif", animated_gif(rgb), "image/gif")),
    Case("tiff", CUTOUT, 200, files=lambda rgb: upload("a.tif", save(Image.fromarray(rgb), "TIFF", compression="tiff_deflate"), "image/tiff"), check=size_is(512, 512)),
    Case("heic", CUTOUT, 200, files=lambda rgb: upload("a.heic", heic_bytes(rgb), "image/heic"), check=size_is(128, 128)),
    Case("heic header only", CUTOUT, 415, "unsupported_media_type", files=lambda _: upload("a.heic", heic_header(), "image/heic")),
    Case("avif", CUTOUT, 200, files=lambda rgb: upload("a.avif", avif_bytes(rgb), "image/avif"), check=size_is(128, 128)),
    Case("ppm, 30000x30000 in the header", CUTOUT, 413, "image_too_large", files=lambda _: upload("bomb.ppm", ppm_bomb_header(), "image/x-portable-pixmap")),
    Case("cmyk jpeg", IDPHOTO, 200, files=lambda rgb: upload("cmyk.jpg", cmyk_jpeg(rgb)), data={"spec": "us-passport"}, check=size_is(600, 600)),
    Case("16-bit png", CUTOUT, 200, files=lambda rgb: upload("deep.png", sixteen_bit_png(rgb), "image/png"), check=size_is(512, 512)),
    Case("grayscale", IDPHOTO, 200, files=lambda rgb: upload("grey.jpg", save(Image.fromarray(rgb).convert("L"), "JPEG")), data={"spec": "icao"}, check=size_is(827, 1063)),
    Case("palette png with transparency", CUTOUT, 200, files=lambda rgb: upload("pal.png", palette_png(rgb), "image/png"), check=size_is(512, 512)),
    Case("rgba png", CUTOUT, 200, files=lambda rgb: upload("rgba.png", rgba_png(rgb), "image/png"), check=size_is(512, 512)),
    Case("exif-rotated", CUTOUT, 200, files=lambda rgb: upload("rot.jpg", rotated_jpeg(rgb)), check=size_is(400, 512)),
    Case("corrupt exif", IDPHOTO, 200, files=lambda rgb: upload("exif.jpg", corrupt_exif_jpeg(rgb)), data={"spec": "us-passport"}, check=size_is(600, 600)),
    Case("unknown spec", IDPHOTO, 400, "unknown_spec", files=photo, data={"spec": "atlantis-passport"}),
    Case("bad colour", IDPHOTO, 400, "invalid_background", files=photo, data={"spec": "icao", "background": "#12g45z"}),
    Case("absurd dpi", IDPHOTO, 400, "invalid_field", files=photo, data={"spec": "icao", "dpi": "1000000"}),
    Case("absurd size", IDPHOTO, 400, "invalid_size", files=photo, data={"width_mm": "5000", "height_mm": "9000", "dpi": "600"}),
    Case("negative size", IDPHOTO, 400, "invalid_size", files=photo, data={"width_px": "-5", "height_px": "100"}),
    Case("max_kb that cannot be met", IDPHOTO, 422, "max_kb_unreachable", files=photo, data={"spec": "icao", "max_kb": "1"}),
    Case("model ../../etc/passwd", CUTOUT, 400, "unknown_model", files=photo, data={"model": "../../etc/passwd"}),
    Case("unknown format", CUTOUT, 400, "invalid_format", files=photo, data={"format": "bmp"}),
    Case("non-ascii file name", IDPHOTO, 200, files=lambda rgb: upload("фото-写真-😀.jpg", jpeg_bytes(rgb)), data={"spec": "cn-1inch"}, check=size_is(295, 413)),
]


@pytest.fixture(scope="module")
def server(running_server: RunningServer) -> Iterator[Server]:
    with running_server(MAX_UPLOAD_MB="2", MAX_IMAGE_PIXELS="40000000") as srv:
        yield srv


def test_the_corpus_is_big_enough() -> None:
    assert len(CASES) >= 25 and len({case.name for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input(server: Server, astronaut: np.ndarray, astronaut_jpeg: bytes, case: Case) -> None:
    (worker,) = server.wait_workers(1)
    kwargs: dict[str, object] = case.body(astronaut) if case.body else {"files": case.files(astronaut) if case.files else None, "data": case.data}
    response = server.post(case.path, **kwargs)
    assert response.status_code == case.status, response.text[:300]
    if case.code is None:
        image = Image.open(io.BytesIO(response.content))
        if case.check:
            case.check(image)
    else:
        assert response.headers["Content-Type"] == "application/json"
        error = json.loads(response.text)["error"]
        assert error["code"] == case.code and error["message"], error
        assert "Traceback" not in response.text and "/site-packages/" not in response.text and "/work/" not in response.text
        if case.code == "unsupported_media_type":
            assert "JPEG, PNG, WebP, HEIC/HEIF, AVIF, TIFF, BMP" in error["message"]
    assert server.wait_workers(1) == [worker], "the worker that took the bad input must live on"
    good = server.post(CUTOUT, files={"image": ("a.jpg", astronaut_jpeg, "image/jpeg")})
    assert good.status_code == 200
