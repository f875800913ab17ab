"""The head, measured once: eye line, centre line, eye distance, chin, crown and width.

Pure functions on numpy arrays, used on the input (placement) and on the output (the compliance
report) alike. Coordinates are image px, x to the right, y down, (x, y) order. Landmarks are the
detector's 5 points in insightface order: left eye (smaller x), right eye, nose tip, left mouth
corner, right mouth corner. A matte is (H, W) uint8, 255 the person; PERSON is where it counts.

The "upright frame" is the input rotated about the eye midpoint by the face's roll, so the eyes
are level (`rotate_points`, `measure_upright`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

PERSON = 128  # alpha at or above this is the person (uint8 matte)

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
CROWN_COLUMNS = 0.35  # the crown is read over the face's centre line +- this share of the face box's width
CROWN_ROW_SHARE = 0.1  # a row holds the head when this share of those columns is person


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


# --- the five points ---------------------------------------------------------------------------------


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


def eye_line(landmarks: np.ndarray) -> float:
    """The eye line's row (px): the mean of the eyes' y."""
    return float((landmarks[0, 1] + landmarks[1, 1]) / 2.0)


def centre_line(landmarks: np.ndarray) -> float:
    """The face's vertical centre line (x, px): the mean of the eyes' and the mouth corners' x."""
    return float((landmarks[0, 0] + landmarks[1, 0] + landmarks[3, 0] + landmarks[4, 0]) / 4.0)


def eye_distance(landmarks: np.ndarray) -> float:
    """px between the eye centres."""
    return float(np.hypot(*(landmarks[1] - landmarks[0])))


def chin_from_landmarks(upright: np.ndarray) -> float:
    """Chin y (upright frame) from the eyes and the mouth corners."""
    eye_y = (upright[0, 1] + upright[1, 1]) / 2.0
    mouth_y = (upright[3, 1] + upright[4, 1]) / 2.0
    return float(mouth_y + CHIN_BELOW_MOUTH * (mouth_y - eye_y))


def chin_row(landmarks: np.ndarray, chin: np.ndarray | None) -> float:
    """The chin's row in the landmarks' own frame: the dense landmarks' menton (`chin`, (x, y) px)
    where they ran, else the eye-mouth line continued (`chin_from_landmarks`)."""
    return chin_from_landmarks(landmarks) if chin is None else float(chin[1])


def chin_upright(upright: np.ndarray, chin: np.ndarray | None, *, roll_deg: float, pivot: tuple[float, float]) -> float:
    """Chin y in the frame levelled by `roll_deg` about `pivot`: the menton the dense landmarks read
    (`chin`, (x, y) px of the unlevelled image: point 8 of the 68, on the jaw itself, so an open
    mouth or a smile does not move it) where there is one, else the estimate from the eyes and the
    mouth corners (`chin_from_landmarks` on the levelled 5 points `upright`)."""
    if chin is None:
        return chin_from_landmarks(upright)
    return float(rotate_points(np.asarray(chin, np.float64).reshape(1, 2), degrees=-roll_deg, pivot=pivot)[0, 1])


def crown_columns(landmarks: np.ndarray, box: tuple[float, float, float, float]) -> tuple[float, float]:
    """The columns (x from, x to, px) the crown is read over: the centre line +- CROWN_COLUMNS face widths."""
    centre_x, half = centre_line(landmarks), CROWN_COLUMNS * (box[2] - box[0])
    return centre_x - half, centre_x + half


# --- the matte -----------------------------------------------------------------------------------------


def crown_row(alpha: np.ndarray, *, x_range: tuple[float, float], above: float | None = None) -> int | None:
    """The topmost row (px) of an (H, W) uint8 matte where CROWN_ROW_SHARE of the columns in
    `x_range` are person, searched above row `above` (None: the whole height); None where no row is."""
    height, width = alpha.shape
    x0 = max(0, int(math.floor(x_range[0])))
    x1 = min(width, int(math.ceil(x_range[1])))
    y1 = height if above is None else min(height, max(0, int(above)))
    if x1 <= x0 or y1 <= 0:
        return None
    rows = np.flatnonzero((alpha[:y1, x0:x1] >= PERSON).mean(axis=1) >= CROWN_ROW_SHARE)
    return int(rows[0]) if rows.size else None


def crown_from_matte(alpha: np.ndarray, *, x_range: tuple[float, float], eye_y: float) -> float:
    """Top of the head (y, px) in an upright (H, W) uint8 matte: the highest person row within the
    head's columns, above the eyes (`crown_row`). PlacementError("top") when no head is found above the eyes.
    (Whether the original cuts the head is `head_cut_edge`'s question, asked in the original's frame.)"""
    height, width = alpha.shape
    if min(width, math.ceil(x_range[1])) <= max(0, math.floor(x_range[0])) or min(height, max(0, int(eye_y))) <= 0:
        raise PlacementError("top", "The face is too close to the edge of the photo to measure the head.")
    row = crown_row(alpha, x_range=x_range, above=eye_y)
    if row is None:
        raise PlacementError("top", "No head was found above the eyes; use a photo with a plain background.")
    return float(row)


def person_run(alpha: np.ndarray, *, y: float, centre_x: float) -> tuple[int, int] | None:
    """The run of person pixels through (centre_x, y) in an (H, W) uint8 matte: (x from, x to) px,
    the end exclusive. None when the point is outside the matte or not person."""
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
    return (int(left[-1]) + 1 if left.size else 0), (int(right[0]) if right.size else width)


def head_width_at(alpha: np.ndarray, *, y: float, centre_x: float) -> float | None:
    """Width (px) of the run of person pixels through (centre_x, y): the head's width at the eye
    line (ears and hair beside them included). None when the point is not person."""
    run = person_run(alpha, y=y, centre_x=centre_x)
    return None if run is None else float(run[1] - run[0])


def skull_top(*, hair_y: float, eye_y: float, eye_distance: float) -> float:
    """The natural top of the head (y, px, y down): SKULL_ABOVE_EYES_IOD eye distances above the eye
    line, or the hair's top where that is lower (a bald head, a shaved one)."""
    return max(hair_y, eye_y - SKULL_ABOVE_EYES_IOD * eye_distance)


# --- the head in the upright frame -----------------------------------------------------------------


def measure_upright(
    landmarks: np.ndarray, box: tuple[float, float, float, float], upright_alpha: np.ndarray, *, roll_deg: float,
    pivot: tuple[float, float], crown: str = "hair", chin: np.ndarray | None = None,
) -> Head:
    """Head measurements in the frame levelled by `roll_deg` about `pivot` (`upright_alpha` is the
    matte in that frame): crown from the matte (the hair's top) or, with crown="skull", the natural
    top of the head under the hair (`skull_top`); chin from the dense landmarks' menton (`chin`,
    unlevelled px) or the 5 landmarks (`chin_upright`), width at the eye line."""
    upright = rotate_points(landmarks, degrees=-roll_deg, pivot=pivot)
    eye_y, centre_x, distance = eye_line(upright), centre_line(upright), eye_distance(upright)
    hair = crown_from_matte(upright_alpha, x_range=crown_columns(upright, box), eye_y=eye_y)
    skull = crown == "skull"
    return Head(
        crown_y=skull_top(hair_y=hair, eye_y=eye_y, eye_distance=distance) if skull else hair,
        hair_y=hair if skull else None,
        chin_y=chin_upright(upright, chin, roll_deg=roll_deg, pivot=pivot),
        eye_y=eye_y,
        centre_x=centre_x,
        width=head_width_at(upright_alpha, y=eye_y, centre_x=centre_x),
        eye_distance=distance,
        face_width=FACE_WIDTH_IOD * distance,
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
    face's axis) below the bottom edge, or the hair at the top edge over the head's columns
    (CROWN_ROW_SHARE of them person in the top row)."""
    height, width = alpha.shape
    points = np.asarray(landmarks, dtype=np.float64)
    roll = roll_degrees(points)
    pivot = eye_midpoint(points)
    upright = rotate_points(points, degrees=-roll, pivot=pivot)
    eye_y, centre_x = eye_line(upright), centre_line(upright)
    half = HEAD_HALF_WIDTH * eye_distance(upright)
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
    if x1 > x0 and (alpha[0, x0:x1] >= PERSON).mean() >= CROWN_ROW_SHARE:
        return "top"
    return None
