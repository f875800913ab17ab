"""A small PNG chart with Pillow only (no plotting library): panels of bars and lines."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

COLOURS = ("#3b6fb6", "#e0803a", "#5aa469", "#b65b9e", "#8c8c8c", "#c9b037", "#4bb3c4")
PANEL_W, PANEL_H = 620, 380
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 70, 20, 48, 70


def font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType
        return ImageFont.load_default()


@dataclass
class Panel:
    title: str
    y_label: str
    kind: str  # "stacked", "bars", "lines"
    categories: list[str]  # x axis
    series: dict[str, list[float | None]] = field(default_factory=dict)  # legend name -> one value per category
    note: str = ""


def nice_max(value: float) -> float:
    if value <= 0 or math.isnan(value):
        return 1.0
    exponent = 10 ** math.floor(math.log10(value))
    for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if value <= step * exponent:
            return step * exponent
    return 10 * exponent


def draw_panel(image: Image.Image, origin: tuple[int, int], panel: Panel) -> None:
    draw = ImageDraw.Draw(image)
    x0, y0 = origin
    title_font, small = font(16), font(12)
    draw.text((x0 + 10, y0 + 8), panel.title, fill="black", font=title_font)
    left, top = x0 + MARGIN_L, y0 + MARGIN_T
    right, bottom = x0 + PANEL_W - MARGIN_R, y0 + PANEL_H - MARGIN_B
    values = [v for series in panel.series.values() for v in series if v is not None]
    if panel.kind == "stacked":
        totals = [sum(series[i] or 0 for series in panel.series.values()) for i in range(len(panel.categories))]
        top_value = nice_max(max(totals, default=0))
    else:
        top_value = nice_max(max(values, default=0))
    # axes and grid
    for tick in range(6):
        value = top_value * tick / 5
        y = bottom - (bottom - top) * tick / 5
        draw.line([(left, y), (right, y)], fill="#e4e4e4")
        label = f"{value:,.0f}" if top_value >= 100 else f"{value:.3g}"
        draw.text((left - 6 - draw.textlength(label, font=small), y - 7), label, fill="#444", font=small)
    draw.line([(left, top), (left, bottom), (right, bottom)], fill="black")
    draw.text((x0 + 8, top - 20), panel.y_label, fill="#444", font=small)
    count = max(1, len(panel.categories))
    slot = (right - left) / count
    names = list(panel.series)
    if panel.kind == "lines":
        for s_index, name in enumerate(names):
            points = [(left + slot * (i + 0.5), bottom - (bottom - top) * v / top_value)
                      for i, v in enumerate(panel.series[name]) if v is not None]
            colour = COLOURS[s_index % len(COLOURS)]
            if len(points) > 1:
                draw.line(points, fill=colour, width=3)
            for x, y in points:
                draw.ellipse([x - 4, y - 4, x + 4, y + 4], fill=colour)
    else:
        for i in range(len(panel.categories)):
            if panel.kind == "stacked":
                base = bottom
                width = slot * 0.55
                x = left + slot * i + (slot - width) / 2
                for s_index, name in enumerate(names):
                    value = panel.series[name][i] or 0
                    height = (bottom - top) * value / top_value
                    if height > 0:
                        draw.rectangle([x, base - height, x + width, base], fill=COLOURS[s_index % len(COLOURS)])
                    base -= height
            else:
                group = slot * 0.8
                width = group / max(1, len(names))
                for s_index, name in enumerate(names):
                    value = panel.series[name][i]
                    if value is None:
                        continue
                    x = left + slot * i + (slot - group) / 2 + width * s_index
                    y = bottom - (bottom - top) * value / top_value
                    draw.rectangle([x + 1, y, x + width - 1, bottom], fill=COLOURS[s_index % len(COLOURS)])
                    label = f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
                    draw.text((x + width / 2 - draw.textlength(label, font=small) / 2, y - 15), label, fill="#222", font=small)
    for i, category in enumerate(panel.categories):
        label = category
        x = left + slot * (i + 0.5) - draw.textlength(label, font=small) / 2
        draw.text((x, bottom + 6), label, fill="black", font=small)
    # legend
    x = left
    y = bottom + 28
    for s_index, name in enumerate(names):
        draw.rectangle([x, y + 2, x + 12, y + 14], fill=COLOURS[s_index % len(COLOURS)])
        draw.text((x + 16, y), name, fill="black", font=small)
        x += 16 + draw.textlength(name, font=small) + 14
        if x > right - 80:
            x = left
            y += 16
    if panel.note:
        draw.text((left, y0 + PANEL_H - 16), panel.note, fill="#666", font=small)


def render(panels: Sequence[Panel], path: Path, *, columns: int = 2, title: str = "") -> None:
    rows = math.ceil(len(panels) / columns)
    header = 36 if title else 0
    image = Image.new("RGB", (PANEL_W * columns, PANEL_H * rows + header), "white")
    if title:
        ImageDraw.Draw(image).text((12, 8), title, fill="black", font=font(18))
    for index, panel in enumerate(panels):
        draw_panel(image, ((index % columns) * PANEL_W, header + (index // columns) * PANEL_H), panel)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, "PNG", optimize=True)
