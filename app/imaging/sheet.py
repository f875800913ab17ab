"""Print sheets: many copies of one ID photo at its true physical size on a sheet of photo paper.

Pure functions on numpy arrays (Pillow only for resampling); no I/O. Images are (H, W, 3) uint8 RGB.
Physical sizes are in mm, resolutions in dpi (px per inch, 1 in = 25.4 mm), pixel sizes and
positions in px as (x, y) / (width, height) with the origin at the sheet's top-left corner.

All layout arithmetic is done in whole px at the chosen dpi, so what is planned is exactly what is
rendered:

- sheet and photo sizes: ``round(mm / 25.4 * dpi)`` px per side;
- gap between neighbouring photos: ``round(gap_mm / 25.4 * dpi)`` px;
- margin: ``ceil(margin_mm / 25.4 * dpi)`` px, so the physical margin is never below ``margin_mm``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFont

RGB = tuple[int, int, int]

MM_PER_INCH = 25.4


@dataclass(frozen=True)
class Paper:
    """A photo paper size, given in portrait orientation (``width_mm <= height_mm``), in mm."""

    id: str
    name: str
    width_mm: float
    height_mm: float


PAPERS: dict[str, Paper] = {
    "4x6": Paper(id="4x6", name="4x6 in", width_mm=101.6, height_mm=152.4),
    "5x7": Paper(id="5x7", name="5x7 in", width_mm=127.0, height_mm=177.8),
    "a4": Paper(id="a4", name="A4", width_mm=210.0, height_mm=297.0),
    "10x15": Paper(id="10x15", name="10x15 cm", width_mm=100.0, height_mm=150.0),
}

# Normalised spelling (see _normalise_paper_name) -> paper id.
_PAPER_ALIASES: dict[str, str] = {
    "4x6": "4x6",
    "6x4": "4x6",
    "4x6in": "4x6",
    "6x4in": "4x6",
    "5x7": "5x7",
    "7x5": "5x7",
    "5x7in": "5x7",
    "7x5in": "5x7",
    "a4": "a4",
    "10x15": "10x15",
    "15x10": "10x15",
    "10x15cm": "10x15",
    "15x10cm": "10x15",
}


def _normalise_paper_name(value: str) -> str:
    """Lower-case, drop whitespace, map '×' and '*' to 'x' and '"' / 'inch' / 'inches' to 'in'."""
    text = "".join(value.split()).lower().replace("×", "x").replace("*", "x")
    for suffix in ("inches", "inch", '"'):
        if text.endswith(suffix):
            text = text[: -len(suffix)] + "in"
            break
    return text


def get_paper(value: str) -> Paper:
    """The `Paper` named by `value`: an id of `PAPERS` in any case, or an obvious alias
    ("4x6in", "6x4", "4 x 6 in", "A4", "15x10cm", ...). Orientation is not part of the name: "6x4"
    is the same paper as "4x6" (`plan_sheet` picks the orientation itself).

    Raises ValueError listing the choices for anything else.
    """
    paper_id = _PAPER_ALIASES.get(_normalise_paper_name(value)) if isinstance(value, str) else None
    if paper_id is None:
        choices = ", ".join(f"{p.id} ({p.name})" for p in PAPERS.values())
        raise ValueError(f"unknown paper size {value!r}; choose one of: {choices}")
    return PAPERS[paper_id]


@dataclass(frozen=True)
class SheetLayout:
    """Where the copies of one photo go on one sheet.

    - `paper`: the paper; `dpi`: the print resolution in px per inch.
    - `landscape`: True when the sheet is the paper turned on its side (width > height).
    - `sheet_px`: (width, height) of the whole sheet in px at `dpi`, in the chosen orientation.
    - `photo_px`: (width, height) of one copy in px at `dpi` (``round(mm / 25.4 * dpi)``); the photo
      is never rotated.
    - `positions`: top-left (x, y) in px of each placed copy, row by row (left to right, top to
      bottom); ``len(positions)`` is the number of copies placed.
    - `rows`, `cols`: the full grid that fits; `capacity` = ``rows * cols`` (copies placed may be fewer).
    - `gap_px`: space between neighbouring copies in px; `margin_px`: the least distance in px kept
      from the paper edge.
    """

    paper: Paper
    dpi: int
    landscape: bool
    sheet_px: tuple[int, int]
    photo_px: tuple[int, int]
    positions: tuple[tuple[int, int], ...]
    rows: int
    cols: int
    capacity: int
    gap_px: int = 0
    margin_px: int = 0


def mm_to_px(mm: float, *, dpi: int) -> int:
    """A length in mm -> whole px at `dpi` (px per inch), rounded to nearest."""
    return round(mm / MM_PER_INCH * dpi)


def _fit(length_px: int, *, item_px: int, gap_px: int, margin_px: int) -> int:
    """How many items of `item_px` with `gap_px` between them fit in `length_px` less a margin at
    both ends (0 when none)."""
    usable = length_px - 2 * margin_px
    if usable < item_px:
        return 0
    return (usable + gap_px) // (item_px + gap_px)


def _format_mm(value: float) -> str:
    return f"{value:g}"


def plan_sheet(
    *,
    paper: Paper,
    photo_mm: tuple[float, float],
    dpi: int = 300,
    copies: int | None = None,
    gap_mm: float = 2.0,
    margin_mm: float = 3.0,
) -> SheetLayout:
    """Lay out copies of a `photo_mm` = (width, height) mm photo on `paper` at `dpi`.

    The photo keeps its true physical size and is never rotated. Both orientations of the paper are
    tried and the one whose grid holds more copies wins (ties: portrait). The grid has `gap_mm`
    between neighbouring photos and at least `margin_mm` to every paper edge, and the full grid is
    centred on the sheet (any odd leftover px goes to the right / bottom).

    `copies=None` fills the grid. Otherwise exactly `copies` are placed in the first `copies` slots
    of that same centred full grid, row by row: a partly filled sheet puts each copy exactly where a
    full sheet would (so it cuts the same way), which leaves the block off-centre when the grid is
    not full.

    Raises ValueError for a non-positive dpi or photo size, a negative gap or margin, `copies` < 1,
    a photo that does not fit even once, or `copies` > capacity (the message names the capacity).
    """
    if isinstance(dpi, bool) or not isinstance(dpi, int) or dpi <= 0:
        raise ValueError(f"dpi must be a positive whole number, got {dpi!r}")
    photo_w_mm, photo_h_mm = (float(v) for v in photo_mm)
    if not (math.isfinite(photo_w_mm) and math.isfinite(photo_h_mm)) or photo_w_mm <= 0 or photo_h_mm <= 0:
        raise ValueError(f"photo size must be positive mm, got {photo_mm!r}")
    if not math.isfinite(gap_mm) or gap_mm < 0:
        raise ValueError(f"gap_mm must be >= 0, got {gap_mm!r}")
    if not math.isfinite(margin_mm) or margin_mm < 0:
        raise ValueError(f"margin_mm must be >= 0, got {margin_mm!r}")
    if copies is not None and (isinstance(copies, bool) or not isinstance(copies, int)):
        raise ValueError(f"copies must be a whole number or None, got {copies!r}")
    if copies is not None and copies < 1:
        raise ValueError(f"copies must be at least 1, got {copies}")

    photo_px = (max(1, mm_to_px(photo_w_mm, dpi=dpi)), max(1, mm_to_px(photo_h_mm, dpi=dpi)))
    gap_px = mm_to_px(gap_mm, dpi=dpi)
    # ceil (with a hair of slack for float noise) so the margin is at least margin_mm.
    margin_px = max(0, math.ceil(margin_mm / MM_PER_INCH * dpi - 1e-9))
    portrait_px = (mm_to_px(paper.width_mm, dpi=dpi), mm_to_px(paper.height_mm, dpi=dpi))

    best: tuple[int, int, bool, tuple[int, int]] | None = None  # (cols, rows, landscape, sheet_px)
    for landscape in (False, True):
        sheet_w, sheet_h = (portrait_px[1], portrait_px[0]) if landscape else portrait_px
        cols = _fit(sheet_w, item_px=photo_px[0], gap_px=gap_px, margin_px=margin_px)
        rows = _fit(sheet_h, item_px=photo_px[1], gap_px=gap_px, margin_px=margin_px)
        if best is None or cols * rows > best[0] * best[1]:
            best = (cols, rows, landscape, (sheet_w, sheet_h))
    assert best is not None
    cols, rows, landscape, sheet_px = best
    capacity = cols * rows

    photo_desc = f"{_format_mm(photo_w_mm)}x{_format_mm(photo_h_mm)} mm photo"
    if capacity == 0:
        raise ValueError(
            f"a {photo_desc} does not fit on {paper.name} "
            f"with {_format_mm(margin_mm)} mm margins, in either orientation"
        )
    if copies is not None and copies > capacity:
        raise ValueError(f"at most {capacity} copies of a {photo_desc} fit on {paper.name}; asked for {copies}")

    block_w = cols * photo_px[0] + (cols - 1) * gap_px
    block_h = rows * photo_px[1] + (rows - 1) * gap_px
    x0 = (sheet_px[0] - block_w) // 2
    y0 = (sheet_px[1] - block_h) // 2
    count = capacity if copies is None else copies
    positions = tuple(
        (x0 + (i % cols) * (photo_px[0] + gap_px), y0 + (i // cols) * (photo_px[1] + gap_px)) for i in range(count)
    )
    return SheetLayout(
        paper=paper,
        dpi=dpi,
        landscape=landscape,
        sheet_px=sheet_px,
        photo_px=photo_px,
        positions=positions,
        rows=rows,
        cols=cols,
        capacity=capacity,
        gap_px=gap_px,
        margin_px=margin_px,
    )


def _check_colour(name: str, colour: tuple[int, int, int]) -> RGB:
    values = tuple(int(c) for c in colour)
    if len(values) != 3 or any(c < 0 or c > 255 for c in values):
        raise ValueError(f"{name} must be three 0-255 RGB values, got {colour!r}")
    return values[0], values[1], values[2]


def cut_mark_boxes(
    layout: SheetLayout, *, mark_mm: float = 1.5, mark_width_px: int | None = None
) -> list[tuple[int, int, int, int]]:
    """The cut-mark rectangles `render_sheet` draws, as (x_start, y_start, x_end, y_end) px, ends
    exclusive, clipped to the sheet (empty ones dropped).

    Each placed copy gets eight marks, two at each corner: a horizontal one on the photo's top or
    bottom pixel row running outward (left or right) from the corner, and a vertical one on its left
    or right pixel column running outward (up or down). Each is ``round(mark_mm / 25.4 * dpi)`` px
    long (at least 1) and `mark_width_px` thick (default ``round(0.1 mm)`` at the dpi, at least 1),
    centred on that edge row / column. None starts inside its own photo; one may reach into a
    neighbouring photo when the gap is narrower than the mark, which `render_sheet` then paints over.
    """
    if not math.isfinite(mark_mm) or mark_mm <= 0:
        raise ValueError(f"mark_mm must be > 0, got {mark_mm!r}")
    width = max(1, mm_to_px(0.1, dpi=layout.dpi)) if mark_width_px is None else mark_width_px
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ValueError(f"mark_width_px must be a whole number >= 1, got {mark_width_px!r}")
    length = max(1, mm_to_px(mark_mm, dpi=layout.dpi))
    sheet_w, sheet_h = layout.sheet_px
    pw, ph = layout.photo_px
    before = width // 2  # thickness is spread over [edge - before, edge - before + width)

    boxes: list[tuple[int, int, int, int]] = []
    for x, y in layout.positions:
        top, bottom, left, right = y, y + ph - 1, x, x + pw - 1
        for row in (top, bottom):
            ys = (row - before, row - before + width)
            boxes.append((x - length, ys[0], x, ys[1]))  # leftward from the left corner
            boxes.append((x + pw, ys[0], x + pw + length, ys[1]))  # rightward from the right corner
        for col in (left, right):
            xs = (col - before, col - before + width)
            boxes.append((xs[0], y - length, xs[1], y))  # upward from the top corner
            boxes.append((xs[0], y + ph, xs[1], y + ph + length))  # downward from the bottom corner

    clipped: list[tuple[int, int, int, int]] = []
    for xa, ya, xb, yb in boxes:
        xa, ya, xb, yb = max(0, xa), max(0, ya), min(sheet_w, xb), min(sheet_h, yb)
        if xa < xb and ya < yb:
            clipped.append((xa, ya, xb, yb))
    return clipped


def render_sheet(
    photo: np.ndarray,
    layout: SheetLayout,
    *,
    paper_colour: tuple[int, int, int] = (255, 255, 255),
    mark_colour: tuple[int, int, int] = (0, 0, 0),
    mark_mm: float = 1.5,
    mark_width_px: int | None = None,
    caption: str | None = None,
) -> np.ndarray:
    """Render the print sheet described by `layout`.

    `photo` is the (H, W, 3) uint8 RGB ID photo at any pixel size; it is resized (Lanczos) to
    `layout.photo_px` = (width, height) px when it differs (so it prints at its true size at
    `layout.dpi`), otherwise used exactly as given. Returns the (sheet_h, sheet_w, 3) uint8 RGB sheet
    (`layout.sheet_px` = (sheet_w, sheet_h)): `paper_colour` everywhere, thin `mark_colour` cut marks
    at each copy's four corners (see `cut_mark_boxes`: `mark_mm` long, `mark_width_px` thick, default
    0.1 mm at the dpi and at least 1 px, on the photo's edge lines but outside the photo), and a copy
    of the photo at each of `layout.positions`. The photos are pasted last, so no mark ever covers a
    photo pixel. `caption`: one line of text in `mark_colour`, centred in the paper below the grid
    (see `caption_box`), so the sheet says in words what the report says.
    """
    if not isinstance(photo, np.ndarray) or photo.dtype != np.uint8 or photo.ndim != 3 or photo.shape[2] != 3:
        shape = getattr(photo, "shape", None)
        dtype = getattr(photo, "dtype", None)
        raise ValueError(f"photo must be an (H, W, 3) uint8 RGB array, got shape {shape} dtype {dtype}")
    if photo.shape[0] < 1 or photo.shape[1] < 1:
        raise ValueError(f"photo is empty: shape {photo.shape}")
    paper_rgb = _check_colour("paper_colour", paper_colour)
    mark_rgb = _check_colour("mark_colour", mark_colour)

    pw, ph = layout.photo_px
    if (photo.shape[1], photo.shape[0]) != (pw, ph):
        photo = np.asarray(Image.fromarray(photo).resize((pw, ph), Image.Resampling.LANCZOS))

    sheet_w, sheet_h = layout.sheet_px
    sheet = np.empty((sheet_h, sheet_w, 3), dtype=np.uint8)
    sheet[:, :] = np.array(paper_rgb, dtype=np.uint8)
    mark = np.array(mark_rgb, dtype=np.uint8)
    for xa, ya, xb, yb in cut_mark_boxes(layout, mark_mm=mark_mm, mark_width_px=mark_width_px):
        sheet[ya:yb, xa:xb] = mark
    for x, y in layout.positions:
        sheet[y : y + ph, x : x + pw] = photo
    if caption:
        _draw_caption(sheet, caption_box(layout, mark_mm=mark_mm), caption, mark_rgb, dpi=layout.dpi)
    return sheet


CAPTION_MAX_MM = 2.0  # the text's height at most: small print, readable on a 4x6 in sheet
CAPTION_MIN_PX = 8  # below this a line is not legible: the caption is left off


def caption_box(layout: SheetLayout, *, mark_mm: float = 1.5) -> tuple[int, int, int, int]:
    """Where the caption may go, (x0, y0, x1, y1) px: the paper below the grid's full block and its
    cut marks (`mark_mm` long), inside the side margins."""
    block_h = layout.rows * layout.photo_px[1] + (layout.rows - 1) * layout.gap_px
    top = (layout.sheet_px[1] - block_h) // 2 + block_h + mm_to_px(mark_mm, dpi=layout.dpi) + 1
    return layout.margin_px, top, layout.sheet_px[0] - layout.margin_px, layout.sheet_px[1]


def _draw_caption(sheet: np.ndarray, box: tuple[int, int, int, int], text: str, colour: RGB, *, dpi: int) -> None:
    """The caption in the largest size (up to CAPTION_MAX_MM) that fits `caption_box`, centred; drawn
    on that strip alone (a copy of the strip, not of the sheet). Left off when even CAPTION_MIN_PX
    does not fit."""
    x0, y0, x1, y1 = box
    if x1 <= x0 or y1 <= y0:
        return
    strip = Image.fromarray(sheet[y0:y1, x0:x1])
    draw = ImageDraw.Draw(strip)
    size = min(mm_to_px(CAPTION_MAX_MM, dpi=dpi), int(0.6 * (y1 - y0)))
    while size >= CAPTION_MIN_PX:
        font = ImageFont.load_default(size=size)
        left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
        if right - left <= x1 - x0:
            draw.text(((x1 - x0 - (right - left)) // 2 - left, (y1 - y0 - (bottom - top)) // 2 - top), text,
                      fill=colour, font=font)
            sheet[y0:y1, x0:x1] = np.asarray(strip)
            return
        size -= 1
