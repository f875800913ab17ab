"""Degraded copies of a real portrait, each a known capture fault: the labels of a photo made worse on
purpose. Shared by tests/test_quality.py (each measure fails on its own fault) and the capture lines'
accuracy (`tests.support.judge.capture_outcomes`, printed by `python -m bench.idphoto --capture`).
Pure numpy and OpenCV; `face` is anything with `.width` and five `.landmarks` (image px)."""

from __future__ import annotations

import cv2
import numpy as np


def gamma_light(rgb: np.ndarray, gain: np.ndarray | float) -> np.ndarray:
    """Multiply the light (sRGB decoded with gamma 2.2) by `gain`, clip, encode again."""
    linear = (rgb.astype(np.float64) / 255.0) ** 2.2 * gain
    return (np.clip(linear, 0.0, 1.0) ** (1 / 2.2) * 255.0 + 0.5).astype(np.uint8)


def blur(rgb: np.ndarray, face: object, *, share: float = 0.05) -> np.ndarray:
    """Out of focus: a Gaussian blur of `share` of the face's width."""
    return cv2.GaussianBlur(rgb, (0, 0), share * float(face.width))  # type: ignore[attr-defined]


def darken(rgb: np.ndarray, face: object, *, stops: float = 4.0) -> np.ndarray:
    """Under-exposed by `stops`, with a dim sensor's noise (sigma 2 levels), as a phone in a dark room
    records it."""
    noise = np.random.default_rng(0).normal(0.0, 2.0, rgb.shape)
    dim = gamma_light(rgb, 2.0**-stops).astype(np.float64) + noise
    return np.clip(dim + 0.5, 0, 255).astype(np.uint8)


def side_light(rgb: np.ndarray, face: object, *, light: float = 0.15) -> np.ndarray:
    """The half of the face right of the nose gets `light` of the light (a soft-edged shadow)."""
    landmarks = np.asarray(face.landmarks)  # type: ignore[attr-defined]
    nose_x = float(landmarks[2, 0])
    ied = float(np.hypot(*(landmarks[1] - landmarks[0])))
    x = np.arange(rgb.shape[1], dtype=np.float64)
    shade = 1.0 / (1.0 + np.exp(-(x - nose_x) / (0.08 * ied)))
    return gamma_light(rgb, (1.0 - (1.0 - light) * shade)[None, :, None])
