"""A matting network's input shapes and the colours under a matte's soft edges (pure functions).

Colours: a pixel of coverage a shows I = a F + (1 - a) B, the person's colour F over the old
background's B. Then, exactly, F = I + (1 - a) (F - B). F and B vary slowly beside an edge (the
person's hair and the wall behind it), so their difference is estimated once at the network's size
(pymatting's multilevel foreground and background estimate) and carried up to the photo's size,
where each pixel keeps its own detail and coverage. No division by a: stable where the coverage is
thin, and the photo's pixels are unchanged where it is whole.
"""

from __future__ import annotations

import numpy as np
from pymatting import estimate_foreground_ml

from .opencv import cv2

BAND_ROWS = 256  # rows per band of the full-size pass: its float temporaries stay a few MB


def fit_shape(width: int, height: int, shapes: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], tuple[int, int]]:
    """(shape, fitted): of the (width, height) `shapes`, the one that an image of `width` x `height`
    px, scaled to fit inside it with its aspect ratio, fills the most; and the image's size in it
    (each side at least 1 px). Ties go to the first shape."""
    best: tuple[float, tuple[int, int], tuple[int, int]] | None = None
    for shape in shapes:
        scale = min(shape[0] / width, shape[1] / height)
        fitted = (min(shape[0], max(1, round(width * scale))), min(shape[1], max(1, round(height * scale))))
        filled = fitted[0] * fitted[1] / (shape[0] * shape[1])
        if best is None or filled > best[0] + 1e-9:
            best = (filled, shape, fitted)
    assert best is not None, "no shapes"
    return best[1], best[2]


def pad_to(rgb: np.ndarray, shape: tuple[int, int]) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """(h, w, 3) uint8 centred in a (width, height) = `shape` canvas, the rest filled by reflecting
    the image (repeating its edge where it is too small to reflect); and where it lies, (x, y, w, h)."""
    height, width = rgb.shape[:2]
    left, top = (shape[0] - width) // 2, (shape[1] - height) // 2
    right, bottom = shape[0] - width - left, shape[1] - height - top
    reflect = max(left, right) < width and max(top, bottom) < height
    border = cv2.BORDER_REFLECT_101 if reflect else cv2.BORDER_REPLICATE
    padded = cv2.copyMakeBorder(np.ascontiguousarray(rgb), top, bottom, left, right, border)
    return padded, (left, top, width, height)


def edge_colours(rgb: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """F - B at the network's size: (h, w, 3) float32, from (h, w, 3) uint8 RGB and its (h, w)
    float alpha in [0, 1] (pymatting's multilevel estimate of both layers)."""
    foreground, background = estimate_foreground_ml(
        rgb.astype(np.float64) / 255.0, alpha.astype(np.float64), return_background=True
    )
    return ((foreground - background) * 255.0).astype(np.float32)


def decontaminate(rgb: np.ndarray, alpha: np.ndarray, difference: np.ndarray) -> np.ndarray:
    """The person's colours (H, W, 3) uint8 under an (H, W) uint8 alpha: I + (1 - a) (F - B), with
    F - B (`edge_colours`, any size) sampled bilinearly at the photo's pixel centres (as OpenCV's
    INTER_LINEAR scales). Only soft pixels (0 < alpha < 255) change: whole coverage keeps the
    photo's colour exactly, and no coverage is never seen (a cut-out writes RGB 0 there, a
    composite weighs it by 0). Bands of BAND_ROWS rows bound the temporaries whatever the size."""
    height, width = alpha.shape
    out = rgb.copy()
    rows_small, cols_small = difference.shape[:2]
    row_taps, col_taps = _linear_taps(height, rows_small), _linear_taps(width, cols_small)
    for top in range(0, height, BAND_ROWS):
        band = alpha[top : top + BAND_ROWS]
        rows, cols = np.nonzero((band > 0) & (band < 255))
        if rows.size == 0:
            continue
        rows += top
        y0, y1, wy = (tap[rows] for tap in row_taps)
        x0, x1, wx = (tap[cols] for tap in col_taps)
        upper = difference[y0, x0] + (difference[y0, x1] - difference[y0, x0]) * wx[:, None]
        lower = difference[y1, x0] + (difference[y1, x1] - difference[y1, x0]) * wx[:, None]
        field = upper + (lower - upper) * wy[:, None]
        uncovered = (255 - alpha[rows, cols]).astype(np.float32) * (1.0 / 255.0)
        colours = rgb[rows, cols].astype(np.float32) + uncovered[:, None] * field
        out[rows, cols] = np.clip(colours + 0.5, 0, 255).astype(np.uint8)
    return out


def _linear_taps(size: int, small: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bilinear taps from `size` pixel centres into `small` ones, OpenCV's centre mapping clamped at
    the ends: for each pixel, the two source indices and the second one's weight (float32)."""
    centres = np.clip((np.arange(size, dtype=np.float64) + 0.5) * (small / size) - 0.5, 0, small - 1)
    low = np.floor(centres)
    return low.astype(np.intp), np.minimum(low + 1, small - 1).astype(np.intp), (centres - low).astype(np.float32)


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
