"""Eyeglasses, read from the bridge of the nose between the eyes (pure functions).

A pair of glasses crosses the nose between the eyes with its bridge: a level edge across the
nose's skin at about the eye line. Without glasses the strip between the eyes, from just under the
brows (BRIDGE_FROM_IOD above the eye line, the brows lying about 0.35-0.4 eye distances above it)
to BRIDGE_TO_IOD below, shades smoothly. The reading (`bridge_edge`) is the strongest step between
neighbouring rows of that strip's mean lightness (CIELAB L, 8-bit), in a copy levelled by the eye
line at WORK_IOD px between the eyes.

On the corpus (tests/test_glasses.py): the frames of hopper and row-glasses read 18 and 29; takeo's
thin frames 10; the faces without glasses at most 14 (connery's deep-set nose bridge), most under 7.
So: at or over GLASSES_EDGE, glasses; under NO_GLASSES_EDGE, none; between, the line cannot tell.

The lightness step is a contrast, not a tone: a frame on darker skin reads a smaller step, which
can leave glasses unseen (a pass the person is told to check where the authority refuses them),
never a face failed for its tone.
"""

from __future__ import annotations

import math

import numpy as np

from ..specs import Source
from .compliance import Check
from .opencv import cv2

WORK_IOD = 60.0
BRIDGE_HALF_WIDTH_IOD = 0.12  # the strip: this far either side of the face's centre line
BRIDGE_FROM_IOD = 0.25  # from this far above the eye line (under the brows)
BRIDGE_TO_IOD = 0.12  # to this far below it
GLASSES_EDGE = 15.0
NO_GLASSES_EDGE = 8.0

GLASSES_ADVICE = ("Take off your glasses: the authority refuses them, unless a doctor's statement says you must wear "
                  "them (see its words)")
UNDECIDED_ADVICE = "We cannot tell whether you wear glasses: if you do, take them off (the authority refuses them)"
CONDITIONS_ADVICE = ("Glasses are allowed on this photo with conditions (see the authority's words): no glare on the "
                     "lenses, no tinted lenses, the frames clear of your eyes; we cannot check those, so check them "
                     "yourself, or take the glasses off")


def bridge_edge(rgb: np.ndarray, five: np.ndarray) -> float:
    """The strongest level edge across the nose between the eyes (see the module docstring) of the
    face with landmarks `five` on (H, W, 3) uint8 `rgb`."""
    five = np.asarray(five, np.float64)
    left, right = five[0], five[1]
    iod = float(np.hypot(*(right - left)))
    if iod < 4.0:
        return 0.0
    roll = math.degrees(math.atan2(right[1] - left[1], right[0] - left[0]))
    mid = (left + right) / 2.0
    scale = WORK_IOD / iod
    size = (int(2 * WORK_IOD), int(2 * WORK_IOD))
    matrix = cv2.getRotationMatrix2D((float(mid[0]), float(mid[1])), roll, scale)
    matrix[:, 2] += (size[0] / 2.0 - mid[0], size[1] / 2.0 - mid[1])
    window = cv2.warpAffine(np.ascontiguousarray(rgb), matrix, size, flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REPLICATE)
    points = np.c_[five, np.ones(len(five))] @ matrix.T
    centre_x, eye_y = float(points[[0, 1, 3, 4], 0].mean()), float(points[:2, 1].mean())
    lightness = cv2.GaussianBlur(cv2.cvtColor(window, cv2.COLOR_RGB2LAB)[:, :, 0].astype(np.float32), (3, 3), 0)
    x0, x1 = int(centre_x - BRIDGE_HALF_WIDTH_IOD * WORK_IOD), int(centre_x + BRIDGE_HALF_WIDTH_IOD * WORK_IOD)
    y0, y1 = int(eye_y - BRIDGE_FROM_IOD * WORK_IOD), int(eye_y + BRIDGE_TO_IOD * WORK_IOD)
    profile = lightness[max(0, y0) : max(0, y1), max(0, x0) : max(0, x1)].mean(axis=1)
    return float(np.abs(np.diff(profile)).max()) if profile.size > 1 else 0.0


def glasses_seen(edge: float) -> bool | None:
    """True: glasses; False: none; None: cannot tell."""
    return True if edge >= GLASSES_EDGE else False if edge < NO_GLASSES_EDGE else None


def glasses_check(edge: float, *, policy: str, source: Source) -> Check:
    """The eyeglasses line. Where the authority refuses glasses (`policy` "forbidden"), a rule line:
    fails on glasses, undecided where it cannot tell, passes where none are seen. Otherwise an
    information line: where glasses are (or may be) seen, the authority's conditions to check."""
    seen = glasses_seen(edge)
    words = f"{source.title}{'' if source.url is None else ', ' + source.url}: \u201c{source.quote}\u201d"
    reading = (f"edge across the nose between the eyes: glasses at or over {GLASSES_EDGE:g}, none under "
               f"{NO_GLASSES_EDGE:g} (CIELAB L steps)")
    value = round(edge, 1)
    if policy == "forbidden":
        passed = None if seen is None else not seen
        advice = None if passed else GLASSES_ADVICE if passed is False else UNDECIDED_ADVICE
        return Check("eyeglasses", value, f"no glasses ({reading}); {words}", passed, kind="rule", advice=advice)
    return Check("eyeglasses", value, f"glasses allowed with conditions ({reading}); {words}", None, kind="info",
                 advice=None if seen is False else CONDITIONS_ADVICE)
