"""What to change when taking the photo again, where the photo itself is too tight for the frame.

Where the frame could not be cut as the rules wanted (the photo falls short of it and nothing may be
painted in, or the frame was moved to keep the whole head: `headroom.keep_whole_head`), a vertical
line that fails does so because of how the photo was taken, and its direction says what to change:

* the head too tall for the frame (`head_height` over its band), the eyes too low in it (`eye_line`
  under its band: hair and forehead fill the room above them) or the chin too near the bottom edge
  (`chin_margin` under its band): the head is too large for this frame, so step back;
* the eyes too high (`eye_line` over its band) or too little room above the crown (`crown_margin`
  under its band): the photo's top edge is too close to the hair, so leave more room above it.

Wording only: which lines fail is measured on the output by `compliance`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from .compliance import Check
from .wording import ADVICE

STEP_BACK = ("Your head is too large for this frame: step back from the camera (or send the uncropped original), "
             "so the photo shows your whole head, room above it and your shoulders")
ROOM_ABOVE = ("Leave more room above your head: the photo's top edge is too close to your hair; take it again with "
              "more space above your head (hold the camera a little higher, or step back)")


def reason(name: str, value: float, rules: Any) -> str | None:
    """The advice for a vertical rule `name` whose reading `value` (mm) lies outside its band in
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


def advise(checks: list[Check], rules: Any) -> list[Check]:
    """The report's lines, each failed vertical rule line led by what to change when taking the
    photo again (`reason`); the rest of the line's advice (how far the photo falls short) follows,
    without the rule's generic words (compliance.ADVICE), which the reason replaces."""
    out = []
    for check in checks:
        words = None
        if check.kind == "rule" and check.passed is False and isinstance(check.value, (int, float)):
            words = reason(check.name, float(check.value), rules)
        if words is None:
            out.append(check)
            continue
        rest = (check.advice or "").strip()
        generic = ADVICE.get(check.name, "")
        if generic and rest.startswith(generic):  # the rule's own words say less than the reason does
            rest = rest[len(generic):].strip()
        out.append(replace(check, advice=f"{words}." + (f" {rest}" if rest else "")))
    return out
