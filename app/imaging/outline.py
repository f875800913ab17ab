"""The sitter's outline where another person was cut away (issue 51, item 5).

With several people in a photo, `people.keep_person` removes everyone but the sitter. Where that
removal follows a straight line instead of the people's own outlines (a face box's side, the
boundary halfway between two people), it slices the sitter's hair or cheek along a vertical edge,
and the photo shows a head that no camera took. `straight_cut` finds that edge: on the input's
mattes, the longest vertical run, in one column (+-STRAIGHT_SLACK px), where the kept matte ends
against pixels the model's own matte held as someone and the removal took away, near the sitter's
head. A hair's or a cheek's own outline is not that straight for that long; a straight side of a
wall or a door behind is not someone the removal took.

Pure functions on numpy arrays; mattes (H, W) uint8, 255 the person; boxes (x0, y0, x1, y1) px.
"""

from __future__ import annotations

import numpy as np

from .head import PERSON

STRAIGHT_SLACK = 0  # px either side a straight edge may wander (an ellipse's side is within 1 px of a column for 1.2 eye distances)
MAX_STRAIGHT_CUT_IOD = 1.5  # eye distances: a longer straight cut fails the line (an outline's own side stays in one column for well under one)
HEAD_ZONE_ABOVE = 1.0  # face heights above the face box: the hair
HEAD_ZONE_BELOW = 0.5  # face heights below it: the chin, the neck
HEAD_ZONE_SIDE = 1.0  # face widths either side of it: the hair and ears beside the face


def longest_vertical_run(edges: np.ndarray) -> tuple[int, int]:
    """(the longest run of consecutive True rows in one column of (H, W) bool `edges`, its column)."""
    run = np.zeros(edges.shape[1], np.int32)
    best = np.zeros(edges.shape[1], np.int32)
    for row in edges:
        run = np.where(row, run + 1, 0)
        best = np.maximum(best, run)
    column = int(np.argmax(best)) if best.size else 0
    return (int(best[column]) if best.size else 0), column


def straight_cut(kept: np.ndarray, raw: np.ndarray, box: tuple[float, float, float, float], *, iod: float) -> float:
    """The longest straight vertical cut of the sitter's outline against what the removal took (the
    module's docstring), in eye distances (`iod`, px); 0 where nothing was taken beside the head."""
    height, width = kept.shape
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    top, bottom = max(0, int(y0 - HEAD_ZONE_ABOVE * h)), min(height, int(y1 + HEAD_ZONE_BELOW * h))
    left, right = max(0, int(x0 - HEAD_ZONE_SIDE * w)), min(width, int(x1 + HEAD_ZONE_SIDE * w))
    if bottom - top < 2 or right - left < 2 or iod <= 0:
        return 0.0
    sitter = kept[top:bottom, left:right] >= PERSON
    taken = (raw[top:bottom, left:right] >= PERSON) & ~sitter
    if not taken.any():
        return 0.0
    edge = np.zeros(sitter.shape, bool)
    edge[:, :-1] |= sitter[:, :-1] & taken[:, 1:]
    edge[:, 1:] |= taken[:, :-1] & sitter[:, 1:]
    near = edge.copy()
    for shift in range(1, STRAIGHT_SLACK + 1):
        near[:, shift:] |= edge[:, :-shift]
        near[:, :-shift] |= edge[:, shift:]
    run, _ = longest_vertical_run(near)
    return run / iod


def outline_line(run_iod: float) -> dict[str, object]:
    """The report line's fields for `straight_cut`'s reading: passes under MAX_STRAIGHT_CUT_IOD."""
    passed = run_iod < MAX_STRAIGHT_CUT_IOD
    return {"name": "outline_kept", "value": round(run_iod, 2), "passed": passed, "unit": "iod",
            "allowed": f"< {MAX_STRAIGHT_CUT_IOD:g} eye distances of the outline cut straight where another person "
                       "was removed (our rule: no authority's words on it)",
            "advice": None if passed else (
                "Removing the person beside you cut your hair or face along a straight line: take the photo alone, "
                "with nobody beside or behind you"),
            "broken_by": None if passed else run_iod - MAX_STRAIGHT_CUT_IOD}
