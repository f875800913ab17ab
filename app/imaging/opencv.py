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

__all__ = ["bgr_to_rgb", "cv2", "rgb_to_bgr"]


def rgb_to_bgr(rgb: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 RGB -> a new contiguous (H, W, 3) uint8 BGR array (insightface's order)."""
    return cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR)


def bgr_to_rgb(bgr: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 BGR -> a new contiguous (H, W, 3) uint8 RGB array."""
    return cv2.cvtColor(np.ascontiguousarray(bgr), cv2.COLOR_BGR2RGB)
