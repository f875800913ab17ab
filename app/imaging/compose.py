"""Alpha compositing and working-resolution helpers (pure functions on uint8 arrays)."""

from __future__ import annotations

import numpy as np

from .opencv import cv2, resize

RGB = tuple[int, int, int]
FLATTEN_ROWS = 256


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


UNKNOWN = 128  # a trimap's value for "solve for the alpha here" (0: background, 255: foreground)


def matting_trimap(mask: np.ndarray, *, foreground_threshold: int, background_threshold: int, erode_size: int) -> np.ndarray:
    """rembg's trimap for alpha matting from an (H, W) uint8 mask: 255 where the mask is above
    `foreground_threshold`, 0 where it is below `background_threshold`, each region eroded by an
    `erode_size` px square (size 0: scipy's default 3 x 3 cross, as rembg passes no structure then;
    the image's edge counts as background), UNKNOWN (128) elsewhere. OpenCV's erosion, which takes
    a large square in a few ms (scipy's grows with its area)."""
    foreground = (mask > foreground_threshold).astype(np.uint8)
    background = (mask < background_threshold).astype(np.uint8)
    kernel = np.ones((erode_size, erode_size), np.uint8) if erode_size > 0 else cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))
    foreground = cv2.erode(foreground, kernel, borderType=cv2.BORDER_CONSTANT, borderValue=0)
    background = cv2.erode(background, kernel, borderType=cv2.BORDER_CONSTANT, borderValue=1)
    trimap = np.full(mask.shape, UNKNOWN, dtype=np.uint8)
    trimap[foreground.astype(bool)] = 255
    trimap[background.astype(bool)] = 0
    return trimap


def cutout(rgb: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """(H, W, 3) RGB + (H, W) alpha, both uint8 -> (H, W, 4) RGBA, colours kept unpremultiplied.

    Fully transparent pixels get RGB 0: nobody can see their colour, and runs of zeros make the PNG
    smaller and faster to encode (the encode is most of what a cut-out request costs besides the model).
    """
    rgba = np.dstack([rgb, alpha])
    # `where=` broadcasts the mask: no index arrays (a boolean index of a 49 MP matte, mostly 0,
    # built two int64 arrays of 784 MB)
    np.copyto(rgba[:, :, :3], 0, where=(alpha == 0)[:, :, None])
    return rgba


def flatten(rgb: np.ndarray, alpha: np.ndarray, background: RGB | np.ndarray) -> np.ndarray:
    """Composite (H, W, 3) RGB over `background` (a solid colour, or an (H, W, 3) uint8 backdrop
    image) with an (H, W) uint8 alpha.

    out = rgb * a + background * (1 - a), with a = alpha / 255; returns (H, W, 3) uint8. Computed in
    bands of FLATTEN_ROWS rows, so the float temporaries stay a few MB whatever the photo's size.
    """
    out = np.empty(rgb.shape[:2] + (3,), dtype=np.uint8)
    solid = np.asarray(background, dtype=np.float32).ndim == 1
    for top in range(0, rgb.shape[0], FLATTEN_ROWS):
        rows = slice(top, top + FLATTEN_ROWS)
        a = alpha[rows].astype(np.float32)[:, :, None] * (1.0 / 255.0)
        bg = np.asarray(background, dtype=np.float32) if solid else np.asarray(background[rows], dtype=np.float32)
        band = rgb[rows].astype(np.float32) * a + bg * (1.0 - a)
        np.clip(band + 0.5, 0, 255, out=band)
        out[rows] = band
    return out


def flatten_rgba(rgba: np.ndarray, background: RGB) -> np.ndarray:
    """(H, W, 4) RGBA uint8 over a solid background -> (H, W, 3) uint8."""
    return flatten(rgba[:, :, :3], rgba[:, :, 3], background)
