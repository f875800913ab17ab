"""Head pose (yaw, pitch, roll) from the detector's 5 landmarks: a documented geometric estimate.

Pure functions on numpy arrays; landmarks in insightface order (left eye, right eye, nose tip, left
mouth corner, right mouth corner), image px, y down.

* roll: the eye line's angle (positive when the eye on the image's right is lower).
* The points are levelled by the roll about the eye midpoint first; then, with IOD the distance
  between the eyes, E the eye midpoint and M the mouth-corner midpoint:
* yaw: the nose tip's horizontal offset from the face's midline (the line E-M, read at the nose's
  height), over IOD. A nose tip standing NOSE_DEPTH_IOD * IOD in front of the eye/mouth plane moves
  sideways by depth * sin(yaw) while IOD shrinks by cos(yaw): offset / IOD = NOSE_DEPTH_IOD * tan(yaw).
* pitch: where the nose tip sits between the eye line and the mouth line, r = (N.y - E.y) /
  (M.y - E.y). Frontal, r = FRONTAL_NOSE_RATIO; tipping the chin up by pitch moves the nose tip up
  by depth * sin(pitch) while the eye-mouth height shrinks by cos(pitch):
  r = FRONTAL_NOSE_RATIO - (NOSE_DEPTH_EYE_MOUTH) * tan(pitch). Positive pitch = chin up.

The depths come from the generic 3D head model widely used for 6-point head-pose estimation with
OpenCV (S. Mallick, "Head Pose Estimation using OpenCV and Dlib", LearnOpenCV, 2016: nose tip
(0, 0, 0), outer eye corners (+-225, 170, -135), mouth corners (+-150, -150, -125), arbitrary units):
pupils lie about 0.7 of the outer-corner span apart (315 units) -> nose depth / IOD = 135 / 315 =
0.43; eye-to-mouth height 320 units, mean depth 130 -> depth / eye-mouth height = 0.41; the model's
frontal ratio is 170 / 320 = 0.53.

Calibration: on the corpus portraits that look straight at the camera (scikit-image's astronaut,
and tests/support/corpus.py's obama, obama-standing and takeo), CenterFace's refined landmarks put the nose
tip at r = 0.545, 0.550, 0.537 and 0.591 of the way from the eye line to the mouth line (mean
0.556), above the model's 0.53: the detector's nose point sits a little lower than the model's
tip. FRONTAL_NOSE_RATIO is that mean, 0.556 (the astronaut alone would give 0.545, about 1.5
degrees from it). Yaw needs no offset (on a symmetric face the nose is on the midline; the
astronaut reads +0.5 degrees). These are estimates to about +-4 degrees: enough to tell a turned
head (20-60 degrees) from a frontal one, not to grade a 5-degree turn.

How sure the estimate is (UNCERTAINTY_DEG, about 95 %: twice one reading's standard deviation),
measured by `python -m bench.idphoto --pose-consistency` on the real-photo corpus: a photo and its
mirror image must read opposite yaws and rolls and equal pitches, so the spread of yaw(photo) +
yaw(mirror) is sqrt(2) times one reading's. On the corpus (20 single-face portraits) twice one
reading's spread came to 4.4 degrees for yaw, 3.1 for pitch and 4.3 for roll. On the corpus of
issue 23 (44 single-face portraits) the mirror gives yaw 4.7, pitch 3.2, roll 4.0.

The mirror cannot see a bias that a photo and its mirror image share: the nose's real depth, a
face's own asymmetry, a smile pulling the mouth corners. On the single-face portraits labelled
frontal by eye, the mirror-averaged yaw spreads with a standard deviation of 6.9 degrees (up to
15 degrees on a frontal full-length photo): that is the estimate's error on real faces, not head
turn. So the yaw uncertainty is twice the root sum of squares of one reading's noise and that
spread, 14.6 degrees (15 rounded up). Pitch has the same blind spot, and a smile or an open mouth
moves the mouth corners it reads (issue 23: the same man read 10 degrees chin-up laughing and -1
to 0 in his other frames): its frontal spread is 4.1 degrees, so its uncertainty is 8.8 (9 rounded
up), measured on 30 frontal portraits of the corpus. Roll keeps the mirror's figure. Issue 23 asked
whether the 68 dense landmarks read the pose better: the geometric readings they allow (the nose
against the eyes and the jaw, the nose between the jaw's sides) spread as much or more over the
frontal portraits (the nose against the ear-level jaw points: 8 degrees sd), so the 5 points stayed.
Issue 51 found why: that spread is the frontal-labelled heads' own turn, which independent cues agree
on to 2 degrees; where the 68 points were read, the yaw is now a generic 3D face fitted to them, with
a 5-degree uncertainty (app.imaging.dense_pose); the pitch stays this module's. The constants are those rounded
up to the half degree; tests/test_corpus.py re-measures them (`python -m bench.idphoto
--pose-consistency`) and fails when the corpus shows more spread than the constants allow. With
five landmarks this is the honest size of the doubt: a head turned 15-19 degrees gets "check it
yourself", not a refusal, and only a turn the estimate is sure of fails.

How a limit is judged with that uncertainty (the decision rule of ISO 14253-1 for a measured
value against a tolerance): within the limit, the line passes; beyond the limit by more than
the uncertainty, it fails (the head is turned, whatever the error); in between, the estimate
cannot tell, and the line says so (pass None: "check it yourself") rather than refusing a photo
that an officer could accept or passing one that an officer could refuse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .head import eye_distance, roll_degrees

NOSE_DEPTH_IOD = 0.43
NOSE_DEPTH_EYE_MOUTH = 0.41
FRONTAL_NOSE_RATIO = 0.556
UNCERTAINTY_DEG = {"yaw": 15.0, "pitch": 9.0, "roll": 4.5}


@dataclass(frozen=True)
class Pose:
    yaw: float  # degrees, positive when the nose points to the image's right
    pitch: float  # degrees, positive chin up
    roll: float  # degrees, positive when the eye on the image's right is lower
    # how sure the yaw is (degrees, about 95 %) where the 68 dense points read it (dense_pose); None:
    # this module's UNCERTAINTY_DEG
    yaw_uncertainty: float | None = None

    def uncertainty(self, axis: str) -> float:
        """The uncertainty (degrees, about 95 %) of "yaw", "pitch" or "roll" as this estimate read it."""
        own = self.yaw_uncertainty if axis == "yaw" else None
        return UNCERTAINTY_DEG[axis] if own is None else own


def estimate_pose(landmarks: np.ndarray) -> Pose:
    points = np.asarray(landmarks, dtype=np.float64)
    roll = roll_degrees(points)
    theta = math.radians(-roll)
    rotation = np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])
    eye_mid = (points[0] + points[1]) / 2.0
    level = (points - eye_mid) @ rotation.T  # eye midpoint at the origin, eyes on y = 0
    iod = eye_distance(level)
    mouth = (level[3] + level[4]) / 2.0
    nose = level[2]
    if iod <= 0 or mouth[1] <= 0:
        return Pose(yaw=0.0, pitch=0.0, roll=roll)
    along = nose[1] / mouth[1]  # the nose's place between eye line (0) and mouth line (1)
    midline_x = along * mouth[0]
    yaw = math.degrees(math.atan((nose[0] - midline_x) / iod / NOSE_DEPTH_IOD))
    pitch = math.degrees(math.atan((FRONTAL_NOSE_RATIO - along) / NOSE_DEPTH_EYE_MOUTH))
    return Pose(yaw=yaw, pitch=pitch, roll=roll)


def judge(value: float, limit: float, uncertainty: float) -> bool | None:
    """The decision rule above: True within `limit` (either way), False beyond it by more than
    `uncertainty`, None in between (the estimate cannot tell)."""
    size = abs(value)
    if size <= limit:
        return True
    if size > limit + uncertainty:
        return False
    return None
