"""Issue 33, formatting not fabrication: each spec's edit policy as data with its source, the pure
pieces that keep a photo photographed (the frame kept inside the photo, the edit lines), and the
measures of a kept background on photos whose truth is known."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from app.imaging.backdrop import measure_backdrop
from app.imaging.compliance import edit_checks, photographed_background_checks
from app.imaging.canvas import BICUBIC_REACH, fit_inside, needed_extension
from app.imaging.placement import Placement, warp
from app.specs import DEFAULT_PREFIX, EDIT_OPERATIONS, KEEP_BACKGROUND, SPECS, SpecDataError, custom_spec, load_table
from app.specs.model import BACKGROUND_COLOURS
from app.specs.edits import EditPolicy
from tests.support.spec_files import edits_toml, source_toml, spec_toml, write_table

ALL = list(SPECS.values())
IDS = [spec.id for spec in ALL]
STRICT = ("us-passport", "us-visa", "ca-passport", "au-passport", "uk-passport", "jp-passport", "cn-passport")


@pytest.mark.parametrize("spec", ALL, ids=IDS)
def test_every_operation_has_the_authoritys_words_or_says_why_not(spec) -> None:  # noqa: ANN001
    assert set(spec.edits) == set(EDIT_OPERATIONS)
    for operation, policy in spec.edits.items():
        assert policy.operation == operation
        if policy.policy in ("allowed", "forbidden"):
            assert policy.source is not None and policy.source.url.startswith(("https://", "http://"))
            assert policy.source.quote.strip() and not policy.source.title.startswith(DEFAULT_PREFIX)
        elif policy.policy == "silent":
            assert policy.note.strip(), f"{spec.id}.{operation}: silent needs what we chose and why"
        else:
            assert policy.policy == "no_authority" and policy.source is None and policy.apply
        if policy.policy != "silent":
            assert policy.apply is (policy.policy != "forbidden")


def test_no_strict_spec_replaces_extends_or_retones_by_default() -> None:
    for spec_id in STRICT:
        spec = SPECS[spec_id]
        for operation in ("replace_background", "extend_canvas", "adjust_tone"):
            assert spec.edit(operation).policy == "forbidden", (spec_id, operation)
            assert not spec.edit(operation).apply
        assert spec.default_background == KEEP_BACKGROUND


def test_no_strict_spec_straightens_the_head_by_default() -> None:
    """A tilted head is judged on the photo as taken (the pose line), never rotated, wherever the
    authority refuses edited photos or is ICAO's: de-passport and icao used to level alone."""
    for spec_id in (*STRICT, "de-passport", "de-id-card", "icao", "schengen-visa"):
        assert not SPECS[spec_id].edit("level").apply, spec_id


def test_germany_follows_passv_anlage_8() -> None:
    """PassV Anlage 8 (2025): retouching and filters refused, mouth closed, the face 70-80 % of the
    photo's height from the chin tip to the top of the head (31.5-36 mm of 45 mm)."""
    anlage = "https://www.gesetze-im-internet.de/passv_2007/anlage_8.html"
    for spec_id in ("de-passport", "de-id-card"):
        spec = SPECS[spec_id]
        tone = spec.edit("adjust_tone")
        assert tone.policy == "forbidden" and tone.source.url == anlage and "Retuschen/Filter" in tone.source.quote
        assert spec.rules.mouth_closed and spec.expression_source.url == anlage
        assert "der Mund geschlossen" in spec.expression_source.quote
        head = spec.rules.head_height
        assert (head.low, head.high) == pytest.approx((31.5, 36.0))
        assert head.source.url == anlage and "70 bis 80 % der Höhe des Fotos" in head.source.quote
        assert "Kinnspitze bis zum oberen Kopfende" in head.source.quote


def test_where_no_authority_stands_behind_a_spec_the_one_click_change_stays() -> None:
    for spec_id in ("resume", "cn-1inch", "cn-2inch"):
        spec = SPECS[spec_id]
        assert {policy.policy for policy in spec.edits.values()} == {"no_authority"}
        assert spec.default_background == spec.backgrounds[0]
    custom = custom_spec(width_mm=35, height_mm=45, dpi=300)
    assert custom.edit("replace_background").policy == "no_authority" and custom.default_background == "white"


def test_the_policy_table_counts() -> None:
    """Every cell is quoted (allowed or forbidden, with words and address), silent (with our choice)
    or no authority; the strict authorities named in issue 33 are quoted on the background."""
    cells = [policy for spec in ALL for policy in spec.edits.values()]
    assert len(cells) == len(ALL) * len(EDIT_OPERATIONS)
    assert {policy.policy for policy in cells} == {"allowed", "forbidden", "silent", "no_authority"}
    quoted = [policy for policy in cells if policy.policy in ("allowed", "forbidden")]
    assert all(policy.source_key for policy in quoted)


SPEC = "\n".join([source_toml("x", "Photos must not be altered.", title="X, photo rules", url="https://x.example/photo"),
                  spec_toml("x-passport", size="x", expression="x", head="x")])


def test_the_loader_refuses_a_spec_without_its_edit_policy(tmp_path: Path) -> None:
    with pytest.raises(SpecDataError, match="missing edits"):
        load_table(write_table(tmp_path, SPEC))


@pytest.mark.parametrize(("entry", "message"), [
    ('{ policy = "forbidden" }', "needs the authority's source"),
    ('{ policy = "silent", note = "n" }', "apply = true or false"),
    ('{ policy = "allowed", source = "x", apply = false }', "always applied"),
    ('{ policy = "maybe", source = "x" }', "policy: must be one of"),
    ('{ policy = "forbidden", source = "nowhere" }', "unknown source"),
])
def test_the_loader_refuses_a_policy_without_its_source_or_choice(tmp_path: Path, entry: str, message: str) -> None:
    other = '{ policy = "no_authority" }'
    edits = edits_toml("x-passport", {operation: entry if operation == "replace_background" else other for operation in EDIT_OPERATIONS})
    with pytest.raises(SpecDataError, match=message):
        load_table(write_table(tmp_path, SPEC, edits))


def test_the_loader_reads_a_policy(tmp_path: Path) -> None:
    forbidden = '{ policy = "forbidden", source = "x" }'
    edits = edits_toml("x-passport", {operation: forbidden for operation in EDIT_OPERATIONS}
                       | {"crop_scale": '{ policy = "silent", apply = true, note = "formatting" }'})
    table = load_table(write_table(tmp_path, SPEC, edits))
    spec = table.specs["x-passport"]
    assert spec.default_background == KEEP_BACKGROUND
    assert spec.edit("replace_background").source_key == "x" and spec.edit("replace_background").allowed is False
    assert spec.edit("crop_scale").allowed is None and spec.edit("crop_scale").apply


def test_the_loader_refuses_a_forbidden_crop_without_what_to_do_instead(tmp_path: Path) -> None:
    """Cropping and scaling is the edit no formatter can avoid: a spec that forbids it must say the
    authority's own route, which the failing line then gives."""
    forbidden = '{ policy = "forbidden", source = "x" }'
    edits = edits_toml("x-passport", {operation: forbidden for operation in EDIT_OPERATIONS})
    with pytest.raises(SpecDataError, match="crop_scale.*instead"):
        load_table(write_table(tmp_path, SPEC, edits))
    said = edits.replace('crop_scale = { policy = "forbidden", source = "x" }',
                         'crop_scale = { policy = "forbidden", source = "x", instead = "print it at size" }')
    spec = load_table(write_table(tmp_path, SPEC, said)).specs["x-passport"]
    assert spec.edit("crop_scale").instead == "print it at size"
    [line] = edit_checks([spec.edit("crop_scale")])
    assert line.passed is False and line.advice.endswith("Instead, print it at size.")


@pytest.mark.parametrize("spec", ALL, ids=IDS)
def test_no_spec_forbids_the_unavoidable_crop_without_its_authoritys_words_and_route(spec) -> None:  # noqa: ANN001
    policy = spec.edit("crop_scale")
    if policy.policy == "forbidden":
        assert policy.source is not None and policy.instead.strip(), spec.id
        assert any(word in policy.source.quote.lower() for word in ("crop", "cut down")), spec.id


@pytest.mark.parametrize("spec_id", ["ca-passport", "ca-visa"])
def test_canada_frames_and_says_what_canada_asks(spec_id: str) -> None:
    """Canada asks for a photo taken (and framed) by a commercial photographer; no Canadian words on
    cropping were found, so no crop line fails every output: an information line says what Canada asks,
    quoting its words, and the mirror is named as a mirror, not as IRCC."""
    spec = SPECS[spec_id]
    policy = spec.edit("crop_scale")
    assert policy.policy == "silent" and policy.apply and "commercial photographer" in policy.source.quote
    assert "commercial photographer" in policy.instead
    lines = edit_checks([spec.edit(operation) for operation in ("crop_scale", "replace_background")])
    assert [(line.name, line.kind, line.passed) for line in lines] == [
        ("edit_crop_scale", "info", None), ("edit_replace_background", "edit", False)]
    assert policy.source.quote in lines[0].advice and policy.instead in lines[0].advice
    assert policy.source.title in lines[0].advice  # where the words were read: a mirror says it is one
    for other in spec.edits.values():
        if other.source is not None and "etimes238" in other.source.url:
            assert "mirror" in other.source.title and "not IRCC" in other.source.title


# --- the frame kept inside the photo -----------------------------------------------------------

def placement(*, roll: float, scale: float, origin: tuple[float, float], size: tuple[int, int] = (300, 400)) -> Placement:
    return Placement(roll_deg=roll, pivot=(200.0, 150.0), scale=scale, origin=origin, size=size, head_ratio=0.6,
                     eye_line=0.55)


@pytest.mark.parametrize(("roll", "scale", "origin"), [
    (0.0, 1.0, (-40.0, -30.0)),     # past the top-left
    (0.0, 1.0, (150.0, 50.0)),      # past the right and the bottom
    (4.0, 0.5, (-100.0, -100.0)),   # larger than the photo, and turned
    (-7.0, 1.2, (10.0, 5.0)),       # turned: the corners reach out
])
def test_fit_inside_samples_photographed_pixels_only(roll: float, scale: float, origin: tuple[float, float]) -> None:
    shape = (360, 420)  # (H, W) of the photo
    before = placement(roll=roll, scale=scale, origin=origin)
    assert needed_extension(before, shape).any
    fitted = fit_inside(before, shape)
    assert not needed_extension(fitted, shape).any
    assert fitted.size == before.size and fitted.roll_deg == before.roll_deg
    assert fitted.scale >= before.scale
    # warped with a fill no photo pixel has, nothing of the fill shows
    photo = np.full(shape, 200, np.uint8)
    assert warp(photo, fitted, fill=0)[BICUBIC_REACH:-BICUBIC_REACH, BICUBIC_REACH:-BICUBIC_REACH].min() == 200


def test_fit_inside_leaves_a_frame_that_fits_alone() -> None:
    inside = placement(roll=0.0, scale=1.0, origin=(20.0, 20.0))
    assert fit_inside(inside, (600, 600)) is inside


# --- the edit lines ------------------------------------------------------------------------------

def test_one_failing_edit_line_per_forbidden_operation_quoting_the_authority() -> None:
    spec = SPECS["us-passport"]
    applied = [spec.edit(op) for op in ("crop_scale", "replace_background")]
    lines = edit_checks(applied)
    assert [line.name for line in lines] == ["edit_replace_background"]
    line = lines[0]
    assert line.kind == "edit" and line.passed is False
    assert spec.edit("replace_background").source.quote in line.advice and spec.edit("replace_background").source.url in line.advice
    assert edit_checks([SPECS["resume"].edit(op) for op in EDIT_OPERATIONS]) == []
    assert edit_checks([EditPolicy("level", "silent", False, note="n")]) == []


# --- the kept background, on backgrounds whose truth is known ------------------------------------

def _portrait_on(wall: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A grey head-and-shoulders shape (alpha 255) on `wall` (H, W, 3): (rgb, alpha)."""
    height, width = wall.shape[:2]
    yy, xx = np.mgrid[0:height, 0:width]
    head = ((xx - width / 2) / (0.22 * width)) ** 2 + ((yy - 0.42 * height) / (0.3 * height)) ** 2 <= 1
    body = (yy > 0.7 * height) & (np.abs(xx - width / 2) < 0.4 * width)
    alpha = np.where(head | body, 255, 0).astype(np.uint8)
    rgb = wall.copy()
    rgb[alpha > 0] = (120, 100, 90)
    return rgb, alpha


WHITE = {"white": BACKGROUND_COLOURS["white"]}


def lines_for(wall: np.ndarray, *, allowed: dict = WHITE) -> dict:
    rgb, alpha = _portrait_on(wall)
    backdrop = measure_backdrop(rgb, alpha, alpha, chin_y=0.72 * rgb.shape[0])
    return {line.name: line for line in photographed_background_checks(backdrop, allowed=allowed, other_faces=0)}


@pytest.mark.parametrize("scene", ["astronaut", "coffee", "wall"])
def test_the_shrunk_wide_blurs_leave_the_background_measures_where_full_size_blurs_put_them(
    astronaut: np.ndarray, scene: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from skimage import data

    from app.imaging import backdrop
    from app.imaging.opencv import cv2

    rng = np.random.default_rng(1)
    walls = {"astronaut": astronaut, "coffee": data.coffee(),
             "wall": np.clip(236.0 - np.linspace(0, 30, 500)[None, :, None] + rng.normal(0, 3, (600, 500, 3)), 0, 255)}
    rgb, alpha = _portrait_on(cv2.resize(walls[scene].astype(np.uint8), (500, 600)))
    shrunk = measure_backdrop(rgb, alpha, alpha, chin_y=0.72 * rgb.shape[0])

    def full_size(values: np.ndarray, mask: np.ndarray, sigma: float) -> np.ndarray:
        weights = cv2.GaussianBlur(mask.astype(np.float32), (0, 0), sigma)
        return cv2.GaussianBlur(values * mask, (0, 0), sigma) / np.maximum(weights, 1e-6)

    monkeypatch.setattr(backdrop, "_blur_within", full_size)
    exact = measure_backdrop(rgb, alpha, alpha, chin_y=0.72 * rgb.shape[0])
    assert shrunk is not None and exact is not None
    assert shrunk.texture == pytest.approx(exact.texture, rel=0.03, abs=0.05)
    assert shrunk.unevenness == pytest.approx(exact.unevenness, rel=0.03, abs=0.2)
    assert (shrunk.lab, shrunk.shadow, shrunk.visible) == (exact.lab, exact.shadow, exact.visible)  # no blur in these


def test_a_plain_light_wall_passes_every_background_line() -> None:
    rng = np.random.default_rng(0)
    wall = np.clip(np.full((600, 500, 3), 236.0) + rng.normal(0, 2.0, (600, 500, 3)), 0, 255).astype(np.uint8)
    lines = lines_for(wall)
    assert all(line.passed for line in lines.values()), lines


def test_a_pattern_a_gradient_a_colour_and_a_shadow_each_fail_their_line() -> None:
    height, width = 600, 500
    yy, xx = np.mgrid[0:height, 0:width]
    stripes = np.where((xx // 12) % 2 == 0, 250, 170).astype(np.uint8)[..., None].repeat(3, axis=2)
    assert lines_for(stripes)["background_uniformity"].passed is False
    ramp = np.clip(255 - 0.25 * yy - 0.05 * xx, 0, 255).astype(np.uint8)[..., None].repeat(3, axis=2)
    assert lines_for(ramp)["background_even"].passed is False
    blue = np.zeros((height, width, 3), np.uint8) + np.array((60, 120, 230), np.uint8)
    assert lines_for(blue)["background_colour"].passed is False
    assert lines_for(blue, allowed={"blue": BACKGROUND_COLOURS["blue"]})["background_colour"].passed is True
    shadowed = np.full((height, width, 3), 235, np.uint8)
    _, alpha = _portrait_on(shadowed)
    from app.imaging.opencv import cv2
    # the head's shadow, cast a little to the right by a light from the left
    near = cv2.dilate(np.roll(alpha > 0, 25, axis=1).astype(np.uint8), np.ones((41, 41), np.uint8)) > 0
    shadowed[near & (np.mgrid[0:height, 0:width][0] < 0.7 * height)] = 160
    assert lines_for(shadowed)["background_shadow"].passed is False
    assert math.isfinite(lines_for(shadowed)["background_shadow"].value)


# --- the expression's words (issue 33, part 5) -----------------------------------------------------

@pytest.mark.parametrize("spec", ALL, ids=IDS)
def test_every_expression_rule_has_the_authoritys_words_or_says_none_were_found(spec) -> None:  # noqa: ANN001
    source = spec.expression_source
    assert source is not None and source.quote.strip()
    assert source.is_default or source.url.startswith(("https://", "http://"))


def test_the_chinese_passport_asks_for_lips_naturally_closed() -> None:
    """The exit-entry photo guide: 表情自然，眼睛自然睁开，嘴唇自然闭合 (issue 33: open-mouthed smiles were
    called compliant for cn-passport under a natural-smile rule no source stood behind)."""
    spec = SPECS["cn-passport"]
    assert spec.rules.mouth_closed is True
    assert "嘴唇自然闭合" in spec.expression_source.quote and not spec.expression_source.is_default
    assert SPECS["cn-visa"].rules.mouth_closed and "lips closed" in SPECS["cn-visa"].expression_source.quote


# --- "compliant" only beyond the measuring error (issue 33, part 5) --------------------------------

def test_a_band_is_judged_with_the_readings_uncertainty() -> None:
    from app.imaging.compliance import judge_band

    assert judge_band(34.0, (32.0, 36.0), 0.0) is True and judge_band(36.2, (32.0, 36.0), 0.0) is False
    assert judge_band(34.0, (32.0, 36.0), 1.0) is True     # 2 mm inside: more than the uncertainty
    assert judge_band(32.6, (32.0, 36.0), 1.0) is None     # inside, but within it of the end
    assert judge_band(31.4, (32.0, 36.0), 1.0) is None     # outside, but within it
    assert judge_band(30.5, (32.0, 36.0), 1.0) is False    # outside by more than it
    assert judge_band(50.0, (32.0, float("inf")), 1.0) is True


def test_the_skull_crown_lines_carry_the_estimates_uncertainty() -> None:
    """ca-passport measures to the skull under the hair, estimated +-8 %: a head height within that
    of the band's end is uncertain, neither a pass nor a failure, and `compliant` cannot be true."""
    from app.imaging.compliance import reading_uncertainty, rule_checks

    spec = SPECS["ca-passport"]
    assert spec.rules.crown == "skull"
    values = {"head_height": spec.rules.head_height.high - 0.3, "eye_distance": 9.0, "crown_margin": None,
              "chin_margin": None, "eye_line": None, "head_width": None, "centre_x": None, "side_margin": None}
    skull = reading_uncertainty(values, crown_meaning="skull", width_of="face", dense_chin=True)
    hair = reading_uncertainty(values, crown_meaning="hair", width_of="face", dense_chin=True)
    assert skull["head_height"] > 1.0 > hair["head_height"] > 0.0 and hair["crown_margin"] == 0.0
    line = next(c for c in rule_checks(values, spec.rules, crown_meaning="skull", uncertainty=skull) if c.name == "head_height")
    assert line.passed is None and line.uncertainty == pytest.approx(skull["head_height"])
    assert "cannot tell" in line.advice and line.judged
    values["head_height"] = (spec.rules.head_height.low + spec.rules.head_height.high) / 2
    middle = next(c for c in rule_checks(values, spec.rules, crown_meaning="skull", uncertainty=skull) if c.name == "head_height")
    assert middle.passed is True


@pytest.mark.parametrize("roll", [0.0, 4.0, -9.0])
def test_the_photographed_mask_is_the_frame_warped(roll: float) -> None:
    """canvas.photographed_mask (the output grid mapped back) marks what warping a blank photo marks."""
    from app.imaging.canvas import photographed_mask

    shape = (360, 420)
    frame = placement(roll=roll, scale=1.1, origin=(-30.0, -20.0))
    mask = photographed_mask(frame, shape)
    warped = warp(np.full(shape, 255, np.uint8), frame, fill=0)
    assert mask.shape == warped.shape and 0 < mask.mean() < 255
    assert (np.abs(mask.astype(int) - warped) > 128).mean() < 0.001
