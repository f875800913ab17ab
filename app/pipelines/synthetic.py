"""Generated images for warm-up passes: deterministic, no files, no randomness."""

from __future__ import annotations

import numpy as np


def warmup_portrait(*, width: int = 800, height: int = 1000) -> np.ndarray:
    """A (height, width, 3) uint8 RGB head-and-shoulders silhouette on a vertical gradient.

    Sized like a typical phone upload after the working-size cap, so warm-up exercises the same
    resize, inference and encode work a real request does.
    """
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    background = np.stack([170 + 40 * ys / height, 190 + 30 * ys / height, 215 - 20 * ys / height], axis=-1)
    cx, head_cy = width / 2, height * 0.38
    head = ((xs - cx) / (width * 0.17)) ** 2 + ((ys - head_cy) / (height * 0.17)) ** 2 <= 1.0
    shoulders = (((xs - cx) / (width * 0.42)) ** 2 + ((ys - height) / (height * 0.38)) ** 2) <= 1.0
    image = background
    image[shoulders] = (40, 60, 110)
    image[head] = (224, 180, 150)
    eye_y = head_cy - height * 0.02
    for eye_x in (cx - width * 0.06, cx + width * 0.06):
        eye = ((xs - eye_x) ** 2 + (ys - eye_y) ** 2) <= (width * 0.015) ** 2
        image[eye] = (40, 30, 30)
    return np.ascontiguousarray(image.clip(0, 255).astype(np.uint8))
