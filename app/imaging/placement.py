"""ID photo geometry: from face landmarks and a person matte to an affine placement on the spec.

Pure functions on numpy arrays. Coordinates are image px, x to the right, y down, (x, y) order.
Landmarks are the detector's 5 points in insightface order: left eye (smaller x), right eye,
nose tip, left mouth corner, right mouth corner.

The placement works in the "upright frame": the input rotated about the eye midpoint by the face's
roll so the eyes are level. Output px (u, v) map to upright px (x0 + u / scale, y0 + v / scale),
and those to input px by the inverse rotation: one affine transform, one resampling.

Its neighbours: `people` keeps the chosen person only, `canvas` extends the frame beyond the photo
(or keeps it inside), `skin` tells the face's colour.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from .opencv import warp_pillow_affine


# Chin below the mouth corners, in units of the eye-to-mouth distance, where no dense landmarks ran
# (without landmarks68): on four portraits whose chins were read by eye (landmarks68.MENTON_BELOW_POINT8)
# 0.67-0.82 with CenterFace's refined points, mean 0.77. A smile raises the corners, an open mouth
# lowers the chin: the dense landmarks' menton is the measure, this the fallback.
CHIN_BELOW_MOUTH = 0.77


# The face between the ear roots (what GA 461 and the Chinese consular rule call face or head width:
# 脸部宽度(两耳根之间)), in eye distances. Anthropometric means for adults (Farkas, "Anthropometry of
# the Head and Face", 1994): tragion-to-tragion breadth about 139 mm (women 135, men 145), pupils
# about 62 mm apart (women 60, men 64): 2.25. Faces vary by about +-7 % in this ratio
# (FACE_WIDTH_UNCERTAINTY), so the estimate is good to about +-1.2 mm on a 17 mm face.
FACE_WIDTH_IOD = 2.25
FACE_WIDTH_UNCERTAINTY = 0.07


# The natural top of the head (the skull under the hair), above the eye line, in eye distances:
# measured on the corpus's bald or close-cropped heads, where the matte's top is the skull's
# (connery 1.55, obama 1.48, obama-tight 1.47 eye distances; Farkas's adult norms give a little
# more, about 1.8 from vertex-to-pupil over the pupil distance, but they measure to the pupils'
# plane with callipers through the hair). The skull estimate is the lower of this and the hair's
# top. Heads vary by about +-8 % here (SKULL_UNCERTAINTY): about +-1 mm on a 33 mm head.
SKULL_ABOVE_EYES_IOD = 1.52
SKULL_UNCERTAINTY = 0.08
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
    """Head measurements in the upright frame (px): crown (the top of the hair, or of the skull under
    it: see `measure_upright`), chin, eye line, centre."""

    crown_y: float
    chin_y: float
    eye_y: float
    centre_x: float
    width: float | None = None  # head width at the eye line (matte: ears and hair included), px; None when not measured
    eye_distance: float | None = None  # px between the eye centres
    face_width: float | None = None  # the face between the ear roots, px (FACE_WIDTH_IOD eye distances)
    hair_y: float | None = None  # the top of the hair, px, where crown_y is the skull's (None: crown_y is the hair)

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
    margin_mm: float = math.inf  # the smallest margin (mm) the solver left to any band end (negative: a miss)
    binding: str | None = None  # the rule with that smallest margin

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


def chin_upright(upright: np.ndarray, chin: np.ndarray | None, *, roll_deg: float, pivot: tuple[float, float]) -> float:
    """Chin y in the frame levelled by `roll_deg` about `pivot`: the menton the dense landmarks read
    (`chin`, (x, y) px of the unlevelled image: point 8 of the 68, on the jaw itself, so an open
    mouth or a smile does not move it) where there is one, else the estimate from the eyes and the
    mouth corners (`chin_from_landmarks` on the levelled 5 points `upright`)."""
    if chin is None:
        return chin_from_landmarks(upright)
    return float(rotate_points(np.asarray(chin, np.float64).reshape(1, 2), degrees=-roll_deg, pivot=pivot)[0, 1])


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
    convention), several times faster (figures in docs/image-path.md)."""
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
# c, mm from the left edge to the face's centre line. Every rule is linear in (k, t, c):
#
#   head_height  = k * H                 crown_margin = t
#   chin_margin  = height - t - k * H    eye_line     = height - t - k * (eye_y - crown_y)
#   head_width   = k * W                 side_margin  = min(c, width - c) - k * W / 2
#   centre_x     = c                     eye_distance = k * D
#
# The solver places every head in the middle of what its rules allow: the Chebyshev centre of the
# feasible region, a small linear programme (scipy's HiGHS). Stage one maximises m, the smallest
# margin in mm from any rule's value to either end of its band (an open end sets none), with the
# head inside the photo as a hard constraint. Stage two keeps every margin at least m and
# maximises their sum (a one-sided band counts at most ONE_SIDED_ROOM_MM), so the rules that do not
# bind also sit mid-band rather than at whatever vertex stage one stopped on. A spec that places the
# head vertically only by its size gets our house style for t (a small gap above the crown), and the
# face is centred (c = width / 2) unless a centre_x band excludes that. When no placement meets every
# rule (m < 0), the least-violation answer is kept (`least_violation`): the fewest rules broken,
# then the fewest mm outside bands shrunk by SAFETY_MM, and the report says which and by how much.

K_STEPS = 241  # grid over the scale (the least-violation search)
SAFETY_MM = 0.5  # mm kept from a band's end by the least-violation search, where the rules leave room
ONE_SIDED_ROOM_MM = 3.0  # stage two stops rewarding room past this from a one-sided band's end
VERTICAL = ("head_height", "crown_margin", "chin_margin", "eye_line")
HORIZONTAL = ("head_width", "side_margin", "centre_x", "eye_distance")
RULE_NAMES = VERTICAL + HORIZONTAL


class Solution(NamedTuple):
    """What `solve` chooses: k (mm per upright px), t (mm, top edge to crown), c (mm, left edge to the
    centre line), the mm each rule will measure, the rules broken (name -> mm outside the band; empty
    when every rule holds) and the smallest margin in mm to any band end (negative: the worst miss)."""

    k: float
    t: float
    c: float
    predicted: dict[str, float]
    broken: dict[str, float]
    margin: float
    binding: str | None  # the rule whose margin is smallest


def _ends(band: Any) -> tuple[float, float] | None:
    if band is None:
        return None
    low = -math.inf if band.low is None else float(band.low)
    high = math.inf if band.high is None else float(band.high)
    return low, high


def rule_width(head: Head, width_of: str) -> float | None:
    """The width (px) the head_width rule measures: the face between the ear roots ("face"), or the
    whole head with ears and hair at the eye line ("head")."""
    return head.face_width if width_of == "face" else head.width


def rule_values(head: Head, k: float, t: float, c: float, size_mm: tuple[float, float], *,
                width_of: str = "face") -> dict[str, float | None]:
    """The mm each rule measures for placement (k, t, c); None where the head lacks the measure."""
    width_mm, height_mm = size_mm
    half = None if head.width is None else k * head.width / 2.0
    measured = rule_width(head, width_of)
    return {
        "head_height": k * head.height,
        "crown_margin": t,
        "chin_margin": height_mm - t - k * head.height,
        "eye_line": height_mm - t - k * (head.eye_y - head.crown_y),
        "head_width": None if measured is None else k * measured,
        "side_margin": None if half is None else min(c, width_mm - c) - half,
        "centre_x": c,
        "eye_distance": None if head.eye_distance is None else k * head.eye_distance,
    }


def _affine_rules(head: Head, size_mm: tuple[float, float], width_of: str) -> dict[str, list[tuple[np.ndarray, float]]]:
    """Each rule as affine forms (coefficients on (k, t, c), constant) whose values are the rule's
    mm; side_margin has two (left and right: the minimum of both is the rule)."""
    width_mm, height_mm = size_mm
    forms: dict[str, list[tuple[np.ndarray, float]]] = {
        "head_height": [(np.array([head.height, 0.0, 0.0]), 0.0)],
        "crown_margin": [(np.array([0.0, 1.0, 0.0]), 0.0)],
        "chin_margin": [(np.array([-head.height, -1.0, 0.0]), height_mm)],
        "eye_line": [(np.array([-(head.eye_y - head.crown_y), -1.0, 0.0]), height_mm)],
        "centre_x": [(np.array([0.0, 0.0, 1.0]), 0.0)],
    }
    measured = rule_width(head, width_of)
    if measured is not None:
        forms["head_width"] = [(np.array([measured, 0.0, 0.0]), 0.0)]
    if head.width is not None:
        forms["side_margin"] = [(np.array([-head.width / 2.0, 0.0, 1.0]), 0.0),
                                (np.array([-head.width / 2.0, 0.0, -1.0]), width_mm)]
    if head.eye_distance is not None:
        forms["eye_distance"] = [(np.array([head.eye_distance, 0.0, 0.0]), 0.0)]
    return forms


def chebyshev_centre(head: Head, bands: dict[str, tuple[float, float]], *, size_mm: tuple[float, float],
                     c_fixed: float | None, min_top: float = 0.0, width_of: str = "face",
                     ) -> tuple[float, float, float, float] | None:
    """(k, t, c, m): the placement that maximises m, the smallest margin (mm) from every rule's value
    to each finite end of its band, then (every margin kept >= m) the sum of the margins, each
    closed band's up to its half width and a one-sided band's up to ONE_SIDED_ROOM_MM. The head
    stays inside the photo (`min_top` <= t, chin_margin >= 0). With `c_fixed`, c is that. None when
    the programme cannot be solved (no scale keeps the head inside the photo)."""
    from scipy.optimize import linprog  # noqa: PLC0415 (scipy loads in the workers only when a photo is made)

    width_mm, height_mm = size_mm
    forms = _affine_rules(head, size_mm, width_of)
    rows: list[tuple[np.ndarray, float]] = []  # (coefficients on (k, t, c), constant): value = a.x + b
    ends: list[tuple[int, float, int]] = []  # (row, end value, +1 for a low end / -1 for a high end)
    band_of_end: list[str] = []
    for name, (low, high) in bands.items():
        for coefficients, constant in forms.get(name, []):
            rows.append((coefficients, constant))
            for end, sign in ((low, 1), (high, -1)):
                if math.isfinite(end):
                    ends.append((len(rows) - 1, end, sign))
                    band_of_end.append(name)
    if not ends:
        return None
    # hard constraints on (k, t, c): the hair's top at least min_top below the top edge,
    # t - k (crown - hair) >= min_top; chin inside: height - t - kH >= 0
    above = 0.0 if head.hair_y is None else max(0.0, head.crown_y - head.hair_y)
    hard_a = [np.array([above, -1.0, 0.0]), np.array([head.height, 1.0, 0.0])]
    hard_b = [-min_top, height_mm]
    c_bounds = (c_fixed, c_fixed) if c_fixed is not None else (0.0, width_mm)
    bounds_xyz = [(1e-9, None), (0.0, height_mm), c_bounds]

    def margin_row(index: int) -> tuple[np.ndarray, float]:
        """margin = sign * (value - end) as (coefficients on (k, t, c), constant)."""
        row, end, sign = ends[index]
        coefficients, constant = rows[row]
        return sign * coefficients, sign * (constant - end)

    # stage one: maximise m subject to margin_i >= m, i.e. -margin_i + m <= 0
    a_ub, b_ub = [], []
    for index in range(len(ends)):
        coefficients, constant = margin_row(index)
        a_ub.append(np.concatenate([-coefficients, [1.0]]))
        b_ub.append(constant)
    for coefficients, limit in zip(hard_a, hard_b, strict=True):
        a_ub.append(np.concatenate([coefficients, [0.0]]))
        b_ub.append(limit)
    first = linprog(c=[0.0, 0.0, 0.0, -1.0], A_ub=np.array(a_ub), b_ub=np.array(b_ub),
                    bounds=[*bounds_xyz, (None, None)], method="highs")
    if first.status != 0:
        return None
    best = float(first.x[3])
    # stage two: one slack s_b per band (the smaller of its ends' margins), s_b >= best, capped
    used = list(dict.fromkeys(band_of_end))
    size = 3 + len(used)
    a2, b2 = [], []
    for index, name in enumerate(band_of_end):
        coefficients, constant = margin_row(index)
        line = np.zeros(size)
        line[:3] = -coefficients
        line[3 + used.index(name)] = 1.0
        a2.append(line)  # s_b <= margin_i
        b2.append(constant)
    for coefficients, limit in zip(hard_a, hard_b, strict=True):
        line = np.zeros(size)
        line[:3] = coefficients
        a2.append(line)
        b2.append(limit)
    caps = []
    for name in used:
        low, high = bands[name]
        room = (high - low) / 2.0 if math.isfinite(low) and math.isfinite(high) else ONE_SIDED_ROOM_MM
        caps.append((best - 1e-7, max(best, room)))
    second = linprog(c=np.concatenate([np.zeros(3), -np.ones(len(used))]), A_ub=np.array(a2), b_ub=np.array(b2),
                     bounds=[*bounds_xyz, *caps], method="highs")
    x = second.x if second.status == 0 else first.x
    return float(x[0]), float(x[1]), float(x[2]), best


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


def _smallest_margin(values: dict[str, float | None], bands: dict[str, tuple[float, float]]) -> tuple[float, str | None]:
    """(the smallest slack in mm over every rule, that rule's name)."""
    found, which = math.inf, None
    for name, ends in bands.items():
        value = values.get(name)
        if value is None:
            continue
        slack = band_slack(value, ends)
        if slack < found:
            found, which = slack, name
    return found, which


def _centre_line(bands: dict[str, tuple[float, float]], width_mm: float) -> float:
    """The horizontal centre: the middle of the photo, or of the centre_x band when it excludes that."""
    c = width_mm / 2.0
    if "centre_x" in bands:
        low, high = bands["centre_x"]
        if not low <= c <= high:
            c = (max(low, 0.0) + min(high, width_mm)) / 2.0
    return c


def solve(
    head: Head,
    rules: Any,
    *,
    size_mm: tuple[float, float],
    steps: int = K_STEPS,
) -> Solution:
    """The placement of `head` on a print of `size_mm` (width, height) under `rules`: the Chebyshev
    centre where every rule can hold, else the least-violation answer (see the section comment)."""
    width_mm, height_mm = size_mm
    bands = {name: ends for name in RULE_NAMES if (ends := _ends(getattr(rules, name, None))) is not None}
    width_of = str(getattr(rules, "head_width_of", "face"))
    c_centre = _centre_line(bands, width_mm)
    # the face on the photo's middle line (ISO/IEC 19794-5's centring), unless a centre_x band excludes it
    c_fixed = c_centre if "centre_x" not in bands or bands["centre_x"][0] <= c_centre <= bands["centre_x"][1] else None
    # without a crown-margin rule, our house gap above the crown is a hard minimum (a crown on the edge
    # cannot be measured, and ICAO's examples leave 3-5 mm)
    min_top = 0.0 if "crown_margin" in bands else MIN_TOP_GAP * height_mm
    centre = chebyshev_centre(head, bands, size_mm=size_mm, c_fixed=c_fixed, min_top=min_top, width_of=width_of)
    if centre is not None and centre[3] >= 0.0:
        k, t, c, _ = centre
        if not any(name in bands for name in ("crown_margin", "chin_margin", "eye_line")):
            above = 0.0 if head.hair_y is None else max(0.0, head.crown_y - head.hair_y)
            t = k * above + _preferred_t(min_top, height_mm - k * (head.height + above), k * (head.height + above),
                                         height_mm, bands)
        values = rule_values(head, k, t, c, size_mm, width_of=width_of)
        _, _, _, broken = _score(values, bands)
        margin, binding = _smallest_margin(values, bands)
        predicted = {name: value for name, value in values.items() if value is not None}
        return Solution(k, t, c, predicted, broken, margin, binding)
    return least_violation(head, bands, size_mm=size_mm, c=c_centre, steps=steps, width_of=width_of)


def least_violation(
    head: Head, bands: dict[str, tuple[float, float]], *, size_mm: tuple[float, float], c: float, steps: int = K_STEPS,
    width_of: str = "face",
) -> Solution:
    """No placement meets every rule: the one that breaks the fewest, then by the fewest mm outside
    the bands shrunk by SAFETY_MM, then the largest smallest slack; k on a grid, t from the
    vertical rules' intervals (their ends, and the points between)."""
    width_mm, height_mm = size_mm
    head_lo, head_hi = bands["head_height"]
    k_mid = (head_lo + head_hi) / 2.0 / head.height
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
            values = rule_values(head, k, t, c, size_mm, width_of=width_of)
            count, total, neg_slack, broken = _score(values, bands)
            # prefer a head size near the band's middle on ties (the slack already favours it)
            key = (count, round(total, 6), round(neg_slack, 6), abs(k - k_mid))
            if best is None or key < best[0]:
                best = (key, k, t, broken)
    if best is None:
        raise ValueError("the scale grid is empty")
    _, k, t, broken = best
    values = rule_values(head, k, t, c, size_mm, width_of=width_of)
    margin, binding = _smallest_margin(values, bands)
    predicted = {name: value for name, value in values.items() if value is not None}
    return Solution(k, t, c, predicted, broken, margin, binding)


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
    k, t, c, predicted, broken, margin, binding = solve(head, rules, size_mm=size_mm)
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
        margin_mm=margin,
        binding=binding,
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


def skull_top(*, hair_y: float, eye_y: float, eye_distance: float) -> float:
    """The natural top of the head (y, px, y down): SKULL_ABOVE_EYES_IOD eye distances above the eye
    line, or the hair's top where that is lower (a bald head, a shaved one)."""
    return max(hair_y, eye_y - SKULL_ABOVE_EYES_IOD * eye_distance)


def measure_upright(
    landmarks: np.ndarray, box: tuple[float, float, float, float], upright_alpha: np.ndarray, *, roll_deg: float,
    pivot: tuple[float, float], crown: str = "hair", chin: np.ndarray | None = None,
) -> Head:
    """Head measurements in the frame levelled by `roll_deg` about `pivot` (`upright_alpha` is the
    matte in that frame): crown from the matte (the hair's top) or, with crown="skull", the natural
    top of the head under the hair (`skull_top`); chin from the dense landmarks' menton (`chin`,
    unlevelled px) or the 5 landmarks (`chin_upright`), width at the eye line."""
    upright = rotate_points(landmarks, degrees=-roll_deg, pivot=pivot)
    eye_y = float((upright[0, 1] + upright[1, 1]) / 2.0)
    centre_x = float((upright[0, 0] + upright[1, 0] + upright[3, 0] + upright[4, 0]) / 4.0)
    face_width = box[2] - box[0]
    hair = crown_from_matte(
        upright_alpha, x_range=(centre_x - 0.35 * face_width, centre_x + 0.35 * face_width), eye_y=eye_y
    )
    eye_distance = float(np.hypot(*(upright[1] - upright[0])))
    skull = crown == "skull"
    return Head(
        crown_y=skull_top(hair_y=hair, eye_y=eye_y, eye_distance=eye_distance) if skull else hair,
        hair_y=hair if skull else None,
        chin_y=chin_upright(upright, chin, roll_deg=roll_deg, pivot=pivot),
        eye_y=eye_y,
        centre_x=centre_x,
        width=head_width_at(upright_alpha, y=eye_y, centre_x=centre_x),
        eye_distance=eye_distance,
        face_width=FACE_WIDTH_IOD * eye_distance,
    )


# --- the head cut by the original's edge -------------------------------------------------------------

HEAD_HALF_WIDTH = 1.0  # the head's half width beside the eye midpoint, in eye distances (cheeks, ears ~1.2)
EDGE_SLACK = 1.0  # px: a face box this close to an edge touches it


def head_cut_edge(landmarks: np.ndarray, box: tuple[float, float, float, float], alpha: np.ndarray, *,
                  chin: np.ndarray | None = None) -> str | None:
    """The edge of the original (H, W) that cuts the head itself, or None. Judged in the original's
    own frame (a levelled copy has new empty corners): the face or ears past a side (the face box
    at the edge, or the head's half width beside the eye midpoint, HEAD_HALF_WIDTH eye distances,
    past it), the chin (`chin`, the dense landmarks' menton, or see `chin_from_landmarks`, along the
    face's axis) below the bottom edge, or
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
    chin_y = chin_upright(upright, chin, roll_deg=roll, pivot=pivot)
    lowest = rotate_points(np.array([[centre_x, chin_y]]), degrees=roll, pivot=pivot)[0]
    if lowest[1] > height - 1:
        return "bottom"
    x0 = max(0, int(sides[:, 0].min()))
    x1 = min(width, int(math.ceil(sides[:, 0].max())))
    if x1 > x0 and (alpha[0, x0:x1] >= PERSON).mean() >= 0.1:
        return "top"
    return None
