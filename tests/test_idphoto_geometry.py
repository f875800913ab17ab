"""Pure geometry of the ID photo: roll, crown, placement, crop checks (synthetic masks and landmarks)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.errors import DomainError, PhotoRejected
from app.imageio import encode_photo
from app.pipelines.face_reading import choose_face, people
from app.models.faces import Face
from app.imaging.compose import vertical_gradient
from app.imaging.head import (
    CHIN_BELOW_MOUTH,
    Head,
    PlacementError,
    chin_from_landmarks,
    crown_from_matte,
    roll_degrees,
    rotate_points,
)
from app.imaging.placement import upright_matte, warp
from app.imaging.compliance import ReportInput, Written, report as compliance_report
from app.imaging.canvas import Extension, extend, needed_extension
from app.imaging.people import keep_person, person_owner
from app.imaging.head import head_cut_edge
from app.imaging.solver import place_on_rules, rule_values, solve
from app.imaging.compliance import pose_checks
from app.imaging.pose import UNCERTAINTY_DEG, Pose, estimate_pose, judge
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


def test_no_head_above_the_eyes_is_refused() -> None:
    with pytest.raises(PlacementError):
        crown_from_matte(np.zeros((100, 100), np.uint8), x_range=(10, 90), eye_y=50)


def test_chin_below_the_mouth() -> None:
    assert chin_from_landmarks(LANDMARKS) == pytest.approx(260 + CHIN_BELOW_MOUTH * 60)


def test_warp_cuts_the_placed_region() -> None:
    matte = head_matte()
    head = Head(crown_y=80.0, chin_y=317.0, eye_y=200.0, centre_x=230.0)
    spec = get_spec("uk-passport")
    placement = place_on_rules(head, spec.rules, roll_deg=0.0, pivot=(230.0, 200.0), size=(300, 386),
                               size_mm=(spec.width_mm, spec.height_mm))
    out = warp(matte, placement)
    assert out.shape == (386, 300)
    rows = np.flatnonzero((out[:, 140:160] > 128).any(axis=1))
    crown_out = placement.input_to_output(np.array([[230.0, 80.0]]))[0][1]
    assert rows[0] == pytest.approx(crown_out, abs=2)


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
    assert info.value.details == {"faces": 2} and "2 faces" in info.value.message
    assert choose_face(crowd, "largest").width == 100
    with pytest.raises(DomainError) as none:
        choose_face([], "largest")
    assert none.value.code == "no_face"


def test_max_kb_is_met_by_quality_not_padding(astronaut: np.ndarray) -> None:
    encoded = encode_photo(astronaut, fmt="jpeg", dpi=get_spec("us-passport").dpi, max_kb=25)
    data, quality = encoded.data, encoded.jpeg_quality
    assert len(data) <= 25 * 1024 and quality is not None and 25 <= quality < 95
    assert data.endswith(b"\xff\xd9")  # the JPEG ends at its end-of-image marker: no padding
    with pytest.raises(PhotoRejected) as info:
        encode_photo(astronaut, fmt="jpeg", dpi=get_spec("us-passport").dpi, max_kb=1)
    assert info.value.details["smallest_kb"] > 1


# --- the rule solver, extension, one person, pose, report (issue 14) ------------------------------

HEAD = Head(crown_y=80.0, chin_y=317.0, eye_y=200.0, centre_x=230.0, width=170.0, eye_distance=60.0, face_width=135.0)


@pytest.mark.parametrize("spec_id", ["us-passport", "icao", "uk-passport", "cn-passport", "ca-passport",
                                     "jp-passport", "cn-1inch", "cn-2inch"])
@pytest.mark.parametrize("roll", [0.0, 7.0])
def test_solver_meets_every_band_of_the_spec(spec_id: str, roll: float) -> None:
    spec = get_spec(spec_id)
    k, t, c, predicted, broken, margin, _ = solve(HEAD, spec.rules, size_mm=(spec.width_mm, spec.height_mm))
    assert broken == {} and margin > 0
    for name, band in spec.rules.bands().items():
        assert band.contains(predicted[name]), (name, predicted[name], band.low, band.high)
    # the placement, mapped through the affine cut, puts the crown and chin where the solver said
    # the placement, mapped through the affine cut (with the roll), puts the head where the solver said
    pivot = (230.0, 200.0)
    placement = place_on_rules(HEAD, spec.rules, roll_deg=roll, pivot=pivot,
                               size=(spec.width_px, spec.height_px), size_mm=(spec.width_mm, spec.height_mm))
    source = rotate_points(np.array([[230.0, 80.0], [230.0, 317.0], [230.0, 200.0]]), degrees=roll, pivot=pivot)
    crown, chin, eye = placement.input_to_output(source)
    mm = spec.height_mm / spec.height_px
    assert crown[1] * mm == pytest.approx(predicted["crown_margin"], abs=0.01)
    assert (spec.height_px - chin[1]) * mm == pytest.approx(predicted["chin_margin"], abs=0.01)
    assert (spec.height_px - eye[1]) * mm == pytest.approx(predicted["eye_line"], abs=0.01)
    assert eye[0] * spec.width_mm / spec.width_px == pytest.approx(c, abs=0.01) and abs(crown[0] - eye[0]) < 1e-6


def test_cn_passport_crown_margin_and_jp_chin_margin_land_in_their_bands() -> None:
    cn = get_spec("cn-passport")
    t, predicted = (found := solve(HEAD, cn.rules, size_mm=(cn.width_mm, cn.height_mm))).t, found.predicted
    assert 3.0 <= t <= 5.0 and predicted["chin_margin"] >= 7.0
    jp = get_spec("jp-passport")
    for chin_extra in (0.0, 40.0, 80.0):  # long and short faces: the eye-to-chin share varies
        head = Head(crown_y=80.0, chin_y=317.0 + chin_extra, eye_y=200.0, centre_x=230.0, width=170.0)
        _, _, c, predicted, broken, _, _ = solve(head, jp.rules, size_mm=(jp.width_mm, jp.height_mm))
        assert broken == {} and 5.0 <= predicted["chin_margin"] <= 9.0 and 2.0 <= predicted["crown_margin"] <= 6.0
        assert 15.0 <= c <= 19.0


@pytest.mark.parametrize("spec_id", ["us-passport", "icao", "uk-passport", "cn-passport", "ca-passport",
                                     "jp-passport", "cn-1inch", "cn-2inch", "cn-id-card", "cn-visa-online"])
def test_the_placement_is_the_chebyshev_centre(spec_id: str) -> None:
    """No placement leaves a larger smallest margin: a dense grid over (k, t, c) never beats the
    solver's, and the margin it reports is what its own predicted values leave."""
    spec = get_spec(spec_id)
    size_mm = (spec.width_mm, spec.height_mm)
    found = solve(HEAD, spec.rules, size_mm=size_mm)
    bands = {name: (-math.inf if b.low is None else b.low, math.inf if b.high is None else b.high)
             for name, b in spec.rules.bands().items()}
    slack = min(min(found.predicted[n] - lo, hi - found.predicted[n]) for n, (lo, hi) in bands.items())
    assert found.margin == pytest.approx(slack, abs=1e-6) and found.margin > 0
    low, high = bands["head_height"]
    best = -math.inf
    for k in np.linspace(low / HEAD.height, high / HEAD.height, 41):
        for t in np.linspace(0.0, spec.height_mm - k * HEAD.height, 41):
            for c in (spec.width_mm / 2.0, found.c):
                values = rule_values(HEAD, float(k), float(t), float(c), size_mm)
                if spec.rules.crown_margin is None and t < 0.05 * spec.height_mm:
                    continue  # our house gap above the crown is a hard limit where no rule sets one
                best = max(best, min(min(values[n] - lo, hi - values[n]) for n, (lo, hi) in bands.items()))
    assert found.margin >= best - 1e-6


def test_the_chebyshev_centre_puts_every_band_mid_way_where_it_can() -> None:
    """jp-passport: 32-36 mm head, 2-6 mm above, 5-9 mm below on 45 mm: all three sit 2 mm from each end."""
    jp = get_spec("jp-passport")
    found = solve(HEAD, jp.rules, size_mm=(jp.width_mm, jp.height_mm))
    assert found.predicted["head_height"] == pytest.approx(34.0, abs=1e-4)
    assert found.predicted["crown_margin"] == pytest.approx(4.0, abs=1e-4)
    assert found.predicted["chin_margin"] == pytest.approx(7.0, abs=1e-4)
    assert found.c == pytest.approx(17.5)  # the photo's middle lies in the centre_x band


def test_the_head_width_rule_measures_what_the_spec_says() -> None:
    """head_width_of 'face': the face between the ear roots; 'head': the matte's width with ears and hair."""
    import dataclasses

    cn = get_spec("cn-passport")
    assert cn.rules.head_width_of == "face"
    face = solve(HEAD, cn.rules, size_mm=(cn.width_mm, cn.height_mm))
    assert face.predicted["head_width"] == pytest.approx(face.k * HEAD.face_width)
    with_ears = dataclasses.replace(cn.rules, head_width_of="head",
                                    head_width=dataclasses.replace(cn.rules.head_width, low=21, high=24))
    head = solve(HEAD, with_ears, size_mm=(cn.width_mm, cn.height_mm))
    assert head.predicted["head_width"] == pytest.approx(head.k * HEAD.width) and 21 <= head.predicted["head_width"] <= 24


def test_a_head_too_wide_for_the_frame_breaks_the_fewest_rules_and_says_which() -> None:
    cn = get_spec("cn-passport")
    wide = Head(crown_y=80.0, chin_y=317.0, eye_y=200.0, centre_x=230.0, width=300.0, face_width=240.0)
    _, _, _, predicted, broken, margin, _ = solve(wide, cn.rules, size_mm=(cn.width_mm, cn.height_mm))
    assert margin < 0
    assert len(broken) == 1
    (name, miss), = broken.items()
    assert name in ("head_height", "head_width") and miss > 0
    band = getattr(cn.rules, name)
    assert miss == pytest.approx(max(band.low - predicted[name], predicted[name] - (band.high or math.inf)), abs=1e-6)
    for other, value in predicted.items():
        if other != name and other in cn.rules.bands():
            assert cn.rules.bands()[other].contains(value)


def test_the_head_cut_by_an_edge_is_named_and_anything_else_is_extended() -> None:
    matte = head_matte((400, 500))
    head = Head(crown_y=80.0, chin_y=300.0, eye_y=200.0, centre_x=230.0, width=160.0, eye_distance=60.0)
    box = (160.0, 120.0, 300.0, 320.0)
    marks = np.array([[200, 200], [260, 200], [230, 230], [205, 245], [255, 245]], dtype=np.float64)  # chin ~288
    assert head_cut_edge(marks, box, matte) is None
    assert head_cut_edge(marks, box, matte[:280]) == "bottom"
    assert head_cut_edge(marks, (0.0, 120.0, 140.0, 320.0), matte) == "left"
    assert head_cut_edge(marks, box, matte[:, :280]) == "right"
    assert head_cut_edge(marks - (0, 100), box, matte[100:]) == "top", "the hair runs off the top edge"
    rolled = rotate_points(marks, degrees=20, pivot=(230, 200))
    assert head_cut_edge(rolled, box, matte) is None
    spec = get_spec("us-passport")
    placement = place_on_rules(head, spec.rules, roll_deg=0.0, pivot=(230.0, 200.0), size=(600, 600),
                               size_mm=(spec.width_mm, spec.height_mm))
    extension = needed_extension(placement, matte.shape)
    assert extension.bottom > 0
    colours = np.dstack([matte] * 3)
    grown_fg, grown = extend(colours, matte, extension, body_from_y=300.0)
    assert grown.shape == (400 + extension.top + extension.bottom, 500 + extension.left + extension.right)
    # the body goes on below the old bottom edge: no row of the extension is empty under the torso
    below = grown[400 + extension.top :]
    assert (below[:, 230 + extension.left] >= 128).all()
    # beyond the top and beside the head is background
    if extension.top:
        assert grown[: extension.top].max() == 0
    out = warp(grown, placement.shifted(extension.left, extension.top))
    assert (out[-1] >= 128).any(), "shoulders reach the bottom edge of the photo"
    # in mm of the print: input px -> output px (the scale) -> mm (50.8 mm over 600 px)
    assert extension.mm(placement, size_mm=(50.8, 50.8))["bottom"] == pytest.approx(
        (extension.bottom - 2) * placement.scale * 50.8 / 600, abs=0.01)
    rows_beyond = 600 - placement.input_to_output(np.array([[0.0, 400.0]]))[0][1]  # output rows past the old edge
    assert extension.mm(placement, size_mm=(50.8, 50.8))["bottom"] == pytest.approx(rows_beyond * 50.8 / 600, abs=0.3)


def test_shoulders_widen_below_the_original() -> None:
    matte = np.zeros((200, 500), np.uint8)
    for row in range(200):
        half = 40 + row // 2  # the outline widens by 0.5 px per row
        matte[row, 250 - half : 250 + half] = 255
    fg = np.dstack([matte] * 3)
    _, grown = extend(fg, matte, Extension(bottom=60), body_from_y=0.0)
    width_last = (grown[199] >= 128).sum()
    width_new = (grown[259] >= 128).sum()
    assert width_new == pytest.approx(width_last + 60, abs=6)


def streak_energy(pixels: np.ndarray) -> float:
    """Directional streak energy of an (H, W, 3) patch: the mean squared step across columns over the
    mean squared step down rows. About 1 for isotropic grain; vertical streaks (rows repeated) make
    the steps down rows vanish and the ratio large, horizontal ones make it small."""
    grey = pixels.astype(np.float64).mean(axis=2)
    across = np.diff(grey, axis=1) ** 2
    down = np.diff(grey, axis=0) ** 2
    return float(across.mean() / max(down.mean(), 1e-6))


def seam_contrast(pixels: np.ndarray, row: int) -> float:
    """The mean step across the seam between `row - 1` and `row`, over the mean step between rows
    in the ten rows above it (1: the seam is as visible as any other row boundary)."""
    grey = pixels.astype(np.float64).mean(axis=2)
    steps = np.abs(np.diff(grey[row - 11 : row + 1], axis=0)).mean(axis=1)
    return float(steps[-1] / max(steps[:-1].mean(), 1e-6))


def test_clothing_continues_with_its_own_grain_and_no_seam_or_streaks() -> None:
    """A noisy shirt (grey, with a dark tie) cut by the bottom and left edges: beyond each edge the
    clothing keeps its colours, its large shapes (the tie runs on) and its grain (the noise's
    strength), without streaks (issue 14's complaint) and without a visible seam at the old edge."""
    rng = np.random.default_rng(7)
    matte = np.zeros((200, 300), np.uint8)
    matte[100:, :260] = 255  # a body running into the bottom and the left edge
    shirt = np.clip(rng.normal(140, 30, size=(200, 300, 3)), 0, 255).astype(np.uint8)
    shirt[:, 140:160] = 30  # a tie
    fg, grown = extend(shirt, matte, Extension(left=50, bottom=80), body_from_y=90.0)
    new_rows = fg[200:, 60:300].astype(np.float64)
    cloth = np.r_[60:180, 220:300]  # the shirt's columns beside the tie (at 190-210 in the grown image)
    assert np.abs(new_rows[:, cloth - 60].mean(axis=(0, 1)) - 140).max() < 6, "the shirt's colour continues"
    grain_old = shirt[150:200, 20:130].astype(np.float64).std()
    grain_new = fg[210:280, 70:180].astype(np.float64).std()
    assert 0.6 * grain_old <= grain_new <= 1.4 * grain_old, (grain_old, grain_new)
    energy_old = streak_energy(shirt[150:200, 20:130])
    energy_new = streak_energy(fg[210:280, 70:180])
    assert 0.6 * energy_old <= energy_new <= 1.6 * energy_old, (energy_old, energy_new)
    assert seam_contrast(fg[:, 70:180], 200) < 1.5
    tie = fg[200:, 50 + 140 : 50 + 160]
    assert tie.mean() < 50, "the tie runs on below the old edge"
    beside = fg[150:200, :50].astype(np.float64)
    assert np.abs(beside.mean(axis=(0, 1)) - 140).max() < 6
    assert 0.6 * grain_old <= beside.std() <= 1.4 * grain_old


def test_a_neck_cut_by_the_bottom_edge_becomes_shoulders_in_cloth_not_a_skin_tube() -> None:
    """The bottom edge cuts through a neck (skin) with a collar either side: below it the body widens
    like shoulders, and the skin fades into the clothing; nothing skin-coloured runs to the new bottom."""
    from app.imaging.skin import Skin

    skin_rgb = np.array([224, 172, 150], np.uint8)
    shirt_rgb = np.array([40, 60, 120], np.uint8)
    matte = np.zeros((200, 400), np.uint8)
    matte[150:, 170:230] = 255  # the neck
    matte[185:, 140:260] = 255  # the collar either side of it
    colours = np.zeros((200, 400, 3), np.uint8)
    colours[matte > 0] = shirt_rgb
    colours[150:, 180:220] = skin_rgb
    import cv2

    ycrcb = cv2.cvtColor(skin_rgb[None, None, :], cv2.COLOR_RGB2YCrCb)[0, 0].astype(float)
    skin = Skin(median=tuple(ycrcb), tolerance=(12.0, 12.0))
    fg, grown = extend(colours, matte, Extension(bottom=150), body_from_y=100.0, skin=skin, face_width=100.0)
    assert (grown[-1] >= 128).sum() > 2 * (matte[-1] > 0).sum(), "the body widens into shoulders"
    below = fg[200 + 60 :][grown[200 + 60 :] >= 128]
    assert not skin.mask(below[None]).any(), "no skin below the neckline"
    assert skin.mask(fg[200:203, 190:210]).all(), "the neck runs on just below the edge (no hard seam)"


def test_only_the_chosen_person_stays_in_the_matte() -> None:
    matte = head_matte((600, 900), centre=(230, 220))
    other = head_matte((600, 900), centre=(700, 260))
    stray = np.zeros_like(matte)
    stray[20:60, 820:880] = 255  # an object in the frame
    both = np.maximum(np.maximum(matte, other), stray)
    kept = keep_person(both, (160.0, 140.0, 300.0, 300.0))
    assert (kept[:, :450] == matte[:, :450]).all()
    assert kept[:, 500:].max() == 0


def test_pose_from_landmarks() -> None:
    frontal = np.array([[200, 200], [260, 200], [230, 233.4], [207, 260], [253, 260]], dtype=np.float64)
    pose = estimate_pose(frontal)
    assert abs(pose.yaw) < 1 and abs(pose.pitch) < 1 and abs(pose.roll) < 1e-6
    turned = frontal.copy()
    turned[2, 0] += 0.43 * 60 * math.tan(math.radians(20))  # the nose tip moves as a 20-degree turn moves it
    assert estimate_pose(turned).yaw == pytest.approx(20, abs=0.5)
    up = frontal.copy()
    up[2, 1] -= 0.41 * 60 * math.tan(math.radians(10))
    assert estimate_pose(up).pitch == pytest.approx(10, abs=0.5)
    rolled = rotate_points(frontal, degrees=12, pivot=(230, 230))
    assert estimate_pose(rolled).roll == pytest.approx(12, abs=1e-6)
    assert estimate_pose(rolled).yaw == pytest.approx(0, abs=1)


def test_a_pose_limit_is_judged_with_the_estimates_uncertainty() -> None:
    """ISO 14253-1's rule: pass within the limit, fail beyond limit + uncertainty, undecided between."""
    assert judge(4.9, 5, 4) is True and judge(-5.0, 5, 4) is True
    assert judge(6.0, 5, 4) is None and judge(-9.0, 5, 4) is None
    assert judge(9.1, 5, 4) is False and judge(-30, 5, 4) is False
    rules = get_spec("icao").rules
    limit, margin = rules.max_yaw_deg, UNCERTAINTY_DEG["yaw"]
    lines = {c.name: c for c in pose_checks(Pose(yaw=limit + margin / 2, pitch=0.0, roll=0.0), rules)}
    yaw = lines["yaw_degrees"]
    assert yaw.passed is None and yaw.kind == "pose" and "check it yourself" in yaw.advice
    assert "Face the camera squarely" in yaw.advice and yaw.broken_by is None
    assert lines["pitch_degrees"].passed is True and lines["pitch_degrees"].advice is None
    turned = {c.name: c for c in pose_checks(Pose(yaw=-(limit + margin + 1), pitch=0.0, roll=0.0), rules)}["yaw_degrees"]
    assert turned.passed is False and turned.advice == "Face the camera squarely"
    assert turned.broken_by == pytest.approx(margin + 1)


def test_report_has_every_rule_pose_and_says_what_it_cannot_check() -> None:
    spec = get_spec("jp-passport")
    placement = place_on_rules(HEAD, spec.rules, roll_deg=0.0, pivot=(230.0, 200.0),
                               size=(spec.width_px, spec.height_px), size_mm=(spec.width_mm, spec.height_mm))
    alpha = warp(head_matte(centre=(230, 200)), placement)
    rgb = np.full(alpha.shape + (3,), 255, np.uint8)
    landmarks = placement.input_to_output(np.array([[200, 200], [260, 200], [230, 233.4], [207, 260], [253, 260]], float))
    written = Written(rgb, alpha, [((0.0, 0.0, 300.0, 300.0), landmarks)], dpi=(spec.dpi, spec.dpi))
    checks = compliance_report(ReportInput(written, spec, spec.dpi, background=(255, 255, 255), gradient=False,
                                           extended_mm={"bottom": 3.2}))
    by_name = {check.name: check.to_dict() for check in checks}
    for rule in spec.rules.bands():
        assert rule in by_name and by_name[rule]["unit"] == "mm"
    for name in ("yaw_degrees", "pitch_degrees", "roll_degrees"):
        assert by_name[name]["kind"] == "pose"
    assert by_name["canvas_extended"]["value"] == {"bottom": 3.2} and by_name["canvas_extended"]["pass"] is None
    unchecked = [c for c in by_name.values() if c["kind"] == "not_checked"]
    assert unchecked and all(c["pass"] is None for c in unchecked)
    assert any("glasses for glare" in c["advice"] for c in unchecked)
    assert 2.0 <= by_name["crown_margin"]["value"] <= 6.0


def test_a_body_cut_by_a_side_edge_continues_as_a_sloping_shoulder() -> None:
    matte = np.zeros((300, 200), np.uint8)
    matte[200:, :120] = 255  # the body runs into the left edge from row 200 down
    matte[60:80, :30] = 255  # an arm (or a neighbour's shoulder) touches the edge higher up
    fg = np.dstack([matte] * 3)
    _, grown = extend(fg, matte, Extension(left=40), body_from_y=150.0)
    beyond = grown[:, :40] >= 128
    assert not beyond[:200].any(), "nothing beyond the edge above the body: the arm is not continued"
    tops = [int(np.flatnonzero(beyond[:, column])[0]) for column in (39, 20, 0)]  # next to the edge, then outwards
    assert tops[0] <= tops[1] <= tops[2] and tops[2] - tops[0] > 10, "the shoulder falls away outwards"
    assert beyond[-1].all(), "the body reaches the new edge at the bottom"


def test_people_pressed_together_each_keep_what_is_theirs() -> None:
    """A group photo's crop: a neighbour behind each shoulder, their hair, faces, bodies and a hand
    all touching the chosen person's matte (one component). Everything nearer a neighbour's body axis
    goes; the chosen head, hair and body stay."""
    matte = np.zeros((500, 600), np.uint8)
    matte[120:500, 200:400] = 255  # the chosen person: head from row 120, body below
    matte[0:500, 0:200] = 255  # a neighbour on the left, face near the top edge, hand reaching in
    matte[60:500, 400:600] = 255  # a neighbour on the right
    matte[250:290, 150:260] = 255  # the left neighbour's hand on the chosen shoulder
    chosen, left, right = (240.0, 150.0, 360.0, 290.0), (40.0, 0.0, 150.0, 90.0), (450.0, 80.0, 560.0, 210.0)
    kept = keep_person(matte, chosen, [left, right])
    assert kept[120:290, 240:360].min() == 255, "the chosen face is whole"
    assert kept[300:, 230:370].min() == 255, "the chosen body is whole"
    assert kept[:, :130].max() == 0 and kept[:, 480:].max() == 0, "both neighbours are gone"
    assert kept[250:290, 150:190].max() == 0, "the neighbour's hand is gone"
    owner = person_owner((500, 600), [chosen, left, right])
    assert owner[400, 300] == 0 and owner[400, 60] == 1 and owner[400, 520] == 2 and owner[10, 100] == 1


def test_touching_people_are_told_apart_by_their_colours() -> None:
    """One merged matte, two people: the chosen one's fair hair falls far to the right, past the
    midpoint between the two body axes, over a neighbour in dark clothes. GrabCut's colour models keep
    all of the hair (the axes alone would cut it straight down the middle) and drop the neighbour."""
    rng = np.random.default_rng(3)
    rgb = np.full((400, 600, 3), 250, np.uint8)
    matte = np.zeros((400, 600), np.uint8)
    matte[60:400, 120:560] = 255
    rgb[60:400, 330:560] = (40, 45, 60)  # the neighbour: dark hair and clothes
    rgb[60:400, 120:330] = (225, 190, 120)  # the chosen person's fair hair, face and top
    rgb[60:360, 330:400] = (225, 190, 120)  # ... the hair falling over the neighbour's side
    rgb[120:260, 170:290] = (230, 170, 150)  # the chosen face
    rgb = np.clip(rgb.astype(int) + rng.integers(-12, 13, rgb.shape), 0, 255).astype(np.uint8)
    chosen, other = (170.0, 120.0, 290.0, 260.0), (440.0, 90.0, 540.0, 200.0)
    kept = keep_person(matte, chosen, [other], rgb=rgb)
    assert kept[130:250, 180:280].min() == 255, "the chosen face is whole"
    assert kept[80:340, 340:390].mean() > 240, "the hair past the midpoint stays"
    assert kept[100:390, 430:550].max() == 0, "the neighbour is gone"
    axes_only = keep_person(matte, chosen, [other])
    assert axes_only[80:340, 380:395].max() == 0, "without the colours the hair would be cut"


def test_another_face_touching_the_matte_is_cut_out_but_never_the_chosen_head() -> None:
    """Two people whose mattes touch (one component): the other's face and neck go, the chosen head
    and its hair stay whole."""
    matte = np.zeros((400, 600), np.uint8)
    matte[100:400, 150:330] = 255  # the chosen person (head from row 100)
    matte[60:400, 330:520] = 255  # a neighbour pressed against them
    chosen, other = (180.0, 140.0, 300.0, 280.0), (370.0, 100.0, 480.0, 230.0)
    kept = keep_person(matte, chosen, [other])
    assert kept[100:280, 160:320].min() == 255, "the chosen head is untouched"
    assert kept[100:230, 380:470].max() == 0, "the other face is cut out"
    assert kept[300:, 200:300].min() == 255, "the chosen body stays"
