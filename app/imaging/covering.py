"""A hat, cap or other covering on the head, read from what lies above the hair line (pure functions).

What is read, in the face's own frame (levelled by the eye line, in eye distances, `iod`):

* the zone above the hair line: the person's pixels from the outline's top down to HAIRLINE_IOD
  above the eyes (a forehead's hair line lies about 1.1-1.3 eye distances above them), within
  ZONE_HALF_WIDTH_IOD of the face's centre line;
* `rise`: how far the outline's top stands above the eyes. A skull's top is about 1.5 eye distances
  above them (`head.SKULL_ABOVE_EYES_IOD`); hair adds a little; a bun, voluminous hair or a covering
  adds more;
* `contrast`: the zone split into its two most different colours (two-means in CIELAB, OpenCV 8-bit),
  the distance between them, and `minor`, the smaller colour's share. Hair is one material: its
  highlights and shadows lie within about 70 of each other on the corpus's frontal portraits (the
  highest, 68, a brown bob in sunlight); a cap's white crown over its navy band lies 191 apart
  (hopper), a hand on the forehead 142.

The verdict (`covering_verdict`): two materials as different as CONTRAST_COVERING, each at least
MIN_MINOR of the zone, is a covering (or something else on the head): the line fails. A contrast
between HAIR_CONTRAST and that, or an outline standing more than MAX_HAIR_RISE_IOD above the eyes
(where hair and a covering of its colour cannot be told apart), is undecided. A covering of the
hair's own colour, fitting as close as hair, cannot be told from hair by these measures: it passes,
and the module says so here rather than on the page as a certainty.

No skin colour is read: the zone lies above the hair line, and the measure is a contrast within it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..specs import Source
from .compliance import Check
from .opencv import cv2

PERSON = 200  # alpha at or above this is surely the person (soft hair edges left out)
HAIRLINE_IOD = 1.3  # the zone ends this far above the eye line (the hair line, forehead below it)
ZONE_HALF_WIDTH_IOD = 0.7  # ... and reaches this far either side of the face's centre line
ROW_SHARE = 0.3  # the outline's top: the first row whose zone columns are this share person
MIN_ZONE_PX = 50  # fewer person pixels above the hair line: nothing there to cover (close-cropped, bald)
WORK_IOD = 60.0  # px between the eyes at which the zone is read (larger faces are scaled down)
HAIR_CONTRAST = 70.0  # two colours closer than this above the hair line are one material (hair)
CONTRAST_COVERING = 120.0  # two colours this far apart, both substantial: a covering
MIN_MINOR = 0.15  # the smaller colour's share of the zone for the two to count as two materials
MAX_HAIR_RISE_IOD = 2.6  # an outline this far above the eyes: voluminous hair, a bun or a covering

COVERING_ADVICE = ("Take off the hat, cap or other head covering, unless you wear it every day for religious or "
                   "medical reasons (the authority's words below say what it then asks)")
UNDECIDED_ADVICE = ("Something stands high above your head, or its top holds two colours, and we cannot tell hair "
                    "from a head covering: if it is a hat, cap or scarf, take it off (unless you wear it for religious "
                    "or medical reasons); if it is your hair, check it yourself")


@dataclass(frozen=True)
class CoveringReading:
    """What lies above the hair line (see the module docstring): `rise` (iod), `contrast` (CIELAB
    8-bit), `minor` (share), `zone_px` (person pixels in the zone, at WORK_IOD)."""

    rise: float
    contrast: float
    minor: float
    zone_px: int


def levelled_head(rgb: np.ndarray, alpha: np.ndarray, five: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float, float]:
    """(rgb, alpha, eye row, centre column, iod) of a window around the head, levelled by the eye line
    and scaled to at most WORK_IOD px between the eyes."""
    five = np.asarray(five, np.float64)
    left, right = five[0], five[1]
    iod = float(np.hypot(*(right - left)))
    roll = math.degrees(math.atan2(right[1] - left[1], right[0] - left[0]))
    mid = (left + right) / 2.0
    scale = min(1.0, WORK_IOD / max(iod, 1e-6))
    half = 3.5 * iod
    size = (max(2, int(round(2 * half * scale))), max(2, int(round(2 * half * scale))))
    matrix = cv2.getRotationMatrix2D((float(mid[0]), float(mid[1])), roll, scale)
    matrix[:, 2] += (size[0] / 2.0 - mid[0], size[1] / 2.0 - mid[1])
    window_rgb = cv2.warpAffine(np.ascontiguousarray(rgb), matrix, size, flags=cv2.INTER_AREA, borderValue=0)
    window_alpha = cv2.warpAffine(np.ascontiguousarray(alpha), matrix, size, flags=cv2.INTER_LINEAR, borderValue=0)
    points = np.c_[five, np.ones(len(five))] @ matrix.T
    centre_x = float(points[[0, 1, 3, 4], 0].mean())
    return window_rgb, window_alpha, float(points[:2, 1].mean()), centre_x, iod * scale


def two_colours(pixels: np.ndarray, *, rounds: int = 12) -> tuple[float, float]:
    """(distance between the two means, the smaller group's share) of (N, 3) float pixels split by
    two-means, started deterministically from the two pixels farthest apart along the spread."""
    first = pixels[np.argmax(np.linalg.norm(pixels - pixels.mean(axis=0), axis=1))]
    second = pixels[np.argmax(np.linalg.norm(pixels - first, axis=1))]
    centres = np.stack([first, second]).astype(np.float64)
    nearer = np.zeros(len(pixels), bool)
    for _ in range(rounds):
        nearer = np.linalg.norm(pixels - centres[1], axis=1) < np.linalg.norm(pixels - centres[0], axis=1)
        if nearer.all() or not nearer.any():
            return 0.0, 0.0
        centres = np.stack([pixels[~nearer].mean(axis=0), pixels[nearer].mean(axis=0)])
    share = float(nearer.mean())
    return float(np.linalg.norm(centres[0] - centres[1])), min(share, 1.0 - share)


def read_covering(rgb: np.ndarray, alpha: np.ndarray, five: np.ndarray) -> CoveringReading | None:
    """The reading above the hair line of the face with landmarks `five` on (H, W, 3) uint8 `rgb`
    with its person matte `alpha` (H, W) uint8; None where no outline stands above the eyes."""
    window_rgb, window_alpha, eye_y, centre_x, iod = levelled_head(rgb, alpha, five)
    x0 = max(0, int(round(centre_x - ZONE_HALF_WIDTH_IOD * iod)))
    x1 = min(window_alpha.shape[1], int(round(centre_x + ZONE_HALF_WIDTH_IOD * iod)))
    person = window_alpha[:, x0:x1] >= PERSON
    rows = np.flatnonzero(person[: max(0, int(eye_y))].mean(axis=1) >= ROW_SHARE) if x1 > x0 else np.array([])
    if rows.size == 0:
        return None
    top = int(rows[0])
    bottom = max(top, int(round(eye_y - HAIRLINE_IOD * iod)))
    zone = person[top:bottom]
    lab = cv2.cvtColor(window_rgb, cv2.COLOR_RGB2LAB)[top:bottom, x0:x1]
    pixels = lab[zone].astype(np.float64)
    rise = (eye_y - top) / iod
    if len(pixels) < MIN_ZONE_PX:
        return CoveringReading(rise=rise, contrast=0.0, minor=0.0, zone_px=len(pixels))
    contrast, minor = two_colours(pixels)
    return CoveringReading(rise=rise, contrast=contrast, minor=minor, zone_px=len(pixels))


def covering_verdict(reading: CoveringReading | None) -> bool | None:
    """False: a covering; None: cannot tell hair from a covering; True: hair (or nothing) above the line."""
    if reading is None:
        return True
    two_materials = reading.minor >= MIN_MINOR
    if two_materials and reading.contrast >= CONTRAST_COVERING:
        return False
    if (two_materials and reading.contrast >= HAIR_CONTRAST) or reading.rise > MAX_HAIR_RISE_IOD:
        return None
    return True


def covering_check(reading: CoveringReading | None, source: Source) -> Check:
    """The line "No hat or head covering": fails on a covering, undecided where hair cannot be told
    from one (never a pass then); `allowed` carries the authority's words (`source`; kind "none"
    where none were found, and the words say so)."""
    passed = covering_verdict(reading)
    value = None if reading is None else {"rise_iod": round(reading.rise, 2), "contrast": round(reading.contrast, 1),
                                          "minor_share": round(reading.minor, 2)}
    where = source.title if source.url is None else f"{source.title}, {source.url}"
    allowed = (f"no hat or head covering (two colours above the hair line under {HAIR_CONTRAST:g} apart in CIELAB, "
               f"outline under {MAX_HAIR_RISE_IOD:g} eye distances above the eyes; {CONTRAST_COVERING:g} apart: a "
               f"covering); {where}: \u201c{source.quote}\u201d")
    advice = None if passed else COVERING_ADVICE if passed is False else UNDECIDED_ADVICE
    return Check("head_covering", value, allowed, passed, kind="rule", advice=advice)
