"""OpenCV, imported once with its thread pool at one thread, and the one colour-order conversion.

Every module of the project that uses OpenCV imports it from here (`from ..imaging.opencv import
cv2`), and `app.models.insight` imports this module before insightface, so `cv2.setNumThreads(1)`
runs before any OpenCV call in the gunicorn master. Why one thread: the service gets its
parallelism from worker processes (as onnxruntime's sessions, app/models/sessions.py); OpenCV's
own pool would start one thread per core in every worker and oversubscribe the CPUs, and a pool
started in the master does not survive the fork into the workers. It is set here, where cv2 is
first imported, not in app/native_threads.py: that module runs for every entry point, and
importing cv2 there would slow commands that never touch an image (`python -m app.models fetch`).

Colour order: our images are RGB from decoding on. insightface's classes take BGR (what
`cv2.imread` returns) and swap it back to RGB for their networks (`blobFromImage(swapRB=True)`);
`rgb_to_bgr`/`bgr_to_rgb` are the only places where the order changes.
"""

from __future__ import annotations

import cv2
import numpy as np

cv2.setNumThreads(1)

__all__ = ["bgr_to_rgb", "cv2", "resize", "rgb_to_bgr", "warp_pillow_affine"]


def rgb_to_bgr(rgb: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 RGB -> a new contiguous (H, W, 3) uint8 BGR array (insightface's order)."""
    return cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR)


def bgr_to_rgb(bgr: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 BGR -> a new contiguous (H, W, 3) uint8 RGB array."""
    return cv2.cvtColor(np.ascontiguousarray(bgr), cv2.COLOR_BGR2RGB)


def resize(pixels: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """(H, W[, C]) uint8 resized to `size` = (width, height) px: pixel-area averaging where it
    shrinks (`INTER_AREA`, alias-free like Pillow's filters, unlike OpenCV's fixed-support
    kernels), bilinear where it enlarges. docs/image-path.md compares it with Pillow (a measurement since removed from bench/)."""
    if (pixels.shape[1], pixels.shape[0]) == size:
        return pixels
    shrinking = size[0] < pixels.shape[1] and size[1] < pixels.shape[0]
    return cv2.resize(np.ascontiguousarray(pixels), size, interpolation=cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR)


def warp_pillow_affine(
    pixels: np.ndarray,
    coefficients: tuple[float, float, float, float, float, float],
    size: tuple[int, int],
    *,
    cubic: bool,
    fill: int | tuple[int, ...] = 0,
) -> np.ndarray:
    """`Image.transform(size, AFFINE, coefficients)` done by `cv2.warpAffine`, the same geometry.

    `coefficients` (a, b, c, d, e, f) map output to input in Pillow's convention, where pixel
    (u, v) covers [u, u + 1): output pixel (u, v) samples input a (u + .5) + b (v + .5) + c (minus
    .5 to index pixels). OpenCV indexes pixel centres, so its map is x = a u + b v + c + (a + b - 1)
    / 2, likewise for y. `cubic`: bicubic (OpenCV's kernel, a = -0.75; Pillow's is -0.5), else
    bilinear. Outside the input is `fill`. (H, W[, C]) uint8 in, (size[1], size[0][, C]) out.
    """
    a, b, c, d, e, f = coefficients
    inverse = np.array([[a, b, c + (a + b - 1) / 2], [d, e, f + (d + e - 1) / 2]], dtype=np.float64)
    flags = (cv2.INTER_CUBIC if cubic else cv2.INTER_LINEAR) | cv2.WARP_INVERSE_MAP
    border = fill if isinstance(fill, tuple) else (fill, fill, fill, fill)
    return cv2.warpAffine(np.ascontiguousarray(pixels), inverse, size, flags=flags, borderValue=border)
