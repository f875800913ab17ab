"""The ID photo's steps one at a time: each step's typed answer from a small input (no model runs),
and the report's `edits` made from the edit values the steps return."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from app.errors import PhotoRejected
from app.imageio import JPEG_QUALITY_MAX, encode_photo
from app.imaging.canvas import Extension
from app.imaging.compliance import Check
from app.imaging.pose import estimate_pose
from app.models.faces import Face
from app.pipelines import idsteps
from app.pipelines.face_reading import CORRECTION_MAX, FaceReading, Levelled, correct_level, estimate_level
from app.pipelines.idjudge import Report
from app.pipelines.idphoto import sheet_caption
from app.pipelines.matte_choice import PersonMatte
from app.specs import SPECS, Edit, EditPolicy, Source, get_spec

LANDMARKS = np.array([[200, 200], [260, 200], [230, 230], [205, 260], [255, 260]], dtype=np.float32)
BOX = (170.0, 150.0, 290.0, 290.0)
WHITE = (255, 255, 255)


def head_matte(shape: tuple[int, int] = (600, 500), *, top: int = 80, centre: tuple[int, int] = (230, 220)) -> np.ndarray:
    """(H, W) uint8: an elliptical head whose crown is at row `top`, over a torso to the bottom edge."""
    height, width = shape
    ys, xs = np.mgrid[0:height, 0:width]
    cx, cy = centre
    head = ((xs - cx) / 80.0) ** 2 + ((ys - cy) / (cy - top)) ** 2 <= 1.0
    torso = (ys > cy + 60) & (np.abs(xs - cx) < 150)
    return ((head | torso) * 255).astype(np.uint8)


def reading(landmarks: np.ndarray = LANDMARKS) -> FaceReading:
    face = Face(box=BOX, score=0.9, landmarks=landmarks)
    return FaceReading(face=face, people=(face,), detected=(face,), dense=None, chin=None, pose=estimate_pose(landmarks))


def matted(alpha: np.ndarray) -> PersonMatte:
    foreground = np.zeros(alpha.shape + (3,), np.uint8)
    foreground[..., 0] = 200  # a red person on the old background's black
    return PersonMatte(alpha=alpha, raw=alpha, foreground=foreground, matted_by="test")


# --- edits as values ---------------------------------------------------------------------------------


def test_an_edit_is_done_only_where_it_applies() -> None:
    policy = get_spec("icao").edit("level")
    assert Edit(policy, applies=False).did().done is False
    assert Edit(policy, applies=True).did().done is True
    assert Edit(policy, applies=True).did(False).done is False
    assert Edit(policy, applies=True).record() == {"operation": "level", "allowed": policy.allowed,
                                                   "source": policy.source_key}


def test_the_reports_edits_come_from_the_edit_values() -> None:
    source = Source(title="An authority, its page", url="https://example.org/rules", quote="no editing", kind="primary")
    refused = EditPolicy("replace_background", "forbidden", False, source=source, source_key="made-up-key")
    made = (Edit(get_spec("icao").edit("crop_scale"), applies=True, done=True),
            Edit(refused, applies=True).did())
    spec = get_spec("icao")
    placement = idsteps.place(reading(), head_matte(), 0.0, spec, extending=Edit(spec.edit("extend_canvas"), False)).placement
    report = Report(checks=[Check("pixel_size", "1x1", "1x1", True)], capture=[], placement=placement, edits=made,
                    unphotographed_share=0.0)
    edits = report.to_dict()["edits"]
    assert edits == [edit.record() for edit in made]
    assert edits[1] == {"operation": "replace_background", "allowed": False, "source": "made-up-key"}
    assert "replacing the background (refused by the authority)" in sheet_caption(report, spec)


# --- face and level ---------------------------------------------------------------------------------


def test_the_level_step_does_nothing_where_the_spec_does_not_level() -> None:
    unlevelled = next((spec for spec in SPECS.values() if not spec.edit("level").apply), None)
    if unlevelled is None:
        unlevelled = dataclasses.replace(get_spec("icao"), edits={**get_spec("icao").edits, "level": EditPolicy(
            "level", "silent", False, note="not levelled in this test")})
    edit = idsteps.plan_edits(unlevelled, WHITE).level
    answer = estimate_level(np.zeros((64, 64, 3), np.uint8), reading(), detector=None, edit=edit)  # type: ignore[arg-type]
    assert answer == Levelled(0.0, Edit(unlevelled.edit("level"), applies=False))
    assert not answer.edit.done


def test_the_level_is_corrected_by_what_the_output_still_leans_within_its_limit() -> None:
    first = Levelled(1.5, Edit(get_spec("icao").edit("level"), applies=True, done=True))
    leaning = LANDMARKS.copy()
    leaning[1, 1] += 60 * np.tan(np.radians(2.0))  # the output's eye line leans 2 degrees
    again = correct_level(first, [Face(box=BOX, score=0.9, landmarks=leaning)])
    assert again is not None and again.roll == pytest.approx(3.5, abs=1e-3) and again.edit.done
    assert correct_level(first, [Face(box=BOX, score=0.9, landmarks=LANDMARKS)]) is None  # level enough
    assert correct_level(first, []) is None  # no face to read it on
    steep = LANDMARKS.copy()
    steep[1, 1] += 60 * np.tan(np.radians(10.0))
    capped = correct_level(first, [Face(box=BOX, score=0.9, landmarks=steep)])
    assert capped is not None and capped.roll == pytest.approx(1.5 + CORRECTION_MAX)


# --- frame: place, extend, crop ---------------------------------------------------------------------------


def test_place_puts_the_crown_where_the_solver_predicts() -> None:
    spec = get_spec("icao")
    extending = idsteps.plan_edits(spec, WHITE).extend_canvas
    geometry = idsteps.place(reading(), head_matte(top=80), 0.0, spec, extending=extending)
    placement = geometry.placement
    assert placement.size == (spec.width_px, spec.height_px)
    crown_px = placement.input_to_output(np.array([[230.0, 80.0]]))[0][1]
    assert crown_px * spec.height_mm / spec.height_px == pytest.approx(placement.predicted["crown_margin"], abs=0.3)
    assert geometry.missing_mm == {}


def test_place_refuses_a_head_cut_by_the_top_edge() -> None:
    spec = get_spec("icao")
    with pytest.raises(PhotoRejected) as info:
        idsteps.place(reading(), head_matte(top=-40), 0.0, spec, extending=idsteps.plan_edits(spec, WHITE).extend_canvas)
    assert info.value.code == "photo_cut_off" and info.value.details == {"edge": "top"}


def test_extend_grows_the_canvas_only_where_the_frame_reaches_past_the_photo() -> None:
    spec = get_spec("icao")
    alpha = head_matte()
    geometry = idsteps.place(reading(), alpha, 0.0, spec, extending=idsteps.plan_edits(spec, WHITE).extend_canvas)
    extending = Edit(spec.edit("extend_canvas"), applies=True)
    inside = idsteps.extend_canvas(matted(alpha), dataclasses.replace(geometry, extension=Extension()), reading(),
                                   extending=extending)
    assert inside.alpha is alpha and not inside.edit.done
    grown = idsteps.extend_canvas(matted(alpha), dataclasses.replace(geometry, extension=Extension(top=5, bottom=12)),
                                  reading(), extending=extending)
    assert grown.alpha.shape == (alpha.shape[0] + 17, alpha.shape[1]) and grown.edit.done
    assert grown.placement.origin[1] == pytest.approx(geometry.placement.origin[1] + 5)
    assert (grown.alpha[:5] == 0).all()  # background above


def test_crop_resamples_the_photo_or_the_foreground_into_the_spec_size() -> None:
    spec = get_spec("icao")
    alpha = head_matte()
    rgb = np.full(alpha.shape + (3,), 90, np.uint8)
    edits = idsteps.plan_edits(spec, None)
    geometry = idsteps.place(reading(), alpha, 0.0, spec, extending=edits.extend_canvas)
    extended = idsteps.extend_canvas(matted(alpha), geometry, reading(), extending=edits.extend_canvas)
    kept = idsteps.crop(rgb, matted(alpha), extended, geometry, edits.crop_scale, keep_background=True)
    assert kept.pixels.shape == (spec.height_px, spec.width_px, 3) and kept.edit.done
    assert kept.others is not None and np.array_equal(kept.others, kept.alpha)  # the raw matte, carried along
    inside = kept.photographed == 255
    assert inside.any() and (kept.pixels[inside] == 90).all()
    replaced = idsteps.crop(rgb, matted(alpha), extended, geometry, edits.crop_scale, keep_background=False)
    assert replaced.others is None
    assert (replaced.pixels[..., 0][replaced.alpha == 255] == 200).all()  # the foreground, not the photo


# --- background, tone, encode -------------------------------------------------------------------------


def small_crop(spec_id: str = "icao") -> idsteps.Cropped:
    alpha = np.zeros((40, 30), np.uint8)
    alpha[:, 15:] = 255
    pixels = np.zeros((40, 30, 3), np.uint8)
    pixels[:, 15:] = (200, 0, 0)
    return idsteps.Cropped(pixels, alpha, np.full((40, 30), 255, np.uint8), Edit(get_spec(spec_id).edit("crop_scale"), True, True))


def test_background_replaces_the_backdrop_and_says_so() -> None:
    replacing = idsteps.plan_edits(get_spec("icao"), (10, 20, 30)).replace_background
    out = idsteps.background(small_crop(), replacing, colour=(10, 20, 30), gradient=False)
    assert (out.pixels[:, :15] == (10, 20, 30)).all() and (out.pixels[:, 15:] == (200, 0, 0)).all()
    assert out.edit.done and out.edit.operation == "replace_background"
    assert (out.photographed[:, :15] == 0).all() and (out.photographed[:, 15:] == 255).all()
    faded = idsteps.background(small_crop(), replacing, colour=(10, 20, 30), gradient=True)
    assert faded.pixels[0, 0].sum() > faded.pixels[-1, 0].sum()  # lighter at the top
    kept = idsteps.background(small_crop(), idsteps.plan_edits(get_spec("icao"), None).replace_background, colour=None,
                              gradient=False)
    assert np.array_equal(kept.pixels, small_crop().pixels)
    assert not kept.edit.done and not kept.edit.applies


def test_tone_passes_the_pixels_and_never_edits() -> None:
    edits = idsteps.plan_edits(get_spec("icao"), WHITE)
    rendered = idsteps.background(small_crop(), edits.replace_background, colour=WHITE, gradient=False)
    same, edit = idsteps.tone(rendered, edits.adjust_tone)
    assert same is rendered and edit.operation == "adjust_tone" and not edit.done


def test_encode_answers_the_file_its_type_and_quality() -> None:
    pixels = np.random.default_rng(4).integers(0, 256, (120, 90, 3), dtype=np.uint8)
    png = encode_photo(pixels, fmt="png", dpi=300, max_kb=None)
    assert png.content_type == "image/png" and png.jpeg_quality is None and png.data.startswith(b"\x89PNG")
    jpeg = encode_photo(pixels, fmt="jpeg", dpi=300, max_kb=None)
    assert jpeg.content_type == "image/jpeg" and jpeg.jpeg_quality == JPEG_QUALITY_MAX
    with pytest.raises(PhotoRejected) as info:
        encode_photo(pixels, fmt="png", dpi=300, max_kb=1, field_name="kb", noun="image")
    assert info.value.code == "kb_unreachable" and "kb=1" in info.value.message
