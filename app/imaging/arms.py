"""Hands and arms near the head, read from the person matte's outline alone.

An arm raised behind the head, or a hand or forearm held beside it against the wall, belongs to the
person: the matte keeps it. What gives it away is where it lies: outside the outline a head and
shoulders have (`expected_silhouette`), built from the face alone. In the face's own frame (u
across the eye line, v down the face's axis, from the eye midpoint, in eye distances) that outline
is the head with its hair, an ellipse from HAIR_TOP_IOD above the eyes to the chin and
HEAD_HALF_WIDTH_IOD either side of the face's centre line, and long hair falling beside the face
from the eye line to the chin (HAIR_FALL_IOD either side); below the chin (less SHOULDER_RISE_IOD
for raised shoulders) is the body, wherever it reaches. Person pixels outside that outline, within
REACH_IOD of the face's centre line and up to ABOVE_IOD above the eyes (about what an ID photo's
frame shows), are counted; the largest connected piece of them, in eye distances squared, is the
reading (`arms_near_head`), and a piece over MIN_ARM_AREA_IOD2 is a hand or an arm.

No colour is read: skin colour is no fair cue (it fails on dark skin against dark walls, on
sleeves and gloves, and it would judge a face by its tone). The cost: hair that stands far out
from the head (a wide afro, a bun held high) is outline too, which is why the allowances are wide;
the corpus figures are in `tests/test_arms.py`.

Pure functions on numpy arrays; coordinates image px (x right, y down).
"""

from __future__ import annotations

import math

import numpy as np

from ..specs import PILOTLIGHT_URL, Source
from .compliance import Check
from .opencv import cv2
from .people import clear_faces, largest_piece

PERSON = 128  # alpha at or above this is the person (uint8 matte)
HAIR_TOP_IOD = 2.6  # the head's outline reaches this far above the eye line (hair included; skulls ~1.5)
HEAD_HALF_WIDTH_IOD = 1.9  # ... and this far either side of the face's centre line (ears ~1.4, hair beyond)
HAIR_FALL_IOD = 2.1  # long hair beside the face, from the eye line down to the chin, either side
SHOULDER_RISE_IOD = 0.3  # the body's outline starts this far above the chin (shoulders raised, a collar)
REACH_IOD = 3.2  # read this far either side of the centre line (an ID photo's frame: about 2.6)
ABOVE_IOD = 4.0  # ... and this far above the eye line
WORK_IOD = 24.0  # px between the eyes at which the matte is read (areas are in eye distances squared)
# The largest piece of person outside the outline that counts as a hand or an arm, in eye distances
# squared: a forearm is about 0.6 eye distances wide, a hand about 1 x 0.8 (tests/test_arms.py has
# the corpus's figures and the composites')
MIN_ARM_AREA_IOD2 = 1.5

# No authority's words on hands or arms near the head were found in the sources we hold: the line is
# ours, and says so wherever it is shown
ARMS_SOURCE = Source(
    title="pilotlight default: no words of an authority on hands or arms near the head found",
    url=PILOTLIGHT_URL,
    quote=("No authority's words on hands or arms beside the head were found in our stored sources (third-party "
           "summaries of several authorities' pages say no other people or objects may be in the photo). We fail a "
           "photo whose person reaches beside or above the head, outside a head-and-shoulders outline: the wall "
           "behind the head is then not plain, and the head's outline is not the head's alone."),
    kind="none",
)


def face_frame(shape: tuple[int, int], five: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(u, v, iod): each pixel of an (H, W) image in the face's frame, in eye distances: u across
    the eye line from the face's centre line (the mean of the eyes and mouth corners), v down the
    face's axis from the eye line."""
    left, right = np.asarray(five[0], np.float64), np.asarray(five[1], np.float64)
    iod = float(np.hypot(*(right - left)))
    roll = math.atan2(float(right[1] - left[1]), float(right[0] - left[0]))
    cos, sin = math.cos(roll), math.sin(roll)
    mid = (left + right) / 2.0
    centre = np.mean(np.asarray(five, np.float64)[[0, 1, 3, 4]], axis=0)
    centre_u = float((centre[0] - mid[0]) * cos + (centre[1] - mid[1]) * sin)
    ys, xs = np.mgrid[0 : shape[0], 0 : shape[1]].astype(np.float32)
    dx, dy = xs - float(mid[0]), ys - float(mid[1])
    u = (dx * cos + dy * sin - centre_u) / iod
    v = (-dx * sin + dy * cos) / iod
    return u, v, iod


def expected_silhouette(u: np.ndarray, v: np.ndarray, *, chin_v: float) -> np.ndarray:
    """(H, W) bool: where a head with its hair, and the body below the chin, may lie (see the
    module docstring); `u`, `v` and `chin_v` in eye distances."""
    centre_v = (chin_v - HAIR_TOP_IOD) / 2.0
    half_v = (chin_v + HAIR_TOP_IOD) / 2.0
    head = (u / HEAD_HALF_WIDTH_IOD) ** 2 + ((v - centre_v) / half_v) ** 2 <= 1.0
    hair = (np.abs(u) <= HAIR_FALL_IOD) & (v >= 0.0) & (v <= chin_v)
    body = v >= chin_v - SHOULDER_RISE_IOD
    return head | hair | body


def arms_near_head(
    alpha: np.ndarray,
    five: np.ndarray,
    *,
    chin_y: float,
    other_faces: list[tuple[float, float, float, float]] | None = None,
) -> tuple[float, np.ndarray]:
    """(the largest piece of person outside the head-and-shoulders outline, in eye distances
    squared; its (H, W) bool mask). `alpha` (H, W) uint8 is the chosen person's matte on the
    original, `five` the face's five landmarks, `chin_y` the chin's row (px) along the face's axis;
    boxes in `other_faces` (other people's faces, with their necks) are left out."""
    full = np.zeros(alpha.shape, bool)
    five = np.asarray(five, np.float64)
    iod = float(np.hypot(*(five[1] - five[0])))
    if iod < 1.0:
        return 0.0, full
    mid = (five[0] + five[1]) / 2.0
    reach = max(REACH_IOD, ABOVE_IOD) * iod + abs(chin_y - float(mid[1]))
    wx0, wy0 = max(0, int(mid[0] - reach)), max(0, int(mid[1] - reach))
    wx1 = min(alpha.shape[1], int(math.ceil(mid[0] + reach)))
    wy1 = min(alpha.shape[0], int(math.ceil(mid[1] + reach)))
    if wx1 - wx0 < 2 or wy1 - wy0 < 2:
        return 0.0, full
    window = np.ascontiguousarray(alpha[wy0:wy1, wx0:wx1])
    points = five - (wx0, wy0)
    chin = chin_y - wy0
    boxes = [(x0 - wx0, y0 - wy0, x1 - wx0, y1 - wy0) for x0, y0, x1, y1 in other_faces or []]
    factor = min(1.0, WORK_IOD / iod)
    size = (wx1 - wx0, wy1 - wy0)
    if factor < 1.0:
        small = (max(2, round(size[0] * factor)), max(2, round(size[1] * factor)))
        window = cv2.resize(window, small, interpolation=cv2.INTER_AREA)
        points, chin = points * factor, chin * factor
        boxes = [tuple(value * factor for value in box) for box in boxes]
    u, v, work_iod = face_frame(window.shape, points)
    chin_v = float((chin - points[:2, 1].mean()) / work_iod)  # along the axis, near enough for a small roll
    outside = (window >= PERSON) & ~expected_silhouette(u, v, chin_v=chin_v)
    outside &= (np.abs(u) <= REACH_IOD) & (v >= -ABOVE_IOD)
    clear_faces(outside, boxes)  # another face, and its neck below it
    area, piece = largest_piece(outside, unit_px=work_iod, size=size)
    if piece is not None:
        full[wy0:wy1, wx0:wx1] = piece
    return area, full


ARMS_ADVICE = ("Lower your arms and keep your hands away from your head: only your head and shoulders may show, "
               "against a plain wall")


def arms_check(area_iod2: float) -> Check:
    """The line on `arms_near_head`'s reading: it fails over MIN_ARM_AREA_IOD2. Kind "rule", with
    ARMS_SOURCE's words (ours: no authority's words were found) in `allowed`."""
    passed = area_iod2 < MIN_ARM_AREA_IOD2
    return Check("arms_near_head", round(area_iod2, 2),
                 f"< {MIN_ARM_AREA_IOD2:g} (person beside or above the head, outside a head-and-shoulders outline, "
                 f"in eye distances squared); {ARMS_SOURCE.title}: \u201c{ARMS_SOURCE.quote}\u201d",
                 passed, unit="iod^2", kind="rule", advice=None if passed else ARMS_ADVICE,
                 broken_by=None if passed else area_iod2 - MIN_ARM_AREA_IOD2)
