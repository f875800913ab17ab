"""The advice on a rule line of the report (head height, eye line, margins, width), written once.

A line that fails is told what to do, in this order: what to change, then what the head's two
tops read (`crown_tops`), then how far the photo falls short of the frame where nothing may be
painted in. What to change is the rule's own advice (`wording.ADVICE`), except where the photo
itself was too tight for the frame (it falls short of it, or the frame was moved to keep the whole
head: `whole_head.keep_whole_head`): then a vertical line fails because of how the photo was
taken, and the side it misses on says what to change:

* the head too tall for the frame (`head_height` over its band), the eyes too low in it (`eye_line`
  under its band: hair and forehead fill the room above them) or the chin too near the bottom edge
  (`chin_margin` under its band): the head is too large for this frame, so step back;
* the eyes too high (`eye_line` over its band) or too little room above the crown (`crown_margin`
  under its band): the photo's top edge is too close to the hair, so leave more room above it.

Wording only (pure): whether a line fails is measured on the output by `compliance`.
"""

from __future__ import annotations

import math
from typing import Any

from .wording import ADVICE, FRAME_ADVICE, UNCERTAIN_ADVICE, missing_words

STEP_BACK = ("Your head is too large for this frame: step back from the camera (or send the uncropped original), "
             "so the photo shows your whole head, room above it and your shoulders")
ROOM_ABOVE = ("Leave more room above your head: the photo's top edge is too close to your hair; take it again with "
              "more space above your head (hold the camera a little higher, or step back)")
NOT_MEASURED = "Could not be measured on the photo"


def reason(name: str, value: float, rules: Any) -> str | None:
    """What to change for a vertical rule `name` whose reading `value` (mm) lies outside its band in
    `rules`, by the side it misses on; None where the photo's framing does not explain it."""
    band = getattr(rules, name, None)
    if band is None:
        return None
    low = -math.inf if band.low is None else float(band.low)
    high = math.inf if band.high is None else float(band.high)
    under, over = value < low, value > high
    if (name == "head_height" and over) or (name == "eye_line" and under) or (name == "chin_margin" and under):
        return STEP_BACK
    if (name == "eye_line" and over) or (name == "crown_margin" and under):
        return ROOM_ABOVE
    return None


def rule_advice(name: str, value: float | None, passed: bool | None, *, uncertainty: float = 0.0,
                tops: str | None = None, missing_mm: dict[str, float] | None = None,
                tight_rules: Any = None) -> str | None:
    """The advice of rule line `name` reading `value` (mm; None: not measured), judged `passed`:
    none for a pass; for a reading within its `uncertainty` (mm) of the band's end, to check it; for
    a failure, what to change (the rule's own words, or where the photo was too tight, `tight_rules`
    the rules it was framed for, the `reason`), the two tops' readings (`tops`), and the shortfall
    (`missing_mm`, per edge of the print)."""
    if passed is True:
        return None
    if passed is None:
        return UNCERTAIN_ADVICE.format(u=uncertainty)
    lead = NOT_MEASURED if value is None else ADVICE[name]
    why = None if value is None or tight_rules is None else reason(name, value, tight_rules)
    rest = [part for part in (tops, None if not missing_mm else
                              f"The photo is short of the frame ({missing_words(missing_mm)} of the print): "
                              f"{FRAME_ADVICE}.") if part]
    return " ".join([lead if why is None else f"{why}.", *rest])
