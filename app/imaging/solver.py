"""The rule solver: a measured head and a spec's rules in, the placement that meets them out.

Pure functions; scipy's HiGHS for the linear programme. The head is measured in the upright frame
(`app.imaging.head`); the answer is a `Placement` (`app.imaging.placement`), one affine cut of the input.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .head import Head
from .placement import Placement

MIN_TOP_GAP = 0.05  # fraction of photo height always left above the crown (ICAO examples: 3-5 mm of 45)
TOP_GAP_SHARE = 0.35  # without an eye-line rule: this share of the free height goes above the crown


# --- the rule solver -----------------------------------------------------------------------------
#
# Every rule of a spec is a band in mm of the print (`app.specs.Rules`; read here by attribute only,
# so this module needs nothing from the app). For a head measured in the upright frame, a placement
# is three numbers: k, mm of print per upright px (the scale); t, mm from the top edge to the crown;
# c, mm from the left edge to the face's centre line. Every rule is linear in (k, t, c):
#
#   head_height  = k * H                 crown_margin = t
#   chin_margin  = height - t - k * H    eye_line     = height - t - k * (eye_y - crown_y)
#   head_width   = k * W                 side_margin  = min(c, width - c) - k * W / 2
#   centre_x     = c                     eye_distance = k * D
#
# The solver places every head in the middle of what its rules allow: the Chebyshev centre of the
# feasible region, a small linear programme (scipy's HiGHS). Stage one maximises m, the smallest
# margin in mm from any rule's value to either end of its band (an open end sets none), with the
# head inside the photo as a hard constraint. Stage two keeps every margin at least m and
# maximises their sum (a one-sided band counts at most ONE_SIDED_ROOM_MM), so the rules that do not
# bind also sit mid-band rather than at whatever vertex stage one stopped on. A spec that places the
# head vertically only by its size gets our house style for t (a small gap above the crown), and the
# face is centred (c = width / 2) unless a centre_x band excludes that. When no placement meets every
# rule (m < 0), the least-violation answer is kept (`least_violation`): the fewest rules broken,
# then the fewest mm outside bands shrunk by SAFETY_MM, and the report says which and by how much.

K_STEPS = 241  # grid over the scale (the least-violation search)
SAFETY_MM = 0.5  # mm kept from a band's end by the least-violation search, where the rules leave room
ONE_SIDED_ROOM_MM = 3.0  # stage two stops rewarding room past this from a one-sided band's end
VERTICAL = ("head_height", "crown_margin", "chin_margin", "eye_line")
HORIZONTAL = ("head_width", "side_margin", "centre_x", "eye_distance")
RULE_NAMES = VERTICAL + HORIZONTAL


class Solution(NamedTuple):
    """What `solve` chooses: k (mm per upright px), t (mm, top edge to crown), c (mm, left edge to the
    centre line), the mm each rule will measure, the rules broken (name -> mm outside the band; empty
    when every rule holds) and the smallest margin in mm to any band end (negative: the worst miss)."""

    k: float
    t: float
    c: float
    predicted: dict[str, float]
    broken: dict[str, float]
    margin: float
    binding: str | None  # the rule whose margin is smallest


def _ends(band: Any) -> tuple[float, float] | None:
    if band is None:
        return None
    low = -math.inf if band.low is None else float(band.low)
    high = math.inf if band.high is None else float(band.high)
    return low, high


def rule_width(head: Head, width_of: str) -> float | None:
    """The width (px) the head_width rule measures: the face between the ear roots ("face"), or the
    whole head with ears and hair at the eye line ("head")."""
    return head.face_width if width_of == "face" else head.width


def rule_values(head: Head, k: float, t: float, c: float, size_mm: tuple[float, float], *,
                width_of: str = "face") -> dict[str, float | None]:
    """The mm each rule measures for placement (k, t, c); None where the head lacks the measure."""
    width_mm, height_mm = size_mm
    half = None if head.width is None else k * head.width / 2.0
    measured = rule_width(head, width_of)
    return {
        "head_height": k * head.height,
        "crown_margin": t,
        "chin_margin": height_mm - t - k * head.height,
        "eye_line": height_mm - t - k * (head.eye_y - head.crown_y),
        "head_width": None if measured is None else k * measured,
        "side_margin": None if half is None else min(c, width_mm - c) - half,
        "centre_x": c,
        "eye_distance": None if head.eye_distance is None else k * head.eye_distance,
    }


def _affine_rules(head: Head, size_mm: tuple[float, float], width_of: str) -> dict[str, list[tuple[np.ndarray, float]]]:
    """Each rule as affine forms (coefficients on (k, t, c), constant) whose values are the rule's
    mm; side_margin has two (left and right: the minimum of both is the rule)."""
    width_mm, height_mm = size_mm
    forms: dict[str, list[tuple[np.ndarray, float]]] = {
        "head_height": [(np.array([head.height, 0.0, 0.0]), 0.0)],
        "crown_margin": [(np.array([0.0, 1.0, 0.0]), 0.0)],
        "chin_margin": [(np.array([-head.height, -1.0, 0.0]), height_mm)],
        "eye_line": [(np.array([-(head.eye_y - head.crown_y), -1.0, 0.0]), height_mm)],
        "centre_x": [(np.array([0.0, 0.0, 1.0]), 0.0)],
    }
    measured = rule_width(head, width_of)
    if measured is not None:
        forms["head_width"] = [(np.array([measured, 0.0, 0.0]), 0.0)]
    if head.width is not None:
        forms["side_margin"] = [(np.array([-head.width / 2.0, 0.0, 1.0]), 0.0),
                                (np.array([-head.width / 2.0, 0.0, -1.0]), width_mm)]
    if head.eye_distance is not None:
        forms["eye_distance"] = [(np.array([head.eye_distance, 0.0, 0.0]), 0.0)]
    return forms


def chebyshev_centre(head: Head, bands: dict[str, tuple[float, float]], *, size_mm: tuple[float, float],
                     c_fixed: float | None, min_top: float = 0.0, width_of: str = "face",
                     ) -> tuple[float, float, float, float] | None:
    """(k, t, c, m): the placement that maximises m, the smallest margin (mm) from every rule's value
    to each finite end of its band, then (every margin kept >= m) the sum of the margins, each
    closed band's up to its half width and a one-sided band's up to ONE_SIDED_ROOM_MM. The head
    stays inside the photo (`min_top` <= t, chin_margin >= 0). With `c_fixed`, c is that. None when
    the programme cannot be solved (no scale keeps the head inside the photo)."""
    from scipy.optimize import linprog  # noqa: PLC0415 (scipy loads in the workers only when a photo is made)

    width_mm, height_mm = size_mm
    forms = _affine_rules(head, size_mm, width_of)
    rows: list[tuple[np.ndarray, float]] = []  # (coefficients on (k, t, c), constant): value = a.x + b
    ends: list[tuple[int, float, int]] = []  # (row, end value, +1 for a low end / -1 for a high end)
    band_of_end: list[str] = []
    for name, (low, high) in bands.items():
        for coefficients, constant in forms.get(name, []):
            rows.append((coefficients, constant))
            for end, sign in ((low, 1), (high, -1)):
                if math.isfinite(end):
                    ends.append((len(rows) - 1, end, sign))
                    band_of_end.append(name)
    if not ends:
        return None
    # hard constraints on (k, t, c): the hair's top at least min_top below the top edge,
    # t - k (crown - hair) >= min_top; chin inside: height - t - kH >= 0
    above = 0.0 if head.hair_y is None else max(0.0, head.crown_y - head.hair_y)
    hard_a = [np.array([above, -1.0, 0.0]), np.array([head.height, 1.0, 0.0])]
    hard_b = [-min_top, height_mm]
    c_bounds = (c_fixed, c_fixed) if c_fixed is not None else (0.0, width_mm)
    bounds_xyz = [(1e-9, None), (0.0, height_mm), c_bounds]

    def margin_row(index: int) -> tuple[np.ndarray, float]:
        """margin = sign * (value - end) as (coefficients on (k, t, c), constant)."""
        row, end, sign = ends[index]
        coefficients, constant = rows[row]
        return sign * coefficients, sign * (constant - end)

    # stage one: maximise m subject to margin_i >= m, i.e. -margin_i + m <= 0
    a_ub, b_ub = [], []
    for index in range(len(ends)):
        coefficients, constant = margin_row(index)
        a_ub.append(np.concatenate([-coefficients, [1.0]]))
        b_ub.append(constant)
    for coefficients, limit in zip(hard_a, hard_b, strict=True):
        a_ub.append(np.concatenate([coefficients, [0.0]]))
        b_ub.append(limit)
    first = linprog(c=[0.0, 0.0, 0.0, -1.0], A_ub=np.array(a_ub), b_ub=np.array(b_ub),
                    bounds=[*bounds_xyz, (None, None)], method="highs")
    if first.status != 0:
        return None
    best = float(first.x[3])
    # stage two: one slack s_b per band (the smaller of its ends' margins), s_b >= best, capped
    used = list(dict.fromkeys(band_of_end))
    size = 3 + len(used)
    a2, b2 = [], []
    for index, name in enumerate(band_of_end):
        coefficients, constant = margin_row(index)
        line = np.zeros(size)
        line[:3] = -coefficients
        line[3 + used.index(name)] = 1.0
        a2.append(line)  # s_b <= margin_i
        b2.append(constant)
    for coefficients, limit in zip(hard_a, hard_b, strict=True):
        line = np.zeros(size)
        line[:3] = coefficients
        a2.append(line)
        b2.append(limit)
    caps = []
    for name in used:
        low, high = bands[name]
        room = (high - low) / 2.0 if math.isfinite(low) and math.isfinite(high) else ONE_SIDED_ROOM_MM
        caps.append((best - 1e-7, max(best, room)))
    second = linprog(c=np.concatenate([np.zeros(3), -np.ones(len(used))]), A_ub=np.array(a2), b_ub=np.array(b2),
                     bounds=[*bounds_xyz, *caps], method="highs")
    x = second.x if second.status == 0 else first.x
    return float(x[0]), float(x[1]), float(x[2]), best


def band_miss(value: float, ends: tuple[float, float]) -> float:
    """mm outside the band (0 inside)."""
    low, high = ends
    return max(0.0, low - value, value - high)


def band_slack(value: float, ends: tuple[float, float]) -> float:
    """mm to the nearer band end (negative outside); an open end gives no limit."""
    low, high = ends
    return min(value - low, high - value)


def judge_band(value: float, ends: tuple[float, float], uncertainty: float) -> bool | None:
    """True inside the band by more than `uncertainty`, False outside it by more than that, None
    within `uncertainty` of an end (the reading cannot tell which side it is on)."""
    miss = band_miss(value, ends)
    if miss > uncertainty + 1e-9:
        return False
    if miss <= 1e-9 and band_slack(value, ends) > uncertainty:
        return True
    return None if uncertainty > 0 else miss <= 1e-9


def shrunk(ends: tuple[float, float]) -> tuple[float, float]:
    """The band less a safety margin at each finite end (SAFETY_MM, or a fifth of a narrow band)."""
    low, high = ends
    margin = SAFETY_MM if not (math.isfinite(low) and math.isfinite(high)) else min(SAFETY_MM, 0.2 * (high - low))
    return low + margin, high - margin


def _score(values: dict[str, float | None], bands: dict[str, tuple[float, float]]) -> tuple[int, float, float, dict[str, float]]:
    """(rules broken, mm outside the bands shrunk by their safety margins, -smallest slack, broken
    rules -> mm outside the real band). The shrunk bands keep a rule that holds away from its
    edge where another has to break, so noise in measuring the output does not break it too."""
    broken: dict[str, float] = {}
    slack = math.inf
    margin_miss = 0.0
    for name, ends in bands.items():
        value = values.get(name)
        if value is None:
            continue
        miss = band_miss(value, ends)
        if miss > 1e-9:
            broken[name] = miss
        margin_miss += band_miss(value, shrunk(ends))
        slack = min(slack, band_slack(value, ends))
    return len(broken), margin_miss, -slack, broken


def _smallest_margin(values: dict[str, float | None], bands: dict[str, tuple[float, float]]) -> tuple[float, str | None]:
    """(the smallest slack in mm over every rule, that rule's name)."""
    found, which = math.inf, None
    for name, ends in bands.items():
        value = values.get(name)
        if value is None:
            continue
        slack = band_slack(value, ends)
        if slack < found:
            found, which = slack, name
    return found, which


def _centre_line(bands: dict[str, tuple[float, float]], width_mm: float) -> float:
    """The horizontal centre: the middle of the photo, or of the centre_x band when it excludes that."""
    c = width_mm / 2.0
    if "centre_x" in bands:
        low, high = bands["centre_x"]
        if not low <= c <= high:
            c = (max(low, 0.0) + min(high, width_mm)) / 2.0
    return c


def solve(
    head: Head,
    rules: Any,
    *,
    size_mm: tuple[float, float],
    steps: int = K_STEPS,
) -> Solution:
    """The placement of `head` on a print of `size_mm` (width, height) under `rules`: the Chebyshev
    centre where every rule can hold, else the least-violation answer (see the section comment)."""
    width_mm, height_mm = size_mm
    bands = {name: ends for name in RULE_NAMES if (ends := _ends(getattr(rules, name, None))) is not None}
    width_of = str(getattr(rules, "head_width_of", "face"))
    c_centre = _centre_line(bands, width_mm)
    # the face on the photo's middle line (ISO/IEC 19794-5's centring), unless a centre_x band excludes it
    c_fixed = c_centre if "centre_x" not in bands or bands["centre_x"][0] <= c_centre <= bands["centre_x"][1] else None
    # without a crown-margin rule, our house gap above the crown is a hard minimum (a crown on the edge
    # cannot be measured, and ICAO's examples leave 3-5 mm)
    min_top = 0.0 if "crown_margin" in bands else MIN_TOP_GAP * height_mm
    centre = chebyshev_centre(head, bands, size_mm=size_mm, c_fixed=c_fixed, min_top=min_top, width_of=width_of)
    if centre is not None and centre[3] >= 0.0:
        k, t, c, _ = centre
        if not any(name in bands for name in ("crown_margin", "chin_margin", "eye_line")):
            above = 0.0 if head.hair_y is None else max(0.0, head.crown_y - head.hair_y)
            t = k * above + _preferred_t(min_top, height_mm - k * (head.height + above), k * (head.height + above),
                                         height_mm, bands)
        values = rule_values(head, k, t, c, size_mm, width_of=width_of)
        _, _, _, broken = _score(values, bands)
        margin, binding = _smallest_margin(values, bands)
        predicted = {name: value for name, value in values.items() if value is not None}
        return Solution(k, t, c, predicted, broken, margin, binding)
    return least_violation(head, bands, size_mm=size_mm, c=c_centre, steps=steps, width_of=width_of)


def least_violation(
    head: Head, bands: dict[str, tuple[float, float]], *, size_mm: tuple[float, float], c: float, steps: int = K_STEPS,
    width_of: str = "face",
) -> Solution:
    """No placement meets every rule: the one that breaks the fewest, then by the fewest mm outside
    the bands shrunk by SAFETY_MM, then the largest smallest slack; k on a grid, t from the
    vertical rules' intervals (their ends, and the points between)."""
    width_mm, height_mm = size_mm
    head_lo, head_hi = bands["head_height"]
    k_mid = (head_lo + head_hi) / 2.0 / head.height
    # the scale grid spans the head band and, for the fewest-broken fallback, well beyond it
    k_grid = np.unique(np.concatenate([
        np.linspace(head_lo / head.height, head_hi / head.height, steps),
        np.linspace(0.5 * head_lo / head.height, 1.5 * head_hi / head.height, steps),
    ]))
    best: tuple[tuple[int, float, float, float], float, float, dict[str, float]] | None = None
    for k in k_grid:
        k = float(k)
        kh, ke = k * head.height, k * (head.eye_y - head.crown_y)
        # t intervals from each vertical rule; the head always stays inside the photo
        intervals = [(0.0, height_mm - kh)]
        if "crown_margin" in bands:
            intervals.append(bands["crown_margin"])
        if "chin_margin" in bands:
            low, high = bands["chin_margin"]
            intervals.append((height_mm - kh - high, height_mm - kh - low))
        if "eye_line" in bands:
            low, high = bands["eye_line"]
            intervals.append((height_mm - ke - high, height_mm - ke - low))
        t_low = max(i[0] for i in intervals)
        t_high = min(i[1] for i in intervals)
        if t_low <= t_high:
            candidates = [_preferred_t(t_low, t_high, kh, height_mm, bands)]
        else:  # no t meets every vertical rule: try each interval end and the point between
            ends = sorted({v for i in intervals for v in i if math.isfinite(v)})
            candidates = ends + [(a + b) / 2.0 for a, b in zip(ends, ends[1:])]
        for t in candidates:
            values = rule_values(head, k, t, c, size_mm, width_of=width_of)
            count, total, neg_slack, broken = _score(values, bands)
            # prefer a head size near the band's middle on ties (the slack already favours it)
            key = (count, round(total, 6), round(neg_slack, 6), abs(k - k_mid))
            if best is None or key < best[0]:
                best = (key, k, t, broken)
    if best is None:
        raise ValueError("the scale grid is empty")
    _, k, t, broken = best
    values = rule_values(head, k, t, c, size_mm, width_of=width_of)
    margin, binding = _smallest_margin(values, bands)
    predicted = {name: value for name, value in values.items() if value is not None}
    return Solution(k, t, c, predicted, broken, margin, binding)


def _preferred_t(t_low: float, t_high: float, kh: float, height_mm: float, bands: dict[str, tuple[float, float]]) -> float:
    """The crown's place in the allowed interval: its middle where a rule places the head
    vertically, else our house style (a small gap above the hair, more room below the chin)."""
    if any(name in bands for name in ("crown_margin", "chin_margin", "eye_line")):
        return (t_low + t_high) / 2.0
    natural = max(MIN_TOP_GAP * height_mm, TOP_GAP_SHARE * (height_mm - kh))
    return min(max(natural, t_low), t_high)


def place_on_rules(
    head: Head,
    rules: Any,
    *,
    roll_deg: float,
    pivot: tuple[float, float],
    size: tuple[int, int],
    size_mm: tuple[float, float],
) -> Placement:
    """The placement `solve` chooses, as an affine cut of the input (output px (width, height))."""
    width, height = size
    k, t, c, predicted, broken, margin, binding = solve(head, rules, size_mm=size_mm)
    px_per_mm_y = height / size_mm[1]
    px_per_mm_x = width / size_mm[0]
    scale = k * px_per_mm_y  # output px per upright px
    origin_y = head.crown_y - t * px_per_mm_y / scale
    origin_x = head.centre_x - c * px_per_mm_x / scale
    return Placement(
        roll_deg=roll_deg,
        pivot=pivot,
        scale=scale,
        origin=(origin_x, origin_y),
        size=size,
        head_ratio=k * head.height / size_mm[1],
        eye_line=predicted["eye_line"] / size_mm[1],
        predicted=predicted,
        broken=broken,
        margin_mm=margin,
        binding=binding,
    )
