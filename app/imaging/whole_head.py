"""The whole head in the frame: the top of the hair is never cut by the output's top edge.

Where the frame the rules aimed for cannot be cut from the photo (the canvas may not be extended, and
`canvas.fit_inside` moved and enlarged the frame to stay on photographed pixels), or where a spec's
crown is the skull and the hair rises above it, the frame the solver chose can pass through the
hair. A person then sees a cropped scalp. `keep_whole_head` moves the frame up (in the upright
frame, so the eye line stays level) until the top of the hair, as the person matte reads it, sits
CROWN_GAP of the output's height below the top edge: as far as the photo allows where nothing may
be painted in. The lines that can then no longer be met (the eye line, the crown margin, the head's
size) fail on the output, and `app.imaging.rule_advice` says what to change when taking the photo again.

Pure functions; coordinates as in `placement` (upright px, output px, input px).
"""

from __future__ import annotations

import math
from dataclasses import replace

from .canvas import BICUBIC_REACH
from .head import Head
from .placement import Placement

CROWN_GAP = 0.02  # of the output's height: the least room left above the top of the hair (12 px of 600)


def hair_top(head: Head) -> float:
    """The top of the hair (upright px, y down): the matte's top over the head's columns (`hair_y`
    where the spec's crown is the skull under it, else `crown_y`)."""
    return head.crown_y if head.hair_y is None else min(head.hair_y, head.crown_y)


def room_above(placement: Placement, shape: tuple[int, int]) -> float:
    """How far (upright px) the frame can move up and still sample only photographed pixels of an
    input of `shape` (H, W), BICUBIC_REACH px clear of its edges; 0 where it cannot move."""
    height, width = shape
    theta = math.radians(placement.roll_deg)
    cos, sin = math.cos(theta), math.sin(theta)
    a, b, c, d, e, f = placement.output_to_input()
    w_out, h_out = placement.size
    corners = [(0, 0), (w_out, 0), (0, h_out), (w_out, h_out)]
    xs = [a * u + b * v + c for u, v in corners]
    ys = [d * u + e * v + f for u, v in corners]
    # moving up by s upright px moves every corner by (s sin, -s cos) input px
    limits = [(min(ys) - BICUBIC_REACH) / cos]
    if sin > 1e-9:
        limits.append((width - BICUBIC_REACH - max(xs)) / sin)
    elif sin < -1e-9:
        limits.append((min(xs) - BICUBIC_REACH) / -sin)
    return max(0.0, min(limits))


def keep_whole_head(placement: Placement, head: Head, *, inside: tuple[int, int] | None) -> tuple[Placement, float]:
    """(the placement with the top of the hair at least CROWN_GAP of the output's height inside its
    top edge, output px it moved up). `inside`: the input's (H, W) where the frame must stay on
    photographed pixels (the canvas may not be extended): then it moves only as far as the photo
    allows. Moving it changes what the solver predicted, so its figures are cleared (as
    `canvas.fit_inside` does)."""
    want = CROWN_GAP * placement.size[1] / placement.scale  # upright px
    needed = placement.origin[1] - (hair_top(head) - want)
    if needed <= 1e-6:
        return placement, 0.0
    shift = needed if inside is None else min(needed, room_above(placement, inside))
    if shift <= 1e-6:
        return placement, 0.0
    moved = replace(placement, origin=(placement.origin[0], placement.origin[1] - shift), predicted={}, broken={},
                    margin_mm=-math.inf, binding=None)
    return moved, shift * placement.scale
