"""Alpha compositing and working-resolution helpers (pure functions on uint8 arrays)."""

from __future__ import annotations

import numpy as np

from .opencv import resize

RGB = tuple[int, int, int]


def working_size(width: int, height: int, *, max_side: int) -> tuple[int, int]:
    """The (width, height) in px to process an image at: unchanged when its long side fits in
    `max_side`, else scaled down keeping the aspect ratio (each side at least 1 px)."""
    long_side = max(width, height)
    if long_side <= max_side:
        return width, height
    scale = max_side / long_side
    return max(1, round(width * scale)), max(1, round(height * scale))


def resize_rgb(rgb: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Resize (H, W, 3) uint8 RGB to `size` = (width, height) px: to the working size, pixel-area
    averaging (OpenCV; it was Pillow's Lanczos, about 4x slower on a 24 MP photo: docs/image-path.md)."""
    return resize(rgb, size)


def resize_alpha(alpha: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Resize an (H, W) uint8 alpha matte to `size` = (width, height) px; back up to the photo's
    size it is bilinear (no ringing; OpenCV, faster than Pillow's and at most 1 level apart)."""
    return resize(alpha, size)


def cutout(rgb: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """(H, W, 3) RGB + (H, W) alpha, both uint8 -> (H, W, 4) RGBA, colours kept unpremultiplied.

    Fully transparent pixels get RGB 0: nobody can see their colour, and runs of zeros make the PNG
    smaller and faster to encode (the encode is most of what a cut-out request costs besides the model).
    """
    rgba = np.dstack([rgb, alpha])
    rgba[alpha == 0, :3] = 0
    return rgba


def flatten(rgb: np.ndarray, alpha: np.ndarray, background: RGB | np.ndarray) -> np.ndarray:
    """Composite (H, W, 3) RGB over `background` (a solid colour, or an (H, W, 3) uint8 backdrop
    image) with an (H, W) uint8 alpha.

    out = rgb * a + background * (1 - a), with a = alpha / 255; returns (H, W, 3) uint8.
    """
    a = alpha.astype(np.float32)[:, :, None] * (1.0 / 255.0)
    bg = np.asarray(background, dtype=np.float32)
    out = rgb.astype(np.float32) * a + bg * (1.0 - a)
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)


def flatten_rgba(rgba: np.ndarray, background: RGB) -> np.ndarray:
    """(H, W, 4) RGBA uint8 over a solid background -> (H, W, 3) uint8."""
    return flatten(rgba[:, :, :3], rgba[:, :, 3], background)
