"""The compliance report: the finished photo measured as an inspector would (pure functions).

Every check measures the output itself (pixels, the matte warped with it, a face detection run on
the output), never the numbers the pipeline aimed for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np


from . import expression
from .backdrop import Backdrop, chroma_of, colour_distance, measure_backdrop
from .head import (
    FACE_WIDTH_IOD,
    FACE_WIDTH_UNCERTAINTY,
    SKULL_ABOVE_EYES_IOD,
    SKULL_UNCERTAINTY,
    centre_line,
    chin_row,
    crown_columns,
    crown_row,
    eye_distance,
    eye_line,
    person_run,
    skull_top,
)
from .crown_tops import judge_tops, other_top
from .people import PERSON_LINK
from .eye_line_roll import with_dense_roll
from .pose import UNCERTAINTY_DEG, Pose, estimate_pose, judge
from .rule_advice import rule_advice
from .solver import RULE_NAMES, band_miss, band_slack, judge_band
from .wording import (
    ADVICE,
    CAPTURE_SOURCES,
    CORNERS_ADVICE,
    EYES_ADVICE,
    GAPING_ADVICE,
    HANDS_ADVICE,
    INSTEAD,
    MOUTH_ADVICE,
    NOT_CHECKED,
    NOT_CHECKED_EYES,
    RULE_LABEL,
    missing_words,
    mm_band_text,
    wall_advice,
)
from ..specs import OPERATION_WORDS, EditPolicy, PhotoSpec

MAX_BACKGROUND_STD = 6.0  # per channel, across each row of pure background
MAX_BACKGROUND_DELTA = 12.0  # mean distance from the requested colour
# The two top corners (this share of each side) hold nothing but background in an ID photo: a head
# is well inside them, so a matte that reaches there is someone or something else kept beside it
CORNER_SHARE = 0.08
MAX_CORNER_PERSON = 0.02  # share of the corners' pixels the matte may hold (a stray hair's tip)


@dataclass(frozen=True)
class Check:
    """One line of the report. `passed` is None for a line that is not a pass/fail judgement: an
    information line (kind "info"), something no model here can judge (kind "not_checked"), or a
    pose the estimate cannot decide (kind "pose", with advice to check it)."""

    name: str
    value: float | int | str | dict | None
    allowed: str
    passed: bool | None
    unit: str | None = None
    advice: str | None = None
    broken_by: float | None = None  # how far outside its band (in `unit`) a failed rule is
    kind: str = "rule"  # "rule", "pose", "quality", "expression", "edit", "info", "not_checked"
    uncertainty: float | None = None  # the reading's measuring uncertainty (in `unit`), where it matters
    tops: dict | None = None  # head height: the top it measured and both tops' mm (`crown_tops.judge_tops`)

    @property
    def judged(self) -> bool:
        """A line that `compliant` needs to pass: everything but information and what is not checked
        (a line the measure cannot decide, pass None, is judged and does not pass)."""
        return self.kind not in ("info", "not_checked")

    def to_dict(self) -> dict[str, object]:
        value = round(self.value, 4) if isinstance(self.value, float) else self.value
        out: dict[str, object] = {"name": self.name, "value": value, "allowed": self.allowed, "pass": self.passed,
                                  "kind": self.kind}
        if self.unit is not None:
            out["unit"] = self.unit
        if self.advice is not None:
            out["advice"] = self.advice
        if self.broken_by is not None:
            out["broken_by"] = round(self.broken_by, 2)
        if self.uncertainty is not None:
            out["uncertainty"] = round(self.uncertainty, 2)
        if self.tops is not None:
            out["tops"] = self.tops
        return out


def background_checks(
    rgb: np.ndarray, alpha: np.ndarray, *, colour: tuple[int, int, int], gradient: bool,
    allowed: dict[str, tuple[int, int, int]] | None = None,
) -> list[Check]:
    """Uniformity of the pure-background pixels (alpha < 2%): per-row spread and distance to the
    nearest colour the authority allows (`allowed`, by name; None: no authority stands behind the
    spec, and the chosen `colour` is the aim), never merely to the colour the client chose (for a
    gradient, only the spread across rows is checked)."""
    background = alpha < 5
    if background.mean() < 0.02:
        return [Check("background_uniformity", None, "visible background", False)]
    pixels = rgb.astype(np.float32)
    spreads = []
    for row in range(0, rgb.shape[0], max(1, rgb.shape[0] // 64)):
        mask = background[row]
        if mask.sum() >= 8:
            spreads.append(float(pixels[row][mask].std(axis=0).max()))
    spread = max(spreads) if spreads else 0.0
    checks = [Check("background_uniformity", spread, f"<= {MAX_BACKGROUND_STD} (std per row)", spread <= MAX_BACKGROUND_STD),
              corners_check(alpha)]
    if not gradient:
        targets = {"chosen": colour} if allowed is None else allowed
        mean = pixels[background].mean(axis=0)
        name = min(targets, key=lambda key: float(np.linalg.norm(mean - np.asarray(targets[key], np.float32))))
        delta = float(np.linalg.norm(mean - np.asarray(targets[name], np.float32)))
        words = " or ".join(f"{key} {tuple(rgb_)}" for key, rgb_ in targets.items())
        passed = delta <= MAX_BACKGROUND_DELTA
        checks.append(Check("background_colour", delta, f"<= {MAX_BACKGROUND_DELTA} from {words}", passed,
                            advice=None if passed else f"The background is not a colour this authority allows: choose {' or '.join(targets)}"))
    return checks


def corners_check(alpha: np.ndarray) -> Check:
    """The top corners (CORNER_SHARE of each side) of the output matte (H, W) uint8: the share of
    their pixels that are someone (alpha >= PERSON_LINK) must stay under MAX_CORNER_PERSON."""
    height, width = alpha.shape
    ch, cw = max(1, round(CORNER_SHARE * height)), max(1, round(CORNER_SHARE * width))
    corners = np.concatenate([alpha[:ch, :cw].ravel(), alpha[:ch, -cw:].ravel()])
    share = float((corners >= PERSON_LINK).mean())
    return Check("background_clear", round(share, 3), f"<= {MAX_CORNER_PERSON} of the top corners", share <= MAX_CORNER_PERSON,
                 advice=None if share <= MAX_CORNER_PERSON else CORNERS_ADVICE)


def measure_output(
    alpha: np.ndarray, landmarks: np.ndarray, box: tuple[float, float, float, float], *, size_mm: tuple[float, float],
    width_of: str = "face", crown_meaning: str = "hair", chin: np.ndarray | None = None,
) -> dict[str, float | None]:
    """Every rule's value in mm, measured on the output: eyes and chin from the landmarks detected
    on it (the chin from the dense landmarks' menton, `chin` (x, y) px, where they ran), crown from
    its matte (the hair's top, or with crown_meaning="skull" the natural top of the head under it,
    `placement.skull_top`); head width as the rule means it (`width_of`): the face
    between the ear roots (FACE_WIDTH_IOD eye distances), or the whole head at the eye line."""
    height, width = alpha.shape
    mm_y = size_mm[1] / height
    mm_x = size_mm[0] / width
    eye_y, centre_x, distance = eye_line(landmarks), centre_line(landmarks), eye_distance(landmarks)
    hair = crown_row(alpha, x_range=crown_columns(landmarks, box))
    crown = hair if crown_meaning != "skull" or hair is None else skull_top(hair_y=hair, eye_y=eye_y, eye_distance=distance)
    chin_y = chin_row(landmarks, chin)
    run = person_run(alpha, y=eye_y, centre_x=centre_x)
    head_w = None if run is None else float(run[1] - run[0])
    return {
        "head_height": None if crown is None else (chin_y - crown) * mm_y,
        "crown_margin": None if crown is None else crown * mm_y,
        "chin_margin": (height - chin_y) * mm_y,
        "eye_line": (height - eye_y) * mm_y,
        "head_width": (FACE_WIDTH_IOD * distance * mm_x if width_of == "face"
                       else None if head_w is None else head_w * mm_x),
        "centre_x": centre_x * mm_x,
        "eye_distance": distance * mm_x,
        "side_margin": None if run is None else min(run[0], width - run[1]) * mm_x,
    }


# The chin from the dense landmarks is within 0.03 eye distances of four chins read by eye; the
# eyes-and-mouth estimate without them was up to 0.28 low (README, "The pipeline").
CHIN_UNCERTAINTY_IOD = 0.03
CHIN_ESTIMATE_UNCERTAINTY_IOD = 0.28


def reading_uncertainty(values: dict[str, float | None], *, crown_meaning: str, width_of: str, dense_chin: bool) -> dict[str, float]:
    """mm of measuring uncertainty per rule whose reading is an estimate: the skull under the hair
    (SKULL_UNCERTAINTY of its height above the eyes), the chin (CHIN_UNCERTAINTY_IOD eye distances
    from the dense landmarks, CHIN_ESTIMATE_UNCERTAINTY_IOD without), the face's width between the
    ear roots (FACE_WIDTH_UNCERTAINTY). The other readings are good to a pixel or two."""
    iod = values.get("eye_distance") or 0.0
    crown = SKULL_UNCERTAINTY * SKULL_ABOVE_EYES_IOD * iod if crown_meaning == "skull" else 0.0
    chin = (CHIN_UNCERTAINTY_IOD if dense_chin else CHIN_ESTIMATE_UNCERTAINTY_IOD) * iod
    out = {"head_height": math.hypot(crown, chin), "crown_margin": crown, "chin_margin": chin}
    if width_of == "face" and values.get("head_width") is not None:
        out["head_width"] = FACE_WIDTH_UNCERTAINTY * float(values["head_width"])  # type: ignore[arg-type]
    return out


def rule_checks(values: dict[str, float | None], rules: Any, *, crown_meaning: str = "hair",
                uncertainty: dict[str, float] | None = None, other_head: tuple[float | None, float] | None = None,
                missing_mm: dict[str, float] | None = None, tight_rules: Any = None) -> list[Check]:
    """One line per band the spec holds (mm). Where the crown is the skull, the lines that reach
    the crown say so, with the estimate's uncertainty. A reading within its `uncertainty` (mm) of
    a band's end has pass None: the measure cannot decide, and `compliant` is false. With
    `other_head` (the other top's head height in mm and its uncertainty) the head-height line is
    judged to both tops (`crown_tops.judge_tops`). Each line's advice is `rule_advice`'s, with
    `missing_mm` (how far the photo falls short of the frame) and `tight_rules` (where the photo was
    too tight: the rules it was framed for)."""
    uncertainty = uncertainty or {}
    checks = []
    for name in RULE_NAMES:
        band = getattr(rules, name, None)
        if band is None:
            continue
        value = values.get(name)
        label = RULE_LABEL[name]
        if crown_meaning == "skull" and name in ("head_height", "crown_margin", "eye_line"):
            label += (f"; crown = the natural top of the head, estimated {SKULL_ABOVE_EYES_IOD:g} eye distances above "
                      f"the eyes (+-{100 * SKULL_UNCERTAINTY:g} %)")
        allowed = mm_band_text(band.low, band.high) + f" ({label})"
        ends = (-math.inf if band.low is None else band.low, math.inf if band.high is None else band.high)
        u = uncertainty.get(name, 0.0)
        shown = None if value is None else round(value, 2)
        passed = False if value is None else judge_band(value, ends, u)
        tops = None
        if name == "head_height" and other_head is not None:
            tops = judge_tops(shown, passed, ends=(band.low, band.high), other_mm=other_head[0],
                              other_uncertainty=other_head[1], crown_meaning=crown_meaning,
                              source=getattr(rules, "crown_source", None))
            allowed, passed = allowed + tops.allowed, tops.passed
        advice = (tops.split if tops is not None and tops.split is not None else
                  rule_advice(name, shown, passed, uncertainty=u, tops=None if tops is None else tops.said,
                              missing_mm=missing_mm, tight_rules=tight_rules))
        if value is None:
            checks.append(Check(name, None, allowed, False, unit="mm", advice=advice))
            continue
        checks.append(Check(name, shown, allowed, passed, unit="mm", advice=advice,
                            broken_by=band_miss(value, ends) if passed is False else None, uncertainty=u or None,
                            tops=None if tops is None else tops.tops))
    return checks


def pose_checks(pose: Pose, rules: Any, *, roll_uncertainty: float | None = None) -> list[Check]:
    """Yaw, pitch and roll against the spec's limits, judged with the estimate's uncertainty
    (`pose.judge`; `Pose.uncertainty`: the 68-point fit's where it ran, `dense_pose`; the roll's is
    `roll_uncertainty` where given: `dense_roll`): a line the estimate cannot decide has pass None
    and asks the person to check."""
    limits = (("yaw_degrees", "yaw", pose.yaw, rules.max_yaw_deg), ("pitch_degrees", "pitch", pose.pitch, rules.max_pitch_deg),
              ("roll_degrees", "roll", pose.roll, rules.max_roll_deg))
    out = []
    for name, axis, value, limit in limits:
        margin = roll_uncertainty if axis == "roll" and roll_uncertainty is not None else pose.uncertainty(axis)
        passed = judge(value, limit, margin)
        allowed = f"<= {limit:g} either way (the estimate is good to +-{margin:g}: beyond {limit + margin:g} it fails)"
        if passed is None:
            advice = (f"{ADVICE[name]}: it reads {abs(value):.0f} degrees, over the {limit:g}-degree limit by less than "
                      f"our estimate's +-{margin:g}, so we cannot tell; check it yourself")
        else:
            advice = None if passed else ADVICE[name]
        out.append(Check(name, round(value, 1), allowed, passed, unit="degrees", kind="pose", advice=advice,
                         broken_by=abs(value) - limit if passed is False else None))
    return out


# ISO/IEC 19794-5:2005, 8.4.1 (full frontal image type): at least 90 px between the eye centres
# (a head about 180 px wide), the figure ICAO's portrait-quality guidance repeats for the photo an
# officer prints or scans. A smaller face is enlarged into the print and shows its pixels.
MIN_EYE_DISTANCE_PX = 90


def resolution_check(*, input_eye_distance_px: float, output_eye_distance_px: float) -> Check:
    """The capture-quality line on the face's resolution: fails when the original has fewer than
    MIN_EYE_DISTANCE_PX between the eye centres and the output enlarges it; passes otherwise."""
    enlarged = output_eye_distance_px > input_eye_distance_px * 1.0001
    small = input_eye_distance_px < MIN_EYE_DISTANCE_PX
    passed = not (small and enlarged)
    advice = None if passed else (
        f"{input_eye_distance_px:.0f} px between your eyes; a printed photo needs at least {MIN_EYE_DISTANCE_PX}: "
        "send the original file, not a thumbnail")
    return Check("face_resolution", round(input_eye_distance_px, 1),
                 f">= {MIN_EYE_DISTANCE_PX} px between the eye centres of the original where the print enlarges it "
                 "(ISO/IEC 19794-5:2005, 8.4.1, full frontal image)", passed, unit="px", kind="quality",
                 advice=advice, broken_by=None if passed else MIN_EYE_DISTANCE_PX - input_eye_distance_px)


# --- capture quality that an officer refuses: blur, a dim face, one side in shadow -----------------
# The measures are app.imaging.quality's (on the original's face, aligned); these lines turn three of
# them into judged lines. Thresholds set on the portrait corpus labelled by eye by capture
# (tests/support/corpus.py, `capture`), printed per label by `python -m bench.idphoto --capture`.
# The requirements' words, read in copies (no primary text was in the search corpus):
# Exposure is judged on what the camera recorded, never on how dark the skin is: the lit half's
# pixels clipped to black, washed-out pixels, and the lit half's highlights (an eye white and the
# skin's own highlights, bright under good light on every skin). A half in shadow is the lighting
# line's fault, not exposure's. Thresholds and their corpus figures: app.imaging.quality.


def capture_checks(components: Sequence[dict]) -> list[Check]:
    """Judged lines from the capture-quality measures of the original's face (`quality.assess`):
    `capture_sharpness`, `capture_exposure` (dark highlights, the lit half clipped to black, washed out)
    and `capture_lighting` (one side of the face in shadow). Nothing when the face could not be measured."""
    found = {str(c["name"]): c for c in components}
    if "sharpness" not in found:
        return []
    sharp, luminance, highlights = found["sharpness"], found["luminance"], found["highlights"]
    dark, bright, even = found["under_exposure"], found["over_exposure"], found["illumination_uniformity"]
    exposure = (highlights, dark, bright, luminance)  # in the order their advice is given
    exposed = all(c["passed"] is not False for c in exposure)
    worst = next((c for c in exposure if c["passed"] is False), highlights)
    return [
        Check("capture_sharpness", sharp["value"], f">= {sharp['threshold']['min']} (our measure; {CAPTURE_SOURCES['sharpness']})",
              sharp["passed"], kind="quality", advice=None if sharp["passed"] is not False else sharp["advice"]),
        Check("capture_exposure", {"highlights": highlights["value"], "clipped_black": dark["value"],
                                   "washed_out": bright["value"], "luminance": luminance["value"]},
              f"the lit half's brightest 1 % at least {highlights['threshold']['min']}; at most "
              f"{dark['threshold']['max']:.0%} of its lit half clipped to black and {bright['threshold']['max']:.0%} "
              f"washed out; mean under {luminance['threshold']['max']} (our thresholds, on what the camera recorded, "
              f"not the skin's tone; {CAPTURE_SOURCES['exposure']})",
              exposed, kind="quality", advice=None if exposed else worst["advice"]),
        Check("capture_lighting", even["value"], f">= {even['threshold']['min']}, the darker half of the face over the "
              f"brighter (our threshold; {CAPTURE_SOURCES['lighting']})", even["passed"], kind="quality",
              advice=None if even["passed"] is not False else even["advice"]),
    ]


# --- the photographed background (kept, not replaced) -------------------------------------------
# Thresholds calibrated on the portrait corpus labelled by eye by background (tests/support/corpus.py,
# `background`), measured by `python -m bench.idphoto --backgrounds`, which prints each measure per label.
MAX_TEXTURE = 3.0  # luminance levels of fine detail (a patch's, at the 90th percentile): plain walls 0.5-2.9
MAX_UNEVENNESS = 30.0  # luminance levels between the wall's darkest and lightest 5 %: a gradient, a hot spot
MAX_SHADOW = 0.12  # the band beside the head this much darker than the wall further away
MAX_CLUTTER = 0.03  # share of the background where the segmentation sees something
# colour: the wall's median against the nearest allowed colour, in CIELAB (OpenCV 8-bit): a wall
# photographs darker than its paint, so lightness may fall short by MAX_DARKER (and exceed by
# MAX_LIGHTER); its hue (the a-b distance) may differ by HUE_TOLERANCE plus HUE_SHARE of the
# colour's own chroma (exposure and white balance move a saturated colour further: a blue backdrop
# reads 28 from the nominal blue, a pale blue one 15 from white)
HUE_TOLERANCE = 10.0
HUE_SHARE = 0.4
MAX_DARKER = 70.0
MAX_LIGHTER = 40.0
def photographed_background_checks(backdrop: Backdrop | None, *, allowed: dict[str, tuple[int, int, int]],
                                   other_faces: int) -> list[Check]:
    """The lines on a kept background: plain (texture), even (light), of an allowed colour, no
    shadow beside the head, nothing and nobody else in it (`other_faces`: people found on the
    output besides the one)."""
    advice = wall_advice(allowed)
    if backdrop is None:
        return [Check("background_uniformity", None, "visible background", False,
                      advice=f"Too little background shows to judge it. {advice}.")]
    plain = backdrop.texture <= MAX_TEXTURE
    even = backdrop.unevenness <= MAX_UNEVENNESS
    def miss(rgb: tuple[int, int, int]) -> tuple[float, float, float]:
        lightness, hue = colour_distance(backdrop.lab, rgb)
        tolerance = HUE_TOLERANCE + HUE_SHARE * chroma_of(rgb)
        return max(0.0, hue - tolerance) + max(0.0, -lightness - MAX_DARKER, lightness - MAX_LIGHTER), lightness, hue

    name = min(allowed, key=lambda colour: miss(allowed[colour])[0])
    off, lightness, hue = miss(allowed[name])
    coloured = off == 0.0
    shadowless = backdrop.shadow <= MAX_SHADOW
    clear = backdrop.clutter <= MAX_CLUTTER and other_faces == 0
    colours = " or ".join(allowed)
    return [
        Check("background_uniformity", round(backdrop.texture, 2), f"<= {MAX_TEXTURE:g} (fine detail on the wall, "
              "luminance levels): plain, no texture, pattern or scene", plain,
              advice=None if plain else f"The background is not plain: it shows texture, a pattern or a scene. {advice}.",
              broken_by=None if plain else backdrop.texture - MAX_TEXTURE),
        Check("background_even", round(backdrop.unevenness, 1), f"<= {MAX_UNEVENNESS:g} (light across the wall, "
              "luminance levels, 5th to 95th percentile): no gradient", even,
              advice=None if even else f"The background is lit unevenly. {advice}.",
              broken_by=None if even else backdrop.unevenness - MAX_UNEVENNESS),
        Check("background_colour", {"nearest": name, "lightness": round(lightness, 1), "hue": round(hue, 1)},
              f"{colours}: hue within {HUE_TOLERANCE:g} + {HUE_SHARE:g} x the colour's chroma, lightness {-MAX_DARKER:g} "
              f"to +{MAX_LIGHTER:g} (CIELAB, 8-bit)",
              coloured, advice=None if coloured else f"The background is not {colours}. {advice}."),
        Check("background_shadow", round(backdrop.shadow, 3), f"<= {MAX_SHADOW:g} (the wall beside the head darker "
              "than the wall further away)", shadowless,
              advice=None if shadowless else f"Your shadow falls on the wall. {advice}.",
              broken_by=None if shadowless else backdrop.shadow - MAX_SHADOW),
        Check("background_clear", {"clutter": round(backdrop.clutter, 3), "other_faces": other_faces},
              f"<= {MAX_CLUTTER:g} of the background holds something, and no other face", clear,
              advice=None if clear else f"Someone or something else is behind you. {advice}, alone."),
    ]


def edit_checks(applied: list[EditPolicy]) -> list[Check]:
    """Per applied operation: a failing line of kind "edit" where the spec's authority forbids it, with
    its words and what to do instead (the data's `instead`, else INSTEAD); an information line where
    the authority is silent on it but the data says what its own route is (`instead`)."""
    out = []
    for policy in applied:
        source, words = policy.source, OPERATION_WORDS[policy.operation]
        if policy.policy == "forbidden" and source is not None:
            out.append(Check(f"edit_{policy.operation}", "applied", f"not allowed: {source.title}", False, kind="edit",
                             advice=f"The authority refuses {words}: \u201c{source.quote}\u201d ({source.title}, "
                                    f"{source.url}). Instead, {policy.instead or INSTEAD[policy.operation]}."))
        elif policy.policy == "silent" and policy.instead:
            said = "" if source is None else f" What it asks: \u201c{source.quote}\u201d ({source.title}, {source.url})."
            out.append(Check(f"edit_{policy.operation}", "applied", "the authority does not speak of it", None,
                             kind="info", advice=f"No words of the authority on {words} were found.{said} "
                                                 f"{policy.instead}"))
    return out


def frame_check(missing_mm: dict[str, float]) -> Check | None:
    """Where the canvas was not extended and the photo does not reach the frame the rules aimed
    for: an information line with the mm missing per edge (the head then sits where the photo
    allows, and the rule lines judge that). None where nothing is missing."""
    if not missing_mm:
        return None
    return Check("photographed_frame", dict(missing_mm), "information: nothing painted in", None, unit="mm", kind="info",
                 advice=f"The photo does not reach as far as the placement wanted ({missing_words(missing_mm)} of the "
                        "print), and nothing is painted in: the head sits where the photo allows.")


def extension_check(extended_mm: dict[str, float]) -> Check:
    if not extended_mm:
        return Check("canvas_extended", {}, "information", None, unit="mm", kind="info")
    words = ", ".join(f"{edge} {mm:.1f} mm" for edge, mm in extended_mm.items())
    return Check("canvas_extended", dict(extended_mm), "information", None, unit="mm", kind="info",
                 advice=f"The original did not reach far enough; we extended the background and shoulders: {words}")


def not_checked(*, mouth_judged: bool = False, eyes_judged: bool = False) -> list[Check]:
    """What no model here judges: glare or tint on glasses and a covering's shadow, always; the mouth without the landmark net
    (`mouth_check`), the eyes without the eye cascade (`eyes_check`)."""
    texts = [NOT_CHECKED[0]]
    if not mouth_judged:
        texts.append(NOT_CHECKED[1])
    elif not eyes_judged:
        texts.append(NOT_CHECKED_EYES)
    return [Check(f"not_checked_{i}", None, "not checked", None, kind="not_checked", advice=text)
            for i, text in enumerate(texts, start=1)]


def hands_check(area_iod2: float) -> Check:
    """Skin of the person beside the head above the chin (`expression.hands_near_head`), in eye
    distances squared: a hand or arm when over MIN_HAND_AREA_IOD2."""
    limit = expression.MIN_HAND_AREA_IOD2
    passed = area_iod2 < limit
    return Check("hands", round(area_iod2, 2), f"< {limit:g} (skin beside the head above the chin, in eye distances "
                 "squared)", passed, unit="iod^2", advice=None if passed else HANDS_ADVICE,
                 broken_by=None if passed else area_iod2 - limit)


def eyes_check(found: tuple[int, int]) -> Check:
    """Both eyes seen open by the eye cascade (`expression.eyes_found`)."""
    seen, wanted = found
    passed = seen == wanted
    return Check("eyes_open", f"{seen} of {wanted}", f"{wanted} of {wanted} eyes seen open (OpenCV's Haar eye cascade)",
                 passed, kind="expression", advice=None if passed else EYES_ADVICE)


def mouth_check(openness: float, *, required: bool, source: Any = None) -> Check:
    """The inner-lip gap over the mouth's width (68 landmarks) against expression.MOUTH_OPEN_ABOVE;
    where the spec allows a natural smile, an information line, unless the mouth gapes
    (expression.MOUTH_GAPING_ABOVE). `source` (a specs.Source): the words the rule comes from,
    named in `allowed`."""
    check = _mouth_check(openness, required=required)
    if source is None:
        return check
    return replace(check, allowed=f"{check.allowed}; {source.title}: \u201c{source.quote}\u201d")


def _mouth_check(openness: float, *, required: bool) -> Check:
    if not required:
        limit = expression.MOUTH_GAPING_ABOVE
        if openness <= limit:
            return Check("mouth_closed", round(openness, 3), "not required: this spec allows a natural smile", None,
                         kind="info")
        return Check("mouth_closed", round(openness, 3), f"<= {limit:g}: a natural smile is allowed, an open mouth is not",
                     False, kind="expression", advice=GAPING_ADVICE, broken_by=openness - limit)
    limit = expression.MOUTH_OPEN_ABOVE
    passed = bool(openness <= limit)
    return Check("mouth_closed", round(openness, 3), f"<= {limit:g} (inner-lip gap over the mouth's width)", passed,
                 kind="expression", advice=None if passed else MOUTH_ADVICE,
                 broken_by=None if passed else openness - limit)


@dataclass(frozen=True)
class Written:
    """The finished photo read once, as written: `rgb` (H, W, 3) and `alpha` (H, W) uint8, the output
    and its matte; `faces` (box, landmarks) detected on it; `dpi` what the file says; `chin` the one
    face's menton (x, y) px as the dense landmarks read it, and `dense_roll` the roll of their eyes
    (judged with its own, smaller uncertainty), where they ran; `others_alpha` with the photographed
    background kept, the raw segmentation warped to the output (what else is salient behind the person)."""

    rgb: np.ndarray
    alpha: np.ndarray
    faces: list[tuple[tuple[float, float, float, float], np.ndarray]]
    dpi: tuple[float, float] | None
    chin: np.ndarray | None = None
    dense_roll: float | None = None
    others_alpha: np.ndarray | None = None


@dataclass(frozen=True)
class Original:
    """What the original photo says: its eye distance (px: the resolution line), the head's pose read on
    it (the same head at a higher resolution, read once for every spec: the output's own reading gives
    only the roll left after levelling), the lines judged on it (hands, expression, capture), and
    whether the mouth and the eyes were judged."""

    eye_distance_px: float | None = None
    head_pose: Pose | None = None
    lines: tuple[Check, ...] = ()
    mouth_judged: bool = False
    eyes_judged: bool = False


@dataclass(frozen=True)
class ReportInput:
    """What the report judges: the finished photo read once (`written`), the spec it was made for
    (`spec`: its size, `Rules` and allowed backgrounds; a custom size has no authority behind its
    colours) at `dpi`, the background asked (None: the photographed one was kept, and is judged
    against the spec's allowed colours), what the original says (`original`), how far the canvas was
    extended and the photo falls short of the frame (mm per edge), the edits made (`applied`, as the
    spec's policies), and where the photo was too tight for its frame, the rules it was framed for
    (`tight_rules`: the failed rule lines say what to change, `rule_advice`)."""

    written: Written
    spec: PhotoSpec
    dpi: int
    background: tuple[int, int, int] | None
    gradient: bool = False
    original: Original = field(default_factory=Original)
    extended_mm: dict[str, float] = field(default_factory=dict)
    missing_mm: dict[str, float] = field(default_factory=dict)
    applied: tuple[EditPolicy, ...] = ()
    tight_rules: Any = None


def report(given: ReportInput) -> list[Check]:
    """Measure the finished photo: every line of the report, in order (see `ReportInput`)."""
    written, spec, original = given.written, given.spec, given.original
    rgb, alpha, faces, chin, dpi = written.rgb, written.alpha, written.faces, written.chin, written.dpi
    height, width = rgb.shape[:2]
    size, size_mm, rules, expected_dpi = (spec.width_px, spec.height_px), (spec.width_mm, spec.height_mm), spec.rules, given.dpi
    checks = [
        Check("pixel_size", f"{width}x{height}", f"{size[0]}x{size[1]}", (width, height) == size),
        Check(
            "dpi",
            None if dpi is None else round(dpi[0]),
            str(expected_dpi),
            dpi is not None and abs(dpi[0] - expected_dpi) < 0.5 and abs(dpi[1] - expected_dpi) < 0.5,
        ),
        Check("face_count", len(faces), "1", len(faces) == 1),
    ]
    if len(faces) == 1:
        box, landmarks = faces[0]
        width_of = str(getattr(rules, "head_width_of", "face"))
        crown_meaning = str(getattr(rules, "crown", "hair"))
        values = measure_output(alpha, landmarks, box, size_mm=size_mm, width_of=width_of,
                                crown_meaning=crown_meaning, chin=chin)
        uncertainty = reading_uncertainty(values, crown_meaning=crown_meaning, width_of=width_of, dense_chin=chin is not None)
        other = other_top(crown_meaning)  # the top the spec does not measure to: what it says (crown_tops)
        others = measure_output(alpha, landmarks, box, size_mm=size_mm, width_of=width_of, crown_meaning=other, chin=chin)
        other_u = reading_uncertainty(others, crown_meaning=other, width_of=width_of, dense_chin=chin is not None)
        checks.extend(rule_checks(values, rules, crown_meaning=crown_meaning, uncertainty=uncertainty,
                                  other_head=(others["head_height"], other_u["head_height"]),
                                  missing_mm=given.missing_mm, tight_rules=given.tight_rules))
        seen = estimate_pose(landmarks)
        head_pose = original.head_pose
        pose = seen if head_pose is None else replace(head_pose, roll=seen.roll)  # keeps its yaw's own uncertainty
        pose, roll_uncertainty = with_dense_roll(pose, written.dense_roll)  # the 68 points' eyes, where they ran
        checks.extend(pose_checks(pose, rules, roll_uncertainty=roll_uncertainty))
        if original.eye_distance_px is not None:
            checks.append(resolution_check(input_eye_distance_px=original.eye_distance_px,
                                           output_eye_distance_px=eye_distance(landmarks)))
    checks.extend(original.lines)
    if given.background is None:
        chin_y = None if len(faces) != 1 else chin_row(faces[0][1], chin)
        others = alpha if written.others_alpha is None else written.others_alpha
        backdrop = measure_backdrop(rgb, alpha, others, chin_y=chin_y)
        checks.extend(photographed_background_checks(backdrop, allowed=spec.background_colours,
                                                     other_faces=max(0, len(faces) - 1)))
    else:
        checks.extend(background_checks(rgb, alpha, colour=given.background, gradient=given.gradient,
                                        allowed=spec.background_colours if spec.id != "custom" else None))
    frame = frame_check(given.missing_mm)
    if frame is not None:
        checks.append(frame)
    checks.append(extension_check(given.extended_mm))
    checks.extend(edit_checks(list(given.applied)))
    checks.extend(not_checked(mouth_judged=original.mouth_judged, eyes_judged=original.eyes_judged))
    return checks
