"""HivisionIDPhotos' six-inch layout sheet (its /generate_layout_photos), laid out by the rule its
`layout_calculator.py` follows, so a Hivision client gets the same sheet: always 1795 x 1205 px,
white, whatever the dpi (which is only written into the file).

The rule: 70 px of paper left and right, 50 px above and below, 30 px between copies; at most 3
rows and 8 columns, as many as fit with room to spare (a strict `<` against the free area); the
copies upright, or all turned a quarter counter-clockwise where that fits strictly more; the block
of copies centred on the sheet. No cut marks (Hivision's default). Our own print sheet,
`sheet.py` (/api/v1/idphoto/sheet), lays copies out in mm at the print's dpi instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .resample import resize_rgb

SHEET_PX = (1795, 1205)  # (width, height)
GAP_PX = 30
MARGIN_PX = (70, 50)  # (left and right, top and bottom)
MAX_ROWS, MAX_COLS = 3, 8


@dataclass(frozen=True)
class SixInch:
    """Where the copies go: their (x, y) top-left corners, each `photo_px` (width, height) on the
    sheet, turned a quarter counter-clockwise where `turned`."""

    positions: tuple[tuple[int, int], ...]
    photo_px: tuple[int, int]
    turned: bool

    @property
    def copies(self) -> int:
        return len(self.positions)


def _fits(*, item: int, free: int, most: int) -> int:
    """How many `item`s, `GAP_PX` apart, fit strictly inside `free` (at most `most`)."""
    count = 0
    for n in range(1, most + 1):
        if n * item + (n - 1) * GAP_PX >= free:
            break
        count = n
    return count


def plan_six_inch(width: int, height: int) -> SixInch:
    """The layout of a `width` x `height` px photo; ValueError where not one copy fits."""
    free_w, free_h = SHEET_PX[0] - 2 * MARGIN_PX[0], SHEET_PX[1] - 2 * MARGIN_PX[1]
    upright = (_fits(item=width, free=free_w, most=MAX_COLS), _fits(item=height, free=free_h, most=MAX_ROWS))
    turned = (_fits(item=height, free=free_w, most=MAX_COLS), _fits(item=width, free=free_h, most=MAX_ROWS))
    turn = turned[0] * turned[1] > upright[0] * upright[1]
    cols, rows = turned if turn else upright
    if cols * rows == 0:
        raise ValueError(f"a {width}x{height} px photo does not fit on the {SHEET_PX[0]}x{SHEET_PX[1]} px six-inch "
                         f"sheet (at most {free_w - 1}x{free_h - 1} px, turned or not)")
    item_w, item_h = (height, width) if turn else (width, height)
    block_w, block_h = cols * item_w + (cols - 1) * GAP_PX, rows * item_h + (rows - 1) * GAP_PX
    x0, y0 = (SHEET_PX[0] - block_w) // 2, (SHEET_PX[1] - block_h) // 2
    positions = tuple((x0 + col * (item_w + GAP_PX), y0 + row * (item_h + GAP_PX))
                      for row in range(rows) for col in range(cols))
    return SixInch(positions, (item_w, item_h), turn)


def render_six_inch(photo: np.ndarray, width: int, height: int) -> tuple[np.ndarray, SixInch]:
    """(1205, 1795, 3) uint8 RGB: copies of the (H, W, 3) RGB `photo`, scaled to `width` x `height`
    px where it is another size, on white."""
    layout = plan_six_inch(width, height)
    if (photo.shape[1], photo.shape[0]) != (width, height):
        photo = resize_rgb(photo, (width, height))
    if layout.turned:
        photo = np.ascontiguousarray(np.rot90(photo, 1))  # the top of the photo to the left
    sheet = np.full((SHEET_PX[1], SHEET_PX[0], 3), 255, np.uint8)
    item_w, item_h = layout.photo_px
    for x, y in layout.positions:
        sheet[y:y + item_h, x:x + item_w] = photo
    return sheet, layout
