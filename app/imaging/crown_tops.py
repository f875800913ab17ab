"""Which top of the head the head height is measured to, and what the other top says (issue 51).

A head has two tops an authority may measure to: the top of the hair (what the matte reads, a hat's
top where a hat is worn) and the crown of the head, the skull under the hair (`head.skull_top`, an
estimate from the eyes). An authority's words say which (`Rules.crown`, with its words in
`Rules.crown_source`), or say nothing (crown "unstated", words of kind "none").

The verdict (`judge_tops`):
* the line says which top it measured, and the authority's words for it, or that none were found;
* where the authority's own words name the top of the hair, the hair is what an officer sees and
  measures: the skull under it cannot move the verdict, and is shown as information;
* otherwise (the authority measures to the skull, which no one sees under voluminous hair, a bun or
  a covering, or the words say nothing), where the two tops give verdicts on both sides of the band
  (one inside, the other outside by more than its uncertainty), the line never passes: pass None,
  with the two numbers and what to change. A line that fails on the measured top keeps its fail,
  and says what the other top reads.

The frame (`framing_rules`): where the spread between the two tops fits in the band, the head-height
band the solver places by is narrowed to the sizes that put both tops inside it, so the authority's
measure lands inside its band and the other top with it; where it does not fit (hair taller than
the band allows), the authority's measure stays in the middle of its own band.

Pure functions: the report's line itself is `compliance.rule_checks`'s, its advice `rule_advice`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from .head import Head, skull_top
from .solver import judge_band

TOP_WORDS = {"hair": "the top of the hair", "skull": "the crown of the head (the skull under the hair)"}
SPLIT_FIX = ("wear the hair flatter or tied back, or take off a hat or cap that is not worn for religious or medical "
             "reasons, and take the photo again")


def measured_top(crown_meaning: str) -> str:
    """The top the report measures for a spec's `crown`: the skull where the authority says so, else the hair."""
    return "skull" if crown_meaning == "skull" else "hair"


def other_top(crown_meaning: str) -> str:
    return "hair" if measured_top(crown_meaning) == "skull" else "skull"


def settled_by_words(crown_meaning: str, source: Any) -> bool:
    """True where the authority's own words name the top of the hair: then the skull under it is no
    officer's measure, and cannot move the verdict."""
    return crown_meaning == "hair" and getattr(source, "kind", "none") != "none"


def words_of(source: Any) -> str:
    """How the line names the words it measures by: the authority's, with their kind, or that none were found."""
    if source is None or source.kind == "none":
        return "no words of the authority on which top were found"
    return f"{source.title}: \u201c{source.quote}\u201d ({source.kind})"


@dataclass(frozen=True)
class TopsVerdict:
    """The head-height line read to both tops: the words to add to its `allowed` (which top, by whose
    words), the `tops` it shows (None where the other top was not read), its verdict (`passed`),
    and for its advice the two tops' readings (`said`: a failed line says them after what to
    change) or, where the tops fall on both sides of the band, the whole advice (`split`)."""

    allowed: str
    tops: dict | None
    passed: bool | None
    said: str | None = None
    split: str | None = None


def judge_tops(value: float | None, passed: bool | None, *, ends: tuple[float, float], other_mm: float | None,
               other_uncertainty: float, crown_meaning: str, source: Any) -> TopsVerdict:
    """The head-height line reading `value` mm to `measured_top(crown_meaning)`, judged `passed` on
    it, with the other top's reading (`other_mm`, mm, good to `other_uncertainty`): the verdict of the
    module's docstring."""
    measured, other = measured_top(crown_meaning), other_top(crown_meaning)
    allowed = f"; measured to {TOP_WORDS[measured]}: {words_of(source)}"
    if other_mm is None or value is None:
        return TopsVerdict(allowed, None, passed)
    tops = {"measured": measured, measured: value, other: round(other_mm, 2),
            "words": "none" if source is None else source.kind}
    other_passed = judge_band(other_mm, ends, other_uncertainty)
    said = (f"To {TOP_WORDS[measured]} the head is {value:.1f} mm; to {TOP_WORDS[other]} it is {other_mm:.1f} mm "
            f"(allowed {ends[0]:g}-{ends[1]:g} mm).")
    if settled_by_words(crown_meaning, source) or other_passed is not False:
        return TopsVerdict(allowed, tops, passed, said=said if passed is False and other_passed is True else None)
    if passed is False:
        return TopsVerdict(allowed, tops, passed, said=said)
    whose = ("the authority measures to the crown of the head, which no one can see under the hair"
             if measured == "skull" else "the authority's words do not say which top it measures to")
    split = (f"{said} The two tops fall on both sides of the band and {whose}: an officer who measures to "
             f"{TOP_WORDS[other]} would refuse it. To be sure, {SPLIT_FIX}.")
    return TopsVerdict(allowed, tops, None, split=split)


def other_top_height(head: Head, crown_meaning: str) -> float | None:
    """Chin to the other top (upright px) of a head measured for `crown_meaning` (`head.measure_upright`)."""
    if measured_top(crown_meaning) == "skull":
        hair = head.crown_y if head.hair_y is None else min(head.hair_y, head.crown_y)
        return head.chin_y - hair
    if head.eye_distance is None:
        return None
    return head.chin_y - skull_top(hair_y=head.crown_y, eye_y=head.eye_y, eye_distance=head.eye_distance)


def framing_rules(rules: Any, head: Head) -> Any:
    """`rules` with the head-height band narrowed to the sizes that put both tops inside it, where
    the other top can move the verdict (`settled_by_words`) and the two fit; else `rules` unchanged."""
    crown_meaning = str(getattr(rules, "crown", "hair"))
    band = rules.head_height
    other = other_top_height(head, crown_meaning)
    if (settled_by_words(crown_meaning, getattr(rules, "crown_source", None)) or other is None or other <= 0
            or head.height <= 0 or band.low is None or band.high is None):
        return rules
    ratio = head.height / other  # the measured top's height over the other's
    low, high = max(band.low, band.low * ratio), min(band.high, band.high * ratio)
    if not math.isfinite(low) or high - low <= 1e-6:
        return rules
    return replace(rules, head_height=replace(band, low=low, high=high))
