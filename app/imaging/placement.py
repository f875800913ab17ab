"""ID photo geometry: from face landmarks and a person matte to an affine placement on the spec.

Pure functions on numpy arrays. Coordinates are image px, x to the right, y down, (x, y) order.
Landmarks are the detector's 5 points in insightface order: left eye (smaller x), right eye,
nose tip, left mouth corner, right mouth corner.

The placement works in the "upright frame": the input rotated about the eye midpoint by the face's
roll so the eyes are level. Output px (u, v) map to upright px (x0 + u / scale, y0 + v / scale),
and those to input px by the inverse rotation: one affine transform, one resampling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .opencv import warp_pillow_affine

# Chin below the mouth corners, in units of the eye-to-mouth distance. Measured on frontal
# portraits (scikit-image's astronaut: eyes y=102, mouth corners y=144, chin y=185 -> 0.98);
# anthropometric tables put the neutral face at 0.85-0.95. A smile raises the corners.
CHIN_BELOW_MOUTH = 0.95
MIN_TOP_GAP = 0.05  # fraction of photo height always left above the crown (ICAO examples: 3-5 mm of 45)
TOP_GAP_SHARE = 0.35  # without an eye-line rule: this share of the free height goes above the crown
PERSON = 128  # alpha at or above this is the person (uint8 matte)


class PlacementError(ValueError):
    """The head itself is cut off by an edge of the original; `edge` says which."""

    def __init__(self, edge: str, message: str) -> None:
        super().__init__(message)
        self.edge = edge
        self.message = message


@dataclass(frozen=True)
class Head:
    """Head measurements in the upright frame (px): crown (top of hair), chin, eye line, centre."""

    crown_y: float
    chin_y: float
    eye_y: float
    centre_x: float
    width: float | None = None  # head width at the eye line (matte), px; None when not measured
    eye_distance: float | None = None  # px between the eye centres

    @property
    def height(self) -> float:
        return self.chin_y - self.crown_y


@dataclass(frozen=True)
class Placement:
    """How the output is cut from the input (see the module docstring)."""

    roll_deg: float  # the face's roll; the input is rotated by -roll to level the eyes
    pivot: tuple[float, float]  # rotation centre, input px
    scale: float  # output px per upright px
    origin: tuple[float, float]  # upright px of the output's top-left corner
    size: tuple[int, int]  # output (width, height) px
    head_ratio: float  # head height / output height
    eye_line: float  # eye height above the bottom edge / output height
    predicted: dict[str, float] = field(default_factory=dict)  # rule name -> mm the solver expects
    broken: dict[str, float] = field(default_factory=dict)  # rule name -> mm outside its band

    def shifted(self, dx: float, dy: float) -> "Placement":
        """The same placement on an input padded by (dx, dy) px at the left and top."""
        return replace(
            self,
            pivot=(self.pivot[0] + dx, self.pivot[1] + dy),
            origin=(self.origin[0] + dx, self.origin[1] + dy),
        )

    def output_to_input(self) -> tuple[float, float, float, float, float, float]:
        """Coefficients (a, b, c, d, e, f): input (x, y) = (a u + b v + c, d u + e v + f).

        This is the form `PIL.Image.transform(..., Image.Transform.AFFINE, ...)` takes.
        """
        theta = math.radians(self.roll_deg)
        cos, sin = math.cos(theta), math.sin(theta)
        px, py = self.pivot
        ox, oy = self.origin
        k = 1.0 / self.scale
        # upright (x, y) = (ox + k u, oy + k v); input = pivot + R(theta) @ (upright - pivot)
        a, b = cos * k, -sin * k
        d, e = sin * k, cos * k
        c = px + cos * (ox - px) - sin * (oy - py)
        f = py + sin * (ox - px) + cos * (oy - py)
        return a, b, c, d, e, f

    def input_to_output(self, points: np.ndarray) -> np.ndarray:
        """Map (N, 2) input px to output px."""
        a, b, c, d, e, f = self.output_to_input()
        matrix = np.array([[a, b], [d, e]])
        return (np.asarray(points, dtype=np.float64) - (c, f)) @ np.linalg.inv(matrix).T


def roll_degrees(landmarks: np.ndarray) -> float:
    """Angle of the eye line in degrees; positive when the right eye (larger x) is lower (y down)."""
    (lx, ly), (rx, ry) = landmarks[0], landmarks[1]
    return math.degrees(math.atan2(ry - ly, rx - lx))


def rotate_points(points: np.ndarray, *, degrees: float, pivot: tuple[float, float]) -> np.ndarray:
    """Rotate (N, 2) points by `degrees` about `pivot` (positive turns +x towards +y)."""
    theta = math.radians(degrees)
    rotation = np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])
    return (np.asarray(points, dtype=np.float64) - pivot) @ rotation.T + pivot


def eye_midpoint(landmarks: np.ndarray) -> tuple[float, float]:
    x, y = (landmarks[0] + landmarks[1]) / 2.0
    return float(x), float(y)


def chin_from_landmarks(upright: np.ndarray) -> float:
    """Chin y (upright frame) from the eyes and the mouth corners."""
    eye_y = (upright[0, 1] + upright[1, 1]) / 2.0
    mouth_y = (upright[3, 1] + upright[4, 1]) / 2.0
    return float(mouth_y + CHIN_BELOW_MOUTH * (mouth_y - eye_y))


def crown_from_matte(alpha: np.ndarray, *, x_range: tuple[float, float], eye_y: float) -> float:
    """Top of the head (y, px) in an upright (H, W) uint8 matte: the highest person row within the
    head's columns, above the eyes. PlacementError("top") when no head is found above the eyes.
    (Whether the original cuts the head is `head_cut_edge`'s question, asked in the original's frame.)"""
    height, width = alpha.shape
    x0 = max(0, int(math.floor(x_range[0])))
    x1 = min(width, int(math.ceil(x_range[1])))
    y1 = min(height, max(0, int(eye_y)))
    if x1 <= x0 or y1 <= 0:
        raise PlacementError("top", "The face is too close to the edge of the photo to measure the head.")
    band = alpha[:y1, x0:x1] >= PERSON
    rows = np.flatnonzero(band.mean(axis=1) >= 0.1)  # a row counts when 10% of the head's width is person
    if rows.size == 0:
        raise PlacementError("top", "No head was found above the eyes; use a photo with a plain background.")
    return float(rows[0])


def warp(pixels: np.ndarray, placement: Placement, *, fill: int | tuple[int, ...] = 0) -> np.ndarray:
    """Resample (H, W) or (H, W, 3) uint8 pixels into the output (bicubic); outside the input is `fill`.

    OpenCV with the geometry Pillow's `transform` gave (`output_to_input` keeps Pillow's
    convention), several times faster (bench/resample.py; figures in docs/image-path.md)."""
    return warp_pillow_affine(pixels, placement.output_to_input(), placement.size, cubic=True, fill=fill)


def upright_matte(alpha: np.ndarray, *, roll_deg: float, pivot: tuple[float, float]) -> np.ndarray:
    """The (H, W) uint8 matte rotated into the upright frame (same size; outside filled 0): what
    Pillow's `rotate(roll_deg, BILINEAR, center=pivot)` gave, with OpenCV (about 10x faster)."""
    if abs(roll_deg) < 0.05:
        return alpha
    # Pillow's rotate: output (u, v) samples input R(-roll) ((u, v) - pivot) + pivot, corner convention.
    angle = -math.radians(roll_deg)
    cos, sin = math.cos(angle), math.sin(angle)
    px, py = pivot
    coefficients = (cos, sin, px - cos * px - sin * py, -sin, cos, py + sin * px - cos * py)
    height, width = alpha.shape[:2]
    return warp_pillow_affine(alpha, coefficients, (width, height), cubic=False)


def vertical_gradient(size: tuple[int, int], top: tuple[int, int, int], bottom: tuple[int, int, int]) -> np.ndarray:
    """(H, W, 3) uint8 RGB background fading from `top` to `bottom`."""
    width, height = size
    t = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None, None]
    colours = np.asarray(top, np.float32) * (1.0 - t) + np.asarray(bottom, np.float32) * t
    return np.broadcast_to(colours.round().astype(np.uint8), (height, width, 3)).copy()


def lighter(colour: tuple[int, int, int], amount: float = 0.35) -> tuple[int, int, int]:
    """`colour` mixed with white (amount 0..1): the top of a gradient background."""
    return tuple(int(round(c + (255 - c) * amount)) for c in colour)  # type: ignore[return-value]


# --- the rule solver -----------------------------------------------------------------------------
#
# Every rule of a spec is a band in mm of the print (`app.specs.Rules`; read here by attribute only,
# so this module needs nothing from the app). For a head measured in the upright frame, a placement
# is three numbers: k, mm of print per upright px (the scale); t, mm from the top edge to the crown;
# c, mm from the left edge to the face's centre line. Every rule is linear in t and c for a given k:
#
#   head_height  = k * H                 crown_margin = t
#   chin_margin  = height - t - k * H    eye_line     = height - t - k * (eye_y - crown_y)
#   head_width   = k * W                 side_margin  = min(c, width - c) - k * W / 2
#   centre_x     = c                     eye_distance = k * D
#
# so for each k the vertical rules give an interval of t (intersected with "the head is inside the
# photo"), and c is the photo's centre line, moved into the centre_x band if the spec has one. k is
# searched on a fine grid; among the placements that meet every rule the solver keeps the one
# whose smallest slack (mm to the nearest band end, over every rule) is largest, i.e. the middle of
# what is allowed, so measurement noise on the output has the most room. When nothing meets every
# rule, it keeps the placement that breaks the fewest rules, then by the fewest mm in all (counted
# against bands shrunk by SAFETY_MM, so the rules that hold keep a margin), and says which rules and
# by how much.

K_STEPS = 241  # grid over the scale
SAFETY_MM = 0.5  # mm kept from a band's end where the rules leave room (the output is measured again)
VERTICAL = ("head_height", "crown_margin", "chin_margin", "eye_line")
HORIZONTAL = ("head_width", "side_margin", "centre_x", "eye_distance")
RULE_NAMES = VERTICAL + HORIZONTAL


def _ends(band: Any) -> tuple[float, float] | None:
    if band is None:
        return None
    low = -math.inf if band.low is None else float(band.low)
    high = math.inf if band.high is None else float(band.high)
    return low, high


def rule_values(head: Head, k: float, t: float, c: float, size_mm: tuple[float, float]) -> dict[str, float | None]:
    """The mm each rule measures for placement (k, t, c); None where the head lacks the measure."""
    width_mm, height_mm = size_mm
    half = None if head.width is None else k * head.width / 2.0
    return {
        "head_height": k * head.height,
        "crown_margin": t,
        "chin_margin": height_mm - t - k * head.height,
        "eye_line": height_mm - t - k * (head.eye_y - head.crown_y),
        "head_width": None if head.width is None else k * head.width,
        "side_margin": None if half is None else min(c, width_mm - c) - half,
        "centre_x": c,
        "eye_distance": None if head.eye_distance is None else k * head.eye_distance,
    }


def band_miss(value: float, ends: tuple[float, float]) -> float:
    """mm outside the band (0 inside)."""
    low, high = ends
    return max(0.0, low - value, value - high)


def band_slack(value: float, ends: tuple[float, float]) -> float:
    """mm to the nearer band end (negative outside); an open end gives no limit."""
    low, high = ends
    return min(value - low, high - value)


def shrunk(ends: tuple[float, float]) -> tuple[float, float]:
    """The band less a safety margin at each finite end (SAFETY_MM, or a fifth of a narrow band)."""
    low, high = ends
    margin = SAFETY_MM if not (math.isfinite(low) and math.isfinite(high)) else min(SAFETY_MM, 0.2 * (high - low))
    return low + margin, high - margin


def _score(values: dict[str, float | None], bands: dict[str, tuple[float, float]]) -> tuple[int, float, float, dict[str, float]]:
    """(rules broken, mm outside the bands shrunk by their safety margins, -smallest slack, broken
    rules -> mm outside the real band). The shrunk bands keep a rule that holds away from its
    edge where another has to break, so noise in measuring the output does not break it too."""
    broken: dict[str, float] = {}
    slack = math.inf
    margin_miss = 0.0
    for name, ends in bands.items():
        value = values.get(name)
        if value is None:
            continue
        miss = band_miss(value, ends)
        if miss > 1e-9:
            broken[name] = miss
        margin_miss += band_miss(value, shrunk(ends))
        slack = min(slack, band_slack(value, ends))
    return len(broken), margin_miss, -slack, broken


def solve(
    head: Head,
    rules: Any,
    *,
    size_mm: tuple[float, float],
    steps: int = K_STEPS,
) -> tuple[float, float, float, dict[str, float], dict[str, float]]:
    """(k, t, c, predicted mm by rule, broken rules -> mm) for `head` on a print of `size_mm`
    (width, height) under `rules` (see the section comment above)."""
    width_mm, height_mm = size_mm
    bands = {name: ends for name in RULE_NAMES if (ends := _ends(getattr(rules, name, None))) is not None}
    head_lo, head_hi = bands["head_height"]
    k_mid = (head_lo + head_hi) / 2.0 / head.height
    # the horizontal centre: the middle of the photo, or of the centre_x band when it excludes that
    c = width_mm / 2.0
    if "centre_x" in bands:
        low, high = bands["centre_x"]
        if not low <= c <= high:
            c = (max(low, 0.0) + min(high, width_mm)) / 2.0
    # the scale grid spans the head band and, for the fewest-broken fallback, well beyond it
    k_grid = np.unique(np.concatenate([
        np.linspace(head_lo / head.height, head_hi / head.height, steps),
        np.linspace(0.5 * head_lo / head.height, 1.5 * head_hi / head.height, steps),
    ]))
    best: tuple[tuple[int, float, float, float], float, float, dict[str, float]] | None = None
    for k in k_grid:
        k = float(k)
        kh, ke = k * head.height, k * (head.eye_y - head.crown_y)
        # t intervals from each vertical rule; the head always stays inside the photo
        intervals = [(0.0, height_mm - kh)]
        if "crown_margin" in bands:
            intervals.append(bands["crown_margin"])
        if "chin_margin" in bands:
            low, high = bands["chin_margin"]
            intervals.append((height_mm - kh - high, height_mm - kh - low))
        if "eye_line" in bands:
            low, high = bands["eye_line"]
            intervals.append((height_mm - ke - high, height_mm - ke - low))
        t_low = max(i[0] for i in intervals)
        t_high = min(i[1] for i in intervals)
        if t_low <= t_high:
            candidates = [_preferred_t(t_low, t_high, kh, height_mm, bands)]
        else:  # no t meets every vertical rule: try each interval end and the point between
            ends = sorted({v for i in intervals for v in i if math.isfinite(v)})
            candidates = ends + [(a + b) / 2.0 for a, b in zip(ends, ends[1:])]
        for t in candidates:
            values = rule_values(head, k, t, c, size_mm)
            count, total, neg_slack, broken = _score(values, bands)
            # prefer a head size near the band's middle on ties (the slack already favours it)
            key = (count, round(total, 6), round(neg_slack, 6), abs(k - k_mid))
            if best is None or key < best[0]:
                best = (key, k, t, broken)
    assert best is not None
    _, k, t, broken = best
    predicted = {name: value for name, value in rule_values(head, k, t, c, size_mm).items() if value is not None}
    return k, t, c, predicted, broken


def _preferred_t(t_low: float, t_high: float, kh: float, height_mm: float, bands: dict[str, tuple[float, float]]) -> float:
    """The crown's place in the allowed interval: its middle where a rule places the head
    vertically, else our house style (a small gap above the hair, more room below the chin)."""
    if any(name in bands for name in ("crown_margin", "chin_margin", "eye_line")):
        return (t_low + t_high) / 2.0
    natural = max(MIN_TOP_GAP * height_mm, TOP_GAP_SHARE * (height_mm - kh))
    return min(max(natural, t_low), t_high)


def place_on_rules(
    head: Head,
    rules: Any,
    *,
    roll_deg: float,
    pivot: tuple[float, float],
    size: tuple[int, int],
    size_mm: tuple[float, float],
) -> Placement:
    """The placement `solve` chooses, as an affine cut of the input (output px (width, height))."""
    width, height = size
    k, t, c, predicted, broken = solve(head, rules, size_mm=size_mm)
    px_per_mm_y = height / size_mm[1]
    px_per_mm_x = width / size_mm[0]
    scale = k * px_per_mm_y  # output px per upright px
    origin_y = head.crown_y - t * px_per_mm_y / scale
    origin_x = head.centre_x - c * px_per_mm_x / scale
    return Placement(
        roll_deg=roll_deg,
        pivot=pivot,
        scale=scale,
        origin=(origin_x, origin_y),
        size=size,
        head_ratio=k * head.height / size_mm[1],
        eye_line=predicted["eye_line"] / size_mm[1],
        predicted=predicted,
        broken=broken,
    )


# --- the head in the upright frame -----------------------------------------------------------------


def head_width_at(alpha: np.ndarray, *, y: float, centre_x: float) -> float | None:
    """Width (px) of the run of person pixels through (centre_x, y) in an (H, W) uint8 matte: the
    head's width at the eye line (ears and hair beside them included). None when the point is not
    person."""
    height, width = alpha.shape
    row, col = int(round(y)), int(round(centre_x))
    if not (0 <= row < height and 0 <= col < width):
        return None
    line = alpha[row] >= PERSON
    if not line[col]:
        return None
    outside = np.flatnonzero(~line)
    left = outside[outside < col]
    right = outside[outside > col]
    x0 = int(left[-1]) + 1 if left.size else 0
    x1 = int(right[0]) if right.size else width
    return float(x1 - x0)


def measure_upright(
    landmarks: np.ndarray, box: tuple[float, float, float, float], upright_alpha: np.ndarray, *, roll_deg: float,
    pivot: tuple[float, float],
) -> Head:
    """Head measurements in the frame levelled by `roll_deg` about `pivot` (`upright_alpha` is the
    matte in that frame): crown from the matte, chin from the landmarks, width at the eye line."""
    upright = rotate_points(landmarks, degrees=-roll_deg, pivot=pivot)
    eye_y = float((upright[0, 1] + upright[1, 1]) / 2.0)
    centre_x = float((upright[0, 0] + upright[1, 0] + upright[3, 0] + upright[4, 0]) / 4.0)
    face_width = box[2] - box[0]
    crown = crown_from_matte(
        upright_alpha, x_range=(centre_x - 0.35 * face_width, centre_x + 0.35 * face_width), eye_y=eye_y
    )
    return Head(
        crown_y=crown,
        chin_y=chin_from_landmarks(upright),
        eye_y=eye_y,
        centre_x=centre_x,
        width=head_width_at(upright_alpha, y=eye_y, centre_x=centre_x),
        eye_distance=float(np.hypot(*(upright[1] - upright[0]))),
    )


# --- one person only -------------------------------------------------------------------------------

PERSON_LINK = 64  # alpha at or above this joins pixels into one component (soft hair edges included)
BODY_BAND = 0.6  # the column band under the face, +- this share of the face width around its centre


def keep_person(alpha: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    """The matte with only the chosen person: the connected component(s) holding the face box's
    centre, and those reaching into the column band below the face (the body under the head).
    Everything else (other people, objects, a shoulder at the edge) becomes background (0)."""
    import cv2  # noqa: PLC0415 (cv2 loads in the workers only when a photo is made)

    height, width = alpha.shape
    count, labels = cv2.connectedComponents((alpha >= PERSON_LINK).astype(np.uint8), connectivity=8)
    if count <= 2:
        return alpha
    x0, y0, x1, y1 = box
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    face = labels[max(0, int(y0)) : min(height, int(math.ceil(y1))), max(0, int(x0)) : min(width, int(math.ceil(x1)))]
    keep = set(np.unique(face[face > 0]).tolist())
    half = BODY_BAND * (x1 - x0)
    band = labels[min(height - 1, max(0, int(y1))) :, max(0, int(cx - half)) : min(width, int(math.ceil(cx + half)))]
    keep |= set(np.unique(band[band > 0]).tolist())
    centre_label = labels[min(height - 1, max(0, int(cy))), min(width - 1, max(0, int(cx)))]
    if centre_label > 0:
        keep.add(int(centre_label))
    if not keep:
        return alpha
    mask = np.isin(labels, sorted(keep))
    return np.where(mask, alpha, 0).astype(np.uint8)


# --- extend, don't refuse ---------------------------------------------------------------------------

HEAD_HALF_WIDTH = 1.0  # the head's half width beside the eye midpoint, in eye distances (cheeks, ears ~1.2)
EDGE_SLACK = 1.0  # px: a face box this close to an edge touches it
EXTEND_ROWS = 24  # rows at the body's bottom whose outline slopes are continued below the photo
MAX_WIDENING = 1.2  # px per row: a shoulder outline is continued at most this steeply
TEXTURE_BAND = 16  # rows (or columns) next to an edge whose mean colours continue the clothing
SHOULDER_SLOPE = 0.45  # rows down per column out: a shoulder beyond a side edge falls about 24 degrees
EDGE_BAND = 4  # px: the body "runs into" a side edge when any of its last columns is person (mattes are soft there)
BICUBIC_REACH = 2  # px added beyond what the output covers, for the resampling's reach (not reported)


def head_cut_edge(landmarks: np.ndarray, box: tuple[float, float, float, float], alpha: np.ndarray) -> str | None:
    """The edge of the original (H, W) that cuts the head itself, or None. Judged in the original's
    own frame (a levelled copy has new empty corners): the face or ears past a side (the face box
    at the edge, or the head's half width beside the eye midpoint, HEAD_HALF_WIDTH eye distances,
    past it), the chin (see `chin_from_landmarks`, along the face's axis) below the bottom edge, or
    the hair at the top edge over the head's columns (10 % of them person in the top row)."""
    height, width = alpha.shape
    points = np.asarray(landmarks, dtype=np.float64)
    roll = roll_degrees(points)
    pivot = eye_midpoint(points)
    upright = rotate_points(points, degrees=-roll, pivot=pivot)
    eye_y = float((upright[0, 1] + upright[1, 1]) / 2.0)
    centre_x = float((upright[0, 0] + upright[1, 0] + upright[3, 0] + upright[4, 0]) / 4.0)
    half = HEAD_HALF_WIDTH * float(np.hypot(*(upright[1] - upright[0])))
    sides = rotate_points(np.array([[centre_x - half, eye_y], [centre_x + half, eye_y]]), degrees=roll, pivot=pivot)
    if sides[0, 0] < 0 or box[0] <= EDGE_SLACK:
        return "left"
    if sides[1, 0] > width or box[2] >= width - EDGE_SLACK:
        return "right"
    chin = rotate_points(np.array([[centre_x, chin_from_landmarks(upright)]]), degrees=roll, pivot=pivot)[0]
    if chin[1] > height - 1:
        return "bottom"
    x0 = max(0, int(sides[:, 0].min()))
    x1 = min(width, int(math.ceil(sides[:, 0].max())))
    if x1 > x0 and (alpha[0, x0:x1] >= PERSON).mean() >= 0.1:
        return "top"
    return None


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
    a, b, c, d, e, f = placement.output_to_input()
    w_out, h_out = placement.size
    corners = np.array([[0, 0], [w_out, 0], [0, h_out], [w_out, h_out]], dtype=np.float64)
    xs = a * corners[:, 0] + b * corners[:, 1] + c
    ys = d * corners[:, 0] + e * corners[:, 1] + f

    def beyond(value: float) -> int:
        return int(math.ceil(value)) + BICUBIC_REACH if value > 0 else 0

    return Extension(
        left=beyond(-xs.min()), top=beyond(-ys.min()), right=beyond(xs.max() - width), bottom=beyond(ys.max() - height)
    )


def extend(foreground: np.ndarray, alpha: np.ndarray, extension: Extension, *, body_from_y: float) -> tuple[np.ndarray, np.ndarray]:
    """The input's colours (H, W, 3) and matte (H, W) grown by `extension`.

    Above `body_from_y` (input rows; the chin) what lies beyond an edge is background (matte 0).
    Where the body runs into a side edge down to the bottom, it continues outwards as a shoulder
    sloping down (`_continue_side`). Below the photo the body's outline keeps its slope (shoulders
    widen as they did in the last rows), so no straight cut of clothing appears inside the output.
    The clothing continues in the mean colours of the strip next to the edge (`edge_colours`)."""
    if not extension.any:
        return foreground, alpha
    height, width = alpha.shape
    fg, al = foreground, alpha
    if extension.left or extension.right:
        left = _continue_side(al[:, :EDGE_BAND].max(axis=1), extension.left, body_from_y)[:, ::-1]
        right = _continue_side(al[:, -EDGE_BAND:].max(axis=1), extension.right, body_from_y)
        al = np.concatenate([left, al, right], axis=1)
        fg = np.concatenate([np.repeat(edge_colours(fg[:, :TEXTURE_BAND], axis=1), extension.left, axis=1), fg,
                             np.repeat(edge_colours(fg[:, -TEXTURE_BAND:], axis=1), extension.right, axis=1)], axis=1)
    if extension.bottom:
        ext_al, ext_fg = _continue_body(fg, al, extension.bottom)
        al = np.concatenate([al, ext_al], axis=0)
        fg = np.concatenate([fg, ext_fg], axis=0)
    if extension.top:
        al = np.concatenate([np.zeros((extension.top, al.shape[1]), np.uint8), al], axis=0)
        fg = np.concatenate([np.repeat(fg[:1], extension.top, axis=0), fg], axis=0)
    return np.ascontiguousarray(fg), np.ascontiguousarray(al)


def edge_colours(band: np.ndarray, *, axis: int) -> np.ndarray:
    """The mean colour of the rows (axis 0) or columns (axis 1) in `band`, the strip next to an edge,
    kept as one row or column: what continues the clothing beyond the edge. One repeated edge row
    would carry its noise and fabric detail as streaks; a mirror image would copy pins, knots and
    hands; the mean continues the colours and the large shapes (a tie, a lapel) and nothing else."""
    return band.astype(np.float32).mean(axis=axis, keepdims=True).round().astype(np.uint8)


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


def _continue_body(foreground: np.ndarray, alpha: np.ndarray, rows_below: int) -> tuple[np.ndarray, np.ndarray]:
    import cv2  # noqa: PLC0415

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
    new_left = x_left - slope_left * i
    new_right = x_right + slope_right * i
    xs = np.arange(width, dtype=np.float64)[None, :]
    inside = (xs - new_left) / np.maximum(new_right - new_left, 1.0) * span + x_left
    source = np.where(xs < new_left, x_left - (new_left - xs), np.where(xs > new_right, x_right + (xs - new_right), inside))
    map_x = source.astype(np.float32)
    map_y = np.zeros_like(map_x)
    ext_al = cv2.remap(last_al, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    # the colours: the band above the edge, averaged into one row, stretched the same way
    band = edge_colours(foreground[max(0, height - TEXTURE_BAND) :], axis=0)
    ext_fg = cv2.remap(band, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return ext_al.reshape(rows_below, width), ext_fg.reshape(rows_below, width, 3)
