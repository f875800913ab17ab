"""The head's roll from the 68 dense landmarks' eyes, where the landmark net ran.

The 5-point roll (`pose.estimate_pose`: the angle between CenterFace's two eye points) is good to
UNCERTAINTY_DEG["roll"] = 4.5 degrees: a photo and its mirror image read rolls that disagree by
that much (about 95 %). The eye centres of the 68 points (the means of the six points around each
eye, 36-41 and 42-47) are steadier: on the corpus's 44 single-face portraits and their mirror
images (tests/test_dense_roll.py measures it as judge.pose_consistency does) the mismatch's
standard deviation is 1.77 degrees against 2.94 for the 5 points, so twice one reading's spread
is 2.5 degrees against 4.2 (DENSE_ROLL_UNCERTAINTY_DEG is that rounded up to the half degree, with
room: 3.0). On the two portraits whose eyes are known
(the astronaut, roll 2.0; takeo's annotation, 1.36) the dense eyes read 2.9 and 1.4.

On the corpus's 30 frontal portraits judged against an 8-degree limit, the 5 points leave 5 roll
lines undecided; the dense eyes none (group-brunette passes; four heads tilted by 11-15 degrees,
three of them labelled tilted by eye, fail). tests/test_dense_roll.py re-measures the spread.

Pure: (68, 2) points in, degrees out (positive when the eye on the image's right is lower).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .pose import Pose

DENSE_ROLL_UNCERTAINTY_DEG = 3.0


def eye_line_roll(points: np.ndarray) -> float:
    """Degrees of the line between the two eyes' centres (the means of points 36-41 and 42-47)."""
    left, right = points[36:42].mean(axis=0), points[42:48].mean(axis=0)
    return math.degrees(math.atan2(float(right[1] - left[1]), float(right[0] - left[0])))


def with_dense_roll(pose: Pose, dense_roll: float | None) -> tuple[Pose, float | None]:
    """(`pose` with the dense eyes' roll, DENSE_ROLL_UNCERTAINTY_DEG) where `dense_roll` was read,
    else (`pose`, None: the 5-point roll keeps its own uncertainty)."""
    if dense_roll is None:
        return pose, None
    return replace(pose, roll=dense_roll), DENSE_ROLL_UNCERTAINTY_DEG
