"""Alpha compositing: the person over a colour or a painted backdrop (plain, vertical and radial
gradients), the colours under soft edges estimated for it, RGBA cut-outs. Pure functions on uint8
arrays. (The working resolution is `resample`; the matting trimap is `matting`.)"""

from __future__ import annotations

import numpy as np
from pymatting import estimate_foreground_ml

RGB = tuple[int, int, int]
FLATTEN_ROWS = 256


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


def over_colour(rgba: np.ndarray, colour: tuple[int, int, int, int]) -> np.ndarray:
    """(H, W, 4) uint8 RGBA (unpremultiplied) laid over a solid RGBA `colour` (the "over" operator):
    (H, W, 4) uint8 RGBA. An opaque colour gives an opaque image; a transparent one keeps `rgba`'s
    alpha. Computed in bands of FLATTEN_ROWS rows."""
    out = np.empty_like(rgba)
    back = np.asarray(colour[:3], np.float32)
    back_a = float(colour[3]) / 255.0
    for top in range(0, rgba.shape[0], FLATTEN_ROWS):
        rows = slice(top, top + FLATTEN_ROWS)
        a = rgba[rows, :, 3:].astype(np.float32) * (1.0 / 255.0)
        under = back_a * (1.0 - a)
        total = a + under
        rgb = (rgba[rows, :, :3].astype(np.float32) * a + back * under) / np.maximum(total, 1e-6)
        out[rows, :, :3] = np.clip(rgb + 0.5, 0, 255).astype(np.uint8)
        out[rows, :, 3] = np.clip(total[:, :, 0] * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return out


def smooth_mask(alpha: np.ndarray, *, sigma: float = 2.0) -> np.ndarray:
    """A hard-edged (H, W) uint8 mask (0 or 255) from an alpha: a 3 x 3 grey opening removes specks,
    a Gaussian blur of `sigma` px rounds the outline, and a threshold at half coverage makes it
    binary (rembg's `post_process_mask`, as its docstring describes it)."""
    from scipy import ndimage

    opened = ndimage.grey_opening(alpha, footprint=np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool))
    blurred = ndimage.gaussian_filter(opened.astype(np.float32), sigma=sigma)
    return np.where(blurred < 127.5, 0, 255).astype(np.uint8)


def radial_gradient(size: tuple[int, int], centre: RGB, edge: RGB, *, reach: float | None = None) -> np.ndarray:
    """(H, W, 3) uint8 RGB backdrop fading from `centre` at the middle to `edge` at `reach` px from
    it (linear in the distance from the centre; default: the corners reach `edge`), `edge` beyond."""
    width, height = size
    y = (np.arange(height, dtype=np.float32) - (height - 1) / 2.0)[:, None]
    x = (np.arange(width, dtype=np.float32) - (width - 1) / 2.0)[None, :]
    reach = float(np.hypot((width - 1) / 2.0, (height - 1) / 2.0)) if reach is None else reach
    t = np.minimum(1.0, np.sqrt(x * x + y * y) / max(1e-6, reach))
    colours = np.asarray(centre, np.float32) * (1.0 - t[:, :, None]) + np.asarray(edge, np.float32) * t[:, :, None]
    return np.clip(colours + 0.5, 0, 255).astype(np.uint8)


def vertical_gradient(size: tuple[int, int], top: RGB, bottom: RGB) -> np.ndarray:
    """(H, W, 3) uint8 RGB backdrop fading from `top` to `bottom`."""
    width, height = size
    t = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None, None]
    colours = np.asarray(top, np.float32) * (1.0 - t) + np.asarray(bottom, np.float32) * t
    return np.broadcast_to(colours.round().astype(np.uint8), (height, width, 3)).copy()


def lighter(colour: RGB, amount: float = 0.35) -> RGB:
    """`colour` mixed with white (amount 0..1): the top of a gradient backdrop."""
    return tuple(int(round(c + (255 - c) * amount)) for c in colour)  # type: ignore[return-value]


def clean_foreground(rgb: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Estimate the true person colours under soft edges (pymatting's multilevel foreground
    estimation), so no fringe of the old background survives the new one. (H, W, 3) uint8 RGB."""
    soft = (alpha > 0) & (alpha < 255)
    if not soft.any():
        return rgb
    foreground = estimate_foreground_ml(rgb.astype(np.float64) / 255.0, alpha.astype(np.float64) / 255.0)
    return np.clip(foreground * 255.0 + 0.5, 0, 255).astype(np.uint8)


def photographed_person(photographed: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """What is still photographed where the background is replaced: the person's own pixels, the
    (h, w) uint8 mask `photographed` scaled by the matte `alpha` (wholly where it is opaque)."""
    return (photographed.astype(np.uint16) * alpha // 255).astype(np.uint8)
