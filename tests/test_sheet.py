"""Print sheets: layout arithmetic and rendering (app.imaging.sheet)."""

from __future__ import annotations

import numpy as np
import pytest

from app.imaging.sheet import PAPERS, SheetLayout, caption_box, cut_mark_boxes, get_paper, plan_sheet, render_sheet

ID_35x45 = (35.0, 45.0)
US_2x2 = (50.8, 50.8)

# Hand arithmetic, in mm, with 3 mm margins and a 2 mm gap: n photos of size p fit along a side L when
# n*p + (n-1)*2 <= L - 6, i.e. n = floor((L - 4) / (p + 2)).
#
# 35x45 on 4x6 (101.6 x 152.4):
#   portrait : cols floor(97.6/37)=2,  rows floor(148.4/47)=3 -> 6
#   landscape: cols floor(148.4/37)=4 (4*35+3*2 = 146 <= 146.4), rows floor(97.6/47)=2 -> 8  => 8, landscape
# 2x2 in (50.8) on 4x6:
#   portrait : cols floor(97.6/52.8)=1 (2*50.8+2 = 103.6 > 95.6), rows floor(148.4/52.8)=2 -> 2
#   landscape: cols 2, rows 1 -> 2                                                          => 2, tie: portrait
# 35x45 on 5x7 (127 x 177.8):
#   portrait : cols floor(123/37)=3, rows floor(173.8/47)=3 -> 9
#   landscape: cols floor(173.8/37)=4, rows floor(123/47)=2 -> 8                              => 9, portrait
# 2x2 on 5x7: portrait 2 x 3 = 6, landscape 3 x 2 = 6                                       => 6, tie: portrait
# 35x45 on A4 (210 x 297):
#   portrait : cols floor(206/37)=5, rows floor(293/47)=6 -> 30
#   landscape: cols floor(293/37)=7, rows floor(206/47)=4 -> 28                               => 30, portrait
# 2x2 on A4: portrait 3 x 5 = 15, landscape 5 x 3 = 15                                      => 15, tie: portrait
# At 300 dpi the px arithmetic (photo 413x531 / 600x600, gap 24, margin ceil(35.43)=36) agrees:
# e.g. 4x6 landscape width 1800 - 72 = 1728 >= 4*413 + 3*24 = 1724.
EXPECTED = [
    # paper, photo mm, capacity, cols, rows, landscape
    ("4x6", ID_35x45, 8, 4, 2, True),
    ("4x6", US_2x2, 2, 1, 2, False),
    ("5x7", ID_35x45, 9, 3, 3, False),
    ("5x7", US_2x2, 6, 2, 3, False),
    ("a4", ID_35x45, 30, 5, 6, False),
    ("a4", US_2x2, 15, 3, 5, False),
]


@pytest.mark.parametrize(("paper_id", "photo_mm", "capacity", "cols", "rows", "landscape"), EXPECTED)
def test_capacity(
    paper_id: str, photo_mm: tuple[float, float], capacity: int, cols: int, rows: int, landscape: bool
) -> None:
    layout = plan_sheet(paper=PAPERS[paper_id], photo_mm=photo_mm, dpi=300)
    assert (layout.capacity, layout.cols, layout.rows, layout.landscape) == (capacity, cols, rows, landscape)
    assert len(layout.positions) == capacity
    w, h = layout.sheet_px
    assert (w > h) == landscape


def test_photo_px_is_true_size() -> None:
    layout = plan_sheet(paper=PAPERS["4x6"], photo_mm=ID_35x45, dpi=300)
    assert layout.photo_px == (413, 531)  # 35 / 25.4 * 300 = 413.4; 45 / 25.4 * 300 = 531.5 -> 531
    assert layout.sheet_px == (1800, 1200)  # landscape 6x4 in at 300 dpi
    assert plan_sheet(paper=PAPERS["4x6"], photo_mm=US_2x2, dpi=300).photo_px == (600, 600)
    assert plan_sheet(paper=PAPERS["4x6"], photo_mm=US_2x2, dpi=600).photo_px == (1200, 1200)


def _check_geometry(layout: SheetLayout) -> None:
    pw, ph = layout.photo_px
    sw, sh = layout.sheet_px
    m = layout.margin_px
    rects = [(x, y, x + pw, y + ph) for x, y in layout.positions]
    for xa, ya, xb, yb in rects:
        assert m <= xa and xb <= sw - m and m <= ya and yb <= sh - m
    for i, a in enumerate(rects):
        for b in rects[i + 1 :]:
            overlap = a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
            assert not overlap, (a, b)
    # Row by row: sorted by (y, x).
    assert list(layout.positions) == sorted(layout.positions, key=lambda p: (p[1], p[0]))


@pytest.mark.parametrize(("paper_id", "photo_mm"), [(p, mm) for p, mm, *_ in EXPECTED])
def test_positions_inside_margins_and_disjoint(paper_id: str, photo_mm: tuple[float, float]) -> None:
    layout = plan_sheet(paper=PAPERS[paper_id], photo_mm=photo_mm)
    _check_geometry(layout)
    assert layout.margin_px >= 3 / 25.4 * 300
    # Gap between neighbours is 2 mm, and the full block is centred (within 1 px).
    pw, ph = layout.photo_px
    xs = sorted({x for x, _ in layout.positions})
    ys = sorted({y for _, y in layout.positions})
    assert all(b - a == pw + layout.gap_px for a, b in zip(xs, xs[1:]))
    assert all(b - a == ph + layout.gap_px for a, b in zip(ys, ys[1:]))
    left, right = xs[0], layout.sheet_px[0] - (xs[-1] + pw)
    top, bottom = ys[0], layout.sheet_px[1] - (ys[-1] + ph)
    assert abs(left - right) <= 1 and abs(top - bottom) <= 1


def test_copies_places_exactly_that_many_in_full_grid_slots() -> None:
    full = plan_sheet(paper=PAPERS["4x6"], photo_mm=ID_35x45)
    three = plan_sheet(paper=PAPERS["4x6"], photo_mm=ID_35x45, copies=3)
    assert len(three.positions) == 3
    assert three.capacity == 8
    assert three.positions == full.positions[:3]
    _check_geometry(three)


def test_too_many_copies_names_the_capacity() -> None:
    with pytest.raises(ValueError, match=r"at most 8 copies of a 35x45 mm photo fit on 4x6 in"):
        plan_sheet(paper=PAPERS["4x6"], photo_mm=ID_35x45, copies=9)


@pytest.mark.parametrize("copies", [0, -1])
def test_copies_below_one(copies: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        plan_sheet(paper=PAPERS["4x6"], photo_mm=ID_35x45, copies=copies)


def test_photo_that_never_fits() -> None:
    with pytest.raises(ValueError, match="does not fit on 4x6 in"):
        plan_sheet(paper=PAPERS["4x6"], photo_mm=(100.0, 100.0))


def test_get_paper_aliases() -> None:
    assert get_paper("4x6") is PAPERS["4x6"]
    assert get_paper("4X6in") is PAPERS["4x6"]
    assert get_paper("6x4") is PAPERS["4x6"]
    assert get_paper('4 x 6"') is PAPERS["4x6"]
    assert get_paper("7x5 in") is PAPERS["5x7"]
    assert get_paper("A4") is PAPERS["a4"]
    assert get_paper("15x10cm") is PAPERS["10x15"]
    assert (PAPERS["10x15"].width_mm, PAPERS["10x15"].height_mm) == (100.0, 150.0)
    for paper in PAPERS.values():
        assert paper.width_mm < paper.height_mm
    with pytest.raises(ValueError, match="4x6.*5x7.*a4"):
        get_paper("letter")


def _test_photo(size: tuple[int, int]) -> np.ndarray:
    """(H, W, 3) uint8 with no pure black or white pixel (values 20..230), varying everywhere."""
    w, h = size
    rng = np.random.default_rng(0)
    return rng.integers(20, 231, size=(h, w, 3), dtype=np.uint8)


def test_render_sheet_pixels_marks_and_paper() -> None:
    layout = plan_sheet(paper=PAPERS["4x6"], photo_mm=ID_35x45, copies=5)
    photo = _test_photo(layout.photo_px)
    sheet = render_sheet(photo, layout)
    sw, sh = layout.sheet_px
    pw, ph = layout.photo_px
    assert sheet.shape == (sh, sw, 3) and sheet.dtype == np.uint8

    covered = np.zeros((sh, sw), dtype=bool)
    for x, y in layout.positions:
        assert np.array_equal(sheet[y : y + ph, x : x + pw], photo)
        covered[y : y + ph, x : x + pw] = True

    black = np.all(sheet == 0, axis=2)
    white = np.all(sheet == 255, axis=2)
    assert not np.any(black & covered)
    # Outside the photos every pixel is either paper or a mark.
    assert np.all((black | white)[~covered])

    # A mark at every corner of every copy: on the edge row/column, just outside the photo.
    for x, y in layout.positions:
        right, bottom = x + pw - 1, y + ph - 1
        for cx, cy, dx, dy in ((x, y, -1, -1), (right, y, 1, -1), (x, bottom, -1, 1), (right, bottom, 1, 1)):
            assert black[cy, cx + dx], (cx, cy)  # horizontal mark beside the corner
            assert black[cy + dy, cx], (cx, cy)  # vertical mark above/below the corner
    # Marks are short: nothing black farther than mark length (1.5 mm = 18 px) + width from a corner.
    ys, xs = np.nonzero(black)
    corners = np.array([(x + ox, y + oy) for x, y in layout.positions for ox in (0, pw - 1) for oy in (0, ph - 1)])
    chebyshev = np.maximum(np.abs(xs[:, None] - corners[None, :, 0]), np.abs(ys[:, None] - corners[None, :, 1]))
    dist = chebyshev.min(axis=1)
    assert dist.max() <= 18
    # The unused slots (copies=5 of 8) stay blank paper.
    full = plan_sheet(paper=PAPERS["4x6"], photo_mm=ID_35x45)
    for x, y in full.positions[5:]:
        assert np.all(sheet[y + 20 : y + ph - 20, x + 20 : x + pw - 20] == 255)


def test_marks_never_cover_photos_when_gap_is_narrow() -> None:
    layout = plan_sheet(paper=PAPERS["4x6"], photo_mm=ID_35x45, gap_mm=0.5)
    photo = _test_photo(layout.photo_px)
    sheet = render_sheet(photo, layout, mark_mm=5.0, mark_width_px=3, mark_colour=(255, 0, 0), paper_colour=(0, 0, 255))
    pw, ph = layout.photo_px
    for x, y in layout.positions:
        assert np.array_equal(sheet[y : y + ph, x : x + pw], photo)
    assert np.all(sheet[0, 0] == (0, 0, 255))
    assert cut_mark_boxes(layout, mark_mm=5.0, mark_width_px=3)


def test_render_resizes_to_photo_px() -> None:
    layout = plan_sheet(paper=PAPERS["4x6"], photo_mm=US_2x2, dpi=150)
    assert layout.photo_px == (300, 300)
    photo = np.full((600, 600, 3), 128, dtype=np.uint8)
    sheet = render_sheet(photo, layout)
    x, y = layout.positions[0]
    assert np.all(sheet[y : y + 300, x : x + 300] == 128)


def test_render_rejects_bad_photo() -> None:
    layout = plan_sheet(paper=PAPERS["4x6"], photo_mm=ID_35x45)
    with pytest.raises(ValueError, match="uint8"):
        render_sheet(np.zeros((10, 10), dtype=np.uint8), layout)


def test_a_caption_prints_below_the_grid_and_nowhere_else() -> None:
    layout = plan_sheet(paper=PAPERS["4x6"], photo_mm=ID_35x45)
    photo = _test_photo(layout.photo_px)
    text = "ICAO 35x45 mm · cropping and scaling the photo · every pixel photographed · checked: compliant"
    plain, captioned = render_sheet(photo, layout), render_sheet(photo, layout, caption=text)
    x0, y0, x1, y1 = caption_box(layout)
    changed = np.any(plain != captioned, axis=2)
    assert changed[y0:y1, x0:x1].sum() > 500  # the words are there
    changed[y0:y1, x0:x1] = False
    assert not changed.any()  # and nothing else moved: photos, marks, paper
    assert not np.any(np.all(captioned[y0:y1, x0:x1] == 0, axis=2)[:, :5])  # centred, not from the edge
    assert y0 > max(y for _, y in layout.positions) + layout.photo_px[1]  # below the marks, not over a photo


def test_a_caption_too_long_to_be_legible_is_left_off() -> None:
    layout = plan_sheet(paper=PAPERS["4x6"], photo_mm=ID_35x45)
    photo = _test_photo(layout.photo_px)
    assert np.array_equal(render_sheet(photo, layout), render_sheet(photo, layout, caption="word " * 400))
