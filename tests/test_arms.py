"""Issue 45, item 3: hands and arms near the head, read from the person matte's outline (no colour).

A synthetic head and shoulders first; then the real corpus: every frontal portrait's own matte (the
service's models) must not trip the line, and the same mattes with an arm pasted beside or above the
head (tests/support/composites.py's ARM_POSES, the smallest plausible arm) must.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.imaging import arms
from app.imaging.compliance import Check
from tests.support import corpus
from tests.support.composites import ARM_POSES, arm_outline
from tests.support.sitters import corpus_sitters

pytestmark = pytest.mark.heavy  # the corpus through the models: collected first (conftest.py)

FIVE = np.array([[270, 300], [330, 300], [300, 335], [278, 362], [322, 362]], dtype=np.float64)  # 60 px apart
CHIN_Y = 400.0


def head_and_shoulders(shape: tuple[int, int] = (700, 600)) -> np.ndarray:
    """(H, W) uint8: an oval head with hair from 110 px above the eyes to the chin, a neck and
    shoulders 2.6 eye distances either side below it."""
    height, width = shape
    ys, xs = np.mgrid[0:height, 0:width]
    head = ((xs - 300) / 95.0) ** 2 + ((ys - 300) / 115.0) ** 2 <= 1.0
    neck = (np.abs(xs - 300) <= 45) & (ys >= 380) & (ys <= 460)
    shoulders = (ys >= 450) & (np.abs(xs - 300) <= 160 + (ys - 450) * 0.8)
    return np.where(head | neck | shoulders, 255, 0).astype(np.uint8)


def test_a_plain_head_and_shoulders_has_no_arm() -> None:
    area, mask = arms.arms_near_head(head_and_shoulders(), FIVE, chin_y=CHIN_Y)
    assert area < 0.2 and arms.arms_check(area).passed is True, area
    assert mask.sum() < 0.2 * 60 * 60


@pytest.mark.parametrize("pose", sorted(ARM_POSES))
@pytest.mark.parametrize("side", [-1, 1])
def test_an_arm_beside_or_above_the_head_fails_the_line(pose: str, side: int) -> None:
    matte = head_and_shoulders()
    arm = arm_outline(FIVE, CHIN_Y, pose, side, shape=matte.shape)
    matte[arm] = 255
    area, mask = arms.arms_near_head(matte, FIVE, chin_y=CHIN_Y)
    check = arms.arms_check(area)
    assert check.passed is False and check.kind == "rule", (pose, side, area)
    assert check.advice == arms.ARMS_ADVICE
    # the piece found is the arm's, on its side of the face
    xs = np.flatnonzero(mask.any(axis=0))
    assert (xs.mean() - 300) * side > 0


def test_the_line_names_its_source_as_ours() -> None:
    check = arms.arms_check(3.0)
    assert arms.ARMS_SOURCE.kind == "none" and arms.ARMS_SOURCE.title.startswith("pilotlight default:")
    assert arms.ARMS_SOURCE.quote in check.allowed and "no words of an authority" in check.allowed
    assert isinstance(check, Check) and check.to_dict()["kind"] == "rule"


def test_another_persons_face_beside_the_head_is_left_out() -> None:
    matte = head_and_shoulders()
    matte[250:400, 440:520] = 255  # a neighbour's head beside his
    area, _ = arms.arms_near_head(matte, FIVE, chin_y=CHIN_Y, other_faces=[(445.0, 270.0, 515.0, 360.0)])
    assert arms.arms_check(area).passed is True, area
    area, _ = arms.arms_near_head(matte, FIVE, chin_y=CHIN_Y)
    assert arms.arms_check(area).passed is False, "without its box, the neighbour is something beside the head"


# -- the real corpus ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_mattes(model_home: Path) -> list[tuple[corpus.Portrait, np.ndarray, object, float, list]]:
    """Each frontal or raised-hand portrait: (portrait, the chosen person's matte, face, chin row,
    other people's boxes), matted as the service mattes (tests/support/sitters.py)."""
    from app.imaging.head import chin_row

    return [(s.portrait, s.alpha, s.face, chin_row(s.face.landmarks, None), s.others) for s in corpus_sitters(model_home)]


def test_frontal_portraits_without_arms_do_not_trip_the_line(corpus_mattes: list) -> None:
    """False alarms on the corpus's frontal portraits (no hand raised): at most one (measured when the
    limit was set: none of 30; the highest reading 1.35, party-talking, a friend's knee above her)."""
    readings = {}
    for portrait, alpha, face, chin_y, others in corpus_mattes:
        if portrait.expect == "photo":
            area, _ = arms.arms_near_head(alpha, face.landmarks, chin_y=chin_y, other_faces=others)
            readings[portrait.name] = round(area, 2)
    tripped = {name: area for name, area in readings.items() if not arms.arms_check(area).passed}
    assert len(readings) >= 30
    assert len(tripped) <= 1, (tripped, readings)


def share_in_photo(five: np.ndarray, chin_y: float, pose: str, side: int, shape: tuple[int, int]) -> float:
    """How much of the arm lies inside a photo of `shape` (drawn on a canvas padded all round)."""
    pad = int(6 * float(np.hypot(*(five[1] - five[0]))))
    whole = arm_outline(five + pad, chin_y + pad, pose, side, shape=(shape[0] + 2 * pad, shape[1] + 2 * pad))
    return float(whole[pad : pad + shape[0], pad : pad + shape[1]].sum() / whole.sum())


def beside_others(boxes: list, shape: tuple[int, int]) -> np.ndarray:
    """(H, W) bool: the zones `arms_near_head` leaves out around other people's faces (and necks)."""
    zone = np.zeros(shape, bool)
    for x0, y0, x1, y1 in boxes:
        w, h = x1 - x0, y1 - y0
        zone[max(0, int(y0 - 0.3 * h)) : max(0, int(y1 + 1.0 * h)), max(0, int(x0 - 0.3 * w)) : max(0, int(x1 + 0.3 * w))] = True
    return zone


def test_arms_pasted_into_real_mattes_are_caught(corpus_mattes: list) -> None:
    """Every frontal portrait's own matte with each arm of ARM_POSES pasted on each side, where the
    photo shows the arm (90 % of it inside the frame; on tight crops it falls outside) and it is not
    over another person's face (left out by design): every one caught (measured: 41 of 41; 127 arms
    fell outside their photos, 14 over a neighbour's face)."""
    missed, total = [], 0
    for portrait, alpha, face, chin_y, others in corpus_mattes:
        if portrait.expect != "photo":
            continue
        for pose in ARM_POSES:
            for side in (-1, 1):
                if share_in_photo(face.landmarks, chin_y, pose, side, alpha.shape) < 0.9:
                    continue
                arm = arm_outline(face.landmarks, chin_y, pose, side, shape=alpha.shape)
                if (arm & beside_others(others, alpha.shape)).sum() > 0.1 * arm.sum():
                    continue  # over another person, whom the line leaves out by design
                pasted = alpha.copy()
                pasted[arm] = 255
                area, _ = arms.arms_near_head(pasted, face.landmarks, chin_y=chin_y, other_faces=others)
                total += 1
                if arms.arms_check(area).passed:
                    missed.append((portrait.name, pose, side, round(area, 2)))
    assert total >= 40
    assert not missed, (len(missed), total, missed)


def test_the_raised_hand_portraits(corpus_mattes: list) -> None:
    """The corpus's two portraits with a hand raised: the hand behind the head (party-arm) is caught;
    the hand flat on the forehead (feat-hand) lies inside the head's outline, which the matte
    alone cannot tell from hair (measured 1.43, under the limit): the skin-based hands line has it."""
    readings = {}
    for portrait, alpha, face, chin_y, others in corpus_mattes:
        if portrait.expect == "hands":
            readings[portrait.name] = arms.arms_near_head(alpha, face.landmarks, chin_y=chin_y, other_faces=others)[0]
    assert arms.arms_check(readings["party-arm"]).passed is False, readings
