"""What the geometry rules do not see: the mouth closed, and hands kept away from the head.

Pure functions on numpy arrays, judged on the original photo (the output is the same face, scaled).
Colour order RGB, coordinates image px (x right, y down).

Mouth closed: the gap between the inner lips over the mouth's width, from the 68 landmarks of
`app.models.landmarks68` (`mouth_openness`). MOUTH_OPEN_ABOVE was set on the corpus's frontal
portraits labelled by eye (tests/support/corpus.py: `mouth`): the lips-closed ones read 0.011-0.099 and those
with teeth or tongue showing 0.102-0.433, so the threshold sits between the two groups; `python -m
bench.idphoto --expression` prints the table and the accuracy. Where a spec allows a natural smile
(the US, China), the line fails only above MOUTH_GAPING_ABOVE: a smile may show teeth, a gaping
mouth is no smile.

Eyes open: the 68-point net's eye aspect ratio does not separate shut eyes from open ones on the
labelled portraits (shut 0.24-0.31, open 0.22-0.39: a regression pulls the lids towards the mean
shape). OpenCV's Haar eye cascade (haarcascade_eye.xml, shipped in opencv-python-headless's
cv2.data) does: it answers to an open eye's dark iris between lids. Each eye's window (the face
scaled to EYE_IOD px between the eyes, EYE_WINDOW px around the eye's landmark) must hold one
detection. On the corpus's 32 frontal portraits labelled by eye (3 with eyes shut) it is right on
31: all 3 shut, 28 of 29 open (Grace Hopper's left eye behind heavy glasses is missed). Two
cascade runs on 64 x 48 px windows, no model run. Where the wheel ships no cascade (OpenCV 5's
wheels do not), the line stays "not checked".

Hands near the head: skin-coloured pixels of the person, above the chin and beside the head
(further out than HEAD_HALF_SPAN_IOD eye distances from the face's centre line, past the ears), in
the frame levelled by the face's roll. The skin colour is the face's own (the median Cr and Cb of
the cheeks, with a tolerance from their spread). A hand on the forehead is found by its forearm;
a neighbour's face beside the head is not counted (its box is left out).
"""

from __future__ import annotations

import math

import numpy as np

from .opencv import cv2
from .head import PERSON, eye_distance
from .people import clear_faces, largest_piece
from .skin import Skin

EYE_IOD = 64.0  # px between the eyes at which the eye cascade looks
EYE_WINDOW = (64, 48)  # (width, height) px around each eye's landmark, at EYE_IOD
MOUTH_OPEN_ABOVE = 0.10  # inner-lip gap / mouth width: over this the lips are apart (see the docstring)
# Where a spec allows a natural smile, a mouth open wider than this is not one (a gape, a shout):
# between the broadest laugh of the labelled corpus (franck-laugh, 0.31) and its one gaping mouth
# (feat-surprise, 0.43); toothy smiles read 0.10-0.25
MOUTH_GAPING_ABOVE = 0.37
HEAD_HALF_SPAN_IOD = 1.6  # the head's half width with its ears, in eye distances (ears reach ~1.4)
ABOVE_EYES_IOD = 2.2  # how far above the eye line the search reaches, in eye distances (hair and hands on it)
MIN_SKIN_CHROMA = 4.0  # Cr/Cb units from neutral grey under which a face has no usable colour
SKIN_SPREADS = 3.0  # the skin colour's tolerance: this many spreads (robust sd) of the cheeks' Cr and Cb ...
SKIN_TOLERANCE = 10.0  # ... plus this, in Cr/Cb units
# Skin area beside the head that counts as a hand, in eye distances squared (a hand is about 2-3):
# on the corpus, the two portraits with a hand raised read 2.7 and 3.9, the frontal ones without
# under 1.1 but one (party-pout, 2.6: a friend's half face cut by the photo's edge, which no
# detector finds).
MIN_HAND_AREA_IOD2 = 2.0
WORK_IOD = 40.0  # px between the eyes at which the skin is read
REACH_IOD = 4.0  # the window read about the head, in eye distances (plus the eye-to-chin distance)


def cheeks(ycrcb: np.ndarray, five: np.ndarray) -> np.ndarray:
    """(N, 3) YCrCb pixels of the two cheeks: below each eye, above the mouth corner's height."""
    iod = eye_distance(five)
    samples = []
    for eye, corner in ((five[0], five[3]), (five[1], five[4])):
        cx = float((eye[0] + corner[0]) / 2.0)
        cy = float(eye[1] + 0.55 * (corner[1] - eye[1]))
        half = max(1, int(0.15 * iod))
        y0, x0 = max(0, int(cy) - half), max(0, int(cx) - half)
        patch = ycrcb[y0 : int(cy) + half + 1, x0 : int(cx) + half + 1]
        samples.append(patch.reshape(-1, 3))
    return np.concatenate(samples, axis=0)


def face_skin(rgb: np.ndarray, five: np.ndarray) -> Skin | None:
    """The face's own skin colour from its cheeks (`cheeks`): median YCrCb and a tolerance of
    SKIN_SPREADS robust spreads plus SKIN_TOLERANCE on Cr and Cb. None for a photo without colour
    (a black-and-white print: every grey would read as skin)."""
    ycrcb = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2YCrCb) if rgb.size else rgb
    samples = cheeks(ycrcb.astype(np.float32), np.asarray(five, np.float64))
    median = np.median(samples, axis=0)
    spread = np.median(np.abs(samples - median), axis=0) * 1.4826
    tolerance = SKIN_SPREADS * spread[1:] + SKIN_TOLERANCE
    if max(abs(float(median[1]) - 128.0), abs(float(median[2]) - 128.0)) < MIN_SKIN_CHROMA:
        return None
    return Skin(median=tuple(float(v) for v in median), tolerance=(float(tolerance[0]), float(tolerance[1])))  # type: ignore[arg-type]


def hands_near_head(
    rgb: np.ndarray,
    alpha: np.ndarray,
    five: np.ndarray,
    *,
    chin_y: float,
    other_faces: list[tuple[float, float, float, float]] | None = None,
) -> tuple[float, np.ndarray]:
    """(skin area beside the head above the chin, in eye distances squared; its (H, W) bool mask).

    `rgb` (H, W, 3) uint8 and `alpha` (H, W) uint8 are the original and its person matte; `five`
    the face's five landmarks; `chin_y` the chin's row along the face's axis. Boxes in `other_faces`
    (other people's faces) are left out."""
    full = np.zeros(alpha.shape, bool)
    left, right = five[0], five[1]
    iod = eye_distance(five)
    if iod < 1.0:
        return 0.0, full
    # only a window about the head is read: REACH_IOD eye distances each way from the eye midpoint
    reach = REACH_IOD * iod + abs(chin_y - float(left[1] + right[1]) / 2.0)
    mid_x, mid_y = float(left[0] + right[0]) / 2.0, float(left[1] + right[1]) / 2.0
    wx0, wy0 = max(0, int(mid_x - reach)), max(0, int(mid_y - reach))
    wx1, wy1 = min(alpha.shape[1], int(math.ceil(mid_x + reach))), min(alpha.shape[0], int(math.ceil(mid_y + reach)))
    if wx1 - wx0 < 2 or wy1 - wy0 < 2:
        return 0.0, full
    offset = np.array([wx0, wy0], np.float32)
    rgb, alpha, five = rgb[wy0:wy1, wx0:wx1], alpha[wy0:wy1, wx0:wx1], np.asarray(five, np.float32) - offset
    chin_y -= wy0
    other_faces = [(x0 - wx0, y0 - wy0, x1 - wx0, y1 - wy0) for x0, y0, x1, y1 in other_faces or []]
    # measured at WORK_IOD px between the eyes (areas are in eye distances squared: the scale cancels)
    factor = min(1.0, WORK_IOD / iod)
    window = (wx1 - wx0, wy1 - wy0)
    if factor < 1.0:
        size = (max(2, round(window[0] * factor)), max(2, round(window[1] * factor)))
        rgb = cv2.resize(np.ascontiguousarray(rgb), size, interpolation=cv2.INTER_AREA)
        alpha = cv2.resize(np.ascontiguousarray(alpha), size, interpolation=cv2.INTER_AREA)
        five, chin_y, iod = five * factor, chin_y * factor, iod * factor
        other_faces = [tuple(v * factor for v in box) for box in other_faces]
    height, width = alpha.shape
    left, right = five[0], five[1]
    roll = math.atan2(float(right[1] - left[1]), float(right[0] - left[0]))
    mid = (left + right) / 2.0
    centre = np.mean(five[[0, 1, 3, 4]], axis=0)
    skin = face_skin(rgb, five)
    if skin is None:  # no colour to tell skin from hair or clothes
        return 0.0, full
    is_skin = skin.mask(rgb)
    # the face's frame: u across (along the eye line), v down (along the face's axis), from the eye midpoint
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    dx, dy = xs - mid[0], ys - mid[1]
    cos, sin = math.cos(roll), math.sin(roll)
    u = dx * cos + dy * sin
    v = -dx * sin + dy * cos
    centre_u = float((centre[0] - mid[0]) * cos + (centre[1] - mid[1]) * sin)
    chin_v = float(chin_y - mid[1])
    beside = (np.abs(u - centre_u) > HEAD_HALF_SPAN_IOD * iod) & (v < 0.8 * chin_v) & (v > -ABOVE_EYES_IOD * iod)
    mask = beside & is_skin & (alpha >= PERSON)
    clear_faces(mask, other_faces)  # another face, and its neck below it
    # the largest connected piece (scattered skin-coloured pixels of hair or clothes are not a hand)
    area, piece = largest_piece(mask, unit_px=iod, size=window)
    if piece is not None:
        full[wy0:wy1, wx0:wx1] = piece
    return area, full


def _load_eye_cascade() -> object | None:
    """OpenCV's Haar eye cascade from the wheel's data folder, or None where it ships none."""
    data = getattr(cv2, "data", None)
    classifier = getattr(cv2, "CascadeClassifier", None)
    if data is None or classifier is None:
        return None
    cascade = classifier(str(data.haarcascades) + "/haarcascade_eye.xml")
    return None if cascade.empty() else cascade


EYE_CASCADE = _load_eye_cascade()  # loaded once with the module (340 KB of XML), shared by the workers


def eyes_found(rgb: np.ndarray, five: np.ndarray) -> tuple[int, int] | None:
    """(eyes found, eyes looked for) by the Haar eye cascade in each eye's window of the (H, W, 3)
    uint8 RGB photo, the face scaled to EYE_IOD px between the eyes; None without a cascade."""
    if EYE_CASCADE is None:
        return None
    left, right = np.asarray(five[0], np.float64), np.asarray(five[1], np.float64)
    iod = eye_distance(np.asarray(five, np.float64))
    if iod < 4.0:
        return None
    scale = EYE_IOD / iod
    half_w, half_h = EYE_WINDOW[0] / 2.0 / scale, EYE_WINDOW[1] / 2.0 / scale
    found = 0
    for eye in (left, right):
        x0, y0 = max(0, int(eye[0] - half_w)), max(0, int(eye[1] - half_h))
        x1, y1 = min(rgb.shape[1], int(math.ceil(eye[0] + half_w))), min(rgb.shape[0], int(math.ceil(eye[1] + half_h)))
        if x1 - x0 < 4 or y1 - y0 < 4:
            continue
        grey = cv2.cvtColor(np.ascontiguousarray(rgb[y0:y1, x0:x1]), cv2.COLOR_RGB2GRAY)
        size = (max(8, round((x1 - x0) * scale)), max(8, round((y1 - y0) * scale)))
        window = cv2.resize(grey, size, interpolation=cv2.INTER_AREA if scale < 1.0 else cv2.INTER_LINEAR)
        hits = EYE_CASCADE.detectMultiScale(window, scaleFactor=1.05, minNeighbors=3, minSize=(16, 16))  # type: ignore[attr-defined]
        found += int(len(hits) > 0)
    return found, 2
