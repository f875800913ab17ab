"""Pure geometry of the ID photo: roll, crown, placement, crop checks (synthetic masks and landmarks)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.errors import DOMAIN_STATUS, NoFace, PhotoRejected
from app.imaging.placement import (
    Head,
    PlacementError,
    check_chin_inside,
    check_inside,
    chin_from_landmarks,
    crown_from_matte,
    place,
    roll_degrees,
    rotate_points,
    upright_matte,
    vertical_gradient,
    warp,
)
from app.models.faces import Face
from app.pipelines.idphoto import IdPhotoOptions, choose_face, encode_photo, people
from app.specs import get_spec

LANDMARKS = np.array([[200, 200], [260, 200], [230, 230], [205, 260], [255, 260]], dtype=np.float32)


def head_matte(shape: tuple[int, int] = (600, 500), *, top: int = 80, centre: tuple[int, int] = (230, 220)) -> np.ndarray:
    """A (H, W) uint8 matte: an elliptical head whose crown is at `top`, over a torso to the bottom edge."""
    height, width = shape
    ys, xs = np.mgrid[0:height, 0:width]
    cx, cy = centre
    radius_y = cy - top
    head = ((xs - cx) / 80.0) ** 2 + ((ys - cy) / radius_y) ** 2 <= 1.0
    torso = (ys > cy + 60) & (np.abs(xs - cx) < 150)
    return ((head | torso) * 255).astype(np.uint8)


def test_roll_sign_and_size() -> None:
    assert roll_degrees(LANDMARKS) == pytest.approx(0.0)
    tilted = LANDMARKS.copy()
    tilted[1, 1] += 60 * math.tan(math.radians(10))  # right eye lower
    assert roll_degrees(tilted) == pytest.approx(10.0, abs=1e-3)


def test_rotating_the_matte_and_the_points_agree() -> None:
    matte = np.zeros((200, 300), np.uint8)
    matte[48:53, 248:253] = 255  # a dot at (250, 50)
    pivot = (150.0, 100.0)
    rotated = upright_matte(matte, roll_deg=20.0, pivot=pivot)
    ys, xs = np.nonzero(rotated > 128)
    expected = rotate_points(np.array([[250.0, 50.0]]), degrees=-20.0, pivot=pivot)[0]
    assert xs.mean() == pytest.approx(expected[0], abs=1.0) and ys.mean() == pytest.approx(expected[1], abs=1.0)


def test_crown_is_the_top_of_the_head() -> None:
    matte = head_matte(top=80)
    assert crown_from_matte(matte, x_range=(190, 270), eye_y=200) == pytest.approx(80, abs=1)


def test_a_head_cut_by_the_top_edge_is_refused() -> None:
    with pytest.raises(PlacementError) as info:
        crown_from_matte(head_matte(top=-20), x_range=(190, 270), eye_y=200)
    assert info.value.edge == "top"
    with pytest.raises(PlacementError):
        crown_from_matte(np.zeros((100, 100), np.uint8), x_range=(10, 90), eye_y=50)


def test_chin_below_the_mouth() -> None:
    assert chin_from_landmarks(LANDMARKS) == pytest.approx(260 + 0.95 * 60)
    head = Head(crown_y=80, chin_y=317, eye_y=200, centre_x=230)
    check_chin_inside(head, image_height=400)
    with pytest.raises(PlacementError, match="chin"):
        check_chin_inside(head, image_height=300)


@pytest.mark.parametrize("spec_id", ["us-passport", "icao", "ca-passport", "cn-1inch", "uk-passport"])
@pytest.mark.parametrize("roll", [0.0, 7.0])
def test_placement_meets_the_spec(spec_id: str, roll: float) -> None:
    spec = get_spec(spec_id)
    head = Head(crown_y=80.0, chin_y=317.0, eye_y=200.0, centre_x=230.0)
    pivot = (230.0, 200.0)
    placement = place(head, roll_deg=roll, pivot=pivot, size=(spec.width_px, spec.height_px),
                      head_band=spec.head_height, eye_band=spec.eye_line)
    # map the upright head points back to the input frame, then forward to the output
    upright = np.array([[230.0, 80.0], [230.0, 317.0], [230.0, 200.0]])
    source = rotate_points(upright, degrees=roll, pivot=pivot)
    crown, chin, eye = placement.input_to_output(source)
    height = spec.height_px
    ratio = (chin[1] - crown[1]) / height
    assert spec.head_height[0] <= ratio <= spec.head_height[1]
    assert ratio == pytest.approx(placement.head_ratio, abs=1e-6)
    assert crown[1] >= 0.05 * height - 1e-6, "space above the head"
    assert eye[0] == pytest.approx(spec.width_px / 2, abs=1e-6) and abs(crown[0] - eye[0]) < 1e-6
    if spec.eye_line is not None:
        assert spec.eye_line[0] <= (height - eye[1]) / height <= spec.eye_line[1]


def test_warp_cuts_the_placed_region() -> None:
    matte = head_matte()
    head = Head(crown_y=80.0, chin_y=317.0, eye_y=200.0, centre_x=230.0)
    placement = place(head, roll_deg=0.0, pivot=(230.0, 200.0), size=(300, 400), head_band=(0.5, 0.7), eye_band=None)
    out = warp(matte, placement)
    assert out.shape == (400, 300)
    rows = np.flatnonzero((out[:, 140:160] > 128).any(axis=1))
    crown_out = placement.input_to_output(np.array([[230.0, 80.0]]))[0][1]
    assert rows[0] == pytest.approx(crown_out, abs=2)


def test_crop_beyond_an_edge_the_person_touches_is_refused() -> None:
    matte = head_matte((400, 500))  # the torso runs into the bottom edge
    head = Head(crown_y=80.0, chin_y=300.0, eye_y=200.0, centre_x=230.0)
    tight = place(head, roll_deg=0.0, pivot=(230.0, 200.0), size=(600, 600), head_band=(0.3, 0.35), eye_band=None)
    with pytest.raises(PlacementError) as info:
        check_inside(tight, matte)
    assert info.value.edge == "bottom"
    no_torso = matte.copy()
    no_torso[320:] = 0  # the person ends inside the photo: the missing rows are background
    check_inside(tight, no_torso)


def test_gradient_runs_top_to_bottom() -> None:
    backdrop = vertical_gradient((4, 3), (200, 200, 200), (0, 0, 100))
    assert backdrop.shape == (3, 4, 3)
    assert backdrop[0, 0].tolist() == [200, 200, 200] and backdrop[-1, 3].tolist() == [0, 0, 100]


def face(x: float, width: float) -> Face:
    return Face(box=(x, 10.0, x + width, 10.0 + width), score=0.9, landmarks=LANDMARKS)


def test_face_choice() -> None:
    assert choose_face([face(0, 100)], "single").width == 100
    crowd = [face(0, 100), face(200, 90), face(400, 20)]  # the 20 px face is a poster far behind
    assert len(people(crowd)) == 2
    with pytest.raises(PhotoRejected) as info:
        choose_face(crowd, "single")
    assert DOMAIN_STATUS[PhotoRejected][0] == 422
    assert info.value.code == "face_count" and info.value.details == {"faces": 2} and "2 faces" in info.value.message
    assert choose_face(crowd, "largest").width == 100
    with pytest.raises(NoFace) as none:
        choose_face([], "largest")
    assert none.value.code == "no_face"


def test_max_kb_is_met_by_quality_not_padding(astronaut: np.ndarray) -> None:
    options = IdPhotoOptions(spec=get_spec("us-passport"), background=(255, 255, 255), max_kb=25)
    data, quality = encode_photo(astronaut, options)
    assert len(data) <= 25 * 1024 and quality is not None and 25 <= quality < 95
    assert data.endswith(b"\xff\xd9")  # the JPEG ends at its end-of-image marker: no padding
    with pytest.raises(PhotoRejected) as info:
        encode_photo(astronaut, IdPhotoOptions(spec=get_spec("us-passport"), background=(255, 255, 255), max_kb=1))
    assert info.value.code == "max_kb_unreachable" and info.value.details["smallest_kb"] > 1
