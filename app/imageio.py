"""Decoding and encoding: the only module that turns bytes into pixels and back.

`decode` accepts JPEG, PNG, WebP, HEIC/HEIF (a phone's default), AVIF, TIFF, BMP and PPM/PGM/PBM,
checks the pixel count from the header before any pixel is decoded (decompression bombs), keeps the
first frame of a multi-frame file (TIFF pages, HEIF sequences: the primary image), applies the EXIF
orientation, converts embedded colour profiles to sRGB and returns an RGB uint8 array. `encode`
writes PNG, JPEG or WebP with an optional dpi.

HEIC/HEIF comes from pi-heif (pillow-heif's decode-only build: libheif with libde265, no x265
encoder, 4 MB installed instead of 26), registered here once as a Pillow opener; AVIF is read by
Pillow itself (built with libavif). libheif applies a HEIF's rotation (irot/imir and the EXIF
orientation) while opening, so `exif_transpose` finds orientation 1 and does nothing.
"""

from __future__ import annotations

import io
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pi_heif
from PIL import Image, ImageCms, ImageOps, UnidentifiedImageError

from .errors import ApiError, PhotoRejected
from .imaging.compose import flatten_rgba

log = logging.getLogger(__name__)

# The pixel cap is ours (MAX_IMAGE_PIXELS, checked from the header in `decode`); Pillow's global one
# would warn or raise at a different number, so it is switched off in favour of the single check.
Image.MAX_IMAGE_PIXELS = None
pi_heif.register_heif_opener()

# Pillow's format name -> ours. PPM covers PBM, PGM, PPM and PFM; MPO is a JPEG with extra frames.
ACCEPTED_FORMATS = {
    "JPEG": "jpeg",
    "MPO": "jpeg",
    "PNG": "png",
    "WEBP": "webp",
    "HEIF": "heif",
    "AVIF": "avif",
    "TIFF": "tiff",
    "BMP": "bmp",
    "DIB": "bmp",
    "PPM": "ppm",
}
# Image.open(formats=...): no other decoder ever sees the bytes (an MPO opens through the JPEG decoder)
PILLOW_FORMATS = tuple(name for name in ACCEPTED_FORMATS if name != "MPO")
ACCEPTED_NAMES = "JPEG, PNG, WebP, HEIC/HEIF, AVIF, TIFF, BMP or PPM/PGM/PBM"
OUTPUT_FORMATS = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}
FORMAT_ALIASES = {"jpg": "jpeg"}
_SRGB = ImageCms.createProfile("sRGB")
ORIENTATION = 0x0112  # the EXIF tag
WHITE = (255, 255, 255)


@dataclass(frozen=True)
class Decoded:
    """A decoded upload: `rgb` is (H, W, 3) uint8 RGB, upright, sRGB."""

    rgb: np.ndarray
    source_format: str  # a value of ACCEPTED_FORMATS: "jpeg", "png", "webp", "heif", "avif", "tiff", "bmp", "ppm"
    scale: float = 1.0  # stored pixels per decoded pixel (> 1 when a JPEG was decoded at a reduced scale)

    @property
    def width(self) -> int:
        return int(self.rgb.shape[1])

    @property
    def height(self) -> int:
        return int(self.rgb.shape[0])


def unsupported(detail: str) -> ApiError:
    return ApiError(415, "unsupported_media_type", f"{detail} Send a {ACCEPTED_NAMES} image.")


def decode(data: bytes, *, max_pixels: int, shrink_to: int | None = None) -> Decoded:
    """Decode image bytes to an upright sRGB (H, W, 3) uint8 array.

    Only the decoders of ACCEPTED_FORMATS ever see the bytes. `max_pixels` applies to the stored
    size, read from the header before any pixel is decoded. `shrink_to`: a JPEG whose long side is
    at least twice this is decoded at a reduced scale (libjpeg's DCT scaling, Pillow's draft mode:
    1/2, 1/4 or 1/8) that keeps its long side at `shrink_to` px or more: a fraction of the memory
    and time, for pipelines that scale the photo down anyway. `Decoded.scale` says by how much.

    A HEIF's declared size (its `ispe`) is the one checked; the size coded in its HEVC stream may
    differ, and libheif refuses a stream coded larger than the declared size (plus 64 px each way)
    before it makes a buffer, so the cap holds (tests/test_imageio.py holds it with a forged file).

    Raises ApiError: 400 for empty or corrupt data, 413 above `max_pixels`, 415 for other formats.
    """
    image, fmt = _open(data, max_pixels=max_pixels)
    width, height = image.size
    if shrink_to is not None and image.format in ("JPEG", "MPO") and max(width, height) >= 2 * shrink_to:
        factor = shrink_to / max(width, height)
        image.draft(None, (math.ceil(width * factor), math.ceil(height * factor)))
    scale = width / image.size[0]
    _load(image, fmt)
    image = _upright(image)
    image = _to_srgb(image)
    return Decoded(rgb=_to_rgb_array(image), source_format=fmt, scale=scale)


def _open(data: bytes, *, max_pixels: int) -> tuple[Image.Image, str]:
    """Open `data` with only the decoders of ACCEPTED_FORMATS and check its stored size against
    `max_pixels` from the header, before any pixel is decoded. (image, our format name)."""
    if not data:
        raise ApiError(400, "empty_image", "The uploaded image is empty (0 bytes).")
    try:
        image = Image.open(io.BytesIO(data), formats=PILLOW_FORMATS)
    except UnidentifiedImageError:
        raise unsupported("The upload is not an image this service can read.") from None
    except (OSError, ValueError, SyntaxError) as exc:  # Pillow raises these for mangled headers
        raise ApiError(400, "invalid_image", f"The image header is corrupt ({type(exc).__name__}).") from None
    fmt = ACCEPTED_FORMATS.get(image.format or "")
    if fmt is None:
        raise unsupported(f"{image.format or 'This'} images are not supported.")
    width, height = image.size
    if width < 1 or height < 1:
        raise ApiError(400, "invalid_image", "The image has no pixels.")
    if width * height > max_pixels:
        raise ApiError(
            413,
            "image_too_large",
            f"The image is {width}x{height} pixels; the limit is {max_pixels:,} pixels.",
        )
    return image, fmt


def _load(image: Image.Image, fmt: str) -> None:
    """Decode the pixels of the frame Pillow opened on; ApiError 400 where they are corrupt."""
    try:
        # Only the frame Pillow opens on is decoded: a TIFF's first page, an MPO's first JPEG, a
        # HEIF's primary image (the photo a phone shows; libheif opens on it, whatever its index).
        image.load()
    except (OSError, ValueError, SyntaxError) as exc:
        raise ApiError(400, "invalid_image", f"The image data is truncated or corrupt ({type(exc).__name__}).") from None
    except RuntimeError:  # libheif (pi-heif) refusing a HEIF, e.g. one coded larger than it declares
        if fmt != "heif":
            raise
        raise ApiError(400, "invalid_image", "The HEIF image data is corrupt or larger than the size it declares.") from None


def decode_rgba(data: bytes, *, max_pixels: int) -> np.ndarray:
    """Decode image bytes to an upright sRGB (H, W, 4) uint8 RGBA array: the upload's own
    transparency kept (opaque where it has none). The same checks and errors as `decode`."""
    image, fmt = _open(data, max_pixels=max_pixels)
    _load(image, fmt)
    image = _to_srgb(_upright(image))
    if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):  # grey at depth: `decode`'s scaling, then opaque
        rgb = _to_rgb_array(image)
        return np.dstack([rgb, np.full(rgb.shape[:2], 255, np.uint8)])
    return np.ascontiguousarray(np.asarray(image.convert("RGBA"), dtype=np.uint8))


def _upright(image: Image.Image) -> Image.Image:
    """Apply the EXIF orientation; a corrupt EXIF block leaves the image as stored. An upright image
    is returned as it is (exif_transpose would copy it: 196 MB for a 49 MP photo)."""
    try:
        if image.getexif().get(ORIENTATION, 1) == 1:
            return image
        return ImageOps.exif_transpose(image)
    except (OSError, ValueError, SyntaxError, KeyError, TypeError, ZeroDivisionError) as exc:
        log.info("ignoring unreadable EXIF orientation: %s", type(exc).__name__)
        return image


def _to_srgb(image: Image.Image) -> Image.Image:
    """Convert an embedded ICC profile (Display P3, Adobe RGB, CMYK ...) to sRGB."""
    icc = image.info.get("icc_profile")
    if not icc or image.mode not in ("RGB", "RGBA", "CMYK"):
        return image
    try:
        source = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        output_mode = "RGBA" if image.mode == "RGBA" else "RGB"
        converted = ImageCms.profileToProfile(image, source, _SRGB, outputMode=output_mode)
    except (ImageCms.PyCMSError, OSError, ValueError) as exc:
        log.info("ignoring unusable ICC profile: %s", type(exc).__name__)
        return image
    return converted if converted is not None else image


def _to_rgb_array(image: Image.Image) -> np.ndarray:
    """Any Pillow mode to (H, W, 3) uint8 RGB; transparency is flattened onto white."""
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        top = 65535 if (image.getextrema()[1] or 0) > 255 else 255
        return _grey_to_rgb(image, lambda values: (values * (255.0 / top)).round().clip(0, 255))
    if image.mode == "F":
        return _grey_to_rgb(image, lambda values: values.clip(0, 255).round())
    has_alpha = image.mode in ("RGBA", "LA", "PA") or (image.mode in ("P", "L", "RGB") and "transparency" in image.info)
    if has_alpha:
        return flatten_rgba(np.asarray(image.convert("RGBA"), dtype=np.uint8), WHITE)
    rgb = image if image.mode == "RGB" else image.convert("RGB")  # convert() copies even an RGB image
    return np.ascontiguousarray(np.asarray(rgb, dtype=np.uint8))


GREY_BAND_ROWS = 256


def _grey_to_rgb(image: Image.Image, to_8bit: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """A 16-bit, 32-bit or float grey image to (H, W, 3) uint8, `to_8bit` (values 0..255, as float32)
    applied a band of rows at a time: a 36 MP float TIFF holds its own pixels, the 8-bit result and
    one band, not four full-size float copies."""
    width, height = image.size
    rgb = np.empty((height, width, 3), dtype=np.uint8)
    for top in range(0, height, GREY_BAND_ROWS):
        band = np.asarray(image.crop((0, top, width, min(height, top + GREY_BAND_ROWS))), dtype=np.float32)
        rgb[top : top + band.shape[0]] = to_8bit(band).astype(np.uint8)[:, :, None]
    return rgb


def answer_format(source_format: str) -> str:
    """The output format for an answer in the upload's own format where none was asked: the same
    when it is one of OUTPUT_FORMATS; JPEG for the other photo formats (HEIF, AVIF); PNG for the
    lossless ones (TIFF, BMP, PPM)."""
    if source_format in OUTPUT_FORMATS:
        return source_format
    return "jpeg" if source_format in ("heif", "avif") else "png"


def normalise_format(value: str | None, *, default: str) -> str:
    """Map a client's `format` field to one of OUTPUT_FORMATS; ApiError 400 otherwise."""
    if value is None or not value.strip():
        return default
    fmt = value.strip().lower()
    fmt = FORMAT_ALIASES.get(fmt, fmt)
    if fmt not in OUTPUT_FORMATS:
        raise ApiError(400, "invalid_format", f"format must be one of {', '.join(OUTPUT_FORMATS)}, not {value!r}.")
    return fmt


def encode(
    pixels: np.ndarray,
    fmt: str,
    *,
    dpi: float | None = None,
    jpeg_quality: int = 95,
) -> bytes:
    """Encode (H, W) grey, (H, W, 3) RGB or (H, W, 4) RGBA uint8 pixels.

    JPEG cannot hold transparency: RGBA is flattened onto white before a JPEG is written.
    `dpi` (dots per inch) is written into the file's metadata when given.
    """
    if fmt not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {fmt!r}")
    if pixels.dtype != np.uint8 or pixels.ndim not in (2, 3):
        raise ValueError("pixels must be a uint8 (H, W) or (H, W, C) array")
    if fmt == "jpeg" and pixels.ndim == 3 and pixels.shape[2] == 4:
        pixels = flatten_rgba(pixels, WHITE)
    image = Image.fromarray(pixels)
    options: dict[str, object] = {}
    if dpi:
        options["dpi"] = (dpi, dpi)
    buffer = io.BytesIO()
    if fmt == "png":
        # zlib level 1: the fastest real compression; higher levels buy a few % of size for much more CPU
        image.save(buffer, "PNG", compress_level=1, **options)
    elif fmt == "jpeg":
        image.save(buffer, "JPEG", quality=jpeg_quality, subsampling=0 if jpeg_quality >= 90 else 2, **options)
    else:
        image.save(buffer, "WEBP", quality=90, method=4, **options)
    return buffer.getvalue()



def jpeg_within(pixels: np.ndarray, limit_bytes: int, *, dpi: float | None = None, best: int = 95,
                worst: int = 25) -> tuple[bytes, int]:
    """The JPEG of (H, W, 3) uint8 RGB `pixels` at the highest quality in [worst, best] whose file is
    at most `limit_bytes` (a binary search over the quality), and that quality. Where even `worst`
    is larger, that file and `worst`: the caller compares its length with the limit. Never padded."""
    data = encode(pixels, "jpeg", dpi=dpi, jpeg_quality=best)
    if len(data) <= limit_bytes:
        return data, best
    found = encode(pixels, "jpeg", dpi=dpi, jpeg_quality=worst), worst
    if len(found[0]) > limit_bytes:
        return found
    low, high = worst + 1, best - 1
    while low <= high:
        quality = (low + high) // 2
        candidate = encode(pixels, "jpeg", dpi=dpi, jpeg_quality=quality)
        if len(candidate) <= limit_bytes:
            found, low = (candidate, quality), quality + 1
        else:
            high = quality - 1
    return found


JPEG_QUALITY_MAX = 95
JPEG_QUALITY_MIN = 25


@dataclass(frozen=True)
class Encoded:
    """The encode step's answer: the file, its JPEG quality (None for PNG), and its content type."""

    data: bytes
    jpeg_quality: int | None
    content_type: str


def encode_photo(pixels: np.ndarray, *, fmt: Literal["jpeg", "png"], dpi: int, max_kb: int | None,
                 field_name: str = "max_kb", noun: str = "photo") -> Encoded:
    """The encode step: (H, W, 3) uint8 RGB at `dpi`; with `max_kb`, the highest JPEG quality whose
    file fits (`jpeg_within`, never padded). PhotoRejected(`<field_name>_unreachable`) where even the smallest file is larger."""
    if fmt == "png":
        data = encode(pixels, "png", dpi=dpi)
        if max_kb is not None and len(data) > max_kb * 1024:
            raise PhotoRejected(f"{field_name}_unreachable", f"A PNG of this {noun} is {len(data) / 1024:.0f} KB, over "
                                f"{field_name}={max_kb}; ask for format=jpeg.", details={"smallest_kb": round(len(data) / 1024, 1)})
        return Encoded(data, None, "image/png")
    if max_kb is None:
        return Encoded(encode(pixels, "jpeg", dpi=dpi, jpeg_quality=JPEG_QUALITY_MAX), JPEG_QUALITY_MAX, "image/jpeg")
    data, quality = jpeg_within(pixels, max_kb * 1024, dpi=dpi, best=JPEG_QUALITY_MAX, worst=JPEG_QUALITY_MIN)
    if len(data) > max_kb * 1024:
        raise PhotoRejected(
            f"{field_name}_unreachable",
            f"The smallest JPEG of this {noun} is {len(data) / 1024:.1f} KB, over {field_name}={max_kb}.",
            details={"smallest_kb": round(len(data) / 1024, 1)},
        )
    return Encoded(data, quality, "image/jpeg")


FILLER_NOTE = b"pilotlight: filler to the size asked (kb)"


def with_filler(jpeg: bytes, size: int) -> bytes:
    """`jpeg` grown to exactly `size` bytes by comment (COM, FF FE) segments inside its structure,
    after its APPn segments and before its tables and scan: every decoder skips them. Never bytes
    after the end of the image. ValueError unless the growth is 0 or at least 4 bytes (a segment's
    marker and length)."""
    grow = size - len(jpeg)
    if grow == 0:
        return jpeg
    if grow < 4 or jpeg[:2] != b"\xff\xd8":
        raise ValueError(f"cannot grow a {len(jpeg)}-byte JPEG to {size} bytes")
    at = 2
    while at + 4 <= len(jpeg) and jpeg[at] == 0xFF and 0xE0 <= jpeg[at + 1] <= 0xEF:  # APP0..APP15
        at += 2 + int.from_bytes(jpeg[at + 2:at + 4], "big")
    segments = []
    for _ in range(grow // 4):  # bounded: each segment takes at least 4 bytes
        if grow == 0:
            break
        take = min(grow, 0xFFFF + 2)  # a segment: FF FE, a 2-byte length (itself included), up to 65533 bytes
        if 0 < grow - take < 4:
            take = grow - 4  # leave room for one more whole segment
        payload = (FILLER_NOTE + b" " * take)[:take - 4] if not segments else b" " * (take - 4)
        segments.append(b"\xff\xfe" + (take - 2).to_bytes(2, "big") + payload)
        grow -= take
    return jpeg[:at] + b"".join(segments) + jpeg[at:]


def jpeg_of_exactly(pixels: np.ndarray, size: int, *, dpi: int) -> tuple[bytes, int, bool]:
    """(file, quality, reached): the JPEG of (H, W, 3) RGB `pixels` at the highest quality whose
    file fits in `size` bytes with room for a filler segment, grown to exactly `size` by `with_filler`
    (HivisionIDPhotos' `kb`, which pads with null bytes after the image's end instead). Where even
    quality 1 is larger (`reached` false), that smallest file, as Hivision answers it."""
    data, quality = jpeg_within(pixels, size - 4, dpi=dpi, best=JPEG_QUALITY_MAX, worst=1)
    if len(data) > size - 4:
        return data, quality, False
    return with_filler(data, size), quality, True
