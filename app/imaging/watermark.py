"""A tiled text watermark over a photo (HivisionIDPhotos' /watermark, made here with Pillow).

The text is drawn with Pillow's own bundled font (`ImageFont.load_default(size)`, Aileron: Latin
script). Text it has no glyphs for (Chinese, Japanese, Korean, ...) would come out as empty boxes,
so `check_text` refuses it instead (ValueError) rather than print boxes on someone's photo.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

MAX_TEXT = 200  # characters


def check_text(text: str) -> None:
    """ValueError unless every character of `text` is printable Latin-1 (what the bundled font holds)."""
    if not text.strip():
        raise ValueError("the watermark text is empty")
    if len(text) > MAX_TEXT:
        raise ValueError(f"the watermark text is longer than {MAX_TEXT} characters")
    unprintable = sorted({ch for ch in text if not (ch.isprintable() and ord(ch) < 256)})
    if unprintable:
        raise ValueError(f"the bundled font has no glyphs for {''.join(unprintable[:10])!r}: Latin letters, digits "
                         f"and punctuation only")


def add_watermark(rgb: np.ndarray, text: str, *, size: int, opacity: float, angle: float,
                  colour: tuple[int, int, int], space: int) -> np.ndarray:
    """(H, W, 3) uint8 RGB with `text` in `colour` at `opacity` (0..1), `size` px high, tiled in rows
    turned by `angle` degrees (counter-clockwise), `space` px between copies. Returns a new array."""
    check_text(text)
    height, width = rgb.shape[:2]
    font = ImageFont.load_default(size=size)
    left, top, right, bottom = font.getbbox(text)
    step_x, step_y = (right - left) + space, (bottom - top) + space
    side = int(np.ceil(np.hypot(width, height))) + 2 * max(step_x, step_y)  # covers the photo at any angle
    layer = Image.new("L", (side, side), 0)
    draw = ImageDraw.Draw(layer)
    shade = int(round(255 * min(1.0, max(0.0, opacity))))
    for row, y in enumerate(range(0, side, step_y)):
        offset = (step_x // 2) * (row % 2)  # every other row shifted half a copy: a brick pattern
        for x in range(-offset, side, step_x):
            draw.text((x - left, y - top), text, font=font, fill=shade)
    turned = layer.rotate(angle, resample=Image.Resampling.BILINEAR)
    x0, y0 = (side - width) // 2, (side - height) // 2
    coverage = np.asarray(turned.crop((x0, y0, x0 + width, y0 + height)), np.float32)[:, :, None] * (1.0 / 255.0)
    out = rgb.astype(np.float32) * (1.0 - coverage) + np.asarray(colour, np.float32) * coverage
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)
