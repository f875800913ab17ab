"""Reading an ID photo's framing from the output image as an inspector would: the top of the person
in the output's alpha, and the face box the detector finds on the output. Nothing here imports the
app; the detector is passed in."""

from __future__ import annotations

import numpy as np

PERSON = 128  # alpha at or above this is the person


def person_top(alpha: np.ndarray, *, least: int = 2) -> int | None:
    """The first row (px from the top) holding `least` px of the person; None where there is none."""
    rows = np.flatnonzero((np.asarray(alpha) >= PERSON).sum(axis=1) >= least)
    return None if rows.size == 0 else int(rows[0])


def top_share(alpha: np.ndarray) -> float:
    """The top of the person below the top edge, as a share of the height (0: touching the edge)."""
    top = person_top(alpha)
    assert top is not None, "no person in the output"
    return top / alpha.shape[0]


def face_share(box: tuple[float, float, float, float] | list[float], size: tuple[int, int]) -> float:
    """The face box's (x1, y1, x2, y2) area over the photo's (width, height) area."""
    x1, y1, x2, y2 = box
    return (x2 - x1) * (y2 - y1) / (size[0] * size[1])
