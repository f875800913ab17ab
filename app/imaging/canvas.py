"""Extending the canvas: pixels beyond the photographed frame, and keeping the frame inside it.

Where a spec allows it (`PhotoSpec.edit("extend_canvas")`), a frame that reaches past the original's
edge is drawn on a canvas grown by `Extension`: background above and beside the head, the body's
edge continued sideways below the chin, and below the original the shoulders' outline continued
at its slope in the clothing's colours (`extend`). Where the spec forbids it, `fit_inside` moves
(and enlarges) the frame so that it samples photographed pixels only.

Pure functions on numpy arrays. Coordinates are image px, x to the right, y down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .opencv import cv2
from .head import PERSON
from .placement import Placement
from .skin import Skin


EXTEND_ROWS = 24  # rows at the body's bottom whose outline slopes are continued below the photo
MAX_WIDENING = 1.2  # px per row: a shoulder outline is continued at most this steeply
TEXTURE_BAND = 16  # rows (or columns) next to an edge whose mean colours continue the clothing
SHOULDER_SLOPE = 0.45  # rows down per column out: a shoulder beyond a side edge falls about 24 degrees
EDGE_BAND = 4  # px: the body "runs into" a side edge when any of its last columns is person (mattes are soft there)
BICUBIC_REACH = 2  # px added beyond what the output covers, for the resampling's reach (not reported)


@dataclass(frozen=True)
class Extension:
    """px added beyond each edge of the input (left, top, right, bottom) so the output lies inside."""

    left: int = 0
    top: int = 0
    right: int = 0
    bottom: int = 0

    @property
    def any(self) -> bool:
        return bool(self.left or self.top or self.right or self.bottom)

    def mm(self, placement: Placement, *, size_mm: tuple[float, float]) -> dict[str, float]:
        """The extension in mm of the print, per edge that was extended."""
        mm_per_px = size_mm[1] / placement.size[1] * placement.scale  # mm of print per input px
        out = {edge: round(max(0, getattr(self, edge) - BICUBIC_REACH) * mm_per_px, 2)
               for edge in ("top", "bottom", "left", "right")}
        return {edge: value for edge, value in out.items() if value > 0}


def needed_extension(placement: Placement, shape: tuple[int, int]) -> Extension:
    """How far the output reaches beyond each edge of an input of `shape` (H, W), px (+BICUBIC_REACH)."""
    height, width = shape
    xs, ys = _frame_corners(placement)

    def beyond(value: float) -> int:
        return int(math.ceil(value)) + BICUBIC_REACH if value > 0 else 0

    return Extension(
        left=beyond(-xs.min()), top=beyond(-ys.min()), right=beyond(xs.max() - width), bottom=beyond(ys.max() - height)
    )


FIT_STEPS = 12  # fit_inside's passes: a zoom, then shifts (a rotated frame may need a second zoom)


def _frame_corners(placement: Placement) -> tuple[np.ndarray, np.ndarray]:
    """The output's four corners in input px: (xs, ys)."""
    a, b, c, d, e, f = placement.output_to_input()
    w_out, h_out = placement.size
    corners = np.array([[0, 0], [w_out, 0], [0, h_out], [w_out, h_out]], dtype=np.float64)
    return a * corners[:, 0] + b * corners[:, 1] + c, d * corners[:, 0] + e * corners[:, 1] + f


def photographed_mask(placement: Placement, shape: tuple[int, int]) -> np.ndarray:
    """(H, W) uint8 of the output: 255 where a pixel's centre maps inside an input of `shape` (H, W),
    0 beyond the photographed frame. Computed from the affine map on the output's grid alone (no
    input-sized buffer)."""
    height, width = shape
    a, b, c, d, e, f = placement.output_to_input()
    w_out, h_out = placement.size
    u = np.arange(w_out, dtype=np.float64)[None, :] + 0.5
    v = np.arange(h_out, dtype=np.float64)[:, None] + 0.5
    xs, ys = a * u + b * v + c, d * u + e * v + f
    return np.where((xs >= 0) & (xs < width) & (ys >= 0) & (ys < height), 255, 0).astype(np.uint8)


def fit_inside(placement: Placement, shape: tuple[int, int]) -> Placement:
    """The placement moved, and where the frame is larger than the photo enlarged about its centre,
    so that the output samples photographed pixels only (BICUBIC_REACH px clear of every edge of an
    input of `shape` (H, W)). Formatting, not fabrication: where the spec forbids extending the
    canvas, the head then sits where the photo lets it, and the rules judge that. The solver's
    figures (`predicted`, `broken`, `margin_mm`) no longer describe it and are cleared."""
    height, width = shape
    low, high_x, high_y = BICUBIC_REACH, width - BICUBIC_REACH, height - BICUBIC_REACH
    theta = math.radians(placement.roll_deg)
    cos, sin = math.cos(theta), math.sin(theta)
    fitted = placement
    for _ in range(FIT_STEPS):
        xs, ys = _frame_corners(fitted)
        zoom = max((xs.max() - xs.min()) / max(1.0, high_x - low), (ys.max() - ys.min()) / max(1.0, high_y - low))
        if zoom > 1.0:
            # enlarge about the frame's centre (upright px): the same centre, a smaller frame
            half_w, half_h = fitted.size[0] / 2.0 / fitted.scale, fitted.size[1] / 2.0 / fitted.scale
            centre = (fitted.origin[0] + half_w, fitted.origin[1] + half_h)
            scale = fitted.scale * zoom * (1.0 + 1e-6)
            fitted = replace(fitted, scale=scale, origin=(centre[0] - half_w * fitted.scale / scale,
                                                          centre[1] - half_h * fitted.scale / scale))
            continue
        dx = max(0.0, low - xs.min()) - max(0.0, xs.max() - high_x)
        dy = max(0.0, low - ys.min()) - max(0.0, ys.max() - high_y)
        if abs(dx) < 1e-6 and abs(dy) < 1e-6:
            break
        # an input-frame shift is the upright shift rotated by the roll: undo the rotation
        ux, uy = cos * dx + sin * dy, -sin * dx + cos * dy
        fitted = replace(fitted, origin=(fitted.origin[0] + ux * (1 + 1e-6), fitted.origin[1] + uy * (1 + 1e-6)))
    if fitted is placement:
        return placement
    return replace(fitted, head_ratio=placement.head_ratio * fitted.scale / placement.scale, predicted={}, broken={},
                   margin_mm=-math.inf, binding=None)


def extend(foreground: np.ndarray, alpha: np.ndarray, extension: Extension, *, body_from_y: float,
           skin: Skin | None = None, face_width: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The input's colours (H, W, 3) and matte (H, W) grown by `extension`.

    Above `body_from_y` (input rows; the chin) what lies beyond an edge is background (matte 0).
    Where the body runs into a side edge down to the bottom, it continues outwards as a shoulder
    sloping down (`_continue_side`). Below the photo the body's outline keeps its slope, and where
    the edge cuts it narrower than shoulders (a neck), it widens like shoulders to SHOULDER_SPAN
    face widths (`face_width`, px). What continues is clothing, never skin (`skin`, the face's
    colour): its low-frequency colours from the strip next to the edge, smoothed along the edge
    (CLOTH_SIGMA_FACE face widths below the photo) so no stripe, streak or shard is drawn, with the
    fabric's own grain (the strip's fine detail, mirrored outwards) added back; at the edge itself
    the new part starts from the old edge's colours and turns to the clothing's over FEATHER_FACE
    face widths, so no seam shows and a cut neck fades into the clothing below it."""
    if not extension.any:
        return foreground, alpha
    fg, al = foreground, alpha
    if extension.left or extension.right:
        left = _continue_side(al[:, :EDGE_BAND].max(axis=1), extension.left, body_from_y)[:, ::-1]
        right = _continue_side(al[:, -EDGE_BAND:].max(axis=1), extension.right, body_from_y)
        al = np.concatenate([left, al, right], axis=1)
        left_fg = _cloth_beyond(fg[:, :TEXTURE_BAND][:, ::-1], extension.left, skin=skin)[:, ::-1]
        right_fg = _cloth_beyond(fg[:, -TEXTURE_BAND:], extension.right, skin=skin)
        fg = np.concatenate([left_fg, fg, right_fg], axis=1)
    if extension.bottom:
        ext_al, ext_fg = _continue_body(fg, al, extension.bottom, skin=skin, face_width=face_width)
        al = np.concatenate([al, ext_al], axis=0)
        fg = np.concatenate([fg, ext_fg], axis=0)
    if extension.top:
        al = np.concatenate([np.zeros((extension.top, al.shape[1]), np.uint8), al], axis=0)
        fg = np.concatenate([np.repeat(fg[:1], extension.top, axis=0), fg], axis=0)
    return np.ascontiguousarray(fg), np.ascontiguousarray(al)


SHOULDER_SPAN = 2.6  # shoulders' span in face widths (between the ear roots: FACE_WIDTH_IOD eye distances)
SHOULDER_WIDENING = 2.2  # px per row each side while a cut neck widens into shoulders (about 24 degrees)


# below the photo the clothing's colour across the body is smoothed over this many face widths (a
# tie, a lapel or a strand of hair at the edge does not run on as a band), and the new rows turn from
# the old edge's own colours (a cut neck's skin included) to it over FEATHER_FACE face widths
CLOTH_SIGMA_FACE = 0.25
FEATHER_FACE = 0.3


# px: what is finer than this Gaussian is the fabric's grain (checks, weave, noise), added back
# mirrored, so a pattern stays two-dimensional; what is coarser (a tie, a lapel, shading) is the
# low-frequency colour, smoothed along the edge by the same Gaussian so no stripe runs on
GRAIN_SIGMA = 6.0
GRAIN_CLIP = 2.5
FEATHER_ROWS = 8  # rows over which the new part turns from the old edge's colours to the strip's
CLOTH_FALLBACK = (58, 60, 68)  # a dark, plain shirt, where the strip shows no clothing at all


def _smooth_along(values: np.ndarray, weights: np.ndarray, sigma: float) -> np.ndarray:
    """Normalised Gaussian smoothing of (N, 3) values with (N,) weights along N (missing values filled
    from their neighbours); rows with no weight anywhere near are NaN."""
    from scipy.ndimage import gaussian_filter1d  # noqa: PLC0415

    total = gaussian_filter1d(values * weights[:, None], sigma, axis=0, mode="nearest")
    weight = gaussian_filter1d(weights, sigma, mode="nearest")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight[:, None] > 1e-3, total / weight[:, None], np.nan)


def _cloth_colours(band: np.ndarray, cloth: np.ndarray, *, sigma: float) -> np.ndarray:
    """(W, 3) float32: each column's clothing colour in the strip `band` (rows, W, 3) where `cloth`
    (rows, W) holds, smoothed along the edge (sigma px) so no stripe continues; columns with no
    clothing near take the nearest clothing's colour, or CLOTH_FALLBACK where there is none."""
    weights = cloth.sum(axis=0).astype(np.float64)
    means = (band.astype(np.float64) * cloth[..., None]).sum(axis=0) / np.maximum(weights, 1.0)[:, None]
    low = _smooth_along(means, weights, sigma)
    wide = _smooth_along(means, weights, max(sigma, band.shape[1] / 4.0))
    low = np.where(np.isnan(low), wide, low)
    low = np.where(np.isnan(low), np.asarray(CLOTH_FALLBACK, np.float64), low)
    return low.astype(np.float32)


def _grain(band: np.ndarray, cloth: np.ndarray) -> np.ndarray:
    """(rows, W, 3) float32: the strip's fine detail (band minus its Gaussian blur), kept on clothing
    only, away from its outline (zero on skin and background, and next to them: an outline is not
    grain, and mirrored it would draw a zigzag), clipped to GRAIN_CLIP robust spreads (a button or
    a seam of the fabric is not grain either)."""
    smooth = cv2.GaussianBlur(band.astype(np.float32), (0, 0), GRAIN_SIGMA)
    inner = cv2.erode(cloth.astype(np.uint8), np.ones((5, 5), np.uint8)) > 0
    detail = (band.astype(np.float32) - smooth) * inner[..., None]
    if inner.any():
        spread = 1.4826 * float(np.median(np.abs(detail[inner])))
        detail = np.clip(detail, -GRAIN_CLIP * spread, GRAIN_CLIP * spread)
    return detail


def _mirrored_rows(count: int, rows: int) -> np.ndarray:
    """Indices into a strip of `rows` rows for `count` new rows beyond its last one: the strip read
    backwards from its last row, then forwards, and so on (a mirror, so the grain runs on unbroken)."""
    k = np.arange(count) % (2 * rows)
    return np.where(k < rows, rows - 1 - k, k - rows)


def _cloth_beyond(band: np.ndarray, columns: int, *, skin: Skin | None) -> np.ndarray:
    """(H, columns, 3) uint8 colours beyond a side edge; `band` (H, n, 3) is the strip next to it,
    its last column at the edge. Clothing colours per row, smoothed down the edge, plus the strip's
    grain mirrored outwards; skin does not continue."""
    height = band.shape[0]
    if columns <= 0:
        return np.zeros((height, 0, 3), np.uint8)
    rows_first = np.ascontiguousarray(band.transpose(1, 0, 2))  # (n, H, 3): the edge's strip as rows
    cloth = np.ones(rows_first.shape[:2], bool) if skin is None else ~skin.mask(rows_first)
    low = _cloth_colours(rows_first, cloth, sigma=GRAIN_SIGMA)  # (H, 3)
    grain = _grain(rows_first, cloth)[_mirrored_rows(columns, rows_first.shape[0])]  # (columns, H, 3)
    out = low[None, :, :] + grain
    return np.clip(out.transpose(1, 0, 2) + 0.5, 0, 255).astype(np.uint8)


def _continue_side(edge: np.ndarray, columns: int, body_from_y: float) -> np.ndarray:
    """(H, columns) matte beyond a side edge, the first column next to the edge: the body where it
    runs into that edge continues as a shoulder. The body is the run of person rows at the edge
    that reaches the bottom (below the chin; an arm or object touching the edge higher up is not
    continued, and neither is anything beside the head); its top slopes down by SHOULDER_SLOPE
    per column outwards, as a shoulder does, instead of a straight horizontal cut."""
    height = edge.shape[0]
    out = np.zeros((height, columns), np.uint8)
    if columns <= 0 or edge[-1] < PERSON:
        return out
    outside = np.flatnonzero(edge < PERSON)
    start = int(outside[-1]) + 1 if outside.size else 0
    start = max(start, int(math.ceil(body_from_y)))
    if start >= height:
        return out
    rows = np.arange(height)[:, None]
    tops = start + SHOULDER_SLOPE * np.arange(1, columns + 1)[None, :]
    out[(rows >= tops)] = 255
    return out


def _outline(alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, leftmost, rightmost) person columns of each row that has person."""
    person = alpha >= PERSON
    rows = np.flatnonzero(person.any(axis=1))
    left = person[rows].argmax(axis=1)
    right = alpha.shape[1] - 1 - person[rows][:, ::-1].argmax(axis=1)
    return rows, left.astype(np.float64), right.astype(np.float64)


def _continue_body(foreground: np.ndarray, alpha: np.ndarray, rows_below: int, *, skin: Skin | None = None,
                   face_width: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(matte (rows_below, W) uint8, colours (rows_below, W, 3) uint8) below the bottom edge (see `extend`)."""
    height, width = alpha.shape
    last_al = alpha[-1:]
    last_fg = foreground[-1:]
    if not (last_al[0] >= PERSON).any():
        return np.zeros((rows_below, width), np.uint8), np.repeat(last_fg, rows_below, axis=0)
    tail = alpha[max(0, height - EXTEND_ROWS) :]
    rows, left, right = _outline(tail)
    slope_left = slope_right = 0.0
    if rows.size >= 4:
        # the outline's slope over the last rows (px per row); an outline at an image edge is not
        # the body's own and does not widen
        if left.min() > 0:
            slope_left = float(np.clip(-np.polyfit(rows, left, 1)[0], 0.0, MAX_WIDENING))
        if right.max() < width - 1:
            slope_right = float(np.clip(np.polyfit(rows, right, 1)[0], 0.0, MAX_WIDENING))
    x_left, x_right = float(left[-1]) if left.size else 0.0, float(right[-1]) if right.size else width - 1.0
    span = max(1.0, x_right - x_left)
    i = np.arange(1, rows_below + 1, dtype=np.float64)[:, None]
    # a body cut narrower than shoulders (a neck) widens like shoulders until it spans them
    shoulder = np.zeros_like(i)
    if face_width is not None and span < SHOULDER_SPAN * face_width:
        shoulder = np.minimum(SHOULDER_WIDENING * i, (SHOULDER_SPAN * face_width - span) / 2.0)
    new_left = x_left - slope_left * i - np.where(left.size and left[-1] > 0, shoulder, 0.0)
    new_right = x_right + slope_right * i + np.where(right.size and right[-1] < width - 1, shoulder, 0.0)
    xs = np.arange(width, dtype=np.float64)[None, :]
    inside = (xs - new_left) / np.maximum(new_right - new_left, 1.0) * span + x_left
    source = np.where(xs < new_left, x_left - (new_left - xs), np.where(xs > new_right, x_right + (xs - new_right), inside))
    map_x = source.astype(np.float32)
    # the matte: inside the new outline (one px of soft edge), else background
    edge = np.minimum(xs - new_left, new_right - xs) + 0.5
    ext_al = (np.clip(edge, 0.0, 1.0) * 255.0).round().astype(np.uint8)
    # the colours: the strip above the edge, clothing only
    band_rows = min(TEXTURE_BAND, height)
    band = foreground[height - band_rows :]
    person = alpha[height - band_rows :] >= PERSON
    is_skin = np.zeros_like(person) if skin is None else skin.mask(band)
    cloth = person & ~is_skin
    sigma = GRAIN_SIGMA if face_width is None else max(GRAIN_SIGMA, CLOTH_SIGMA_FACE * face_width)
    feather = FEATHER_ROWS if face_width is None else max(FEATHER_ROWS, FEATHER_FACE * face_width)
    low = _cloth_colours(band, cloth, sigma=sigma)  # (W, 3)
    grain = _grain(band, cloth)[_mirrored_rows(rows_below, band_rows)]  # (rows_below, W, 3)
    # the seam: start from the last rows' own colours (a cut neck's skin too), turn to the clothing's
    start = _cloth_colours(band[-4:], np.ones((min(4, band_rows), width), bool), sigma=GRAIN_SIGMA)
    blend = np.clip((i - 1.0) / feather, 0.0, 1.0)[:, :, None]
    blend = blend * blend * (3.0 - 2.0 * blend)  # smoothstep: no kink where the turn ends
    colours = start[None] * (1.0 - blend) + low[None] * blend + grain
    ext_fg = np.clip(colours + 0.5, 0, 255).astype(np.uint8)
    # follow the outline's widening: each new row reads its colours through the same column map
    ext_fg = cv2.remap(np.ascontiguousarray(ext_fg), map_x, np.broadcast_to(np.arange(rows_below, dtype=np.float32)[:, None],
                       map_x.shape).copy(), cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return ext_al, ext_fg
