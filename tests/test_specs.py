"""The photo-spec table: internal consistency, the published numbers, colours and custom sizes."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import pytest

from app.specs import (
    BACKGROUND_COLOURS,
    SPECS,
    PhotoSpec,
    custom_spec,
    get_spec,
    mm_to_px,
    parse_colour,
)

REQUIRED_IDS = {
    "us-passport",
    "us-visa",
    "icao",
    "schengen-visa",
    "uk-passport",
    "ca-passport",
    "au-passport",
    "nz-passport",
    "de-passport",
    "fr-passport",
    "sg-passport",
    "jp-passport",
    "kr-passport",
    "in-passport",
    "in-visa",
    "cn-passport",
    "cn-visa",
    "cn-id-card",
    "cn-1inch",
    "cn-2inch",
    "resume",
}  # the 21 ids that existed before issue 14: the page and clients use them
ALL = list(SPECS.values())
IDS = [spec.id for spec in ALL]


def test_table_size_and_required_ids() -> None:
    assert len(SPECS) >= 40
    assert REQUIRED_IDS <= set(SPECS)


def test_ids_are_unique_slugs_matching_their_keys() -> None:
    assert len(set(IDS)) == len(IDS)
    for key, spec in SPECS.items():
        assert key == spec.id
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", spec.id)


def test_order_is_stable() -> None:
    assert IDS[:2] == ["us-passport", "us-visa"]
    assert list(SPECS) == IDS


@pytest.mark.parametrize("spec", ALL, ids=IDS)
def test_basic_fields(spec: PhotoSpec) -> None:
    assert spec.name.strip()
    assert spec.source.strip()
    assert re.fullmatch(r"[A-Z]{2}|INT", spec.country)
    assert spec.width_mm > 0 and spec.height_mm > 0
    assert spec.height_mm >= spec.width_mm  # portrait or square, never landscape
    assert 72 <= spec.dpi <= 1200
    assert spec.max_kb is None or spec.max_kb > 0


@pytest.mark.parametrize("spec", ALL, ids=IDS)
def test_pixels_match_millimetres_at_dpi(spec: PhotoSpec) -> None:
    for mm, px in ((spec.width_mm, spec.width_px), (spec.height_mm, spec.height_px)):
        expected = mm / 25.4 * spec.dpi
        assert abs(px - expected) / expected <= 0.015
        assert px == mm_to_px(mm, spec.dpi)  # every size here is derived, so prints never stretch
    assert 1 <= spec.width_px <= 4000 and 1 <= spec.height_px <= 4000


@pytest.mark.parametrize(
    ("spec_id", "size"),
    [
        ("us-passport", (600, 600)),
        ("us-visa", (600, 600)),
        ("cn-id-card", (358, 441)),  # GA 461-2004
        ("sg-passport", (400, 514)),  # ICA digital photo
        ("cn-1inch", (295, 413)),
        ("cn-2inch", (413, 579)),
    ],
)
def test_authority_pixel_sizes_are_hit_exactly(spec_id: str, size: tuple[int, int]) -> None:
    spec = SPECS[spec_id]
    assert (spec.width_px, spec.height_px) == size


def test_pixel_sizes_fall_inside_authority_windows() -> None:
    cn_visa = SPECS["cn-visa"]  # COVA upload: 354-420 wide, 472-560 high
    assert 354 <= cn_visa.width_px <= 420 and 472 <= cn_visa.height_px <= 560
    uk = SPECS["uk-passport"]  # at least 600 x 750
    assert uk.width_px >= 600 and uk.height_px >= 750
    nz = SPECS["nz-passport"]  # at least 900 x 1200
    assert nz.width_px >= 900 and nz.height_px >= 1200
    in_visa = SPECS["in-visa"]  # square, 350-1000
    assert in_visa.width_px == in_visa.height_px and 350 <= in_visa.width_px <= 1000


@pytest.mark.parametrize("spec", ALL, ids=IDS)
def test_head_range(spec: PhotoSpec) -> None:
    low, high = spec.head_height
    assert 0 < low < high < 1
    # the head must fit with some room left above and below
    assert high * spec.height_mm < spec.height_mm - 1


@pytest.mark.parametrize("spec", [s for s in ALL if s.eye_line is not None], ids=lambda s: s.id)
def test_eye_line(spec: PhotoSpec) -> None:
    assert spec.eye_line is not None
    eye_low, eye_high = spec.eye_line
    head_low, head_high = spec.head_height
    assert 0 < eye_low < eye_high < 1
    # Above the chin of the largest allowed head centred in the frame: the eyes sit higher than
    # the midpoint of the room the head leaves over.
    assert eye_low > (1 - head_high) / 2
    # Below the crown even with the crown on the top edge: eyes are a good way down the head.
    assert eye_high < 1 - 0.25 * head_low
    # The band reaches the upper half of the photo, where eyes of a framed head sit.
    assert eye_high > 0.5


def test_specs_without_a_published_eye_rule_say_none() -> None:
    for spec_id in ("uk-passport", "ca-passport", "au-passport", "jp-passport", "kr-passport", "cn-1inch", "resume"):
        assert SPECS[spec_id].eye_line is None


@pytest.mark.parametrize("spec", ALL, ids=IDS)
def test_backgrounds(spec: PhotoSpec) -> None:
    assert spec.backgrounds
    assert len(set(spec.backgrounds)) == len(spec.backgrounds)
    assert all(name in BACKGROUND_COLOURS for name in spec.backgrounds)
    # issue 33: a spec that does not replace the background by default keeps the photographed one
    expected = spec.backgrounds[0] if spec.edit("replace_background").apply else "keep"
    assert spec.default_background == expected


def test_background_choices_follow_the_authorities() -> None:
    assert "white" not in SPECS["fr-passport"].backgrounds  # ANTS forbids white
    assert SPECS["uk-passport"].backgrounds[0] != "white"
    assert SPECS["kr-passport"].backgrounds == ("white",)
    assert SPECS["cn-id-card"].backgrounds == ("white",)
    assert {"white", "blue", "red"} <= set(SPECS["cn-1inch"].backgrounds)


def _mm(spec_id: str) -> tuple[float, float]:
    spec = SPECS[spec_id]
    return (spec.head_height[0] * spec.height_mm, spec.head_height[1] * spec.height_mm)


@pytest.mark.parametrize(
    ("spec_id", "head_mm"),
    [
        ("us-passport", (25.4, 34.925)),  # 1 to 1 3/8 in
        ("in-visa", (25.4, 34.925)),
        ("in-passport", (35.56, 40.64)),  # 70-80 % of 2 in (Indian mission, Copenhagen)
        ("icao", (32, 36)),
        ("schengen-visa", (32, 36)),
        ("uk-passport", (29, 34)),
        ("ca-passport", (31, 36)),
        ("au-passport", (32, 36)),
        ("jp-passport", (32, 36)),
        ("kr-passport", (32, 36)),
        ("de-passport", (31.5, 36)),  # PassV Anlage 8 (2025): 70-80 % of 45 mm
        ("fr-passport", (32, 36)),
        ("cn-passport", (28, 33)),
        ("cn-visa", (28, 33)),
        ("hk-passport", (32, 36)),
        ("tw-passport", (32, 36)),
        ("pl-passport", (31, 36)),
        ("be-eid", (31, 36)),
        ("nl-passport", (26, 30)),
        ("ch-passport", (29, 34)),
        ("ca-visa", (31, 36)),
        ("it-passport", (31.5, 36)),
    ],
)
def test_published_head_heights(spec_id: str, head_mm: tuple[float, float]) -> None:
    low, high = _mm(spec_id)
    assert low == pytest.approx(head_mm[0], abs=0.01)
    assert high == pytest.approx(head_mm[1], abs=0.01)


def test_published_sizes_and_ratios() -> None:
    us_visa = SPECS["us-visa"]
    assert us_visa.head_height == (0.50, 0.69)
    assert us_visa.eye_line == (0.56, 0.69)
    assert us_visa.max_kb == 240
    us = SPECS["us-passport"]
    assert us.eye_line == pytest.approx((1.125 / 2, 1.375 / 2))
    assert (SPECS["ca-passport"].width_mm, SPECS["ca-passport"].height_mm) == (50, 70)
    for spec_id in ("cn-passport", "cn-visa"):
        assert (SPECS[spec_id].width_mm, SPECS[spec_id].height_mm) == (33, 48)
    cn_id = SPECS["cn-id-card"]
    assert (cn_id.width_mm, cn_id.height_mm, cn_id.dpi) == (26, 32, 350)
    assert cn_id.eye_line is not None and cn_id.eye_line[0] == pytest.approx(207 / 441, abs=1e-4)
    assert (SPECS["cn-1inch"].width_mm, SPECS["cn-1inch"].height_mm, SPECS["cn-1inch"].dpi) == (25, 35, 300)
    assert (SPECS["cn-2inch"].width_mm, SPECS["cn-2inch"].height_mm) == (35, 49)
    for spec_id in ("us-passport", "us-visa", "in-passport", "in-visa"):
        assert SPECS[spec_id].width_mm == SPECS[spec_id].height_mm == pytest.approx(50.8)


@pytest.mark.parametrize("spec", ALL, ids=IDS)
def test_to_dict_round_trips(spec: PhotoSpec) -> None:
    data = json.loads(json.dumps(spec.to_dict()))
    assert set(data) == {
        "id",
        "name",
        "country",
        "width_mm",
        "height_mm",
        "width_px",
        "height_px",
        "dpi",
        "head_height",
        "eye_line",
        "backgrounds",
        "default_background",
        "max_kb",
        "min_kb",
        "min_px",
        "max_px",
        "file_source",
        "size_source",
        "source",
        "rules",
        "edits",
        "expression_source",
        "covering_source",
        "glasses",
    }
    assert PhotoSpec.from_dict(data) == spec
    assert data["default_background"] == spec.default_background
    head = data["rules"]["head_height"]
    assert head["low_fraction"] == pytest.approx(data["head_height"]["min"], abs=1e-4)
    assert head["high_fraction"] == pytest.approx(data["head_height"]["max"], abs=1e-4)
    assert head["source"]["url"] and head["source"]["quote"]
    assert set(data["rules"]["pose"]) == {"max_yaw_deg", "max_pitch_deg", "max_roll_deg", "source"}


def test_specs_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SPECS["icao"].dpi = 100  # type: ignore[misc]


def test_invalid_spec_is_rejected_at_construction() -> None:
    good = SPECS["icao"]
    for change in (
        {"id": "Bad Id"},
        {"head_height": (0.8, 0.7)},
        {"eye_line": (0.0, 0.5)},
        {"backgrounds": ()},
        {"backgrounds": ("white", "mauve")},
        {"width_px": 0},
        {"dpi": 10},
        {"country": "usa"},
    ):
        with pytest.raises(ValueError):
            dataclasses.replace(good, **change)


# --- get_spec --------------------------------------------------------------------------------


def test_get_spec() -> None:
    assert get_spec("us-passport") is SPECS["us-passport"]
    assert get_spec(" US_Passport ") is SPECS["us-passport"]


@pytest.mark.parametrize("bad", ["nope", "", "<script>alert(1)</script>", None, 42])
def test_get_spec_unknown(bad: object) -> None:
    with pytest.raises(KeyError) as info:
        get_spec(bad)  # type: ignore[arg-type]
    message = str(info.value)
    assert "us-passport" in message
    if isinstance(bad, str) and bad:
        assert bad not in message


# --- colours ---------------------------------------------------------------------------------


def test_background_colours_table() -> None:
    for name in ("white", "off-white", "light-grey", "light-blue", "blue", "red"):
        assert name in BACKGROUND_COLOURS
    for name, rgb in BACKGROUND_COLOURS.items():
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", name)
        assert len(rgb) == 3 and all(isinstance(c, int) and 0 <= c <= 255 for c in rgb)
    assert BACKGROUND_COLOURS["blue"] == (67, 142, 219)
    assert BACKGROUND_COLOURS["red"] == (255, 0, 0)


@pytest.mark.parametrize(
    ("text", "rgb"),
    [
        ("white", (255, 255, 255)),
        ("WHITE", (255, 255, 255)),
        ("light-grey", BACKGROUND_COLOURS["light-grey"]),
        ("light_grey", BACKGROUND_COLOURS["light-grey"]),
        ("Light_Gray", BACKGROUND_COLOURS["light-grey"]),
        ("  off-white ", BACKGROUND_COLOURS["off-white"]),
        ("OFF_WHITE", BACKGROUND_COLOURS["off-white"]),
        ("light blue", BACKGROUND_COLOURS["light-blue"]),
        ("blue", (67, 142, 219)),
        ("#438edb", (67, 142, 219)),
        ("#438EDB", (67, 142, 219)),
        ("#fff", (255, 255, 255)),
        ("#F00", (255, 0, 0)),
        ("#000000", (0, 0, 0)),
    ],
)
def test_parse_colour_accepts(text: str, rgb: tuple[int, int, int]) -> None:
    assert parse_colour(text) == rgb


@pytest.mark.parametrize(
    "text",
    ["", "   ", "mauve", "#12", "#1234", "#12345", "#1234567", "#ggg", "438edb", "rgb(1,2,3)", "#fff\n#000", "x" * 500],
)
def test_parse_colour_rejects(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_colour(text)
    message = str(info.value)
    assert "#rrggbb" in message and "white" in message
    assert len(message) < 300  # a long input is not echoed in full


@pytest.mark.parametrize("value", [None, 255, (1, 2, 3)])
def test_parse_colour_rejects_non_strings(value: object) -> None:
    with pytest.raises(ValueError):
        parse_colour(value)  # type: ignore[arg-type]


# --- custom_spec -----------------------------------------------------------------------------


def test_custom_from_millimetres() -> None:
    spec = custom_spec(width_mm=35, height_mm=45, dpi=300)
    assert (spec.width_px, spec.height_px) == (413, 531)
    assert spec.head_height == (0.6, 0.7)
    assert spec.eye_line is None
    assert spec.default_background == "white"
    assert spec.id == "custom"
    json.dumps(spec.to_dict())


def test_custom_from_pixels() -> None:
    spec = custom_spec(width_px=600, height_px=800, dpi=300, head_ratio=(0.5, 0.65))
    assert (spec.width_px, spec.height_px) == (600, 800)
    assert spec.width_mm == pytest.approx(50.8)
    assert spec.height_mm == pytest.approx(67.73, abs=0.01)
    assert spec.head_height == (0.5, 0.65)


def test_custom_accepts_list_head_ratio_and_integral_floats() -> None:
    spec = custom_spec(width_px=600.0, height_px=600, dpi=300.0, head_ratio=[0.55, 0.7])  # type: ignore[arg-type]
    assert (spec.width_px, spec.dpi, spec.head_height) == (600, 300, (0.55, 0.7))


def test_custom_with_both_sizes_keeps_both() -> None:
    spec = custom_spec(width_mm=35, height_mm=45, width_px=600, height_px=750)
    assert (spec.width_mm, spec.height_mm, spec.width_px, spec.height_px) == (35, 45, 600, 750)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"width_mm": 35},
        {"height_px": 500},
        {"width_mm": 0, "height_mm": 45},
        {"width_mm": -35, "height_mm": 45},
        {"width_mm": math.nan, "height_mm": 45},
        {"width_mm": math.inf, "height_mm": 45},
        {"width_mm": "35", "height_mm": 45},
        {"width_mm": True, "height_mm": 45},
        {"width_px": 0, "height_px": 500},
        {"width_px": 600.5, "height_px": 500},
        {"width_px": 4001, "height_px": 500},
        {"width_px": 500, "height_px": 10_000},
        {"width_mm": 400, "height_mm": 450, "dpi": 300},  # 4724 x 5315 px
        {"width_mm": 0.01, "height_mm": 0.01, "dpi": 72},  # under a pixel
        {"width_mm": 35, "height_mm": 45, "dpi": 71},
        {"width_mm": 35, "height_mm": 45, "dpi": 1201},
        {"width_mm": 35, "height_mm": 45, "dpi": 300.5},
        {"width_mm": 35, "height_mm": 45, "dpi": True},
        {"width_mm": 35, "height_mm": 45, "head_ratio": (0.2, 0.7)},
        {"width_mm": 35, "height_mm": 45, "head_ratio": (0.6, 0.9)},
        {"width_mm": 35, "height_mm": 45, "head_ratio": (0.7, 0.6)},
        {"width_mm": 35, "height_mm": 45, "head_ratio": (0.6, 0.6)},
        {"width_mm": 35, "height_mm": 45, "head_ratio": (0.6,)},
        {"width_mm": 35, "height_mm": 45, "head_ratio": ("0.6", 0.7)},
        {"width_mm": 35, "height_mm": 45, "head_ratio": (math.nan, 0.7)},
    ],
)
def test_custom_rejects(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError) as info:
        custom_spec(**kwargs)  # type: ignore[arg-type]
    assert str(info.value)


def test_custom_spec_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        custom_spec(35, 45)  # type: ignore[misc]
