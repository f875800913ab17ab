"""The camera's live check (issue 52): the report's lines that a person in front of the camera can
still change, judged on one small frame (pure functions; the models' readings come in).

The frame is what the page's outline shows: the spec's aspect ratio, so the head's height and the
eye line are read as fractions of the frame's height against the spec's own bands (a little wider:
the ID photo crops and scales afterwards, the outline only has to bring the person near). No matte
runs: the plain wall is read around a silhouette drawn from the face's landmarks (the head, the
neck and the shoulders), the light and exposure on the aligned face (`quality.assess`), the pose,
the eyes and the mouth as the report reads them (`compliance`). Each line carries the report's words
(`wording.LINE_TITLES`) and, where it fails, the report's advice or the live advice
(`wording.LIVE_ADVICE`); the lines come most important first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import compliance, expression, quality
from .backdrop import measure_backdrop
from .head import SKULL_ABOVE_EYES_IOD, chin_row, eye_distance, eye_midpoint
from .opencv import cv2
from .pose import estimate_pose
from .wording import LIVE_ADVICE, line_title

# Most important first: what makes the photo impossible, then what the person fixes by moving, then
# the light and the wall, then the face's expression. A turn comes before the centring: a turned head
# moves the eyes' midpoint off the middle, so "move to the middle" would send the person the wrong way.
ORDER = ("face_count", "distance", "yaw_degrees", "centre_x", "eye_line", "roll_degrees", "pitch_degrees",
         "capture_lighting", "capture_exposure", "background_uniformity", "background_even", "eyes_open",
         "mouth_closed")
HEAD_SLACK = (0.9, 1.08)  # the spec's head band widened by these factors (the ID photo scales the head itself)
CENTRE_SLACK = 0.07  # of the frame's width: the eye midpoint this far from the middle is still centred
EYE_SLACK = 0.04  # of the frame's height, either side of the spec's eye-line band
HAIR_IOD = 0.6  # the silhouette's top above the skull estimate, in eye distances (hair)
HEAD_HALF_WIDTH_IOD = 1.5  # the silhouette's head half width, in eye distances (hair and ears)
# Below the eyes by this many eye distances (about the nose's tip) the silhouette takes the frame's
# whole width: lower down, beside the jaw and the neck, a collar, a hood, a suit's ring or the
# shoulders take the frame's sides in a head-and-shoulders frame, and their shape cannot be drawn
# from the face's landmarks. A landmark body there (the shoulders from 0.9 eye distances below the
# chin, the whole width from 1.8) left a space suit's neck ring and the shoulders' sides to be read
# as wall: a plain light wall behind a portrait framed to the outline failed both wall lines (texture
# 9-14, light spread 120-200) while the ID photo made from the same frame passed every wall line.
# So the live check judges the wall beside and above the head; the final report judges all of it.
BODY_BELOW_EYES_IOD = 0.5


@dataclass(frozen=True)
class Target:
    """What the frame is judged against: the spec's head height and eye line (fractions of the
    photo's height; the eye line from the bottom edge, None where the spec has none), its rules
    (pose limits, the mouth) and the wall colours its authority allows."""

    head_height: tuple[float, float]
    eye_line: tuple[float, float] | None
    rules: Any
    allowed: dict[str, tuple[int, int, int]]


@dataclass(frozen=True)
class Line:
    """One line of live guidance: the report line's name, pass (None: the measure cannot decide),
    the report's words for it and, unless it passes, what to do."""

    name: str
    passed: bool | None
    title: str
    advice: str | None = None
    value: float | str | None = None

    @property
    def holds(self) -> bool:
        """Whether this line lets the photo be taken (a smile where the spec allows one holds)."""
        return self.passed is True or (self.name == "mouth_closed" and self.passed is None)

    def to_dict(self) -> dict[str, object]:
        value = round(self.value, 3) if isinstance(self.value, float) else self.value
        return {"name": self.name, "pass": self.passed, "title": self.title, "advice": self.advice, "value": value}


def _from_check(check: compliance.Check) -> Line:
    value = check.value if isinstance(check.value, (float, int, str)) else None
    advice = None if check.passed is True else (check.advice or None)
    return Line(check.name, check.passed, line_title(check.name, check.passed), advice, value)


def _rank(line: Line) -> int:
    return ORDER.index(line.name)


def silhouette(shape: tuple[int, int], five: np.ndarray, *, chin_y: float) -> np.ndarray:
    """(H, W) uint8: 255 over where the person is likely to be (head with hair, and everything below
    the nose: see BODY_BELOW_EYES_IOD), drawn from the five landmarks alone, as the wall's measures'
    stand-in for a matte."""
    height, width = shape
    alpha = np.zeros((height, width), np.uint8)
    iod = eye_distance(five)
    cx, eye_y = eye_midpoint(five)
    top = eye_y - (SKULL_ABOVE_EYES_IOD + HAIR_IOD) * iod
    centre_y = (top + chin_y) / 2.0
    axes = (max(1, round(HEAD_HALF_WIDTH_IOD * iod)), max(1, round((chin_y - top) / 2.0)))
    cv2.ellipse(alpha, (round(cx), round(centre_y)), axes, 0.0, 0.0, 360.0, 255, -1)
    alpha[min(height, max(0, round(eye_y + BODY_BELOW_EYES_IOD * iod))):, :] = 255  # below it no wall is judged
    return alpha


def _geometry(shape: tuple[int, int], five: np.ndarray, chin_y: float, target: Target) -> list[Line]:
    height, width = shape
    iod = eye_distance(five)
    cx, eye_y = eye_midpoint(five)
    head = (chin_y - (eye_y - SKULL_ABOVE_EYES_IOD * iod)) / height
    low, high = target.head_height[0] * HEAD_SLACK[0], target.head_height[1] * HEAD_SLACK[1]
    if head < low:
        distance = Line("distance", False, line_title("distance", False), LIVE_ADVICE["far"], head)
    elif head > high:
        distance = Line("distance", False, line_title("distance", False, variant="close"), LIVE_ADVICE["close"], head)
    else:
        distance = Line("distance", True, line_title("distance", True), None, head)
    off = cx / width - 0.5
    centred = abs(off) <= CENTRE_SLACK
    lines = [distance, Line("centre_x", centred, line_title("centre_x", centred), None if centred else LIVE_ADVICE["centre"],
                            off)]
    if target.eye_line is not None:
        above = (height - eye_y) / height
        on_line = target.eye_line[0] - EYE_SLACK <= above <= target.eye_line[1] + EYE_SLACK
        lines.append(Line("eye_line", on_line, line_title("eye_line", on_line),
                          None if on_line else LIVE_ADVICE["eye_line"], above))
    return lines


def judge_frame(rgb: np.ndarray, *, people: list[tuple[tuple[float, float, float, float], np.ndarray]],
                chin: np.ndarray | None, mouth_openness: float | None, target: Target, wall: bool = True) -> list[Line]:
    """The live lines of one (H, W, 3) uint8 RGB frame, most important first. `people`: (box, five
    landmarks) of each face that counts as a person, the sitter (the largest) first; `chin`: the
    dense landmarks' menton (x, y) px where they ran; `mouth_openness`: theirs (None: not read).
    `wall`: judge the wall (the photo keeps it); False where a new background replaces it, as the
    final report then judges the new one instead."""
    if not people:
        return [Line("face_count", False, line_title("face_count", False), LIVE_ADVICE["no_face"], 0)]
    box, five = people[0]
    five = np.asarray(five, np.float64)
    one = len(people) == 1
    lines = [Line("face_count", one, line_title("face_count", one), None if one else LIVE_ADVICE["faces"], len(people))]
    chin_y = chin_row(five, chin)
    lines += _geometry(rgb.shape[:2], five, chin_y, target)
    lines += [_from_check(check) for check in compliance.pose_checks(estimate_pose(five), target.rules)]
    capture = compliance.capture_checks(quality.assess(rgb, box=box, landmarks=five))
    lines += [_from_check(check) for check in capture if check.name in ("capture_lighting", "capture_exposure")]
    if wall:
        backdrop = measure_backdrop(rgb, silhouette(rgb.shape[:2], five, chin_y=chin_y),
                                    np.zeros(rgb.shape[:2], np.uint8), chin_y=chin_y)
        kept = compliance.photographed_background_checks(backdrop, allowed=target.allowed, other_faces=0)
        lines += [_from_check(check) for check in kept if check.name in ("background_uniformity", "background_even")]
    eyes = expression.eyes_found(rgb, five)
    if eyes is not None:
        lines.append(_from_check(compliance.eyes_check(eyes)))
    if mouth_openness is not None:
        mouth = compliance.mouth_check(mouth_openness, required=target.rules.mouth_closed)
        lines.append(Line("mouth_closed", mouth.passed, line_title("mouth_closed", mouth.passed), mouth.advice,
                          round(mouth_openness, 3)))
    return sorted(lines, key=_rank)


def ready(lines: list[Line]) -> bool:
    """Every line holds: the photo may be taken."""
    return bool(lines) and all(line.holds for line in lines)


def first_advice(lines: list[Line]) -> str | None:
    """What to do first: the advice of the most important line that does not hold."""
    return next((line.advice or line.title for line in lines if not line.holds), None)
