"""The photographed background, measured on the finished photo as an inspector would (pure functions).

Where a spec's authority refuses a replaced background, the photo keeps the one it was taken
against, and the report judges it: plain (no texture, pattern or busy scene), even (no gradient or
uneven light), of an allowed colour, no shadow of the head on it, and nothing and nobody else in it.

Inputs are the output photo (H, W, 3) uint8 RGB, its person matte (H, W) uint8 (the chosen person,
warped with the photo), and the segmentation's raw matte warped the same way (everything salient:
other people and objects too). Background pixels are those the person matte leaves at 0, a margin
(EDGE_MARGIN of the width) away from the person so the hair's fringe is not counted.

Every measure is on the luminance (Rec. 601, 0-255) except the colour, which is compared in CIELAB
(OpenCV's 8-bit scaling: L 0-255, a and b offset by 128), lightness and chroma apart: a white wall
photographs as a light grey, and a pale blue wall is not white however light it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .opencv import cv2

EDGE_MARGIN = 0.02  # of the width: background pixels closer than this to the person are not counted
TEXTURE_SIGMA = 0.01  # of the width: detail finer than this is texture (grain, pattern, a busy scene)
PATCH = 0.03  # of the width: detail is averaged over patches this size
TEXTURE_PERCENTILE = 90  # the background's detail is read here: a tenth of it busy is a busy background
LIGHT_SIGMA = 0.08  # of the width: variation coarser than this is light (a gradient, a hot spot)
SHADOW_NEAR = (0.02, 0.08)  # of the width: the band beside the head where a shadow falls
SHADOW_PERCENTILE = 25  # the band beside the head is read at its darker quarter
SHADOW_FAR = 0.12  # of the width: background beyond this is the wall's own light
PERSON_LINK = 64  # a raw-matte pixel at or above this is something salient
MIN_VISIBLE = 0.03  # share of the photo: less background than this cannot be judged


@dataclass(frozen=True)
class Backdrop:
    """Measures of the photographed background (see the module docstring).

    `visible`: the share of the photo that is background. `texture`: the mean absolute detail finer
    than TEXTURE_SIGMA (luminance levels). `unevenness`: the 5th-to-95th percentile spread of the
    background's light (luminance levels). `lab`: its median colour (L, a, b, OpenCV's 8-bit
    scaling). `shadow`: how much darker the band beside the head is than the wall further away (a
    share of the far wall's luminance; 0 without a far wall). `clutter`: the share of the
    background where the segmentation sees something (other people, objects)."""

    visible: float
    texture: float
    unevenness: float
    lab: tuple[float, float, float]
    shadow: float
    clutter: float


COARSE_SIGMA_PX = 8.0  # a blur of at least twice this sigma runs shrunk by sigma // COARSE_SIGMA_PX


def _blur_within(values: np.ndarray, mask: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian blur of `values` over `mask` only (normalised convolution): pixels outside the mask
    do not bleed in. (H, W) float32. A wide blur runs on both shrunk by area averaging (which keeps
    the sums the convolution divides; its sigma then stays at COARSE_SIGMA_PX or more) and the ratio
    is scaled back up: detail finer than an eighth of sigma is what such a blur removes anyway, and
    the light and patch blurs of a 600 px photo (sigma 48 and 18 px) cost a tenth as much or less
    (tests/test_edit_policy.py holds the measures to those of full-size blurs)."""
    height, width = mask.shape
    weighted, weights = values * mask, mask.astype(np.float32)
    factor = int(sigma // COARSE_SIGMA_PX) if sigma >= 2 * COARSE_SIGMA_PX else 1
    if factor > 1 and min(height, width) >= 8 * factor:
        size = (max(1, round(width / factor)), max(1, round(height / factor)))
        weighted = cv2.resize(weighted, size, interpolation=cv2.INTER_AREA)
        weights = cv2.resize(weights, size, interpolation=cv2.INTER_AREA)
        sigma = sigma * size[0] / width
    ratio = cv2.GaussianBlur(weighted, (0, 0), sigma) / np.maximum(cv2.GaussianBlur(weights, (0, 0), sigma), 1e-6)
    if ratio.shape != mask.shape:
        ratio = cv2.resize(ratio, (width, height), interpolation=cv2.INTER_LINEAR)
    return ratio


def background_mask(alpha: np.ndarray) -> np.ndarray:
    """(H, W) bool: the pixels EDGE_MARGIN of the width or more away from the person (alpha > 4)."""
    person = (alpha > 4).astype(np.uint8)
    margin = max(1, round(EDGE_MARGIN * alpha.shape[1]))
    grown = cv2.dilate(person, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * margin + 1, 2 * margin + 1)))
    return grown == 0


def measure_backdrop(rgb: np.ndarray, alpha: np.ndarray, raw_alpha: np.ndarray, *, chin_y: float | None) -> Backdrop | None:
    """The background's measures, or None where too little of it shows (under MIN_VISIBLE).
    `chin_y`: the chin's row on the output (the shadow is looked for above it; None: everywhere)."""
    height, width = alpha.shape
    mask = background_mask(alpha)
    visible = float(mask.mean())
    if visible < MIN_VISIBLE:
        return None
    rgb = np.ascontiguousarray(rgb)
    luma = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float32)
    fine = _blur_within(luma, mask, max(0.5, TEXTURE_SIGMA * width))
    # texture where the blur sees only background: one sigma in from the mask's edge
    inner = cv2.erode(mask.astype(np.uint8), np.ones((3, 3), np.uint8), iterations=max(1, round(TEXTURE_SIGMA * width))) > 0
    inner = inner if inner.sum() >= 64 else mask
    # the detail, averaged over patches (PATCH of the width) and read at its TEXTURE_PERCENTILE: a
    # plain wall is low everywhere, a scene, a pattern or someone's hair at the edge is high somewhere
    detail = _blur_within(np.abs(luma - fine), inner, max(1.0, PATCH * width))
    texture = float(np.percentile(detail[inner], TEXTURE_PERCENTILE))
    light = _blur_within(luma, mask, max(1.0, LIGHT_SIGMA * width))[mask]
    unevenness = float(np.percentile(light, 95) - np.percentile(light, 5))
    lab_pixels = cv2.cvtColor(rgb, cv2.COLOR_RGB2Lab)[mask].astype(np.float32)
    lab = tuple(float(v) for v in np.median(lab_pixels, axis=0))
    shadow = _shadow(luma, alpha, mask, chin_y=chin_y)
    clutter = float((raw_alpha[mask] >= PERSON_LINK).mean())
    return Backdrop(visible=visible, texture=texture, unevenness=unevenness, lab=lab, shadow=shadow,  # type: ignore[arg-type]
                    clutter=clutter)


def _shadow(luma: np.ndarray, alpha: np.ndarray, mask: np.ndarray, *, chin_y: float | None) -> float:
    """How much darker the background beside the head (SHADOW_NEAR of the width from the person,
    above the chin; its SHADOW_PERCENTILE) is than the background beyond SHADOW_FAR (its median),
    as a share of the latter; 0 where either region is empty."""
    width = alpha.shape[1]
    distance = cv2.distanceTransform((alpha <= 4).astype(np.uint8), cv2.DIST_L2, 5)
    rows = np.arange(alpha.shape[0])[:, None] < (alpha.shape[0] if chin_y is None else chin_y)
    near = mask & rows & (distance >= SHADOW_NEAR[0] * width) & (distance <= SHADOW_NEAR[1] * width)
    far = mask & (distance >= SHADOW_FAR * width)
    if near.sum() < 32 or far.sum() < 32:
        return 0.0
    far_level = float(np.median(luma[far]))
    if far_level <= 0:
        return 0.0
    # a shadow falls to one side of the head (the light comes from the other): the darker quarter
    return max(0.0, (far_level - float(np.percentile(luma[near], SHADOW_PERCENTILE))) / far_level)


def lab_of(colour: tuple[int, int, int]) -> tuple[float, float, float]:
    """An RGB colour in OpenCV's 8-bit CIELAB."""
    lab = cv2.cvtColor(np.asarray([[colour]], np.uint8), cv2.COLOR_RGB2Lab)[0, 0].astype(float)
    return float(lab[0]), float(lab[1]), float(lab[2])


def colour_distance(lab: tuple[float, float, float], target: tuple[int, int, int]) -> tuple[float, float]:
    """(lightness difference, chroma difference) between a measured Lab colour and an RGB target:
    the first signed (negative: darker than the target), the second the distance in the a-b plane."""
    want = lab_of(target)
    return lab[0] - want[0], math.hypot(lab[1] - want[1], lab[2] - want[2])


def chroma_of(colour: tuple[int, int, int]) -> float:
    """An RGB colour's chroma: its distance from grey in the a-b plane (OpenCV's 8-bit CIELAB)."""
    _, a, b = lab_of(colour)
    return math.hypot(a - 128.0, b - 128.0)
