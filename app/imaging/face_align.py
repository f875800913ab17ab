"""Face maths that insightface does not offer as a function: the swap paste-back and embedding maths.

Alignment itself is insightface's (`insightface.utils.face_align`, used by app/models/insight.py).

:func:`paste_back` is INSwapper's paste-back (insightface 2.1, `INSwapper.get(paste_back=True)`),
the same OpenCV operations in the same order, computed only on the window of the photo that the
swapped crop covers instead of on whole-photo buffers. insightface warps three float32 images the
size of the photo, erodes and blurs one, and blends the whole photo; on a 24-megapixel photo that
is most of a request (docs/image-path.md). Its pixels are insightface's up
to OpenCV's fixed-point interpolation (tests/test_faces_pure.py compares the two).

Images are (H, W, 3) uint8 in either colour order (nothing here depends on it); a 2x3 affine `M`
maps a source point `p` to `M[:, :2] @ p + M[:, 2]`, pixel centres at integer coordinates (OpenCV's
convention).
"""

from __future__ import annotations

import numpy as np

from .opencv import cv2

__all__ = ["cosine_similarity", "l2_normalise", "paste_back", "soft_mask"]


def l2_normalise(vector: np.ndarray) -> np.ndarray:
    """`vector / ||vector||` as float32 (a zero vector stays zero)."""
    v = np.asarray(vector, dtype=np.float64).ravel()
    norm = float(np.linalg.norm(v))
    return (v / norm if norm > 0 else v).astype(np.float32)


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of the angle between two vectors, in [-1, 1] (0.0 when either is zero)."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"vectors differ in length: {x.shape[0]} and {y.shape[0]}")
    denominator = float(np.linalg.norm(x) * np.linalg.norm(y))
    if denominator == 0.0:
        return 0.0
    return float(np.clip(np.dot(x, y) / denominator, -1.0, 1.0))


def soft_mask(footprint: np.ndarray) -> np.ndarray:
    """INSwapper's paste-back mask from the warped crop footprint, as insightface computes it.

    Values > 20 (of 255) become 255; `mask_size` is the geometric mean of the height and width of
    the 255 region; the mask is eroded with a k x k square, `k = max(mask_size // 10, 10)` (like
    any `cv2.erode`, the area outside the array does not erode it), then blurred with a Gaussian of
    kernel `2k' + 1`, `k' = max(mask_size // 20, 5)` (OpenCV's sigma for that kernel).

    Args:
        footprint: (H, W) float32, 0-255: the warped all-255 crop.

    Returns:
        (H, W) float32 weights in [0, 1] (1: take the swapped pixel).
    """
    mask = np.array(footprint, dtype=np.float32, copy=True)
    mask[mask > 20] = 255
    rows, cols = np.nonzero(mask == 255)
    if rows.size == 0:
        return np.zeros(mask.shape, dtype=np.float32)
    mask_size = int(np.sqrt(int(rows.max() - rows.min()) * int(cols.max() - cols.min())))
    k = max(mask_size // 10, 10)
    mask = cv2.erode(mask, np.ones((k, k), np.uint8), iterations=1)
    blur = 2 * max(mask_size // 20, 5) + 1
    mask = cv2.GaussianBlur(mask, (blur, blur), 0)
    return mask / 255.0


def paste_back(target: np.ndarray, crop: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Blend a processed aligned crop back into the photo it was cut from (INSwapper's paste-back).

    The crop is warped back with the inverse of `matrix` and mixed in with :func:`soft_mask`;
    pixels outside the crop's footprint are unchanged, bit for bit, and the blend truncates to
    uint8 as insightface does. Only the window around the footprint is computed, so the cost
    follows the face, not the photo. docs/image-path.md compares it with insightface's
    `INSwapper.get(paste_back=True)` (docs/image-path.md has its figures: the same pixels on the
    512 x 512 astronaut; on the astronaut scaled to 6000 x 4000, an order of magnitude faster,
    and a handful of pixels 1 level apart: OpenCV's fixed-point bilinear weights depend on the
    translation, which the window shifts).

    Args:
        target: (H, W, 3) uint8 photo.
        crop: (S, S, 3) uint8 crop (the model's output), in the photo's colour order.
        matrix: (2, 3) affine from `target` px to `crop` px (the alignment that cut it).

    Returns:
        A new (H, W, 3) uint8 array.
    """
    if target.ndim != 3 or target.shape[2] != 3 or target.dtype != np.uint8:
        raise ValueError(f"target must be (H, W, 3) uint8, got {target.shape} {target.dtype}")
    if crop.ndim != 3 or crop.shape[2] != 3 or crop.shape[0] != crop.shape[1] or crop.dtype != np.uint8:
        raise ValueError(f"crop must be (S, S, 3) uint8, got {crop.shape} {crop.dtype}")
    height, width = target.shape[:2]
    size = crop.shape[0]
    inverse = cv2.invertAffineTransform(np.asarray(matrix, dtype=np.float64))
    corners = np.array([[0, 0], [size - 1, 0], [0, size - 1], [size - 1, size - 1]], dtype=np.float64)
    mapped = corners @ inverse[:, :2].T + inverse[:, 2]
    low, high = mapped.min(axis=0), mapped.max(axis=0)
    # The mask never reaches past the footprint; the margin keeps the blur's reflected border
    # (reflect-101) inside zeros: it exceeds the largest blur radius, max(mask_size // 20, 5).
    margin = max(int(np.hypot(*(high - low))) // 20, 5) + 4
    x0, y0 = max(0, int(np.floor(low[0])) - margin), max(0, int(np.floor(low[1])) - margin)
    x1, y1 = min(width, int(np.ceil(high[0])) + margin + 1), min(height, int(np.ceil(high[1])) + margin + 1)
    result = target.copy()
    if x1 <= x0 or y1 <= y0:
        return result
    to_window = inverse.copy()  # crop px -> window px
    to_window[0, 2] -= x0
    to_window[1, 2] -= y0
    window = (x1 - x0, y1 - y0)
    white = np.full((size, size), 255, dtype=np.float32)
    footprint = cv2.warpAffine(white, to_window, window, borderValue=0.0)
    warped = cv2.warpAffine(crop, to_window, window, borderValue=0.0)
    mask = soft_mask(footprint)[:, :, None]
    region = result[y0:y1, x0:x1].astype(np.float32)
    result[y0:y1, x0:x1] = (mask * warped + (1 - mask) * region).astype(np.uint8)
    return result
