"""Issue 51, item 3: the yaw read from the 68 dense landmarks (a generic 3D face fitted to them), with its
own uncertainty, calibrated on poses we know: the generic face projected at known angles, each corpus
portrait against its mirror image (opposite yaw), two cues that share no bias (the nose and the jaw's
outline), and the corpus's labels by eye (turned heads must not pass)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from app.imaging.compliance import pose_checks
from app.imaging.dense_pose import DENSE_YAW_UNCERTAINTY_DEG, fit_angles, head_pose, project
from app.imaging.eye_line_roll import DENSE_ROLL_UNCERTAINTY_DEG, eye_line_roll
from app.imaging.face_model68 import MIRROR_68, mean_shape
from app.imaging.pose import UNCERTAINTY_DEG, Pose, estimate_pose, judge
from app.models.landmarks68 import five_points
from app.specs import get_spec
from tests.support.pose_readings import cue_disagreement, load_models, read_corpus, spread

KNOWN = [(0.0, 0.0, 0.0), (12.0, 0.0, 0.0), (-25.0, 0.0, 3.0), (0.0, 10.0, 0.0), (0.0, -15.0, -6.0), (20.0, -8.0, 5.0),
         (-35.0, 12.0, -2.0)]


def shown(yaw: float, pitch: float, roll: float) -> np.ndarray:
    """The generic face at a known pose: (68, 2) px, eyes about 100 px apart, centred near (400, 300)."""
    shape = mean_shape()
    assert shape is not None, "insightface's meanshape_68.pkl is installed with the app's requirements"
    return project(shape, yaw, pitch, roll, 190.0, np.array([400.0, 300.0]))


def mirrored(points: np.ndarray, width: float = 800.0) -> np.ndarray:
    """The points of the same face in the image mirrored left to right: x flipped, each point's partner
    on the other side taking its place (as the landmark net names them on a mirrored photo)."""
    flipped = points.copy()
    flipped[:, 0] = width - 1 - flipped[:, 0]
    return flipped[list(MIRROR_68)]


def test_the_generic_face_is_read_and_symmetric() -> None:
    shape = mean_shape()
    assert shape is not None and shape.shape == (68, 3)
    assert np.allclose(shape[list(MIRROR_68)] * np.array([-1.0, 1.0, 1.0]), shape)
    assert shape[30, 2] > shape[36:48, 2].mean() > shape[0, 2]  # nose tip in front of the eyes, ears behind


@pytest.mark.parametrize(("yaw", "pitch", "roll"), KNOWN)
def test_the_fit_reads_a_known_pose(yaw: float, pitch: float, roll: float) -> None:
    found = fit_angles(shown(yaw, pitch, roll), mean_shape())
    assert found == pytest.approx((yaw, pitch, roll), abs=0.05)


@pytest.mark.parametrize(("yaw", "pitch", "roll"), KNOWN)
def test_the_mirror_reads_the_opposite_yaw(yaw: float, pitch: float, roll: float) -> None:
    found = fit_angles(mirrored(shown(yaw, pitch, roll)), mean_shape())
    assert found == pytest.approx((-yaw, pitch, -roll), abs=0.05)


@pytest.mark.parametrize("yaw", [20.0, -20.0, 8.0])
def test_the_fit_turns_the_way_the_five_points_do(yaw: float) -> None:
    """The same convention and scale as pose.estimate_pose (yaw positive with the nose to the image's
    right): the five points taken from the generic face projected at a known yaw read it within 20 % (the
    two generic heads give the nose different depths: 8 degrees reads 9.2, 20 reads 22.8)."""
    points = shown(yaw, 0.0, 0.0)
    five = estimate_pose(five_points(points))
    fitted = head_pose(five, points)
    assert fitted.yaw == pytest.approx(yaw, abs=0.05)
    assert five.yaw == pytest.approx(yaw, rel=0.2)


def test_a_pose_judged_with_its_own_uncertainty() -> None:
    rules = get_spec("cn-1inch").rules
    limit = rules.max_yaw_deg
    seen = Pose(yaw=limit + DENSE_YAW_UNCERTAINTY_DEG + 1.0, pitch=0.0, roll=0.0)
    assert {c.name: c for c in pose_checks(seen, rules)}["yaw_degrees"].passed is None  # within the 5 points' 15
    dense = replace(seen, yaw_uncertainty=DENSE_YAW_UNCERTAINTY_DEG)
    line = {c.name: c for c in pose_checks(dense, rules)}["yaw_degrees"]
    assert line.passed is False and f"+-{DENSE_YAW_UNCERTAINTY_DEG:g}" in line.allowed
    assert dense.uncertainty("pitch") == UNCERTAINTY_DEG["pitch"] and dense.uncertainty("roll") == UNCERTAINTY_DEG["roll"]
    assert head_pose(seen, None) is seen
    fitted = head_pose(seen, shown(3.0, 0.0, 0.0))
    assert fitted.yaw == pytest.approx(3.0, abs=0.05) and fitted.yaw_uncertainty == DENSE_YAW_UNCERTAINTY_DEG
    assert (fitted.pitch, fitted.roll) == (seen.pitch, seen.roll)


@pytest.fixture(scope="module")
def readings(model_home: Path) -> list:
    from tests.support import corpus

    corpus.fetch(None)  # fails, never skips, where the archives cannot be fetched
    return read_corpus(*load_models(model_home))


def test_the_dense_yaw_uncertainty_covers_the_corpus(readings: list) -> None:
    """Each portrait and its mirror image, read as the pipeline reads its input: twice the root sum of
    squares of one reading's noise (the mirror) and of the nose and jaw cues' disagreement on the
    frontal portraits must stay within DENSE_YAW_UNCERTAINTY_DEG (measured when it was set: 1.56 and
    1.67, 4.6 in all), the zero must hold (photo and mirror cancel), and the scale must be the 5-point
    estimate's (measured: slope 0.90)."""
    assert len(readings) >= 40 and all(r.photo[1] is not None for r in readings)
    figures = spread(readings, "yaw", 2)
    cues = cue_disagreement(readings)
    assert figures["frontal"] >= 25, figures
    uncertainty = 2.0 * math.hypot(figures["noise_sd"], cues["residual_sd"])
    assert 0 < uncertainty <= DENSE_YAW_UNCERTAINTY_DEG < UNCERTAINTY_DEG["yaw"], (figures, cues)
    assert abs(figures["mismatch_mean"]) <= 2.5 * figures["noise_sd"] / math.sqrt(figures["pairs"]), figures
    assert 0.75 <= cues["five_slope"] <= 1.15, cues
    # the frontal portraits' spread is the heads' own turn: both cues see it, far beyond their disagreement
    assert cues["frontal_sd"] > 2.0 * cues["residual_sd"], cues


def test_turned_heads_do_not_pass_and_fewer_frontal_lines_are_undecided(readings: list) -> None:
    """Against ISO's 5 degrees (the Chinese 1-inch and 2-inch specs'): no portrait labelled turned by eye
    passes every pose line (roll read on the dense eyes, as the report reads it), and fewer frontal
    portraits are left undecided on yaw than the 5 points left."""
    rules = get_spec("cn-1inch").rules
    limits = {"yaw": rules.max_yaw_deg, "pitch": rules.max_pitch_deg}

    def lines(pose: Pose) -> list[bool | None]:
        return [judge(getattr(pose, axis), limits[axis], pose.uncertainty(axis)) for axis in limits]

    frontal = [r for r in readings if r.expect == "photo"]
    before = [r.name for r in frontal if lines(r.photo[0])[0] is None]
    after = [r.name for r in frontal if lines(r.photo[2])[0] is None]
    assert len(after) < len(before), (before, after)
    for r in readings:
        if r.expect != "turned":
            continue
        roll = judge(eye_line_roll(r.photo[1]), rules.max_roll_deg, DENSE_ROLL_UNCERTAINTY_DEG)
        assert not all(v is True for v in [*lines(r.photo[2]), roll]), (r.name, r.photo[2])
