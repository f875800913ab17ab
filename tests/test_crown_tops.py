"""Issue 51, item 2: which top of the head the head-height line measures, by the authority's words,
and a line that never passes where the top of the hair and the crown of the head give verdicts on
both sides of the band (voluminous hair, a bun, a covering).

Pure tests of `crown_tops` and the spec data, then real corpus portraits through the pipeline,
measured on the output's matte (the top of the hair) and landmarks as an inspector would.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.imaging.compliance import Check, rule_checks
from app.imaging.crown_tops import framing_rules, judge_tops, other_top_height
from app.imaging.head import Head, skull_top
from app.imaging.solver import place_on_rules
from app.imaging.wording import ADVICE
from app.specs import get_spec
from tests.support.sitters import portrait_models

CA, US, TW, GB = (get_spec(name) for name in ("ca-passport", "us-passport", "tw-passport", "uk-passport"))


# --- the authorities' words ------------------------------------------------------------------------


def test_each_spec_says_whose_words_name_its_top() -> None:
    assert CA.rules.crown == "skull" and "natural top of head" in CA.rules.crown_source.quote
    assert CA.rules.crown_source.kind == "secondary"
    assert TW.rules.crown == "skull" and "if there were no hair" in TW.rules.crown_source.quote
    assert US.rules.crown == "hair" and "top of hair" in US.rules.crown_source.quote
    # the UK says "from the crown of your head to your chin": not which top; no words are ours
    assert GB.rules.crown == "unstated" and GB.rules.crown_source.kind == "none"
    assert GB.rules.crown_source.quote.startswith("Not the authority's words")
    assert CA.rules.to_dict(width_mm=50, height_mm=70)["crown_source"]["kind"] == "secondary"


# --- the verdict ---------------------------------------------------------------------------------------


def test_a_skull_inside_and_hair_above_the_band_is_undecided_with_advice() -> None:
    line = judge_tops(33.0, True, ends=(31.0, 36.0), other_mm=41.0, other_uncertainty=0.3,
                      crown_meaning="skull", source=CA.rules.crown_source)
    assert line.passed is None
    assert line.tops == {"measured": "skull", "skull": 33.0, "hair": 41.0, "words": "secondary"}
    assert "41.0 mm" in line.split and "hair flatter" in line.split
    assert "natural top of head" in line.allowed and "crown of the head" in line.allowed


def test_both_tops_inside_pass_and_say_which_top() -> None:
    line = judge_tops(33.0, True, ends=(31.0, 36.0), other_mm=35.0, other_uncertainty=0.3,
                      crown_meaning="skull", source=CA.rules.crown_source)
    assert line.passed is True and line.tops["hair"] == 35.0 and line.split is None and line.said is None


def test_where_the_authority_names_the_hair_the_skull_under_it_does_not_move_the_verdict() -> None:
    line = judge_tops(32.0, True, ends=(25.4, 34.9), other_mm=22.0, other_uncertainty=1.0,
                      crown_meaning="hair", source=US.rules.crown_source)
    assert line.passed is True and line.tops["measured"] == "hair" and "top of hair" in line.allowed


def test_where_the_words_say_nothing_a_split_is_undecided_and_says_no_words_were_found() -> None:
    line = judge_tops(31.0, True, ends=(29.0, 34.0), other_mm=26.0, other_uncertainty=1.0,
                      crown_meaning="unstated", source=GB.rules.crown_source)
    assert line.passed is None and "no words of the authority" in line.allowed


def test_a_fail_on_the_measured_top_stays_a_fail_and_names_the_other() -> None:
    line = judge_tops(38.0, False, ends=(31.0, 36.0), other_mm=34.0, other_uncertainty=0.3,
                      crown_meaning="skull", source=CA.rules.crown_source)
    assert line.passed is False and "34.0 mm" in line.said


def test_the_rule_line_says_what_to_change_then_the_other_top() -> None:
    """The head-height line judged to both tops (compliance.rule_checks): its advice written once,
    the rule's own words first, the other top's reading after them."""
    values = {"head_height": 38.0, "eye_distance": 9.0}
    (line,) = [c for c in rule_checks(values, CA.rules, crown_meaning="skull", other_head=(34.0, 0.3))
               if c.name == "head_height"]
    assert line.passed is False and line.tops is not None
    assert line.advice.startswith(ADVICE["head_height"]) and "34.0 mm" in line.advice


# --- the frame ------------------------------------------------------------------------------------------


def ca_head(*, hair_above_eyes_iod: float) -> Head:
    """A head measured for Canada (crown = the skull): eyes 100 px apart, chin 175 px below them."""
    eye_y, iod = 400.0, 100.0
    hair = eye_y - hair_above_eyes_iod * iod
    return Head(crown_y=skull_top(hair_y=hair, eye_y=eye_y, eye_distance=iod), hair_y=hair, chin_y=eye_y + 175,
                eye_y=eye_y, centre_x=300.0, width=260.0, eye_distance=iod, face_width=225.0)


def both_heights_mm(head: Head, rules: object) -> tuple[float, float]:
    placement = place_on_rules(head, rules, roll_deg=0.0, pivot=(head.centre_x, head.eye_y),
                               size=(CA.width_px, CA.height_px), size_mm=(CA.width_mm, CA.height_mm))
    mm_per_px = CA.height_mm / CA.height_px * placement.scale
    return head.height * mm_per_px, other_top_height(head, "skull") * mm_per_px


def test_the_frame_puts_both_tops_inside_the_band_where_they_fit() -> None:
    head = ca_head(hair_above_eyes_iod=1.85)  # ordinary hair, a little above the skull
    alone = both_heights_mm(head, CA.rules)
    assert alone[1] > 36.0, f"the case this guards against: the skull mid-band puts the hair over it {alone}"
    skull_mm, hair_mm = both_heights_mm(head, framing_rules(CA.rules, head))
    assert 31.0 < skull_mm < 36.0 and 31.0 < hair_mm < 36.0, (skull_mm, hair_mm)


def test_where_the_hair_cannot_fit_the_authoritys_measure_stays_mid_band() -> None:
    head = ca_head(hair_above_eyes_iod=2.6)  # voluminous hair
    assert framing_rules(CA.rules, head) is CA.rules
    skull_mm, hair_mm = both_heights_mm(head, CA.rules)
    assert skull_mm == pytest.approx(33.5, abs=0.3) and hair_mm > 36.0


# --- real portraits ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def curly(model_home: Path) -> np.ndarray:
    """row-middle: a man with voluminous curly hair, neighbours at both edges."""
    from tests.support import corpus

    corpus.fetch(None, names=("row-middle",))
    with Image.open(corpus.default_dir() / "row-middle.png") as image:
        return np.asarray(image.convert("RGB"))


@pytest.fixture(scope="module")
def models(model_home: Path) -> dict[str, object]:
    return portrait_models(model_home)

def make(rgb: np.ndarray, spec: object, models: dict[str, object]) -> object:
    from app.pipelines.idphoto import IdPhotoOptions, make_id_photo
    from app.timings import Timings

    return make_id_photo(rgb, detector=models["detector"], segmenter=models["segmenter"], fallback=models["fallback"],
                         options=IdPhotoOptions(spec=spec, background=(255, 255, 255), face="largest"),
                         max_side=models["max_side"], timings=Timings())


def head_line_of(photo: object) -> Check:
    return next(check for check in photo.checks if check.name == "head_height")


def test_voluminous_hair_on_canada_is_never_called_compliant(curly: np.ndarray, models: dict[str, object]) -> None:
    photo = make(curly, CA, models)
    line = head_line_of(photo)
    tops = line.tops
    assert tops["measured"] == "skull" and tops["hair"] > 36.0, line.to_dict()
    assert 31.0 <= tops["skull"] <= 36.0, "the authority's measure is placed inside its band"
    assert line.passed is not True and not photo.compliant
    assert "hair flatter" in (line.advice or "")


def test_the_same_hair_on_the_us_spec_is_measured_to_the_hair_inside_its_band(curly: np.ndarray,
                                                                              models: dict[str, object]) -> None:
    photo = make(curly, US, models)
    line = head_line_of(photo)
    assert line.tops["measured"] == "hair" and line.passed is True, line.to_dict()
    assert 25.4 < line.value < 34.925
    assert line.tops["skull"] < line.value  # the skull under the hair, shown, not judged
