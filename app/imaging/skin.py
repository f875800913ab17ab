"""The face's skin colour, for the lines and the steps that must tell skin from clothing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .opencv import cv2


@dataclass(frozen=True)
class Skin:
    """The face's skin colour: median YCrCb (0-255, OpenCV's) and the tolerance (Cr, Cb) within which
    a pixel counts as skin."""

    median: tuple[float, float, float]
    tolerance: tuple[float, float]

    def mask(self, rgb: np.ndarray) -> np.ndarray:
        """(H, W) bool: skin-coloured pixels of an (H, W, 3) uint8 RGB image."""
        ycrcb = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2YCrCb).astype(np.float32)
        return ((np.abs(ycrcb[..., 1] - self.median[1]) <= self.tolerance[0])
                & (np.abs(ycrcb[..., 2] - self.median[2]) <= self.tolerance[1]))
