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
from dataclasses import dataclass

import numpy as np

from .opencv import warp_pillow_affine

# Chin below the mouth corners, in units of the eye-to-mouth distance. Measured on frontal
# portraits (scikit-image's astronaut: eyes y=102, mouth corners y=144, chin y=185 -> 0.98);
# anthropometric tables put the neutral face at 0.85-0.95. A smile raises the corners.
CHIN_BELOW_MOUTH = 0.95
MIN_TOP_GAP = 0.05  # fraction of photo height always left above the crown (ICAO examples: 3-5 mm of 45)
TOP_GAP_SHARE = 0.35  # without an eye-line rule: this share of the free height goes above the crown
PERSON = 128  # alpha at or above this is the person (uint8 matte)
EDGE_TOUCH = 0.02  # a person "touches" an image edge when this share of the edge's span is person


class PlacementError(ValueError):
    """The photo cannot be placed on the spec without inventing pixels; `edge` says which."""

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
    head's columns, above the eyes. PlacementError("top") when the person reaches the top edge
    there (the top of the head is cut off) or no head is found above the eyes."""
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
    if rows[0] == 0:
        raise PlacementError("top", "The photo is cut off above the top of the head; leave space above the hair.")
    return float(rows[0])


def measure_head(landmarks: np.ndarray, box: tuple[float, float, float, float], upright_alpha: np.ndarray) -> Head:
    """Head measurements in the upright frame from input landmarks (rotated here) and the upright matte."""
    roll = roll_degrees(landmarks)
    pivot = eye_midpoint(landmarks)
    upright = rotate_points(landmarks, degrees=-roll, pivot=pivot)
    eye_y = float((upright[0, 1] + upright[1, 1]) / 2.0)
    centre_x = float((upright[0, 0] + upright[1, 0] + upright[3, 0] + upright[4, 0]) / 4.0)
    face_width = box[2] - box[0]
    crown = crown_from_matte(
        upright_alpha, x_range=(centre_x - 0.35 * face_width, centre_x + 0.35 * face_width), eye_y=eye_y
    )
    return Head(crown_y=crown, chin_y=chin_from_landmarks(upright), eye_y=eye_y, centre_x=centre_x)


def place(
    head: Head,
    *,
    roll_deg: float,
    pivot: tuple[float, float],
    size: tuple[int, int],
    head_band: tuple[float, float],
    eye_band: tuple[float, float] | None,
) -> Placement:
    """Scale so the head fills the middle of `head_band` and place the eye line in `eye_band`
    (fractions of the output height; eye line measured from the bottom), face centred."""
    width, height = size
    ratio = (head_band[0] + head_band[1]) / 2.0
    eye_share = (head.chin_y - head.eye_y) / head.height  # eye height above the chin, share of the head
    top_gap = _top_gap(ratio, eye_share, eye_band)
    if eye_band is not None and not eye_band[0] <= 1.0 - top_gap - (1.0 - eye_share) * ratio <= eye_band[1]:
        # the eye line cannot reach its band at this head size: shrink the head within its band
        for candidate in np.linspace(ratio, head_band[0], 12):
            gap = _top_gap(float(candidate), eye_share, eye_band)
            if eye_band[0] <= 1.0 - gap - (1.0 - eye_share) * candidate <= eye_band[1]:
                ratio, top_gap = float(candidate), gap
                break
    scale = ratio * height / head.height
    origin_y = head.crown_y - top_gap * height / scale
    origin_x = head.centre_x - (width / 2.0) / scale
    eye_line = 1.0 - top_gap - (1.0 - eye_share) * ratio
    return Placement(
        roll_deg=roll_deg,
        pivot=pivot,
        scale=scale,
        origin=(origin_x, origin_y),
        size=size,
        head_ratio=ratio,
        eye_line=eye_line,
    )


def _top_gap(ratio: float, eye_share: float, eye_band: tuple[float, float] | None) -> float:
    """Fraction of the height above the crown: from the eye-line band's middle when there is one."""
    if eye_band is None:
        return max(MIN_TOP_GAP, TOP_GAP_SHARE * (1.0 - ratio))
    eye_target = (eye_band[0] + eye_band[1]) / 2.0
    gap = 1.0 - eye_target - (1.0 - eye_share) * ratio
    return min(max(gap, MIN_TOP_GAP), 1.0 - ratio - 0.01)


def check_inside(placement: Placement, alpha: np.ndarray) -> None:
    """PlacementError naming the edge when the output needs pixels beyond an input edge that the
    person reaches (beyond an edge the person does not reach is background: filled, not invented)."""
    height, width = alpha.shape
    w_out, h_out = placement.size
    a, b, c, d, e, f = placement.output_to_input()
    corners = np.array([[0, 0], [w_out, 0], [0, h_out], [w_out, h_out]], dtype=np.float64)
    xs = a * corners[:, 0] + b * corners[:, 1] + c
    ys = d * corners[:, 0] + e * corners[:, 1] + f
    x_lo, x_hi = max(0, int(xs.min())), min(width, int(math.ceil(xs.max())))
    y_lo, y_hi = max(0, int(ys.min())), min(height, int(math.ceil(ys.max())))
    person = alpha >= PERSON
    checks = (
        ("bottom", ys.max() > height + 1, person[-1, x_lo:x_hi]),
        ("top", ys.min() < -1, person[0, x_lo:x_hi]),
        ("left", xs.min() < -1, person[y_lo:y_hi, 0]),
        ("right", xs.max() > width + 1, person[y_lo:y_hi, -1]),
    )
    for edge, beyond, line in checks:
        if beyond and line.size and line.mean() >= EDGE_TOUCH:
            raise PlacementError(edge, _CUT_MESSAGES[edge])


_CUT_MESSAGES = {
    "bottom": "The photo is cut off too close below the chin; use one that shows your shoulders.",
    "top": "The photo is cut off too close above the head; leave space above the hair.",
    "left": "The photo is cut off too close to the left of the head; step back or centre yourself.",
    "right": "The photo is cut off too close to the right of the head; step back or centre yourself.",
}


def check_chin_inside(head: Head, *, image_height: int) -> None:
    if head.chin_y > image_height - 1:
        raise PlacementError("bottom", "The photo is cut off above the chin; include your whole face and shoulders.")


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
