"""The head's yaw from the 68 dense landmarks, where the landmark net ran: a generic 3D face fitted to them.

The 5-point estimate (app.imaging.pose) reads yaw from one point, the nose tip, against the eyes and
mouth corners: 15 degrees of uncertainty, so against ISO's 5-degree limit anything read between 5
and 20 degrees is left undecided. Here the generic face of app.imaging.face_model68 (68 points in 3D,
symmetric) is turned, scaled and shifted until its projection lands on the points read on the photo
(least squares, scaled orthographic projection: a portrait's depth is small against its distance to
the camera). The fit uses FIT_POINTS, the nose (27-35) and the eyes (36-47): rigid points that stand
at known depths. The jaw line is left out: the net puts it on the face's outline, which slides round
the head as it turns, so a fit that holds it reads 0.58 of the turn the nose reads (on the corpus,
the slope of one against the other), where the generic face projected at known angles reads them
exactly (tests/test_dense_pose.py). The brows and lips move with the expression.

Angles as app.imaging.pose.Pose gives them: yaw positive when the nose points to the image's right.

Calibrated on poses we know (tests/test_dense_pose.py and `python -m bench.pose` re-measure it; the
figures below are from the corpus's 52 portraits that show a face, 30 of them labelled frontal by eye):
* the generic face projected at known angles (yaw, pitch and roll together) reads them to 0.05
  degrees, and its mirror image reads the opposite yaw;
* zero: the generic face is symmetric, so a symmetric face reads 0: each photo and its mirror image
  must read opposite yaws; the mean of yaw(photo) + yaw(mirror), halved, is +0.08 degrees, within
  one reading's noise (no offset is taken off, YAW_ZERO_DEG = 0);
* scale: against the 5-point estimate, whose depths come from another generic head (pose.py), the
  slope is 0.90 (correlation 0.98 over the corpus).

How sure (DENSE_YAW_UNCERTAINTY_DEG, about 95 %): one reading's noise, from the mirror (the spread of
yaw(photo) + yaw(mirror) over sqrt 2): 1.56 degrees; and what the mirror cannot see (a face's own
asymmetry, a nose set off the face's midline): the disagreement between two cues that share none of
it, the nose against the eyes (this fit) and the jaw's outline against the eyes (the same fit on
points 0-16 and 36-47, scaled to this one), over the frontal portraits: 1.67 degrees sd. Twice the
root sum of squares is 4.6 degrees; the constant rounds it up to 5.0.

Where the 5-point estimate counted the frontal portraits' spread as its error (6.9 degrees sd), the
two cues agree on it to 1.7 degrees, and the 5-point estimate agrees with the jaw cue to 2.2: the
heads labelled frontal by eye are turned by that much (party-smile +17, obama-standing +13,
feat-pout -14 degrees read by the nose, +15, +15 and -15 by the jaw). That spread is the heads', not
the estimate's error.

Pitch stays the 5-point estimate's: on the frontal portraits the 68-point fit's pitch disagrees with
the 5-point one by 4.2 degrees sd (the nose cue against the jaw cue, both from the one net, by 3.7),
no better than the 5-point estimate's own spread (4.1), so it is not taken.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .face_model68 import mean_shape
from .pose import Pose

JAW = tuple(range(0, 17))
NOSE = tuple(range(27, 36))
EYES = tuple(range(36, 48))
FIT_POINTS: tuple[int, ...] = NOSE + EYES

YAW_ZERO_DEG = 0.0
DENSE_YAW_UNCERTAINTY_DEG = 5.0


def rotation(yaw: float, pitch: float, roll: float) -> np.ndarray:
    """The 3 x 3 rotation (radians) that turns the generic face by yaw, then pitch, then roll (x right,
    y down, z towards the camera)."""
    cy, sy, cp, sp, cr, sr = math.cos(yaw), math.sin(yaw), math.cos(pitch), math.sin(pitch), math.cos(roll), math.sin(roll)
    turn = np.array([[cy, 0.0, sy], [0.0, 1.0, 0.0], [-sy, 0.0, cy]])
    tip = np.array([[1.0, 0.0, 0.0], [0.0, cp, -sp], [0.0, sp, cp]])
    lean = np.array([[cr, -sr, 0.0], [sr, cr, 0.0], [0.0, 0.0, 1.0]])
    return lean @ tip @ turn


def project(shape: np.ndarray, yaw: float, pitch: float, roll: float, scale: float, shift: np.ndarray) -> np.ndarray:
    """(N, 2) image px of the (N, 3) shape turned (degrees), scaled and shifted (scaled orthographic)."""
    turned = shape @ rotation(math.radians(yaw), math.radians(pitch), math.radians(roll)).T
    return scale * turned[:, :2] + shift


def fit_angles(points: np.ndarray, shape: np.ndarray, subset: tuple[int, ...] = FIT_POINTS) -> tuple[float, float, float]:
    """(yaw, pitch, roll) degrees of the generic `shape` fitted to the (68, 2) px `points` on `subset`,
    uncalibrated (no zero taken off)."""
    from scipy.optimize import least_squares  # noqa: PLC0415 (scipy loads where a pose is read)

    index = list(subset)
    seen = np.asarray(points, np.float64)[index]
    model = shape[index]
    eyes = np.asarray(points, np.float64)
    across = eyes[42:48].mean(axis=0) - eyes[36:42].mean(axis=0)
    model_across = shape[42:48, :2].mean(axis=0) - shape[36:42, :2].mean(axis=0)
    scale0 = float(np.hypot(*across)) / float(np.hypot(*model_across))
    if not scale0 > 0:
        return 0.0, 0.0, 0.0
    centre = seen.mean(axis=0)
    size = scale0  # residuals in units of the model's (about an eye distance over 0.53)

    def residuals(p: np.ndarray) -> np.ndarray:
        yaw, pitch, roll, log_scale, dx, dy = p
        turned = model @ rotation(yaw, pitch, roll).T
        made = math.exp(log_scale) * turned[:, :2] + centre + np.array([dx, dy]) * size
        return ((made - seen) / size).ravel()

    roll0 = math.atan2(float(across[1]), float(across[0]))
    start = np.array([0.0, 0.0, roll0, math.log(scale0), 0.0, 0.0])
    found = least_squares(residuals, start, method="lm", x_scale=1.0)
    yaw, pitch, roll = (math.degrees(v) for v in found.x[:3])
    return yaw, pitch, roll


def dense_yaw(points: np.ndarray) -> float | None:
    """The yaw (degrees) of the generic face fitted to the (68, 2) px `points` on FIT_POINTS, less
    YAW_ZERO_DEG; None where the generic face is not installed."""
    shape = mean_shape()
    if shape is None:
        return None
    return fit_angles(points, shape)[0] - YAW_ZERO_DEG


def head_pose(five: Pose, dense: np.ndarray | None) -> Pose:
    """The pose a report judges: the 5-point `five`, its yaw read again on the 68 points where they were
    read (with DENSE_YAW_UNCERTAINTY_DEG); `five` as it is otherwise."""
    yaw = None if dense is None else dense_yaw(dense)
    return five if yaw is None else replace(five, yaw=yaw, yaw_uncertainty=DENSE_YAW_UNCERTAINTY_DEG)
