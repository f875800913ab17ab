"""The working resolution: the size a photo is processed at, and resizing to it and back (OpenCV).

Pure functions on uint8 arrays; sizes are (width, height) px.
"""

from __future__ import annotations

import numpy as np

from .opencv import resize


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
