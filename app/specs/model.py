"""The photo-spec model: frozen dataclasses that validate every spec, whatever its origin.

The specs themselves are data (`app/specs/data/*.toml`, read by `app/specs/loader.py`); a custom
size from a request is built here (`custom_spec`). Every geometric rule an authority gives is
held in `PhotoSpec.rules` (a `Rules`), in millimetres of the print, each bound with its `Source`:
the authority and document, its address and the verbatim words the bound comes from. A rule that
lives only in a comment is a defect.

Conventions used by every spec:

* Vertical distances (`head_height`, `eye_line`, `crown_margin`, `chin_margin`) are millimetres
  of the print's height; horizontal ones (`head_width`, `side_margin`, `centre_x`,
  `eye_distance`) are millimetres of its width. `eye_line` is measured up from the BOTTOM edge.
* `PhotoSpec.head_height` and `PhotoSpec.eye_line` are the same bands as fractions of the photo
  height, DERIVED from the millimetre rules (the loader computes them, `PhotoSpec` checks them):
  the placement code reads the fractions, the compliance report reads `rules`.
* Where an authority states its rule in pixels or as a share of the image (US DS-160, China's
  online visa photo, CHSI, India's online passport photo), the spec has a nominal print size at
  its dpi whose pixels are exactly the stated ones, and the rule is converted to millimetres of
  that nominal print; the data keeps the authority's number and unit.
* Where the authority states no rule and the pipeline needs one (a head band for placement, an
  eye band's open end), the band is ours: its `Source.title` starts with "pilotlight default:"
  and its quote gives our reason. Nothing else is invented.
* Pose: the authorities say only "look straight at the camera" (ICAO Doc 9303 and all national
  rules read here); the tolerances we apply are ISO/IEC 19794-5's best-practice values, labelled
  as our default (`ISO_POSE`).
* `width_px`/`height_px` always equal round(mm / 25.4 * dpi), so a print and a file share one
  geometry and a print never gets stretched. Where an authority states exact pixels, the dpi is
  picked so its numbers come out exactly (US 600 x 600 at 300 dpi, China ID card 358 x 441 at
  350 dpi, Singapore 400 x 514 at 290 dpi); where it states a window (`min_px`/`max_px`) the size
  falls inside it, and `PhotoSpec` checks that.
* Quotes in another language stay in that language. Where a number could only be read in a
  stored copy of the authority's page made by someone else, the Source title says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .edits import EDIT_OPERATIONS, KEEP_BACKGROUND, EditPolicy, edit_policy_from_dict, no_authority
from .rules import (DEFAULT_PREFIX, GLASSES_POLICIES, NO_COVERING_WORDS, NO_GLASSES_WORDS, PILOTLIGHT_URL, Band, Rules,
                    Source, is_number)

MM_PER_INCH = 25.4
MIN_DPI = 72
MAX_DPI = 1200
MAX_SIDE_PX = 4000
HEAD_RATIO_LIMITS = (0.2, 0.9)  # custom head ratios must lie strictly inside this
FRACTION_TOLERANCE = 1e-4  # fractions are rounded to 4 places; they must match mm / height to this

RGB = tuple[int, int, int]

# Named background colours. Names are lowercase with '-'; parse_colour also accepts '_' or
# spaces instead of '-', any case, and "gray" for "grey".
BACKGROUND_COLOURS: dict[str, RGB] = {
    "white": (255, 255, 255),
    "off-white": (245, 245, 240),
    "cream": (243, 237, 220),  # UK "plain cream" (printed passport photos)
    "light-grey": (220, 220, 220),
    "light-blue": (173, 216, 230),  # CSS "lightblue"; France's "bleu clair"
    # Chinese ID-photo blue (蓝底), #438EDB, the value Chinese photo tools commonly use.
    "blue": (67, 142, 219),
    # Chinese ID-photo red (红底): we use pure #FF0000 (255, 0, 0), the most common value;
    # some studios use a deeper (214, 0, 0).
    "red": (255, 0, 0),
}

_SLUG_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_HEX_RE = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})")
_COUNTRY_RE = re.compile(r"[A-Z]{2}|INT")

def _check_band(name: str, band: tuple[float, float]) -> None:
    if not (isinstance(band, tuple) and len(band) == 2 and all(is_number(v) for v in band)):
        raise ValueError(f"{name} must be a (min, max) pair of numbers")
    low, high = band
    if not 0.0 < low < high < 1.0:
        raise ValueError(f"{name} must satisfy 0 < min < max < 1, got ({low}, {high})")


def _positive_pair(value: object) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    )


@dataclass(frozen=True)
class PhotoSpec:
    """One photo format: print size, exact pixel size, rules with their sources, backgrounds.

    `head_height`/`eye_line` are fractions of the photo height (chin-to-crown; eye line above the
    bottom edge) derived from `rules`; `PhotoSpec` refuses fractions that do not match the rules.
    `min_px`/`max_px` are (width, height) windows an authority states for a digital upload;
    `min_kb`/`max_kb` its file-size bounds in KB; `file_source` backs all four. `size_source`
    backs the print (or nominal) size; every spec in SPECS has one, a custom spec has none.
    """

    id: str
    name: str  # "US passport"
    country: str  # ISO 3166 alpha-2 ("EU" is ISO's reserved code), "INT" for ICAO/none, "XX" custom
    width_mm: float
    height_mm: float
    dpi: int  # the print resolution the pixel size comes from
    width_px: int  # exact output pixel size
    height_px: int
    head_height: tuple[float, float]  # chin-to-crown as a fraction of photo height (min, max)
    eye_line: tuple[float, float] | None  # eye height above the BOTTOM edge, fraction of height
    backgrounds: tuple[str, ...]  # allowed names from BACKGROUND_COLOURS, first is the default
    max_kb: int | None  # upload cap where the authority sets one
    source: str  # short citation
    rules: Rules
    min_px: tuple[int, int] | None = None
    max_px: tuple[int, int] | None = None
    min_kb: int | None = None
    file_source: Source | None = None
    size_source: Source | None = None  # where width_mm x height_mm (or the pixel size) comes from
    expression_source: Source | None = None  # the words behind rules.mouth_closed (None: a custom spec)
    # the authority's words on hats and head coverings (refused, and the religious or medical exception)
    covering_source: Source = NO_COVERING_WORDS
    # eyeglasses: "forbidden" (US since 2016), "conditions" (allowed without glare or tint), "unstated"
    glasses: str = "unstated"
    glasses_source: Source = NO_GLASSES_WORDS
    # operation -> what the authority says of it (EDIT_OPERATIONS, every one); default: no authority
    edits: dict[str, EditPolicy] = field(default_factory=no_authority)

    def __post_init__(self) -> None:
        if not (isinstance(self.id, str) and _SLUG_RE.fullmatch(self.id)):
            raise ValueError("spec id must be a lowercase slug such as 'us-passport'")
        if not (isinstance(self.country, str) and (_COUNTRY_RE.fullmatch(self.country))):
            raise ValueError(f"{self.id}: country must be an ISO 3166 alpha-2 code or 'INT'")
        for label in ("width_mm", "height_mm"):
            value = getattr(self, label)
            if not (is_number(value) and value > 0):
                raise ValueError(f"{self.id}: {label} must be a positive number")
        if not (isinstance(self.dpi, int) and not isinstance(self.dpi, bool) and MIN_DPI <= self.dpi <= MAX_DPI):
            raise ValueError(f"{self.id}: dpi must be an integer between {MIN_DPI} and {MAX_DPI}")
        for label in ("width_px", "height_px"):
            value = getattr(self, label)
            if not (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_SIDE_PX):
                raise ValueError(f"{self.id}: {label} must be an integer between 1 and {MAX_SIDE_PX}")
        _check_band(f"{self.id}: head_height", self.head_height)
        if self.eye_line is not None:
            _check_band(f"{self.id}: eye_line", self.eye_line)
        if not (isinstance(self.backgrounds, tuple) and self.backgrounds):
            raise ValueError(f"{self.id}: backgrounds must be a non-empty tuple of colour names")
        unknown = [name for name in self.backgrounds if name not in BACKGROUND_COLOURS]
        if unknown:
            raise ValueError(f"{self.id}: unknown background name(s): {', '.join(map(str, unknown))}")
        if len(set(self.backgrounds)) != len(self.backgrounds):
            raise ValueError(f"{self.id}: backgrounds must not repeat")
        for label in ("max_kb", "min_kb"):
            value = getattr(self, label)
            if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
                raise ValueError(f"{self.id}: {label} must be a positive integer or None")
        if self.min_kb is not None and self.max_kb is not None and self.min_kb >= self.max_kb:
            raise ValueError(f"{self.id}: min_kb must be below max_kb")
        if self.glasses not in GLASSES_POLICIES:
            raise ValueError(f"{self.id}: glasses must be one of {', '.join(GLASSES_POLICIES)}")
        if not (isinstance(self.covering_source, Source) and isinstance(self.glasses_source, Source)):
            raise ValueError(f"{self.id}: covering_source and glasses_source must be Sources")
        self._check_rules()
        self._check_pixel_window()
        self._check_edits()

    def _check_edits(self) -> None:
        if not isinstance(self.edits, dict) or set(self.edits) != set(EDIT_OPERATIONS):
            raise ValueError(f"{self.id}: edits must give every operation ({', '.join(EDIT_OPERATIONS)})")
        for operation, policy in self.edits.items():
            if not (isinstance(policy, EditPolicy) and policy.operation == operation):
                raise ValueError(f"{self.id}: edits.{operation} must be the EditPolicy of {operation}")

    def _check_rules(self) -> None:
        if not isinstance(self.rules, Rules):
            raise ValueError(f"{self.id}: rules must be a Rules")
        self.rules.check_fits(width_mm=self.width_mm, height_mm=self.height_mm, label=self.id)
        head = self.rules.head_height
        expected = (head.low / self.height_mm, head.high / self.height_mm)  # type: ignore[operator]
        if any(abs(a - b) > FRACTION_TOLERANCE for a, b in zip(self.head_height, expected)):
            raise ValueError(f"{self.id}: head_height {self.head_height} does not match rules.head_height mm / height")
        eye = self.rules.eye_line
        if (eye is None) != (self.eye_line is None):
            raise ValueError(f"{self.id}: eye_line and rules.eye_line must both be given or both be None")
        if eye is not None and self.eye_line is not None:
            expected = (eye.low / self.height_mm, eye.high / self.height_mm)  # type: ignore[operator]
            if any(abs(a - b) > FRACTION_TOLERANCE for a, b in zip(self.eye_line, expected)):
                raise ValueError(f"{self.id}: eye_line {self.eye_line} does not match rules.eye_line mm / height")

    def _check_pixel_window(self) -> None:
        for label in ("min_px", "max_px"):
            value = getattr(self, label)
            if value is not None and not _positive_pair(value):
                raise ValueError(f"{self.id}: {label} must be a (width, height) pair of positive integers")
        stated = (self.min_px, self.max_px, self.min_kb, self.max_kb)
        if any(value is not None for value in stated) and self.file_source is None:
            raise ValueError(f"{self.id}: a pixel window or file-size bound needs a file_source")
        for label in ("file_source", "size_source"):
            value = getattr(self, label)
            if value is not None and not isinstance(value, Source):
                raise ValueError(f"{self.id}: {label} must be a Source")
        if self.min_px is not None and (self.width_px < self.min_px[0] or self.height_px < self.min_px[1]):
            raise ValueError(f"{self.id}: {self.width_px} x {self.height_px} px is under min_px {self.min_px}")
        if self.max_px is not None and (self.width_px > self.max_px[0] or self.height_px > self.max_px[1]):
            raise ValueError(f"{self.id}: {self.width_px} x {self.height_px} px is over max_px {self.max_px}")

    @property
    def default_background(self) -> str:
        """"keep" (the photographed background, judged) where the spec does not replace it by
        default (its authority forbids it, or is silent and we keep it), else the first colour."""
        return self.backgrounds[0] if self.edits["replace_background"].apply else KEEP_BACKGROUND

    @property
    def background_colours(self) -> dict[str, RGB]:
        """The allowed backgrounds' colours, by name."""
        return {name: BACKGROUND_COLOURS[name] for name in self.backgrounds}

    def edit(self, operation: str) -> EditPolicy:
        return self.edits[operation]

    def sources(self) -> list[Source]:
        """Every source this spec's numbers come from (rules, pose, file rules)."""
        found: list[Source] = []
        for band in self.rules.bands().values():
            for source in band.sources():
                if source not in found:
                    found.append(source)
        for source in (self.size_source, self.rules.pose_source, self.file_source, self.expression_source,
                       self.covering_source, self.glasses_source):
            if source is not None and source not in found:
                found.append(source)
        return found

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (plain dicts, lists, numbers, strings, booleans and None)."""

        def pair(value: tuple[int, int] | None) -> dict[str, int] | None:
            return None if value is None else {"width": value[0], "height": value[1]}

        return {
            "id": self.id,
            "name": self.name,
            "country": self.country,
            "width_mm": self.width_mm,
            "height_mm": self.height_mm,
            "width_px": self.width_px,
            "height_px": self.height_px,
            "dpi": self.dpi,
            "head_height": {"min": self.head_height[0], "max": self.head_height[1]},
            "eye_line": None if self.eye_line is None else {"min": self.eye_line[0], "max": self.eye_line[1]},
            "backgrounds": list(self.backgrounds),
            "default_background": self.default_background,
            "max_kb": self.max_kb,
            "min_kb": self.min_kb,
            "min_px": pair(self.min_px),
            "max_px": pair(self.max_px),
            "file_source": None if self.file_source is None else self.file_source.to_dict(),
            "size_source": None if self.size_source is None else self.size_source.to_dict(),
            "expression_source": None if self.expression_source is None else self.expression_source.to_dict(),
            "covering_source": self.covering_source.to_dict(),
            "glasses": {"policy": self.glasses, "source": self.glasses_source.to_dict()},
            "source": self.source,
            "rules": self.rules.to_dict(width_mm=self.width_mm, height_mm=self.height_mm),
            "edits": {operation: policy.to_dict() for operation, policy in self.edits.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PhotoSpec:
        """The inverse of to_dict (for tests and for clients that cache the table)."""

        def pair(value: dict[str, int] | None) -> tuple[int, int] | None:
            return None if value is None else (value["width"], value["height"])

        eye = data["eye_line"]
        return cls(
            id=data["id"],
            name=data["name"],
            country=data["country"],
            width_mm=data["width_mm"],
            height_mm=data["height_mm"],
            dpi=data["dpi"],
            width_px=data["width_px"],
            height_px=data["height_px"],
            head_height=(data["head_height"]["min"], data["head_height"]["max"]),
            eye_line=None if eye is None else (eye["min"], eye["max"]),
            backgrounds=tuple(data["backgrounds"]),
            max_kb=data["max_kb"],
            source=data["source"],
            rules=Rules.from_dict(data["rules"]),
            min_px=pair(data["min_px"]),
            max_px=pair(data["max_px"]),
            min_kb=data["min_kb"],
            file_source=None if data["file_source"] is None else Source.from_dict(data["file_source"]),
            size_source=None if data["size_source"] is None else Source.from_dict(data["size_source"]),
            expression_source=None if data["expression_source"] is None else Source.from_dict(data["expression_source"]),
            edits={operation: edit_policy_from_dict(policy) for operation, policy in data["edits"].items()},
            covering_source=Source.from_dict(data["covering_source"]) if "covering_source" in data else NO_COVERING_WORDS,
            glasses=data["glasses"]["policy"] if "glasses" in data else "unstated",
            glasses_source=Source.from_dict(data["glasses"]["source"]) if "glasses" in data else NO_GLASSES_WORDS,
        )


def mm_to_px(mm: float, dpi: int) -> int:
    """Pixels covering `mm` millimetres at `dpi` (rounded to the nearest pixel)."""
    return round(mm / MM_PER_INCH * dpi)


def px_to_mm(px: float, dpi: int) -> float:
    """Millimetres covered by `px` pixels at `dpi` (not rounded)."""
    return px / dpi * MM_PER_INCH


def _normalise_colour_name(text: str) -> str:
    name = re.sub(r"[\s_-]+", "-", text.strip().lower()).strip("-")
    return name.replace("gray", "grey")


def _preview(value: str, limit: int = 32) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def parse_background(value: str) -> RGB | None:
    """An ID photo's background: None for "keep" (the photographed one), else `parse_colour`."""
    if isinstance(value, str) and value.strip().lower() == KEEP_BACKGROUND:
        return None
    return parse_colour(value)


def parse_colour(value: str) -> RGB:
    """An (r, g, b) tuple from a colour name or a hex code.

    Accepts the names in BACKGROUND_COLOURS (any case; '-', '_' or spaces between words;
    "gray" for "grey") and '#rrggbb' or '#rgb'. Anything else raises ValueError.
    """
    if not isinstance(value, str):
        raise ValueError("colour must be a string: a colour name or a hex code like #rrggbb or #rgb")
    text = value.strip()
    if _HEX_RE.fullmatch(text):
        digits = text[1:]
        if len(digits) == 3:
            digits = "".join(ch * 2 for ch in digits)
        return (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))
    name = _normalise_colour_name(text)
    if name in BACKGROUND_COLOURS:
        return BACKGROUND_COLOURS[name]
    shown = "an empty value" if not text else _preview(text)
    raise ValueError(
        f"unknown colour {shown}: use one of {', '.join(BACKGROUND_COLOURS)} or a hex code like #rrggbb or #rgb"
    )


def _positive_size(label: str, value: object) -> float:
    if not (is_number(value) and value > 0):  # type: ignore[operator]
        raise ValueError(f"{label} must be a number greater than 0")
    return float(value)  # type: ignore[arg-type]


def _whole_pixels(label: str, value: object) -> int:
    if isinstance(value, float) and is_number(value) and value.is_integer():
        value = int(value)
    if not (isinstance(value, int) and not isinstance(value, bool)):
        raise ValueError(f"{label} must be a whole number of pixels")
    if value <= 0:
        raise ValueError(f"{label} must be greater than 0")
    return value


def custom_spec(
    *,
    width_mm: float | None = None,
    height_mm: float | None = None,
    dpi: int = 300,
    width_px: int | None = None,
    height_px: int | None = None,
    head_ratio: tuple[float, float] = (0.6, 0.7),
) -> PhotoSpec:
    """A spec for a user-chosen size: either width_mm + height_mm (at `dpi`) or width_px + height_px.

    With millimetres the pixel size is round(mm / 25.4 * dpi); with pixels the print size is
    px / dpi inches. If both are given, both are used as given. Validation: sizes > 0, dpi an
    integer in [72, 1200], at most 4000 px per side, head_ratio (min, max) with
    0.2 < min < max < 0.9. Raises ValueError with a message fit to show a user.
    """
    if isinstance(dpi, float) and is_number(dpi) and dpi.is_integer():
        dpi = int(dpi)
    if not (isinstance(dpi, int) and not isinstance(dpi, bool)) or not MIN_DPI <= dpi <= MAX_DPI:
        raise ValueError(f"dpi must be a whole number between {MIN_DPI} and {MAX_DPI}")

    have_mm = width_mm is not None or height_mm is not None
    have_px = width_px is not None or height_px is not None
    if not have_mm and not have_px:
        raise ValueError("give either width_mm and height_mm (with dpi) or width_px and height_px")
    if have_mm and (width_mm is None or height_mm is None):
        raise ValueError("width_mm and height_mm must be given together")
    if have_px and (width_px is None or height_px is None):
        raise ValueError("width_px and height_px must be given together")

    w_px = h_px = 0
    w_mm = h_mm = 0.0
    if have_px:
        w_px = _whole_pixels("width_px", width_px)
        h_px = _whole_pixels("height_px", height_px)
    if have_mm:
        w_mm = _positive_size("width_mm", width_mm)
        h_mm = _positive_size("height_mm", height_mm)
    if not have_px:
        w_px, h_px = mm_to_px(w_mm, dpi), mm_to_px(h_mm, dpi)
        if w_px < 1 or h_px < 1:
            raise ValueError("the size is under one pixel at this dpi; use larger millimetres or a higher dpi")
    if not have_mm:
        w_mm = round(w_px / dpi * MM_PER_INCH, 2)
        h_mm = round(h_px / dpi * MM_PER_INCH, 2)
    if w_px > MAX_SIDE_PX or h_px > MAX_SIDE_PX:
        raise ValueError(
            f"the photo would be {w_px} x {h_px} px; at most {MAX_SIDE_PX} px per side (lower the size or the dpi)"
        )

    if isinstance(head_ratio, list):
        head_ratio = tuple(head_ratio)  # type: ignore[assignment]
    if not (isinstance(head_ratio, tuple) and len(head_ratio) == 2 and all(is_number(v) for v in head_ratio)):
        raise ValueError("head_ratio must be a pair of numbers (min, max)")
    low, high = float(head_ratio[0]), float(head_ratio[1])
    lo_limit, hi_limit = HEAD_RATIO_LIMITS
    if not lo_limit < low < high < hi_limit:
        raise ValueError(
            f"head_ratio must satisfy {lo_limit} < min < max < {hi_limit} (fractions of the photo height)"
        )

    chosen = Source(
        title=f"{DEFAULT_PREFIX} custom size and head ratio chosen by the user",
        url=PILOTLIGHT_URL,
        quote=f"head_ratio ({low:g}, {high:g}) of the photo height, given with the request",
        kind="none",
    )
    return PhotoSpec(
        id="custom",
        name=f"Custom {w_mm:g} x {h_mm:g} mm",
        country="XX",
        width_mm=w_mm,
        height_mm=h_mm,
        dpi=dpi,
        width_px=w_px,
        height_px=h_px,
        head_height=(low, high),
        eye_line=None,
        backgrounds=tuple(BACKGROUND_COLOURS),
        max_kb=None,
        source="custom size chosen by the user",
        rules=Rules(head_height=Band(low * h_mm, high * h_mm, chosen)),
    )
