"""A client's framing (HivisionIDPhotos' head-ratio fields) turned into rule bands, and weighed
against a spec's own rules.

HivisionIDPhotos frames a photo in three moves (its `hivision/creator/photo_adjuster.py`, read, not
copied): the crop is scaled so the face box covers `head_measure_ratio` of the photo's area; it is
placed so the face box's centre sits `head_height_ratio` of the height below the top edge; then, where
the top of the person (the matte's bounding box) lies outside `top_distance_min`..`top_distance_max`
of the height below the top edge, the crop moves by the difference, to the nearer end of that band.
What reaches past the photo is transparent. `Framing` is those numbers as a value; `aim` turns them,
for one measured head, into the two bands our solver places by (head height, crown margin, in mm of
the print), and `weigh` keeps a spec's own rule wherever the client's band would break it.

Pure functions; coordinates as in `head` and `placement` (upright px, y down).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from .head import PERSON, Head

HEAD_TOLERANCE = 0.01  # of the photo's height: the solver's band about the head height the ratios ask for
TOP_TOLERANCE = 0.0025  # of the photo's height: its band about the crown's place (1 px of 413)
JUDGED_HEAD = 0.03  # of the photo's height: how far from the asked head height the report still passes it


@dataclass(frozen=True)
class Framing:
    """A client's framing, fractions of the photo: the face box's share of the photo's area
    (`face_area`), its centre below the top edge over the height (`face_centre`), the band the top of
    the person may sit in below the top edge over the height (`top`, (min, max)). `pad`: the frame may
    reach past the photo, left transparent there, as HivisionIDPhotos cuts."""

    face_area: float
    face_centre: float
    top: tuple[float, float]
    pad: bool = True

    def to_dict(self) -> dict[str, object]:
        return {"face_area": self.face_area, "face_centre": self.face_centre, "top": list(self.top)}


class Aim(NamedTuple):
    """What the framing asks of one head on one print: the head height (mm), the crown's distance
    below the top edge (mm; the spec's crown, which is the top of the hair unless the spec reads the
    skull), and the top of the hair's band (mm) it came from."""

    head_mm: float
    crown_mm: float
    top_mm: tuple[float, float]


def person_top(upright_alpha: np.ndarray, *, least: int = 2) -> float | None:
    """The top of the person (upright px): the first row with `least` px of the matte (HivisionIDPhotos
    reads the top of the person's bounding box, hair, hat or raised hand alike); None: no person."""
    rows = np.flatnonzero((upright_alpha >= PERSON).sum(axis=1) >= least)
    return None if rows.size == 0 else float(rows[0])


def aim(framing: Framing, head: Head, *, box_size: tuple[float, float], box_centre_y: float,
        size: tuple[int, int], size_mm: tuple[float, float], top_y: float | None = None) -> Aim:
    """The head height and crown margin HivisionIDPhotos' moves give this head. `box_size`: the face
    box's (width, height), input px; `box_centre_y`: its centre in the upright frame; `top_y`: the top
    of the person there (`person_top`; None: the top of the hair over the face)."""
    width, height = size
    height_mm = size_mm[1]
    box_w, box_h = box_size
    scale = math.sqrt(framing.face_area * width * height / max(box_w * box_h, 1.0))  # output px per upright px
    k = scale * height_mm / height  # mm per upright px
    hair = head.crown_y if head.hair_y is None else min(head.hair_y, head.crown_y)
    hair = hair if top_y is None else min(hair, top_y)
    # the face box's centre at face_centre of the height; the top of the hair follows, then the band holds it
    low, high = (min(framing.top) * height_mm, max(framing.top) * height_mm)
    top = framing.face_centre * height_mm - k * (box_centre_y - hair)
    top = min(max(top, low), high)
    return Aim(k * head.height, top + k * (head.crown_y - hair), (low, high))


def _band_ends(band: Any) -> tuple[float, float]:
    return (-math.inf if band.low is None else band.low, math.inf if band.high is None else band.high)


def _band(rules: Any, name: str) -> tuple[float, float] | None:
    band = getattr(rules, name, None)
    return None if band is None else _band_ends(band)


def nearest(band: Any, asked: float) -> tuple[float, float] | None:
    """The half of `band` (mm) nearest `asked`, so the solver places mid-way between its end and its
    middle: as near what was asked as the rule allows, and far enough inside it that the report can
    tell it holds; None where `asked` lies inside the band or it is open (the band is kept whole)."""
    low, high = _band_ends(band)
    if not (math.isfinite(low) and math.isfinite(high)) or low <= asked <= high:
        return None
    middle = (low + high) / 2.0
    return (low, middle) if asked < low else (middle, high)


def asked_rules(rules: Any, target: Aim, band_type: Any, source: Any, *, height_mm: float, tolerance: float,
                top_tolerance: float | None = None, keep: tuple[str, ...] = (), won: tuple[str, ...] = ()) -> Any:
    """`rules` with head_height and crown_margin replaced by the client's bands about `target`
    (`band_type(low, high, source, note=...)` makes a band), except those named in `keep` (the
    spec's band as it is) or `won` (the spec's band, its part nearest what the client asked)."""
    head = max(target.head_mm - tolerance * height_mm, 0.1), target.head_mm + tolerance * height_mm
    if top_tolerance is None:
        crown = target.top_mm
    else:
        crown = max(target.crown_mm - top_tolerance * height_mm, 0.0), target.crown_mm + top_tolerance * height_mm
    changes = {}
    for name, band, asked, note in (("head_height", head, target.head_mm, "the client's head_measure_ratio"),
                                    ("crown_margin", crown, target.crown_mm,
                                     "the client's head_height_ratio and top_distance_min/max")):
        if name in keep:
            continue
        if name in won:
            spec_band = getattr(rules, name)
            part = nearest(spec_band, asked)
            if part is not None:
                changes[name] = replace(spec_band, low=part[0], high=part[1],
                                        note=f"the half of this rule nearest the client's ratios ({asked:.2f} mm)")
            continue
        changes[name] = band_type(band[0], band[1], source, note=note)
    return replace(rules, **changes)


def weigh(target: Aim, rules: Any, *, bound: bool, solve_broken: Any) -> dict[str, dict[str, object]]:
    """Which of the spec's rules win over the client's framing: {rule: why}. A spec that binds
    (`bound`: the size matches one of ours) wins where the framing's value lies outside its band
    (head height), or where placing by the framing breaks a rule the spec's own placement keeps
    (`solve_broken(keep)`: the rules broken when placing with the client's bands except those in keep)."""
    if not bound:
        return {}
    won: dict[str, dict[str, object]] = {}
    head = _band(rules, "head_height")
    if head is not None and not head[0] <= target.head_mm <= head[1]:
        won["head_height"] = {"asked_mm": round(target.head_mm, 2), "band_mm": [head[0], head[1]]}
    crown = _band(rules, "crown_margin")
    if crown is not None and not crown[0] <= target.crown_mm <= crown[1]:
        won["crown_margin"] = {"asked_mm": round(target.crown_mm, 2), "band_mm": [crown[0], crown[1]]}
    broken = solve_broken(tuple(won))
    if broken and "crown_margin" not in won:  # the crown's place breaks another of the spec's rules
        won["crown_margin"] = {"asked_mm": round(target.crown_mm, 2), "breaks": sorted(broken)}
        broken = solve_broken(tuple(won))
    if broken and "head_height" not in won:
        won["head_height"] = {"asked_mm": round(target.head_mm, 2), "breaks": sorted(broken)}
    return won
