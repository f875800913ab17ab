"""A tiled text watermark over a photo (HivisionIDPhotos' /watermark, made here with Pillow).

Two fonts, each for what it holds: Latin-1 text (Latin letters, digits, punctuation) is drawn with
Pillow's own bundled font (`ImageFont.load_default(size)`, Aileron); every other character with
Droid Sans Fallback (Debian's `fonts-droid-fallback`, Apache-2.0, one 4.0 MB TrueType file from
Android's frameworks/base: Chinese, Japanese kana and kanji; installed by the Dockerfiles and
./test.sh, never fetched at run time). HivisionIDPhotos ships a Chinese font for the same reason.
A character neither font has (Hangul, emoji, or any non-Latin text where the CJK font is not
installed) would come out as an empty box, so `check_text` refuses it (ValueError) rather than
print boxes on someone's photo.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

MAX_TEXT = 200  # characters
CJK_FONT = Path("/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf")  # fonts-droid-fallback's
Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


def _latin(ch: str) -> bool:
    return ch.isprintable() and ord(ch) < 256


@functools.lru_cache(maxsize=16)
def _cjk(size: int) -> ImageFont.FreeTypeFont | None:
    try:
        return ImageFont.truetype(str(CJK_FONT), size=size)
    except OSError:
        return None


@functools.lru_cache(maxsize=1)
def _missing_glyph() -> bytes | None:
    """What the CJK font draws for a character it has not (its .notdef box), at one size."""
    font = _cjk(32)
    return None if font is None else bytes(font.getmask("\ue000"))  # a private-use code point: no glyph


@functools.lru_cache(maxsize=4096)
def _has_cjk_glyph(ch: str) -> bool:
    font = _cjk(32)
    return font is not None and ch.isprintable() and bytes(font.getmask(ch)) != _missing_glyph()


def check_text(text: str) -> None:
    """ValueError unless every character of `text` is one a font here draws."""
    if not text.strip():
        raise ValueError("the watermark text is empty")
    if len(text) > MAX_TEXT:
        raise ValueError(f"the watermark text is longer than {MAX_TEXT} characters")
    unprintable = sorted({ch for ch in text if not (_latin(ch) or _has_cjk_glyph(ch))})
    if unprintable:
        held = "Latin letters, digits, punctuation, Chinese and Japanese" if _cjk(32) else (
            "Latin letters, digits and punctuation only (the CJK font, fonts-droid-fallback, is not installed)")
        raise ValueError(f"the fonts here have no glyphs for {''.join(unprintable[:10])!r}: {held}")


def _runs(text: str, size: int) -> list[tuple[str, Font]]:
    """`text` cut into runs of one font each."""
    latin, cjk = ImageFont.load_default(size=size), _cjk(size)
    runs: list[tuple[str, Font]] = []
    for ch in text:
        font = latin if _latin(ch) or cjk is None else cjk
        if runs and runs[-1][1] is font:
            runs[-1] = (runs[-1][0] + ch, font)
        else:
            runs.append((ch, font))
    return runs


def _stamp(text: str, size: int) -> Image.Image:
    """One copy of `text`, `size` px high, as an L coverage image cropped to its ink."""
    runs = _runs(text, size)
    width = int(sum(font.getlength(run) for run, font in runs)) + 2 * size
    layer = Image.new("L", (max(1, width), 2 * size), 0)
    draw = ImageDraw.Draw(layer)
    x = float(size // 2)
    for run, font in runs:
        draw.text((x, size), run, font=font, fill=255, anchor="ls")  # one baseline for every font
        x += font.getlength(run)
    box = layer.getbbox()
    return layer.crop(box) if box else layer


def add_watermark(rgb: np.ndarray, text: str, *, size: int, opacity: float, angle: float,
                  colour: tuple[int, int, int], space: int) -> np.ndarray:
    """(H, W, 3) uint8 RGB with `text` in `colour` at `opacity` (0..1), `size` px high, tiled in rows
    turned by `angle` degrees (counter-clockwise), `space` px between copies. Returns a new array."""
    check_text(text)
    height, width = rgb.shape[:2]
    stamp = _stamp(text, size)
    step_x, step_y = stamp.width + space, stamp.height + space
    side = int(np.ceil(np.hypot(width, height))) + 2 * max(step_x, step_y)  # covers the photo at any angle
    layer = Image.new("L", (side, side), 0)
    for row, y in enumerate(range(0, side, step_y)):
        offset = (step_x // 2) * (row % 2)  # every other row shifted half a copy: a brick pattern
        for x in range(-offset, side, step_x):
            layer.paste(stamp, (x, y))
    turned = layer.rotate(angle, resample=Image.Resampling.BILINEAR)
    x0, y0 = (side - width) // 2, (side - height) // 2
    shade = min(1.0, max(0.0, opacity)) / 255.0
    coverage = np.asarray(turned.crop((x0, y0, x0 + width, y0 + height)), np.float32)[:, :, None] * shade
    out = rgb.astype(np.float32) * (1.0 - coverage) + np.asarray(colour, np.float32) * coverage
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)
