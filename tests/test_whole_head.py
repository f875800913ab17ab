"""Issue 45, item 1: a photo too tight for the frame keeps the whole head, and says what to change.

Pure tests of `whole_head.keep_whole_head` and `rule_advice`, then the pipeline on a real tight crop of a
corpus portrait (audrey, on a white fur backdrop), measured on the output as an inspector would.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.imaging import rule_advice
from app.imaging.canvas import BICUBIC_REACH, fit_inside
from app.imaging.head import Head
from app.imaging.solver import place_on_rules
from app.imaging.whole_head import CROWN_GAP, keep_whole_head
from app.imaging.wording import ADVICE, FRAME_ADVICE, missing_words
from app.specs import get_spec
from tests.support.sitters import portrait_models

US = get_spec("us-passport")


def placed(head: Head, *, roll: float = 0.0) -> object:
    return place_on_rules(head, US.rules, roll_deg=roll, pivot=(head.centre_x, head.eye_y), size=(600, 600),
                          size_mm=(US.width_mm, US.height_mm))


def crown_row_on_output(placement: object, head: Head) -> float:
    """The output row the top of the hair lands on (upright px -> output px)."""
    return (head.crown_y - placement.origin[1]) * placement.scale


def test_a_frame_through_the_hair_moves_up_as_far_as_the_photo_allows() -> None:
    # a head 450 px tall whose hair starts 6 px below the top of a photo 500 px wide: us-passport's
    # frame (head 50-69 % of it) is wider than the photo, so fit_inside enlarges it about its centre,
    # and that cuts through the hair
    head = Head(crown_y=6.0, chin_y=456.0, eye_y=200.0, centre_x=250.0, width=330.0, eye_distance=110.0,
                face_width=247.0)
    shape = (620, 500)
    fitted = fit_inside(placed(head), shape)
    assert crown_row_on_output(fitted, head) < 0, "the case this guards against: the frame cuts the crown"
    kept, moved = keep_whole_head(fitted, head, inside=shape)
    assert moved > 0
    # the top of the frame is on the photo's top rows (BICUBIC_REACH clear) and the hair below it
    assert kept.origin[1] == pytest.approx(BICUBIC_REACH, abs=0.01)
    assert crown_row_on_output(kept, head) > 0
    assert kept.scale == fitted.scale and kept.origin[0] == fitted.origin[0]


def test_with_room_above_the_hair_gets_its_gap_and_nothing_else_moves() -> None:
    head = Head(crown_y=40.0, chin_y=456.0, eye_y=230.0, centre_x=250.0, width=330.0, eye_distance=110.0,
                face_width=247.0)
    fitted = fit_inside(placed(head), (700, 500))
    kept, moved = keep_whole_head(fitted, head, inside=(700, 500))
    assert crown_row_on_output(kept, head) == pytest.approx(CROWN_GAP * 600, abs=0.01)
    assert moved == pytest.approx(CROWN_GAP * 600 - crown_row_on_output(fitted, head), abs=0.01)
    again, more = keep_whole_head(kept, head, inside=(700, 500))
    assert more == 0.0 and again is kept


def test_a_skull_crown_under_big_hair_keeps_the_hair_on_an_extended_canvas() -> None:
    # crown_y is the skull, the hair rises 60 px above it: nothing bounds the move where the canvas
    # may be extended
    head = Head(crown_y=100.0, chin_y=400.0, eye_y=230.0, centre_x=250.0, eye_distance=100.0, hair_y=40.0)
    placement = placed(head)
    kept, moved = keep_whole_head(placement, head, inside=None)
    hair_row = (40.0 - kept.origin[1]) * kept.scale
    assert hair_row == pytest.approx(CROWN_GAP * 600, abs=0.01) or (moved == 0.0 and hair_row >= CROWN_GAP * 600)


def test_a_levelled_frame_moves_along_the_face_not_off_the_photo() -> None:
    head = Head(crown_y=6.0, chin_y=456.0, eye_y=200.0, centre_x=250.0, width=330.0, eye_distance=110.0,
                face_width=247.0)
    shape = (620, 500)
    fitted = fit_inside(placed(head, roll=4.0), shape)
    kept, _ = keep_whole_head(fitted, head, inside=shape)
    a, b, c, d, e, f = kept.output_to_input()
    for u, v in ((0, 0), (600, 0), (0, 600), (600, 600)):
        x, y = a * u + b * v + c, d * u + e * v + f
        assert BICUBIC_REACH - 1e-6 <= x <= shape[1] - BICUBIC_REACH + 1e-6
        assert BICUBIC_REACH - 1e-6 <= y <= shape[0] - BICUBIC_REACH + 1e-6


def test_the_failing_lines_say_what_to_change_by_the_side_they_miss_on() -> None:
    rules = US.rules  # head 25.4-34.9 mm, eye line 28.6-34.9 mm
    assert rule_advice.rule_advice("head_height", 40.0, False, tight_rules=rules).startswith(rule_advice.STEP_BACK)
    short = rule_advice.rule_advice("eye_line", 25.0, False, missing_mm={"top": 2.0}, tight_rules=rules)
    assert short == (f"{rule_advice.STEP_BACK}. The photo is short of the frame ({missing_words({'top': 2.0})} of the "
                     f"print): {FRAME_ADVICE}.")
    assert rule_advice.rule_advice("eye_line", 40.0, False, tight_rules=rules).startswith(rule_advice.ROOM_ABOVE)
    assert rule_advice.rule_advice("head_height", 20.0, False, tight_rules=rules) == ADVICE["head_height"], \
        "a head too small is not explained by a tight photo"
    assert rule_advice.rule_advice("head_height", 40.0, False) == ADVICE["head_height"], "a photo that was not tight"
    assert rule_advice.rule_advice("head_height", 30.0, True, tight_rules=rules) is None, "a passing line gets none"
    assert "step back" in rule_advice.STEP_BACK and "more room above your head" in rule_advice.ROOM_ABOVE.lower()


# -- a real tight crop ----------------------------------------------------------------------------------

# audrey (540 x 720, white fur backdrop): the hair's top is at row 21 over the head's columns, the
# chin at row 470 (corpus.HAND_READ_CHINS). This crop leaves 9 px above the hair (a few flyaway
# strands reach higher): too little room for us-passport's frame, which would hold the head at 50-69 %
# of its height, and too narrow for it (the frame is enlarged about its centre to stay on the photo).
TIGHT_CROP = (10, 12, 530, 700)
WHITE = (255, 255, 255)


@pytest.fixture(scope="module")
def tight_photo(model_home: Path) -> np.ndarray:
    from tests.support import corpus

    corpus.fetch(None, names=("audrey",))  # fails, never skips, where it cannot be fetched
    with Image.open(corpus.default_dir() / "audrey.jpg") as image:
        rgb = np.asarray(image.convert("RGB"))
    x0, y0, x1, y1 = TIGHT_CROP
    return np.ascontiguousarray(rgb[y0:y1, x0:x1])


@pytest.fixture(scope="module")
def service_models(model_home: Path) -> dict[str, object]:
    return portrait_models(model_home)

def make_tight(tight_photo: np.ndarray, service_models: dict[str, object]) -> object:
    from app.pipelines.idphoto import IdPhotoOptions, make_id_photo
    from app.timings import Timings

    return make_id_photo(tight_photo, detector=service_models["detector"], segmenter=service_models["segmenter"],
                         fallback=service_models["fallback"], options=IdPhotoOptions(spec=US, background=WHITE),
                         max_side=service_models["max_side"], timings=Timings())


def top_of_person(alpha: np.ndarray) -> int | None:
    """The first output row where a tenth of the middle third's columns are person (the matte's top)."""
    middle = alpha[:, alpha.shape[1] // 3 : 2 * alpha.shape[1] // 3] >= 128
    rows = np.flatnonzero(middle.mean(axis=1) >= 0.1)
    return int(rows[0]) if rows.size else None


def test_a_tight_photo_keeps_the_whole_head_and_says_step_back(tight_photo: np.ndarray,
                                                               service_models: dict[str, object]) -> None:
    from tests.support.inspector import inspect_id_photo
    from tests.support.judge import inspector_bands

    photo = make_tight(tight_photo, service_models)
    assert photo.pixels.shape == (600, 600, 3)
    # the person's top is inside the output, with room above it: on the output's matte and as the
    # independent inspector reads the output's pixels
    top = top_of_person(photo.alpha)
    assert top is not None and top > 0, top
    assert not (photo.alpha[0] >= 128).any(), "no person pixel on the top row"
    verdict = inspect_id_photo(photo.pixels, **inspector_bands("us-passport", "white"))
    assert verdict["measures"]["crown_px"] > 0, verdict["measures"]
    # the lines the photo cannot meet fail, and say what to change when taking it again
    failed = {check.name: check for check in photo.checks if check.judged and check.passed is False}
    assert "head_height" in failed, [c.to_dict() for c in photo.checks]
    assert failed["head_height"].advice.startswith(rule_advice.STEP_BACK)
    assert not photo.compliant


def test_without_keeping_the_head_the_same_crop_is_framed_through_the_hair(
    tight_photo: np.ndarray, service_models: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the test above guards against: the frame the rules and the photo's edges leave cuts the
    hair (the output's top row is person)."""
    from app.pipelines import idsteps

    monkeypatch.setattr(idsteps, "keep_whole_head", lambda placement, head, *, inside: (placement, 0.0))
    photo = make_tight(tight_photo, service_models)
    assert (photo.alpha[0] >= 128).mean() > 0.1, "the hair runs off the output's top edge"
