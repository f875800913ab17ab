"""The crops a face detector reads again to place landmarks to a pixel: close-ups of several sizes
around a face, and a window levelled by a first roll estimate.

Pure functions on (H, W, 3) uint8 RGB arrays; coordinates are image px, x to the right, y down.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

MIN_WINDOW = 16  # px: a levelled window narrower or shorter than this is not read again


def close_ups(rgb: np.ndarray, *, centre: tuple[float, float], face_size: float, contexts: tuple[float, ...],
              fill: tuple[int, int, int] | None = None) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
    """Squares of `context` face sizes (each of `contexts`) about `centre`, and each one's top-left
    corner in `rgb` (px). Where a square passes the photo's edge it is `fill` (default: the photo's
    mean colour): a plain border, since a face that fills the whole input reads as poorly as a tiny one."""
    height, width = rgb.shape[:2]
    cx, cy = centre
    colour = rgb.reshape(-1, 3).mean(axis=0).astype(np.uint8) if fill is None else np.asarray(fill, np.uint8)
    crops, origins = [], []
    for context in contexts:
        half = context * face_size / 2.0
        x0, y0 = int(cx - half), int(cy - half)
        x1, y1 = int(np.ceil(cx + half)), int(np.ceil(cy + half))
        sx0, sy0, sx1, sy1 = max(0, x0), max(0, y0), min(width, x1), min(height, y1)
        if sx1 <= sx0 or sy1 <= sy0:
            continue
        canvas = np.empty((y1 - y0, x1 - x0, 3), np.uint8)
        canvas[:] = colour
        canvas[sy0 - y0 : sy1 - y0, sx0 - x0 : sx1 - x0] = rgb[sy0:sy1, sx0:sx1]
        crops.append(canvas)
        origins.append((x0, y0))
    return crops, origins


def levelled_window(rgb: np.ndarray, *, centre: tuple[float, float], half: float,
                    degrees: float) -> tuple[np.ndarray, tuple[int, int]] | None:
    """The window of `half` px each way about `centre` (inside the photo), rotated by `degrees`
    about `centre` (Pillow's rotate, bilinear: positive turns the image anticlockwise), and its
    top-left corner in `rgb`; None where the window is under MIN_WINDOW px a side."""
    height, width = rgb.shape[:2]
    cx, cy = centre
    x0, y0 = max(0, int(cx - half)), max(0, int(cy - half))
    x1, y1 = min(width, int(np.ceil(cx + half))), min(height, int(np.ceil(cy + half)))
    if x1 - x0 < MIN_WINDOW or y1 - y0 < MIN_WINDOW:
        return None
    crop = Image.fromarray(np.ascontiguousarray(rgb[y0:y1, x0:x1]))
    return np.asarray(crop.rotate(degrees, resample=Image.Resampling.BILINEAR, center=(cx - x0, cy - y0))), (x0, y0)
