"""Photo specifications for passport, visa, ID and résumé photos, kept as data.

Every geometric rule an authority gives is held as data in `PhotoSpec.rules` (a `Rules`), in
millimetres of the print, each bound with its `Source`: the authority and document, its address
and the verbatim words the bound comes from. A rule that lives only in a comment is a defect.

Conventions used by every spec:

* Vertical distances (`head_height`, `eye_line`, `crown_margin`, `chin_margin`) are millimetres
  of the print's height; horizontal ones (`head_width`, `side_margin`, `centre_x`,
  `eye_distance`) are millimetres of its width. `eye_line` is measured up from the BOTTOM edge.
* `PhotoSpec.head_height` and `PhotoSpec.eye_line` are the same bands as fractions of the photo
  height, DERIVED from the millimetre rules (`_spec` computes them, `PhotoSpec` checks them): the
  placement code reads the fractions, the compliance report reads `rules`.
* Where an authority states its rule in pixels or as a share of the image (US DS-160, China's
  online visa photo, CHSI, India's online passport photo), the spec has a nominal print size at
  its dpi whose pixels are exactly the stated ones, and the rule is converted to millimetres of
  that nominal print; the band's `note` says so.
* Where the authority states no rule and the pipeline needs one (a head band for placement, an
  eye band's open end), the band is ours: its `Source.title` starts with "pilotlight default:"
  and its quote gives our reason. Nothing else is invented.
* Pose: the authorities say only "look straight at the camera" (ICAO Doc 9303 and all national
  rules read here); the tolerances we apply are ISO/IEC 19794-5's best-practice values, labelled
  as our default.
* `width_px`/`height_px` always equal round(mm / 25.4 * dpi), so a print and a file share one
  geometry and a print never gets stretched. Where an authority states exact pixels, the dpi is
  picked so its numbers come out exactly (US 600 x 600 at 300 dpi, China ID card 358 x 441 at
  350 dpi, Singapore 400 x 514 at 290 dpi); where it states a window (`min_px`/`max_px`) the size
  falls inside it, and `PhotoSpec` checks that.
* Quotes in another language stay in that language. Where a number could only be read in a
  stored copy of the authority's page made by someone else, the Source title says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BACKGROUND_COLOURS",
    "MAX_DPI",
    "MAX_SIDE_PX",
    "MIN_DPI",
    "SPECS",
    "Band",
    "PhotoSpec",
    "Rules",
    "Source",
    "custom_spec",
    "get_spec",
    "mm_to_px",
    "parse_colour",
]

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

DEFAULT_PREFIX = "pilotlight default:"
# The address of a rule that is ours and has no authority page behind it (trade conventions,
# custom sizes). Every other Source has an http(s) address.
PILOTLIGHT_URL = "pilotlight:app/specs.py"
CROWN_MEANINGS = ("hair", "skull", "unstated")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_band(name: str, band: tuple[float, float]) -> None:
    if not (isinstance(band, tuple) and len(band) == 2 and all(_is_number(v) for v in band)):
        raise ValueError(f"{name} must be a (min, max) pair of numbers")
    low, high = band
    if not 0.0 < low < high < 1.0:
        raise ValueError(f"{name} must satisfy 0 < min < max < 1, got ({low}, {high})")


def _fraction(mm: float | None, of_mm: float) -> float | None:
    return None if mm is None else round(mm / of_mm, 4)


# --- provenance and rules ---------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where a bound comes from.

    `title`: authority and document or page title (and, where we read it in someone else's stored
    copy, whose). `url`: the authority's address, or PILOTLIGHT_URL for a rule with no authority.
    `quote`: the authority's own words the bound comes from, short and verbatim. For a rule that is
    ours, `title` starts with "pilotlight default:" and `quote` gives our reason.
    """

    title: str
    url: str
    quote: str

    def __post_init__(self) -> None:
        for label in ("title", "url", "quote"):
            value = getattr(self, label)
            if not (isinstance(value, str) and value.strip()):
                raise ValueError(f"Source.{label} must be a non-empty string")
        if not (self.url.startswith(("https://", "http://")) or self.url == PILOTLIGHT_URL):
            raise ValueError(f"Source.url must be an http(s) address or {PILOTLIGHT_URL!r}")

    @property
    def is_default(self) -> bool:
        """True when the rule is pilotlight's own (the authority states none)."""
        return self.title.startswith(DEFAULT_PREFIX)

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "url": self.url, "quote": self.quote, "default": self.is_default}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Source:
        return cls(title=data["title"], url=data["url"], quote=data["quote"])


@dataclass(frozen=True)
class Band:
    """A closed interval in millimetres of the print; None on a side means unbounded there.

    `source` backs both ends unless `low_source`/`high_source` name another source for that end
    (an authority's minimum with our default maximum, for example). `note` is our derivation or
    reading of the quote (unit conversions, "70-80 % of 45 mm = 31.5-36 mm"), empty when the quote
    states the numbers as they are.
    """

    low: float | None
    high: float | None
    source: Source
    note: str = ""
    low_source: Source | None = None
    high_source: Source | None = None

    def __post_init__(self) -> None:
        for label in ("low", "high"):
            value = getattr(self, label)
            if value is not None and not (_is_number(value) and value >= 0):
                raise ValueError(f"Band.{label} must be a number >= 0 or None")
        if self.low is None and self.high is None:
            raise ValueError("a Band needs at least one end")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"Band low {self.low} is above high {self.high}")
        for label in ("source", "low_source", "high_source"):
            value = getattr(self, label)
            if label == "source" and not isinstance(value, Source):
                raise ValueError("Band.source must be a Source")
            if label != "source" and value is not None and not isinstance(value, Source):
                raise ValueError(f"Band.{label} must be a Source or None")
        if self.low_source is not None and self.low is None:
            raise ValueError("Band.low_source given for an open low end")
        if self.high_source is not None and self.high is None:
            raise ValueError("Band.high_source given for an open high end")
        if not isinstance(self.note, str):
            raise ValueError("Band.note must be a string")

    @property
    def closed(self) -> bool:
        return self.low is not None and self.high is not None

    def source_of(self, end: str) -> Source:
        """The source of the 'low' or 'high' end."""
        override = self.low_source if end == "low" else self.high_source
        return override if override is not None else self.source

    def sources(self) -> list[Source]:
        """Every source behind a stated end (the main source first)."""
        found = [self.source]
        for extra in (self.low_source, self.high_source):
            if extra is not None and extra not in found:
                found.append(extra)
        return found

    def contains(self, mm: float) -> bool:
        return (self.low is None or mm >= self.low) and (self.high is None or mm <= self.high)

    def to_dict(self, *, of_mm: float, of: str = "height") -> dict[str, Any]:
        """mm values, the same as fractions of `of_mm` (the photo height or width, named by `of`), sources."""
        return {
            "fraction_of": of,
            "low_mm": self.low,
            "high_mm": self.high,
            "low_fraction": _fraction(self.low, of_mm),
            "high_fraction": _fraction(self.high, of_mm),
            "source": self.source.to_dict(),
            "low_source": None if self.low_source is None else self.low_source.to_dict(),
            "high_source": None if self.high_source is None else self.high_source.to_dict(),
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Band:
        def optional(key: str) -> Source | None:
            return None if data.get(key) is None else Source.from_dict(data[key])

        return cls(
            low=data["low_mm"],
            high=data["high_mm"],
            source=Source.from_dict(data["source"]),
            note=data.get("note", ""),
            low_source=optional("low_source"),
            high_source=optional("high_source"),
        )


# ISO/IEC 19794-5 best-practice pose tolerances. The authorities read for this table all say only
# "look straight at the camera"; these numbers are the tolerance we apply, and say so.
ISO_POSE = Source(
    title=(
        f"{DEFAULT_PREFIX} authorities state only a frontal pose; tolerances from ISO/IEC 19794-5 "
        "section 7.2.2 'Pose' (as quoted by the VisionLabs LUNA SDK documentation)"
    ),
    url="https://docs.visionlabs.ai/sdk/v.5.11.0/sdk-embedded/handbookcompilation/parameter-estimation-facility",
    quote=(
        'According to section "7.2.2 Pose" in the standard, the angles should be +/- 5 degrees from '
        "frontal in pitch and yaw, less than +/- 8 degrees from frontal in roll."
    ),
)

VERTICAL_RULES = ("head_height", "eye_line", "crown_margin", "chin_margin")
HORIZONTAL_RULES = ("head_width", "side_margin", "centre_x", "eye_distance")


@dataclass(frozen=True)
class Rules:
    """Every geometric rule the authority gives, in millimetres of the print (photo) size.

    head_height   chin to crown (what "crown" means: see `crown`); always a closed band
    eye_line      eye line (centre of the eyes) above the BOTTOM edge
    crown_margin  top edge to crown
    chin_margin   chin to bottom edge (usually a minimum only)
    head_width    width of the head or face (the quote says which)
    side_margin   each side of the head to the photo's side edge (a minimum)
    centre_x      left edge to the face's vertical centre line
    eye_distance  centre of one eye (pupil) to the other
    crown         "hair": the top of the hair; "skull": the top of the head without hair;
                  "unstated": the authority does not say
    max_yaw_deg / max_pitch_deg / max_roll_deg: the largest head rotation accepted (degrees from
                  frontal), from `pose_source`
    """

    head_height: Band
    eye_line: Band | None = None
    crown_margin: Band | None = None
    chin_margin: Band | None = None
    head_width: Band | None = None
    side_margin: Band | None = None
    centre_x: Band | None = None
    eye_distance: Band | None = None
    crown: str = "unstated"
    max_yaw_deg: float = 5.0
    max_pitch_deg: float = 5.0
    max_roll_deg: float = 8.0
    pose_source: Source = ISO_POSE

    def __post_init__(self) -> None:
        if not isinstance(self.head_height, Band) or not self.head_height.closed:
            raise ValueError("Rules.head_height must be a closed Band")
        if self.head_height.low is not None and self.head_height.low <= 0:
            raise ValueError("Rules.head_height must be above 0 mm")
        for name in VERTICAL_RULES + HORIZONTAL_RULES:
            value = getattr(self, name)
            if value is not None and not isinstance(value, Band):
                raise ValueError(f"Rules.{name} must be a Band or None")
        if self.eye_line is not None and not self.eye_line.closed:
            raise ValueError("Rules.eye_line must be closed (give an open end a labelled default)")
        if self.crown not in CROWN_MEANINGS:
            raise ValueError(f"Rules.crown must be one of {CROWN_MEANINGS}")
        for label in ("max_yaw_deg", "max_pitch_deg", "max_roll_deg"):
            value = getattr(self, label)
            if not (_is_number(value) and 0 < value <= 45):
                raise ValueError(f"Rules.{label} must be a number of degrees in (0, 45]")
        if not isinstance(self.pose_source, Source):
            raise ValueError("Rules.pose_source must be a Source")

    def bands(self) -> dict[str, Band]:
        """The stated bands by name, vertical ones first."""
        out: dict[str, Band] = {}
        for name in VERTICAL_RULES + HORIZONTAL_RULES:
            band = getattr(self, name)
            if band is not None:
                out[name] = band
        return out

    def check_fits(self, *, width_mm: float, height_mm: float, label: str) -> None:
        """Raise ValueError when the rules cannot all hold on a print of this size."""
        for name, band in self.bands().items():
            extent = height_mm if name in VERTICAL_RULES else width_mm
            if band.low is not None and band.low > extent:
                raise ValueError(f"{label}: {name} minimum {band.low} mm exceeds the photo ({extent} mm)")
        least = self.head_height.low or 0.0
        for name in ("crown_margin", "chin_margin"):
            band = getattr(self, name)
            if band is not None and band.low is not None:
                least += band.low
        if least > height_mm + 1e-9:
            raise ValueError(f"{label}: crown margin + head + chin margin minimums exceed the height")
        if self.head_width is not None and self.head_width.low is not None:
            sides = 0.0 if self.side_margin is None or self.side_margin.low is None else 2 * self.side_margin.low
            if self.head_width.low + sides > width_mm + 1e-9:
                raise ValueError(f"{label}: head width + side margins exceed the width")

    def to_dict(self, *, width_mm: float, height_mm: float) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in VERTICAL_RULES + HORIZONTAL_RULES:
            band = getattr(self, name)
            vertical = name in VERTICAL_RULES
            of_mm = height_mm if vertical else width_mm
            out[name] = None if band is None else band.to_dict(of_mm=of_mm, of="height" if vertical else "width")
        out["crown"] = self.crown
        out["pose"] = {
            "max_yaw_deg": self.max_yaw_deg,
            "max_pitch_deg": self.max_pitch_deg,
            "max_roll_deg": self.max_roll_deg,
            "source": self.pose_source.to_dict(),
        }
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rules:
        bands = {
            name: None if data.get(name) is None else Band.from_dict(data[name])
            for name in VERTICAL_RULES + HORIZONTAL_RULES
        }
        pose = data["pose"]
        return cls(
            **bands,  # type: ignore[arg-type]
            crown=data["crown"],
            max_yaw_deg=pose["max_yaw_deg"],
            max_pitch_deg=pose["max_pitch_deg"],
            max_roll_deg=pose["max_roll_deg"],
            pose_source=Source.from_dict(pose["source"]),
        )


# --- the spec ---------------------------------------------------------------------------------


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

    def __post_init__(self) -> None:
        if not (isinstance(self.id, str) and _SLUG_RE.fullmatch(self.id)):
            raise ValueError("spec id must be a lowercase slug such as 'us-passport'")
        if not (isinstance(self.country, str) and (_COUNTRY_RE.fullmatch(self.country))):
            raise ValueError(f"{self.id}: country must be an ISO 3166 alpha-2 code or 'INT'")
        for label in ("width_mm", "height_mm"):
            value = getattr(self, label)
            if not (_is_number(value) and value > 0):
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
        self._check_rules()
        self._check_pixel_window()

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
        return self.backgrounds[0]

    def sources(self) -> list[Source]:
        """Every source this spec's numbers come from (rules, pose, file rules)."""
        found: list[Source] = []
        for band in self.rules.bands().values():
            for source in band.sources():
                if source not in found:
                    found.append(source)
        for source in (self.size_source, self.rules.pose_source, self.file_source):
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
            "source": self.source,
            "rules": self.rules.to_dict(width_mm=self.width_mm, height_mm=self.height_mm),
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
        )


def mm_to_px(mm: float, dpi: int) -> int:
    """Pixels covering `mm` millimetres at `dpi` (rounded to the nearest pixel)."""
    return round(mm / MM_PER_INCH * dpi)


def px_to_mm(px: float, dpi: int) -> float:
    """Millimetres covered by `px` pixels at `dpi` (not rounded)."""
    return px / dpi * MM_PER_INCH


def _spec(
    *,
    id: str,
    name: str,
    country: str,
    width_mm: float,
    height_mm: float,
    dpi: int,
    size_source: Source,
    rules: Rules,
    backgrounds: tuple[str, ...],
    source: str,
    max_kb: int | None = None,
    min_kb: int | None = None,
    min_px: tuple[int, int] | None = None,
    max_px: tuple[int, int] | None = None,
    file_source: Source | None = None,
) -> PhotoSpec:
    """A spec whose pixel size and fraction bands are derived from its millimetres and rules."""
    head = rules.head_height
    eye = rules.eye_line
    return PhotoSpec(
        id=id,
        name=name,
        country=country,
        width_mm=width_mm,
        height_mm=height_mm,
        dpi=dpi,
        width_px=mm_to_px(width_mm, dpi),
        height_px=mm_to_px(height_mm, dpi),
        head_height=_fractions(head, height_mm),
        eye_line=None if eye is None else _fractions(eye, height_mm),
        backgrounds=backgrounds,
        max_kb=max_kb,
        source=source,
        rules=rules,
        min_px=min_px,
        max_px=max_px,
        min_kb=min_kb,
        file_source=file_source,
        size_source=size_source,
    )


def _fractions(band: Band, height_mm: float) -> tuple[float, float]:
    """A closed band's ends as fractions of `height_mm`, rounded to 4 places."""
    if band.low is None or band.high is None:
        raise ValueError("a band given as fractions must be closed")
    return (round(band.low / height_mm, 4), round(band.high / height_mm, 4))


def _default(reason: str, *, url: str = PILOTLIGHT_URL, about: str = "authority states no rule") -> Source:
    """A Source for a rule that is ours: the title says so; `url` is the silent authority's page."""
    return Source(title=f"{DEFAULT_PREFIX} {about}", url=url, quote=reason)


# --- sources ----------------------------------------------------------------------------------
# Addresses of the authorities' pages. Where a page was read in someone else's stored copy (a
# municipality, a news site, visa-photo 0.1.0's verbatim quotes, passport-photo-specs-data
# 1.0.1's record), the Source title says whose.

TWO_INCH_MM = 2 * MM_PER_INCH  # 50.8 mm

US_PASSPORT_URL = "https://travel.state.gov/en/passports/apply/help/photos.html"
US_VISA_URL = "https://travel.state.gov/content/travel/en/us-visas/visa-information-resources/photos.html"
US_DIGITAL_URL = (
    "https://travel.state.gov/content/travel/en/us-visas/visa-information-resources/photos/"
    "digital-image-requirements.html"
)
US_TEMPLATE_URL = (
    "https://travel.state.gov/content/travel/en/us-visas/visa-information-resources/photos/"
    "photo-composition-template.html"
)
EU_GUIDANCE_URL = (
    "https://home-affairs.ec.europa.eu/document/download/5bb16566-c8c2-4afb-b038-530f488cb72a_en"
    "?filename=icao_photograph_guidelines_en.pdf"
)
CH_PASS_URL = "http://www.schweizerpass.admin.ch/pass/de/home/ausweise/inhalt/foto.html"
CN_SHEET_URL = "https://bio.visaforchina.cn/KUL3_EN/upload/20231123/4b89d0c364d44f778f85d6fd76d93475.pdf"
NZ_PHOTOS_URL = (
    "https://www.immigration.govt.nz/process-to-apply/applying-for-a-visa/applying-online/"
    "uploading-documents-and-photos/visa-and-nzeta-photos/"
)
NZ_ERRORS_URL = (
    "https://www.immigration.govt.nz/process-to-apply/applying-for-a-visa/applying-online/"
    "uploading-documents-and-photos/fixing-errors-when-uploading-a-photo/"
)
CA_PASSPORT_URL = "https://www.canada.ca/en/immigration-refugees-citizenship/services/canadian-passports/photos.html"
CA_TRV_URL = (
    "https://www.canada.ca/en/immigration-refugees-citizenship/services/application/application-forms-guides/"
    "temporary-resident-visa-application-photograph-specifications.html"
)
UK_URL = "https://www.gov.uk/photos-for-passports"
DE_URL = "https://www.bundesdruckerei-gmbh.de/files/dokumente/pdf/fotomustertafel-300dpi.pdf"
GA461_COPY_URL = "http://hybridbeedesign.com/news_mini.asp?id=2088"
ICA_URL = "https://www.ica.gov.sg/photo-guidelines"

# ISO/IEC 19794-5's full-frontal eye band, applied where an ICAO-style authority gives none.
# Switzerland is the one authority read here that states the same band in its own words.
ISO_EYES = _default(
    "Doc 9303 and the national rule give no eye line; we apply the ISO/IEC 19794-5 full-frontal band "
    "(eye line 50-70 % of the image height above the bottom edge), which fedpol states for Swiss digital "
    "passport photos: 'Die Augen müssen im Bereich von 50–70 Prozent der Bildhöhe, gemessen vom unteren "
    "Bildrand, liegen.'",
    url=CH_PASS_URL,
    about="authority states no eye line; ISO/IEC 19794-5 full-frontal band (50-70 % of the height) applied",
)
# ICAO's 70-80 % of the height, applied where an authority states no head size at all.
ICAO_HEAD_TEXT = (
    "no head-size number is stated; we apply ICAO's 70-80 % of the photo height, as the EU guidance sheet "
    "puts it: 'your face takes up 70-80% of the photograph'"
)

US_PASSPORT_HEAD = Source(
    title=(
        "U.S. Department of State, travel.state.gov 'Passport Photos' (as quoted by visa-photo 0.1.0, retrieved "
        "2026-09-06)"
    ),
    url=US_PASSPORT_URL,
    quote=(
        "The size of your head in the printed photo must be between 1 -1 3/8 inches (25 - 35 mm) from the "
        "bottom of the chin to the top of the head."
    ),
)
US_PAPER_TEMPLATE = Source(
    title=(
        "U.S. Department of State, 'Photo Composition Template', Paper Photo Head Size Template graphic "
        "(as quoted by visa-photo 0.1.0)"
    ),
    url=US_TEMPLATE_URL,
    quote="2 inch · 2 inch · 1 inch to 1 3/8 inch · 1 1/8 inch to 1 3/8 inch",
)
US_VISA_HEAD = Source(
    title=(
        "U.S. Department of State, travel.state.gov 'Photo Requirements' (visas) (as quoted by visa-photo 0.1.0, "
        "retrieved 2026-09-06)"
    ),
    url=US_VISA_URL,
    quote=(
        "Sized such that the head is between 1 inch and 1 3/8 inches (22 mm and 35 mm) or 50% and 69% of the "
        "image's total height from the bottom of the chin to the top of the head."
    ),
)
US_VISA_EYE = Source(
    title=(
        "U.S. Department of State, 'Photo Composition Template', Digital Image Head Size Template graphic "
        "(as quoted by visa-photo 0.1.0)"
    ),
    url=US_TEMPLATE_URL,
    quote="600 px. · 600 px. · 50-69% · 56-69%",
)
US_DIGITAL_FILE = Source(
    title="U.S. Department of State, 'Digital Image Requirements' (as quoted by visa-photo 0.1.0)",
    url=US_DIGITAL_URL,
    quote=(
        "Minimum acceptable dimensions are 600 x 600 pixels. Maximum acceptable dimensions are 1200 x 1200 "
        "pixels. ... The image must be less than or equal to 240 kB (kilobytes)."
    ),
)
US_DV_FILE = Source(
    title=(
        "U.S. Department of State, Diversity Visa digital photo (as recorded by passport-photo-specs-data "
        "1.0.1, verification 'official_text_read', checked 2026-10-12)"
    ),
    url=US_VISA_URL,
    quote="width_px 600, height_px 600; file_size <=240 kB; digital_format JPEG, square",
)
EU_SHEET = Source(
    title="European Commission, 'ICAO photograph guidelines' sheet (as quoted by visa-photo 0.1.0)",
    url=EU_GUIDANCE_URL,
    quote="close up of your head and top of your shoulders so that your face takes up 70-80% of the photograph",
)
DE_MISSION_RIGA = Source(
    title="Embassy of Germany in Riga, Schengen visa photo requirements (Russian-language page)",
    url="https://riga.diplo.de/lv-lv/service/05-visaeinreise/2718466-2718466",
    quote=(
        "Фотография должна быть размером 45 мм x 35 мм. ... Высота изображения лица должна занимать от 70 до "
        "80% фотографии (высота изображения между 32 и 36 мм)."
    ),
)
UK_HEAD = Source(
    title=(
        "HM Passport Office, gov.uk 'Photos for passports' (wording as reproduced in stored copies of the "
        "page; the gov.uk page itself is not in our store)"
    ),
    url=UK_URL,
    quote="The image of you - from the crown of your head to your chin - must be between 29mm and 34mm high.",
)
UK_FILE = Source(
    title="HM Passport Office, gov.uk digital photo rules (as reproduced in a stored third-party article)",
    url=UK_URL,
    quote=(
        "Digital pictures must be at least 600 pixels wide and 750 pixels tall and have a file size between "
        "50KB and 10MB."
    ),
)
CA_PASSPORT_HEAD = Source(
    title="IRCC, canada.ca 'Passport photos' (Canadian passports) (wording as reproduced in a stored third-party copy)",
    url=CA_PASSPORT_URL,
    quote=(
        "50 mm wide X 70 mm high (2 inches wide X 2 3/4 inches long) and sized so the height of the face "
        "measures between 31 mm (1 1/4 inches) and 36 mm (1 7/16 inches) from chin to crown of head (natural "
        "top of head)."
    ),
)
CA_TRV_HEAD = Source(
    title=(
        "IRCC, canada.ca 'Temporary Resident Visa application photograph specifications' (wording as "
        "reproduced in stored third-party copies)"
    ),
    url=CA_TRV_URL,
    quote="Size of the head, from chin to crown, must be between 31mm and 36mm.",
)
CA_TRV_FILE = Source(
    title="IRCC, digital photo specifications for online applications (as reproduced in a stored third-party copy)",
    url=CA_TRV_URL,
    quote=(
        "Image size: at least 420 x 540 pixels. ... File size: approximately 240 kB, no more than 4 MB. ... "
        "The final frame size of the photo must be at least 35mm x 45mm."
    ),
)
AU_HEAD = Source(
    title=(
        "Australian Passport Office, 'Guidelines for the photographic industry and camera operators' "
        "(passports.gov.au; stored copy dated 9 December 2010)"
    ),
    url="https://www.passports.gov.au/Web/Requirements/PhotographGuidelines.aspx",
    quote=(
        "show a close up of the applicant’s head and the top of the shoulders such that the vertical size of "
        "the head (as measured from the bottom of the chin to the crown of the head) is between 32 and 36 mm"
    ),
)
NZ_PASSPORT_FILE = Source(
    title="NZ Department of Internal Affairs, passports.govt.nz 'Electronic photo standards' (technical requirements)",
    url="https://www.passports.govt.nz/Electronic-photo-standards",
    quote=(
        "File size: Greater than 500kb and less than 10MB · Dimensions: Minimum 900 pixels wide x 1200 pixels "
        "high -- maximum 4500 pixels wide x 6000 pixels high · Aspect Ratio: 4:3 (Width:Height ratio)"
    ),
)
NZ_VISA_HEAD = Source(
    title="Immigration New Zealand, 'Visa and NZeTA photos' (as quoted by visa-photo 0.1.0, retrieved 2026-09-06)",
    url=NZ_PHOTOS_URL,
    quote="your face covers between 70% and 80% of the image and is in the middle of the frame",
)
NZ_VISA_FILE = Source(
    title="Immigration New Zealand, upload-error and requirements pages (as quoted by visa-photo 0.1.0)",
    url=NZ_ERRORS_URL,
    quote=(
        "Your photo must be: between 900 x 1200 and 2250 x 3000 pixels; between 500 KB and 3 MB, and; in "
        "portrait format. | Your photo must be: between 512 KB and 3.14 MB; taken in portrait mode with 3:4 "
        "aspect ratio"
    ),
)
DE_HEAD = Source(
    title="BMI / Bundesdruckerei 'Fotomustertafel' (text as reproduced in a stored copy)",
    url=DE_URL,
    quote=(
        "Die Gesichtshöhe muss 70 - 80 % des Fotos einnehmen. Dies entspricht einer Höhe von 32 - 36 mm von "
        "der Kinnspitze bis zum oberen Kopfende. Dabei ist das obere Kopfende unter Vernachlässigung der "
        "Frisur anzunehmen."
    ),
)
FR_HEAD = Source(
    title=(
        "service-public.fr F10619 'Quelle photo fournir pour un titre d'identité (passeport, carte "
        "d'identité...) ?' (vérifié le 22/08/2022; as reproduced on a municipal site)"
    ),
    url="https://www.service-public.gouv.fr/particuliers/vosdroits/F10619",
    quote=(
        "Taille du visage : entre 3,2 et 3,6 cm (soit 70 à 80% de la photo), du bas du menton au sommet du "
        "crâne (hors cheveux) ... Le fond blanc est interdit."
    ),
)
JP_MOFA = Source(
    title="Noboribetsu City (Hokkaido) passport page, reproducing MOFA Japan's passport photo standard (旅券用提出写真の規格)",
    url="https://cms.city.noboribetsu.lg.jp/docs/2017091400051",
    quote=(
        "縦:45mm 横:35mm 上余白:2mmから6mmまで 下余白:5mmから9mm(あごから下まで) 顔の寸法:32mmから36mmまで"
        "(頭頂からあごまで) 顔の中心から写真の両端まで:15mmから19mmまで"
    ),
)
KR_MOFA = Source(
    title="Consulate General of the Republic of Korea in Yokohama, 'パスポート写真規格のご案内' (2022.10 revision)",
    url="https://overseas.mofa.go.kr/jp-yokohama-ja/brd/m_922/view.do?seq=761533&page=1",
    quote=(
        "パスポート写真の大きさは横3.5cm×縦4.5cm、頭の長さは頭頂部(髪の毛を除く頭の最上部)からあごまで"
        "3.2cm~3.6cm、背景は均一でインクの跡がない白色"
    ),
)
SG_FILE = Source(
    title="ICA Singapore 'Photo guidelines' (as recorded by passport-photo-specs-data 1.0.1, checked 2026-10-12)",
    url=ICA_URL,
    quote="width_px 400, height_px 514; file_size <=8 MB; digital_format jpg, jpeg, heic, heif, png",
)
IN_PASSPORT_HEAD = Source(
    title="Embassy of India, Copenhagen, 'Photo Specifications For Passport'",
    url="https://www.indianembassycopenhagen.gov.in/page/photo-specifications-for-passport/",
    quote=(
        "The photograph should be in color and of the size of 2inch x 2inch OR. 5cm x 5cm OR 50mm x 50mm. ... "
        "Center head with in frame and the face should make 70-80% of the photograph."
    ),
)
IN_EVISA_URL = "https://indianvisaonline.gov.in/visa/"
IN_EVISA_HEAD = Source(
    title=(
        "Government of India, e-Visa photo specifications (indianvisaonline.gov.in; wording as reproduced in a stored "
        "third-party copy)"
    ),
    url=IN_EVISA_URL,
    quote=(
        "Make sure that photo presents full head from top of hair to bottom of chin. Head should measure 1 "
        "inch to 1-3/8 inches (25mm to 35mm)."
    ),
)
IN_EVISA_EYE = Source(
    title=IN_EVISA_HEAD.title,
    url=IN_EVISA_URL,
    quote="Make sure eye height is between 1-1/8 inches to 1-3",
)
IN_EVISA_FILE = Source(
    title=IN_EVISA_HEAD.title,
    url=IN_EVISA_URL,
    quote=(
        "Size – Minimum 10 KB – Maximum 300 KB • The height and width of the Photo must be equal. – The "
        "minimum dimensions are 350 pixels (width) x 350 pixels (height). – The maximum dimensions are 1000 "
        "pixels (width) x 1000 pixels (height)."
    ),
)
IN_ONLINE = Source(
    title=(
        "MEA India / Passport Seva, 'Guidelines for ICAO Compliant Photographs for Passport Applications' "
        "(wording as reported, in Malayalam, by a stored news copy; the figures agree with "
        "passport-photo-specs-data 1.0.1)"
    ),
    url=(
        "https://mportal.passportindia.gov.in/pdf/"
        "Guidelines_for_ICAO_Compliant_Photographs_for_Passport_Applications.pdf"
    ),
    quote=(
        "ഫോട്ടോയുടെ 80-85% ഭാഗവും മുഖം ഉൾക്കൊള്ളുന്ന തരത്തിൽ തലയുടെയും തോളുകളുടെയും ക്ലോസ് അപ്പ് ആയിരിക്കണം. "
        "630*810 പിക്സൽ അളവിൽ കളർ ഫോട്ടോ ആയിരിക്കണം. ഫോട്ടോയുടെ പശ്ചാത്തലം വെള്ളയായിരിക്കണം."
    ),
)
CN_CONSULAR = Source(
    title=(
        "PRC consular service, passport and travel-document photo FAQ for applicants abroad (as reproduced on "
        "a stored forum copy)"
    ),
    url="https://bbs.sgcn.org/thread-16277781-3-1.html",
    quote=(
        "照片尺寸:宽33mm,高48mm,其中头部宽度在15mm至22mm之间,头部高度(从下巴至头顶)在28mm至33mm之间,头顶至相片"
        "上边距离在3mm至5mm之间,人脸下颚以下到图像下边沿高度不小于7mm。"
    ),
)
CN_CONSULAR_FILE = Source(
    title=CN_CONSULAR.title,
    url=CN_CONSULAR.url,
    quote="数字照片文件须为JPEG格式,文件大小在30K到80K字节之间。",
)
CN_VISA_HEAD = Source(
    title=(
        "PRC visa photo requirements sheet (Chinese Visa Application Service Center; as quoted by visa-photo 0.1.0, "
        "retrieved 2026-09-04)"
    ),
    url=CN_SHEET_URL,
    quote=(
        "the head height, measured from the base of the chin to the crown of the head, should be between 28 mm and 33 "
        "mm."
    ),
)
CN_VISA_WIDTH = Source(
    title=CN_VISA_HEAD.title, url=CN_SHEET_URL, quote="The head width should be between 15 mm and 22 mm"
)
CN_VISA_CROWN = Source(
    title=CN_VISA_HEAD.title,
    url=CN_SHEET_URL,
    quote="The space between the crown and the upper edge of the photo should be between 3 mm and 5 mm.",
)
CN_VISA_CHIN = Source(
    title=CN_VISA_HEAD.title,
    url=CN_SHEET_URL,
    quote="The space between the chin and the bottom edge of the photo should be >= 7 mm.",
)
CN_ONLINE_SIZE = Source(
    title=CN_VISA_HEAD.title,
    url=CN_SHEET_URL,
    quote=(
        "The digital photo should be between 354 pixels (width) x 472 pixels (height) and 420 pixels (width) x "
        "560 pixels (height). ... Image Compression: JPEG and the image file size: 40 KB - 120 KB."
    ),
)
CN_ONLINE_WIDTH = Source(
    title=CN_VISA_HEAD.title,
    url=CN_SHEET_URL,
    quote=(
        "With the digital photo of 354 pixels (width) x 472 pixels (height) as an example, the head should be "
        "horizontally centered in the image with the face width at 205 pixels +/- 14 pixels."
    ),
)
CN_ONLINE_CROWN = Source(
    title=CN_VISA_HEAD.title,
    url=CN_SHEET_URL,
    quote="The space from the upper edge of the image to the crown of the head should be 10 - 70 pixels.",
)
CN_ONLINE_EYE = Source(
    title=CN_VISA_HEAD.title,
    url=CN_SHEET_URL,
    quote=(
        "The vertical distance from the bottom edge of the image to the horizontal line through the centre of "
        "the eyes should be > 256 pixels."
    ),
)
CN_ONLINE_EYES_APART = Source(
    title=CN_VISA_HEAD.title, url=CN_SHEET_URL, quote="The inter-eye distance should be > 60 pixels."
)
GA461 = Source(
    title="MPS China, GA 461-2004 '居民身份证制证用数字相片技术要求' (as reproduced in a stored copy)",
    url=GA461_COPY_URL,
    quote=(
        "照片規格:358像素(寬)×441像素(高),分辨率350dpi ... 人像在相片矩形框內水平居中,臉部寬207像素±14像素,頭頂發跡距"
        "相片上邊沿7像素~21像素,眼睛所在位置距相片下邊沿的距離不小於207像素"
    ),
)
CHSI = Source(
    title="CHSI (学信网) graduate image collection requirements (as reproduced in a stored news copy)",
    url="https://m.tftnews.com/news2960762",
    quote="像素尺寸為480px寬、640px高,300dpi分辨率; 藍色背景免冠證件照; JPG格式,文件不小於30KB",
)
HK_HEAD = Source(
    title=(
        "Immigration Department, HKSAR, 'Photo Specification for Travel Documents' (immd.gov.hk; wording as "
        "reproduced in stored third-party copies)"
    ),
    url="https://www.immd.gov.hk/eng/residents/immigration/traveldoc/photorequirements.html",
    quote=(
        "The size of the photo must be 40mm (width) and 50mm (height). The size of the person in the photo "
        "should be 32mm to 36mm from the chin to the top of the head, and appropriate space should be reserved "
        "on the top of the head."
    ),
)
TW_HEAD = Source(
    title="Bureau of Consular Affairs, MOFA (Taiwan), 'Passport Photos' (Guidelines for e-Passport Photographs)",
    url="https://www.boca.gov.tw/cp-140-467-29b1d-2.html",
    quote=(
        "The size of the photographs must be 45 mm by 35 mm ... The chin to crown (crown would be the top of "
        "the head if there were no hair) must be between 32 mm and 36 mm"
    ),
)
PL_HEAD = Source(
    title="Consulate General of the Republic of Poland in Guangzhou, 'Fotografia' (passport photo, ICAO criteria)",
    url="https://kanton.msz.gov.pl/pl/informacje/paszporty/fotografia/fotografia",
    quote=(
        "szerokość 35mm / wysokość 45mm; Wysokość głowy musi zajmować 70-80% zdjęcia tj. 31-36mm; Wysokość "
        "twarzy nie może być mniejsza niż 31mm. Oczy powinny znajdować się na wysokości 20-30mm od dolnej "
        "krawędzi zdjęcia"
    ),
)
AT_URL = "https://www.bmi.gv.at/607/Passbild_Kriterien.aspx"
AT_HEAD = Source(
    title="Bundesministerium für Inneres (Austria), 'Passbild-Kriterien'",
    url=AT_URL,
    quote=(
        "Das Foto muss 35 mm breit und 45 mm hoch sein. Der Kopf (von der Kinnspitze bis zum Scheitel) soll "
        "ca. 2/3 des Bildes einnehmen, darf aber nicht höher als 36 mm sein."
    ),
)
AT_EYES = Source(
    title=AT_HEAD.title,
    url=AT_URL,
    quote=(
        "Der Augenabstand (von der Mitte des linken Auges zur Mitte des rechten Auges) beträgt mindestens 8 mm "
        "(optimal sind 10 mm)."
    ),
)
BE_HEAD = Source(
    title="Municipality of Steenokkerzeel (Belgium), 'Pasfoto normen' (identity card, kids-ID, passport)",
    url="https://www.steenokkerzeel.be/pasfoto-normen",
    quote=(
        "Het formaat van de pasfoto is 35 mm x 45 mm. - De lengte van het aangezicht (van kin tot kruin): "
        "tussen 31 en 36 mm. ... De achtergrond moet wit, egaal en zonder schaduw zijn."
    ),
)
NL_HEAD = Source(
    title=(
        "RvIG 'Fotomatrix model 2007' acceptance criteria (as reproduced in stored copies; RvIG has since "
        "published Fotomatrix 2020, not in our store)"
    ),
    url="https://www.rvig.nl/documenten/richtlijnen/2015/10/28/brochure-fotomatrix",
    quote=(
        "Formaat pasfoto 35 mm x 45 mm (bxh). Breedte: van ooraanzet tot ooraanzet minimaal 16 mm en maximaal "
        "20 mm. Lengte vanaf 11 jaar: van kin tot kruin minimaal 26 mm en maximaal 30 mm."
    ),
)
IT_HEAD = Source(
    title="Embassy of Italy in Tallinn, 'Passports and identity cards' (photo per ICAO)",
    url=(
        "https://ambtallinn.esteri.it/en/servizi-consolari-e-visti/servizi-per-il-cittadino-italiano/"
        "passaporti-e-carte-didentita/"
    ),
    quote=(
        "The photo must have a white background and uniform light; ... The face must cover 70-80% of the photo "
        "from the base of the chin to the forehead; ... Size: 35x45mm;"
    ),
)
CH_HEAD = Source(
    title=(
        "fedpol, 'Fotomustertafel' (Kriterien für die Annahme von Fotos für Pässe und Identitätskarten), linked "
        "from schweizerpass.admin.ch; figure labels as transcribed in a stored copy"
    ),
    url=CH_PASS_URL,
    quote="5 mm · 34 mm · 29 mm · 45 mm · 35 mm",
)
ES_DNI = Source(
    title=(
        "Ministerio del Interior (Spain), DNI photo requirement (wording of Real Decreto 1553/2005, art. 5, as "
        "reproduced in a stored news copy)"
    ),
    url=(
        "https://www.cope.es/emisoras/andalucia/sevilla-provincia/sevilla/noticias/"
        "los-motivos-por-los-que-pueden-rechazar-una-foto-renovar-dni-20220330_1999046"
    ),
    quote=(
        "Debe ser una fotografía reciente en color del rostro del solicitante, tamaño 32x26 milímetros, con "
        "fondo uniforme blanco y liso, tomada de frente con la cabeza totalmente descubierta"
    ),
)
SA_EVISA_URL = "https://visa.visitsaudi.com/Home/PhotoSpecifications"
SA_EVISA = Source(
    title=(
        "Saudi tourist eVisa 'Photo Specifications' (as recorded by passport-photo-specs-data 1.0.1, "
        "verification 'official_text_read', checked 2026-10-12; the page itself is not in our store)"
    ),
    url=SA_EVISA_URL,
    quote="width_px 200, height_px 200; head_height_pct 70-80 (face); background white, no pattern; file_size 5-100 KB",
)
BR_EVISA_URL = "https://www.gov.br/mre/pt-br/embaixada-viena/vistos/e-visa"

US_PASSPORT_SIZE = Source(
    title=US_PASSPORT_HEAD.title,
    url=US_PASSPORT_URL,
    quote="The correct printed size of a passport photo is 2 x 2 inches (51 x 51 mm).",
)
US_DIGITAL_SQUARE = Source(
    title=US_DIGITAL_FILE.title,
    url=US_DIGITAL_URL,
    quote=(
        "The image dimensions must be in a square aspect ratio (the height must be equal to the width). "
        "Minimum acceptable dimensions are 600 x 600 pixels."
    ),
)
ICAO_SIZE = Source(
    title="ICAO Doc 9303 Part 3 (8th edition), 3.9.1.2 (as quoted by visa-photo 0.1.0)",
    url="https://www.icao.int/sites/default/files/publications/DocSeries/9303_p3_cons_en.pdf",
    quote="Submitted portraits should be 45.0 mm x 35.0 mm (1.77 in x 1.38 in) in dimension.",
)
UK_SIZE = Source(title=UK_HEAD.title, url=UK_URL, quote="measure 45 millimetres (mm) high by 35mm wide")
AU_SIZE = Source(
    title=AU_HEAD.title,
    url=AU_HEAD.url,
    quote="be 45-50 mm in height and 35-40 mm in width (as per Australian Passport Photo Guide 2008)",
)
DE_SIZE = Source(
    title=(
        "German passport photo rule (wording as given on a stored photographer's page; the Passverordnung itself "
        "is not in our store)"
    ),
    url="https://www.passbild-pro.de/anleitung/passbildvorschriften",
    quote="Das Lichtbild muss die Größe 45mm x 35mm im Hochformat und ohne Rand haben.",
)
FR_SIZE = Source(title=FR_HEAD.title, url=FR_HEAD.url, quote="Largeur : 3,5 cm · Hauteur : 4,5 cm")
CN_HK_COMMISSIONER_URL = "http://www.fmcoprc.gov.hk/eng/fwxx/wgrqz/t1418248.htm"
CN_VISA_SIZE = Source(
    title=(
        "Office of the Commissioner of the Ministry of Foreign Affairs of the PRC in the HKSAR, 'Photo of visa "
        "application must satisfy requirements' (from 15 December 2016)"
    ),
    url=CN_HK_COMMISSIONER_URL,
    quote="Photo size: 48mmx33mm, width of head: 15mm to 22mm, head eight of head: 20mm to 33mm.",
)
CN_VISA_POSE = Source(
    title=(
        CN_VISA_SIZE.title + "; 'left or right tilt' read as yaw (turn), and the roll limit is pilotlight's "
        "ISO/IEC 19794-5 default (8 degrees), which meets either reading"
    ),
    url=CN_HK_COMMISSIONER_URL,
    quote="Head position: ≤20°left or right tilt, and ≤25°up or down tilt.",
)
BR_EVISA = Source(
    title=(
        "Embassy of Brazil in Vienna, 'e-Visa' (gov.br/mre; as recorded by passport-photo-specs-data 1.0.1, "
        "verification 'official_text_read', checked 2026-10-12)"
    ),
    url=BR_EVISA_URL,
    quote="width_mm 51, height_mm 51; background white; digital upload plus printed copy (both mandatory)",
)
TRADE_SIZES = _default(
    "Chinese 一寸 photos are 25 x 35 mm and 二寸 photos 35 x 49 mm (大二寸 35 x 53 mm also circulates) by trade "
    "convention; CV photos commonly use the 35 x 45 mm passport size.",
    about="no authority (trade convention)",
)

# --- the table --------------------------------------------------------------------------------
# The 25 countries whose citizens travel most: the list named in issue 14 (which follows the
# UNWTO ranking of international tourism expenditure; not re-checked here). Covered below:
# China, US, Germany, UK, France, Italy, Canada, South Korea, Japan, India, Spain (DNI),
# Netherlands, Australia, Brazil (visa), Saudi Arabia (eVisa), Switzerland, Belgium, Poland,
# Austria, Hong Kong, Taiwan, Singapore. Not covered: Mexico's SRE takes the passport photo at the
# appointment (since 2018, as Mexican news pages in our store report), so no submitted photo has
# rules to meet; Sweden's passport photo is taken at the police office as we understand it (not
# checked against a stored page); Russia's photo rules could not be read in a stored copy of the
# MVD text with its address (only unattributed copies). No spec rather than a guess. Mexican and
# Swedish travellers to Schengen or the US use those specs.

_SPEC_LIST: tuple[PhotoSpec, ...] = (
    # United States passport: 2 x 2 in print. Inches govern (the page's "25 - 35 mm" rounds
    # 25.4-34.925). The eye band exists only as a label on the visa-side paper template graphic;
    # the passport pages state no eye rule, so applying it here is our reading.
    _spec(
        id="us-passport",
        name="US passport",
        country="US",
        width_mm=TWO_INCH_MM,
        height_mm=TWO_INCH_MM,
        dpi=300,
        size_source=US_PASSPORT_SIZE,
        rules=Rules(
            head_height=Band(
                1 * MM_PER_INCH,
                1.375 * MM_PER_INCH,
                US_PASSPORT_HEAD,
                note="1 in = 25.4 mm and 1 3/8 in = 34.925 mm are applied; '25 - 35 mm' is the page's rounding.",
            ),
            eye_line=Band(
                1.125 * MM_PER_INCH,
                1.375 * MM_PER_INCH,
                US_PAPER_TEMPLATE,
                note=(
                    "1 1/8 in = 28.575 mm to 1 3/8 in = 34.925 mm above the bottom edge: a label on the visa-side "
                    "paper template, applied to the passport photo by our reading (the passport pages give none)."
                ),
            ),
        ),
        backgrounds=("white", "off-white"),
        source="U.S. Dept. of State, travel.state.gov 'Passport Photos' / Photo Composition Template",
    ),
    # United States visa (DS-160 digital image; 2 x 2 in print): the rules are stated as shares of
    # the image height; millimetres are of the 2 x 2 in print. The page's "22 mm" contradicts its
    # own "1 inch" and is not applied (visa-photo 0.1.0 records the same).
    _spec(
        id="us-visa",
        name="US visa",
        country="US",
        width_mm=TWO_INCH_MM,
        height_mm=TWO_INCH_MM,
        dpi=300,
        size_source=US_DIGITAL_SQUARE,
        rules=Rules(
            head_height=Band(
                0.50 * TWO_INCH_MM,
                0.69 * TWO_INCH_MM,
                US_VISA_HEAD,
                note=(
                    "50-69 % of the image height, as mm of the 2 x 2 in (50.8 mm) print; the page's '22 mm' is not "
                    "applied."
                ),
            ),
            eye_line=Band(
                0.56 * TWO_INCH_MM,
                0.69 * TWO_INCH_MM,
                US_VISA_EYE,
                note="56-69 % of the height from the bottom edge to the eye line (graphic label), as mm of the print.",
            ),
            crown="hair",
        ),
        backgrounds=("white", "off-white"),
        max_kb=240,
        min_px=(600, 600),
        max_px=(1200, 1200),
        file_source=US_DIGITAL_FILE,
        source="U.S. Dept. of State, travel.state.gov 'Photo Requirements' (visas) / DS-160 digital image requirements",
    ),
    # ICAO: Doc 9303 Part 3 gives the 45 x 35 mm portrait and a face of 70-80 % of the height
    # (31.5-36 mm). We keep 32-36 mm, the figure the German and French rules print for the same
    # 70-80 %, which lies inside it. Doc 9303 gives no eye line: ISO/IEC 19794-5's band (ours).
    _spec(
        id="icao",
        name="ICAO standard (35 x 45 mm)",
        country="INT",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=ICAO_SIZE,
        rules=Rules(
            head_height=Band(
                32,
                36,
                EU_SHEET,
                note="70-80 % of 45 mm is 31.5-36 mm; 32-36 mm (as BMI and ANTS print it) is applied, inside that.",
            ),
            eye_line=Band(0.50 * 45, 0.70 * 45, ISO_EYES, note="50-70 % of 45 mm."),
        ),
        backgrounds=("white", "light-grey", "off-white", "light-blue"),
        source="ICAO Doc 9303 photograph guidelines; eye line from ISO/IEC 19794-5 full frontal",
    ),
    # Schengen visa: the EU Visa Code (Reg. 810/2009 Art. 10(3)(c)) binds photos to ICAO; the
    # member states' missions print 35 x 45 mm with 32-36 mm. Eye line: ISO/IEC 19794-5 (ours).
    _spec(
        id="schengen-visa",
        name="Schengen visa",
        country="EU",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=DE_MISSION_RIGA,
        rules=Rules(
            head_height=Band(32, 36, DE_MISSION_RIGA),
            eye_line=Band(0.50 * 45, 0.70 * 45, ISO_EYES, note="50-70 % of 45 mm."),
        ),
        backgrounds=("white", "light-grey", "off-white"),
        source="EU Visa Code, Reg. (EC) 810/2009 Art. 10(3)(c) (ICAO Doc 9303 photo standard); German mission wording",
    ),
    # United Kingdom passport, printed photo: 45 x 35 mm, crown to chin 29-34 mm; no eye rule.
    _spec(
        id="uk-passport",
        name="UK passport",
        country="GB",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=UK_SIZE,
        rules=Rules(head_height=Band(29, 34, UK_HEAD)),
        backgrounds=("light-grey", "cream", "off-white"),
        max_kb=10 * 1024,
        file_source=UK_FILE,
        source="HM Passport Office, gov.uk 'Photos for passports'",
    ),
    # Canadian passport: 50 x 70 mm, face 31-36 mm to the natural top of the head; no eye rule.
    _spec(
        id="ca-passport",
        name="Canadian passport",
        country="CA",
        width_mm=50,
        height_mm=70,
        dpi=600,
        size_source=CA_PASSPORT_HEAD,
        rules=Rules(head_height=Band(31, 36, CA_PASSPORT_HEAD), crown="skull"),
        backgrounds=("white", "off-white", "light-grey"),
        source="IRCC, canada.ca 'Passport photos' (Canadian passports)",
    ),
    # Australian passport: 35-40 x 45-50 mm (35 x 45 used), head 32-36 mm. The 2008 APO guide
    # defined the crown as the top of the head without hair; the 2010 text quoted does not say.
    _spec(
        id="au-passport",
        name="Australian passport",
        country="AU",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=AU_SIZE,
        rules=Rules(head_height=Band(32, 36, AU_HEAD, note="The photo may be 35-40 x 45-50 mm; 35 x 45 mm is used.")),
        backgrounds=("white", "light-grey"),
        source="Australian Passport Office, passports.gov.au photo guidelines",
    ),
    # New Zealand passport, online photo (the way DIA takes most applications): 4:3 portrait,
    # 900 x 1200 to 4500 x 6000 px, 500 KB - 10 MB. 1200 x 1600 px at 800 dpi (38.1 x 50.8 mm
    # nominal). passport-photo-specs-data 1.0.1 records 250 KB - 5 MB for the same page; the stored
    # DIA page says 500 KB - 10 MB, which we use. Paper 35 x 45 mm prints are not modelled.
    _spec(
        id="nz-passport",
        name="New Zealand passport (online photo)",
        country="NZ",
        width_mm=1.5 * MM_PER_INCH,
        height_mm=2 * MM_PER_INCH,
        dpi=800,
        size_source=NZ_PASSPORT_FILE,
        rules=Rules(
            head_height=Band(
                0.70 * 2 * MM_PER_INCH,
                0.80 * 2 * MM_PER_INCH,
                _default(
                    "DIA's stored pages give the head size only in a framing figure (values A-D) we could not read; "
                    "we apply the 70-80 % Immigration New Zealand states for visa photos ('your face covers between "
                    "70% and 80% of the image').",
                    url="https://www.passports.govt.nz/Passport-photos---adults",
                    about="authority gives no readable head-size number",
                ),
                note="70-80 % of the 50.8 mm nominal height.",
            )
        ),
        backgrounds=("light-grey", "off-white", "light-blue"),
        min_kb=500,
        max_kb=10 * 1024,
        min_px=(900, 1200),
        max_px=(4500, 6000),
        file_source=NZ_PASSPORT_FILE,
        source="NZ Dept. of Internal Affairs, passports.govt.nz 'Electronic photo standards'",
    ),
    # German passport: 35 x 45 mm, face 32-36 mm from chin tip to the top of the head ignoring the
    # hair (the same text says photos are refused only under 27 or over 40 mm). No eye band in the
    # text read; the Schablone marks an eye zone we could not read: ISO/IEC 19794-5 (ours).
    _spec(
        id="de-passport",
        name="German passport / ID card (biometric)",
        country="DE",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=DE_SIZE,
        rules=Rules(
            head_height=Band(
                32,
                36,
                DE_HEAD,
                note=(
                    "The same text sets a looser refusal threshold: photos are refused only 'wenn die Gesichtshöhe "
                    "27 mm unterschreitet oder 40 mm überschreitet'; 32-36 mm is the rule applied."
                ),
            ),
            eye_line=Band(0.50 * 45, 0.70 * 45, ISO_EYES, note="50-70 % of 45 mm."),
            crown="skull",
        ),
        backgrounds=("light-grey", "white", "light-blue"),
        source="BMI / Bundesdruckerei 'Fotomustertafel' and 'Passbild-Schablone'",
    ),
    # French passport and identity card: 35 x 45 mm, face 32-36 mm to the top of the skull (hair
    # excluded); white background forbidden. No eye rule.
    _spec(
        id="fr-passport",
        name="French passport / ID card",
        country="FR",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=FR_SIZE,
        rules=Rules(head_height=Band(32, 36, FR_HEAD), crown="skull"),
        backgrounds=("light-grey", "light-blue"),
        source="ANTS / service-public.fr F10619 'Quelle photo fournir pour un titre d'identité ?'",
    ),
    # Japanese passport (MOFA): 45 x 35 mm; head 32-36 mm; 2-6 mm above the head; 5-9 mm from the
    # chin to the bottom edge; face centre 15-19 mm from each side edge. No eye line.
    _spec(
        id="jp-passport",
        name="Japanese passport",
        country="JP",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=JP_MOFA,
        rules=Rules(
            head_height=Band(32, 36, JP_MOFA),
            crown_margin=Band(2, 6, JP_MOFA),
            chin_margin=Band(5, 9, JP_MOFA),
            centre_x=Band(
                15,
                19,
                JP_MOFA,
                note=(
                    "Measured from the face centre to each side edge; on 35 mm both hold when the centre is 16-19 mm "
                    "from the left edge."
                ),
            ),
        ),
        backgrounds=("white", "light-grey", "light-blue"),
        source="MOFA Japan, passport photo standard (旅券用提出写真の規格)",
    ),
    # South Korean passport: 3.5 x 4.5 cm; head 3.2-3.6 cm from the top of the head EXCLUDING hair
    # to the chin; white background. No eye line.
    _spec(
        id="kr-passport",
        name="South Korean passport",
        country="KR",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=KR_MOFA,
        rules=Rules(head_height=Band(32, 36, KR_MOFA), crown="skull"),
        backgrounds=("white",),
        source="MOFA Korea, passport photo standard (2022.10)",
    ),
    # Singapore passport: 35 x 45 mm print; digital 400 x 514 px (exactly 35 x 45 mm at 290 dpi).
    # ICA gives no head-height number: loose band 0.60-0.80 (ours). File cap: the dataset records
    # <= 8 MB; pilotlight's earlier table said 2 MB from a page we can no longer read: 8 MB is used.
    _spec(
        id="sg-passport",
        name="Singapore passport",
        country="SG",
        width_mm=35,
        height_mm=45,
        dpi=290,
        size_source=SG_FILE,
        rules=Rules(
            head_height=Band(
                0.60 * 45,
                0.80 * 45,
                _default(
                    "ICA cites the ICAO standard but states no head-height number; 60-80 % of the height is our loose "
                    "band.",
                    url=ICA_URL,
                ),
            )
        ),
        backgrounds=("white",),
        max_kb=8 * 1024,
        min_px=(400, 514),
        max_px=(400, 514),
        file_source=SG_FILE,
        source="ICA Singapore, ica.gov.sg 'Photo guidelines'",
    ),
    # Indian passport (paper applications through missions): 2 x 2 in, "the face should make
    # 70-80% of the photograph", read by us as chin-to-crown over the photo height. pilotlight's
    # earlier table used 1 to 1 3/8 in (the US template) with no Indian source; the Copenhagen
    # mission's figure replaces it. The Rabat mission gives no number.
    _spec(
        id="in-passport",
        name="Indian passport",
        country="IN",
        width_mm=TWO_INCH_MM,
        height_mm=TWO_INCH_MM,
        dpi=300,
        size_source=IN_PASSPORT_HEAD,
        rules=Rules(
            head_height=Band(
                0.70 * TWO_INCH_MM,
                0.80 * TWO_INCH_MM,
                IN_PASSPORT_HEAD,
                note="'face ... 70-80% of the photograph' read as chin-to-crown over the 50.8 mm height (our reading).",
            )
        ),
        backgrounds=("white", "off-white"),
        source="Indian missions (Copenhagen) 'Photo Specifications For Passport'",
    ),
    # Indian e-Visa: square JPEG, 350-1000 px, 10-300 KB (some later copies say 1 MB; we keep the
    # lower cap, which satisfies both); head 1 to 1 3/8 in; eye height from 1 1/8 in (the stored
    # copy breaks off at "1-3": read as 1 3/8 in, the US template it follows).
    _spec(
        id="in-visa",
        name="Indian visa",
        country="IN",
        width_mm=TWO_INCH_MM,
        height_mm=TWO_INCH_MM,
        dpi=300,
        size_source=IN_EVISA_FILE,
        rules=Rules(
            head_height=Band(
                1 * MM_PER_INCH, 1.375 * MM_PER_INCH, IN_EVISA_HEAD, note="1 in and 1 3/8 in of the 2 in square."
            ),
            eye_line=Band(
                1.125 * MM_PER_INCH,
                1.375 * MM_PER_INCH,
                IN_EVISA_EYE,
                note="The stored copy breaks off at '1-3'; read as 1 3/8 in = 34.925 mm (our reading).",
            ),
            crown="hair",
        ),
        backgrounds=("white", "off-white"),
        min_kb=10,
        max_kb=300,
        min_px=(350, 350),
        max_px=(1000, 1000),
        file_source=IN_EVISA_FILE,
        source="Govt. of India, indianvisaonline.gov.in e-Visa photo specifications",
    ),
    # Chinese passport (applications abroad): 33 x 48 mm; head width 15-22 mm; chin to crown 28-33
    # mm; crown 3-5 mm below the top; >= 7 mm from chin to bottom; digital copy 30-80 KB. The
    # mainland entry-exit rule gives head width 21-24 mm with the same 28-33 mm height (county
    # government page): the sources disagree on width; the consular rule, which also fixes the
    # margins, is used. No eye line.
    _spec(
        id="cn-passport",
        name="Chinese passport",
        country="CN",
        width_mm=33,
        height_mm=48,
        dpi=300,
        size_source=CN_CONSULAR,
        rules=Rules(
            head_height=Band(28, 33, CN_CONSULAR),
            crown_margin=Band(3, 5, CN_CONSULAR),
            chin_margin=Band(7, None, CN_CONSULAR),
            head_width=Band(
                15, 22, CN_CONSULAR, note="The mainland entry-exit rule says 21-24 mm; the consular 15-22 mm is used."
            ),
            crown="hair",
        ),
        backgrounds=("white",),
        min_kb=30,
        max_kb=80,
        file_source=CN_CONSULAR_FILE,
        source="PRC consular service, passport and travel-document photo requirements",
    ),
    # Chinese visa, paper photo: 33 x 48 mm; head 28-33 mm; head width 15-22 mm; crown 3-5 mm;
    # chin >= 7 mm. The 120 KB cap is the online channel's (see cn-visa-online), kept for files made
    # with this spec; its pixel rules do not convert to this aspect ratio and are not applied here.
    _spec(
        id="cn-visa",
        name="Chinese visa",
        country="CN",
        width_mm=33,
        height_mm=48,
        dpi=290,
        size_source=CN_VISA_SIZE,
        rules=Rules(
            head_height=Band(
                28,
                33,
                CN_VISA_HEAD,
                note="The HK commissioner's page prints '20mm to 33mm' (a typo, we think); the sheet's 28 mm is used.",
            ),
            crown_margin=Band(3, 5, CN_VISA_CROWN),
            chin_margin=Band(7, None, CN_VISA_CHIN),
            head_width=Band(15, 22, CN_VISA_WIDTH),
            crown="hair",
            max_yaw_deg=20,
            max_pitch_deg=25,
            pose_source=CN_VISA_POSE,
        ),
        backgrounds=("white", "off-white"),
        max_kb=120,
        file_source=CN_ONLINE_SIZE,
        source="PRC embassies / Chinese Visa Application Service Center 'Photo requirements'",
    ),
    # China resident ID card (GA 461-2004): 358 x 441 px at 350 dpi (26 x 32 mm). Pixel rules are
    # converted as shares of the frame to mm of the 26 x 32 mm print. GA 461 gives no chin-to-crown
    # range, only "头部占照片尺寸的2/3": loose band 0.62-0.78 (ours). Eye line: GA 461's minimum;
    # the maximum 0.72 is ours.
    _spec(
        id="cn-id-card",
        name="China resident ID card",
        country="CN",
        width_mm=26,
        height_mm=32,
        dpi=350,
        size_source=GA461,
        rules=Rules(
            head_height=Band(
                0.62 * 32,
                0.78 * 32,
                _default(
                    "GA 461-2004 says only '头部占照片尺寸的2/3' (the head about 2/3 of the photo); 62-78 % around it is our "
                    "loose band.",
                    url=GA461_COPY_URL,
                ),
            ),
            eye_line=Band(
                207 / 441 * 32,
                0.72 * 32,
                GA461,
                note="At least 207 of 441 px above the bottom edge, as mm of the 32 mm print.",
                high_source=_default("GA 461 sets no upper eye line; 72 % of the height is ours.", url=GA461_COPY_URL),
            ),
            crown_margin=Band(
                7 / 441 * 32, 21 / 441 * 32, GA461, note="7-21 of 441 px (top of the hair), as mm of 32 mm."
            ),
            head_width=Band(
                193 / 358 * 26, 221 / 358 * 26, GA461, note="Face width 207 +/- 14 of 358 px, as mm of 26 mm."
            ),
            crown="hair",
        ),
        backgrounds=("white",),
        source="MPS China, GA 461-2004 '居民身份证制证用数字相片技术要求'",
    ),
    # Chinese 1-inch (一寸) photo: 25 x 35 mm, 295 x 413 px at 300 dpi. A trade convention, not a
    # standard: loose band 0.58-0.75 (ours). No eye line.
    _spec(
        id="cn-1inch",
        name="Chinese 1-inch photo",
        country="CN",
        width_mm=25,
        height_mm=35,
        dpi=300,
        size_source=TRADE_SIZES,
        rules=Rules(
            head_height=Band(
                0.58 * 35,
                0.75 * 35,
                _default(
                    "一寸 photos follow a trade convention, not a standard; 58-75 % around the customary 'head about "
                    "2/3 of the photo' is ours.",
                    about="no authority (trade convention)",
                ),
            )
        ),
        backgrounds=("white", "blue", "red"),
        source="Chinese trade convention for 一寸 photos (no official standard)",
    ),
    # Chinese 2-inch (二寸) photo: 35 x 49 mm, 413 x 579 px at 300 dpi (the 'large 2-inch' 35 x 53
    # mm also circulates). Trade convention: same loose band (ours). No eye line.
    _spec(
        id="cn-2inch",
        name="Chinese 2-inch photo",
        country="CN",
        width_mm=35,
        height_mm=49,
        dpi=300,
        size_source=TRADE_SIZES,
        rules=Rules(
            head_height=Band(
                0.58 * 49,
                0.75 * 49,
                _default(
                    "二寸 photos follow a trade convention, not a standard; 58-75 % of the height is ours.",
                    about="no authority (trade convention)",
                ),
            )
        ),
        backgrounds=("white", "blue", "red"),
        source="Chinese trade convention for 二寸 photos (no official standard)",
    ),
    # Résumé / CV photo: no authority. 35 x 45 mm at 300 dpi; loose band 0.50-0.70 (ours).
    _spec(
        id="resume",
        name="Résumé / CV photo",
        country="INT",
        width_mm=35,
        height_mm=45,
        dpi=300,
        size_source=TRADE_SIZES,
        rules=Rules(
            head_height=Band(
                0.50 * 45,
                0.70 * 45,
                _default(
                    "No authority sets CV photos; 50-70 % of the height shows more shoulders than a passport photo.",
                    about="no authority (CV photo)",
                ),
            )
        ),
        backgrounds=("light-grey", "white", "off-white", "light-blue"),
        source="No authority: common CV photo format (35 x 45 mm), loose head band",
    ),
    # --- added for issue 14 ---------------------------------------------------------------------
    # US Diversity Visa: the visa photo rules at exactly 600 x 600 px, <= 240 kB.
    _spec(
        id="us-dv-lottery",
        name="US Diversity Visa (DV lottery)",
        country="US",
        width_mm=TWO_INCH_MM,
        height_mm=TWO_INCH_MM,
        dpi=300,
        size_source=US_DV_FILE,
        rules=Rules(
            head_height=Band(
                0.50 * TWO_INCH_MM, 0.69 * TWO_INCH_MM, US_VISA_HEAD, note="50-69 % of the 600 px height, in mm."
            ),
            eye_line=Band(
                0.56 * TWO_INCH_MM, 0.69 * TWO_INCH_MM, US_VISA_EYE, note="56-69 % of the height, as mm of 2 in."
            ),
            crown="hair",
        ),
        backgrounds=("white", "off-white"),
        max_kb=240,
        min_px=(600, 600),
        max_px=(600, 600),
        file_source=US_DV_FILE,
        source="U.S. Dept. of State, Diversity Visa digital photo requirements",
    ),
    # UK passport, digital photo for online applications: at least 600 x 750 px, 50 KB - 10 MB.
    # gov.uk states no head size for digital photos: the printed rule (29-34 of 45 mm) is applied
    # as a share of the height (ours).
    _spec(
        id="uk-passport-online",
        name="UK passport (online photo)",
        country="GB",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=UK_FILE,
        rules=Rules(
            head_height=Band(
                29,
                34,
                _default(
                    "gov.uk gives no head size for digital photos; the printed photo's 'between 29mm and 34mm' of "
                    "45 mm is applied as the same share of the image.",
                    url=UK_URL,
                    about="authority states no head size for digital photos",
                ),
            )
        ),
        backgrounds=("light-grey", "off-white", "cream"),
        min_kb=50,
        max_kb=10 * 1024,
        min_px=(600, 750),
        file_source=UK_FILE,
        source="HM Passport Office, gov.uk 'Photos for passports' (digital photos)",
    ),
    # Canada, IRCC visa and immigration photos (temporary residents, online applications): frame
    # at least 35 x 45 mm, head 31-36 mm, digital at least 420 x 540 px and <= 4 MB.
    _spec(
        id="ca-visa",
        name="Canadian visa / IRCC (online photo)",
        country="CA",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=CA_TRV_FILE,
        rules=Rules(head_height=Band(31, 36, CA_TRV_HEAD)),
        backgrounds=("white", "off-white"),
        max_kb=4 * 1024,
        min_px=(420, 540),
        file_source=CA_TRV_FILE,
        source="IRCC, canada.ca temporary resident visa photograph specifications",
    ),
    # India, Passport Seva online photo: 630 x 810 px, white, face 80-85 % (read by us as chin to
    # crown over the image height). Nominal print 53.34 x 68.58 mm at 300 dpi.
    _spec(
        id="in-passport-online",
        name="Indian passport (Passport Seva upload)",
        country="IN",
        width_mm=px_to_mm(630, 300),
        height_mm=px_to_mm(810, 300),
        dpi=300,
        size_source=IN_ONLINE,
        rules=Rules(
            head_height=Band(
                0.80 * px_to_mm(810, 300),
                0.85 * px_to_mm(810, 300),
                IN_ONLINE,
                note="'80-85 %' read as chin-to-crown over the 810 px height (ours), in mm of the nominal print.",
            )
        ),
        backgrounds=("white",),
        min_px=(630, 810),
        max_px=(630, 810),
        file_source=IN_ONLINE,
        source="MEA India, Passport Seva ICAO-compliant photograph guidelines (online upload)",
    ),
    # Chinese visa, online application (digital photo), stated at 354 x 472 px "as an example":
    # nominal print 29.97 x 39.96 mm at 300 dpi; pixel rules converted at that size. The channel
    # states no head height (visa-photo 0.1.0 records the same): ICAO's 70-80 % (ours). Eye line:
    # "> 256 px" is the minimum; the upper end is ISO/IEC 19794-5's 70 % (ours).
    _spec(
        id="cn-visa-online",
        name="Chinese visa (online photo)",
        country="CN",
        width_mm=px_to_mm(354, 300),
        height_mm=px_to_mm(472, 300),
        dpi=300,
        size_source=CN_ONLINE_SIZE,
        rules=Rules(
            head_height=Band(
                0.70 * px_to_mm(472, 300),
                0.80 * px_to_mm(472, 300),
                _default(
                    "The online channel states no head-height bound; " + ICAO_HEAD_TEXT + ".",
                    url=CN_SHEET_URL,
                    about="channel states no head height",
                ),
                note="70-80 % of the 472 px height, as mm of the nominal print.",
            ),
            eye_line=Band(
                px_to_mm(256, 300),
                0.70 * px_to_mm(472, 300),
                CN_ONLINE_EYE,
                note="'> 256 px' applied as >= 256 px at 354 x 472, in mm at 300 dpi.",
                high_source=ISO_EYES,
            ),
            crown_margin=Band(px_to_mm(10, 300), px_to_mm(70, 300), CN_ONLINE_CROWN, note="10-70 px at 300 dpi."),
            head_width=Band(
                px_to_mm(191, 300),
                px_to_mm(219, 300),
                CN_ONLINE_WIDTH,
                note="205 - 14 = 191 to 205 + 14 = 219 px at 300 dpi.",
            ),
            eye_distance=Band(
                px_to_mm(60, 300), None, CN_ONLINE_EYES_APART, note="'> 60 px' applied as >= 60 px, at 300 dpi."
            ),
            crown="hair",
        ),
        backgrounds=("white",),
        min_kb=40,
        max_kb=120,
        min_px=(354, 472),
        max_px=(420, 560),
        file_source=CN_ONLINE_SIZE,
        source="PRC visa photo requirements sheet (online application, digital photo)",
    ),
    # CHSI (学信网) graduate photo: 480 x 640 px at 300 dpi, blue background, JPG >= 30 KB. The
    # stored copy names checks of the eye and crown position with no numbers: loose head band
    # 0.58-0.75 (ours), as for Chinese 1-inch photos.
    _spec(
        id="cn-chsi",
        name="China CHSI (学信网) graduate photo",
        country="CN",
        width_mm=px_to_mm(480, 300),
        height_mm=px_to_mm(640, 300),
        dpi=300,
        size_source=CHSI,
        rules=Rules(
            head_height=Band(
                0.58 * px_to_mm(640, 300),
                0.75 * px_to_mm(640, 300),
                _default(
                    "CHSI's requirements name eye and crown position checks without numbers; 58-75 % of the height is "
                    "our loose band.",
                    url="https://m.tftnews.com/news2960762",
                ),
            )
        ),
        backgrounds=("blue",),
        min_kb=30,
        min_px=(480, 640),
        max_px=(480, 640),
        file_source=CHSI,
        source="CHSI (学信网) graduate image collection requirements",
    ),
    # New Zealand visas and NZeTA (Immigration New Zealand): 900 x 1200 to 2250 x 3000 px, 3:4;
    # face 70-80 % of the image. Two INZ pages give 500 KB-3 MB and 512 KB-3.14 MB: the intersection
    # 512 KB-3 MB (3072 KB) is used. 1500 x 2000 px at 800 dpi (47.6 x 63.5 mm nominal).
    _spec(
        id="nz-visa",
        name="New Zealand visa / NZeTA (online photo)",
        country="NZ",
        width_mm=px_to_mm(1500, 800),
        height_mm=px_to_mm(2000, 800),
        dpi=800,
        size_source=NZ_VISA_FILE,
        rules=Rules(
            head_height=Band(
                0.70 * px_to_mm(2000, 800),
                0.80 * px_to_mm(2000, 800),
                NZ_VISA_HEAD,
                note=(
                    "'face covers 70-80% of the image' read as hair-inclusive head height over image height (as "
                    "visa-photo reads it)."
                ),
            ),
            crown="hair",
        ),
        backgrounds=("light-grey", "off-white"),
        min_kb=512,
        max_kb=3 * 1024,
        min_px=(900, 1200),
        max_px=(2250, 3000),
        file_source=NZ_VISA_FILE,
        source="Immigration New Zealand, 'Visa and NZeTA photos'",
    ),
    # German ID card (Personalausweis): the same Fotomustertafel as the passport.
    _spec(
        id="de-id-card",
        name="German ID card (Personalausweis)",
        country="DE",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=DE_SIZE,
        rules=Rules(
            head_height=Band(
                32,
                36,
                DE_HEAD,
                note=(
                    "The same text sets a looser refusal threshold: photos are refused only 'wenn die Gesichtshöhe "
                    "27 mm unterschreitet oder 40 mm überschreitet'; 32-36 mm is the rule applied."
                ),
            ),
            eye_line=Band(0.50 * 45, 0.70 * 45, ISO_EYES, note="50-70 % of 45 mm."),
            crown="skull",
        ),
        backgrounds=("light-grey", "white", "light-blue"),
        source="BMI / Bundesdruckerei 'Fotomustertafel' (Personalausweis)",
    ),
    # Italian passport and ID card: 35 x 45 mm, white background, face 70-80 % of the photo
    # "from the base of the chin to the forehead" (31.5-36 mm).
    _spec(
        id="it-passport",
        name="Italian passport / ID card",
        country="IT",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=IT_HEAD,
        rules=Rules(
            head_height=Band(
                0.70 * 45,
                0.80 * 45,
                IT_HEAD,
                note="70-80 % of 45 mm = 31.5-36 mm; 'to the forehead' leaves the top point undefined.",
            )
        ),
        backgrounds=("white",),
        source="Italian missions (Tallinn) passport and ID card photo requirements (ICAO)",
    ),
    # Spanish DNI: 32 x 26 mm (height x width), plain white background; no head-size rule in the
    # RD wording: ICAO's 70-80 % (ours). Third-party sites quote 35 x 45 mm; the RD wording is used.
    _spec(
        id="es-dni",
        name="Spanish DNI (identity card)",
        country="ES",
        width_mm=26,
        height_mm=32,
        dpi=600,
        size_source=ES_DNI,
        rules=Rules(
            head_height=Band(
                0.70 * 32,
                0.80 * 32,
                _default("The DNI rule gives only size and background; " + ICAO_HEAD_TEXT + ".", url=ES_DNI.url),
                note="70-80 % of 32 mm.",
            )
        ),
        backgrounds=("white",),
        source="Ministerio del Interior, DNI photo (RD 1553/2005 art. 5)",
    ),
    # Dutch passport and ID card: 35 x 45 mm; chin to crown 26-30 mm (from 11 years); ear-base to
    # ear-base 16-20 mm; light grey, light blue or white; >= 400 dpi (600 used).
    _spec(
        id="nl-passport",
        name="Dutch passport / ID card",
        country="NL",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=NL_HEAD,
        rules=Rules(
            head_height=Band(26, 30, NL_HEAD),
            head_width=Band(16, 20, NL_HEAD, note="Measured between the ear bases ('van ooraanzet tot ooraanzet')."),
        ),
        backgrounds=("light-grey", "light-blue", "white"),
        source="RvIG 'Fotomatrix' acceptance criteria for Dutch travel documents",
    ),
    # Belgian eID, kids-ID and passport: 35 x 45 mm, chin to crown 31-36 mm, white background.
    _spec(
        id="be-eid",
        name="Belgian eID / passport",
        country="BE",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=BE_HEAD,
        rules=Rules(head_height=Band(31, 36, BE_HEAD)),
        backgrounds=("white",),
        source="Belgian municipal photo norms (Steenokkerzeel 'Pasfoto normen')",
    ),
    # Swiss passport and ID card: 35 x 45 mm, face 29-34 mm (fedpol Fotomustertafel figure). The
    # figure's 5 mm above the head is a single dimension, not a band: not applied. The 50-70 % eye
    # band fedpol states is for digital photos on USB only: not applied to this print.
    _spec(
        id="ch-passport",
        name="Swiss passport / ID card",
        country="CH",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=CH_HEAD,
        rules=Rules(
            head_height=Band(
                29,
                34,
                CH_HEAD,
                note=(
                    "Read from the figure's dimension labels (29 mm and 34 mm on a 45 x 35 mm photo). Its '5 mm' above "
                    "the head is one figure, not a band, and fedpol's 50-70 % eye band is for digital photos on USB "
                    "sticks: neither is applied to this print."
                ),
            )
        ),
        backgrounds=("light-grey", "white", "off-white"),
        source="fedpol 'Fotomustertafel' (Swiss passports and identity cards)",
    ),
    # Austrian passport: 35 x 45 mm; head about 2/3 of the photo and not above 36 mm (the minimum
    # 30 mm = 2/3 of 45 is ours); eyes at least 8 mm apart; light, ideally grey background.
    _spec(
        id="at-passport",
        name="Austrian passport / ID card",
        country="AT",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=AT_HEAD,
        rules=Rules(
            head_height=Band(
                30,
                36,
                AT_HEAD,
                low_source=_default(
                    "BMI asks for 'ca. 2/3 des Bildes' and sets only a maximum; 2/3 of 45 mm = 30 mm is applied as "
                    "our minimum.",
                    url=AT_URL,
                    about="authority states no minimum head height",
                ),
            ),
            eye_distance=Band(8, None, AT_EYES),
        ),
        backgrounds=("light-grey", "off-white", "light-blue"),
        source="BMI Austria 'Passbild-Kriterien'",
    ),
    # Polish passport: 35 x 45 mm; head 31-36 mm (70-80 %); eyes 20-30 mm above the bottom edge.
    _spec(
        id="pl-passport",
        name="Polish passport",
        country="PL",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=PL_HEAD,
        rules=Rules(head_height=Band(31, 36, PL_HEAD), eye_line=Band(20, 30, PL_HEAD)),
        backgrounds=("light-grey", "white", "light-blue"),
        source="MSZ Poland (consular posts) passport photo requirements",
    ),
    # HKSAR passport: 40 x 50 mm, white background, chin to top of head 32-36 mm.
    _spec(
        id="hk-passport",
        name="Hong Kong SAR passport",
        country="HK",
        width_mm=40,
        height_mm=50,
        dpi=600,
        size_source=HK_HEAD,
        rules=Rules(head_height=Band(32, 36, HK_HEAD)),
        backgrounds=("white",),
        source="Immigration Department HKSAR, 'Photo Specification for Travel Documents'",
    ),
    # Taiwan (ROC) passport: 35 x 45 mm, chin to crown 32-36 mm with the crown taken without hair,
    # plain white background.
    _spec(
        id="tw-passport",
        name="Taiwan passport",
        country="TW",
        width_mm=35,
        height_mm=45,
        dpi=600,
        size_source=TW_HEAD,
        rules=Rules(head_height=Band(32, 36, TW_HEAD), crown="skull"),
        backgrounds=("white",),
        source="Bureau of Consular Affairs (Taiwan), 'Guidelines for e-Passport Photographs'",
    ),
    # Saudi tourist eVisa: 200 x 200 px (2 x 2 in at 100 dpi nominal), white, face 70-80 %
    # (read by us as chin to crown over the image height), 5-100 KB.
    _spec(
        id="sa-evisa",
        name="Saudi Arabia eVisa (online photo)",
        country="SA",
        width_mm=TWO_INCH_MM,
        height_mm=TWO_INCH_MM,
        dpi=100,
        size_source=SA_EVISA,
        rules=Rules(
            head_height=Band(
                0.70 * TWO_INCH_MM,
                0.80 * TWO_INCH_MM,
                SA_EVISA,
                note="'70-80 (face)' read as chin-to-crown over the 200 px height (our reading), as mm of 2 in.",
            )
        ),
        backgrounds=("white",),
        min_kb=5,
        max_kb=100,
        min_px=(200, 200),
        max_px=(200, 200),
        file_source=SA_EVISA,
        source="Saudi tourist eVisa photo specifications",
    ),
    # Brazil e-Visa (consular): 51 x 51 mm, white background, digital and printed copy; no head
    # rule stated: the 2 x 2 in format's 1 to 1 3/8 in head (U.S. template) is ours.
    _spec(
        id="br-visa",
        name="Brazilian visa (e-Visa)",
        country="BR",
        width_mm=51,
        height_mm=51,
        dpi=300,
        size_source=BR_EVISA,
        rules=Rules(
            head_height=Band(
                1 * MM_PER_INCH,
                1.375 * MM_PER_INCH,
                _default(
                    "The e-Visa page states only the 51 x 51 mm size and a white background; the 2 x 2 in format's "
                    "usual head of 1 to 1 3/8 in (U.S. Department of State template) is applied.",
                    url=BR_EVISA_URL,
                ),
            )
        ),
        backgrounds=("white",),
        source="Embassy of Brazil (Vienna), 'e-Visa' photo requirements",
    ),
)


SPECS: dict[str, PhotoSpec] = {spec.id: spec for spec in _SPEC_LIST}
if len(SPECS) != len(_SPEC_LIST):  # pragma: no cover - guards the table above
    raise RuntimeError("duplicate photo spec id in app.specs")


def get_spec(spec_id: str) -> PhotoSpec:
    """The spec with this id (case-insensitive, '_' accepted for '-').

    Raises KeyError listing the known ids; the requested value is not echoed back.
    """
    if isinstance(spec_id, str):
        key = spec_id.strip().lower().replace("_", "-")
        spec = SPECS.get(key)
        if spec is not None:
            return spec
    raise KeyError(f"unknown photo spec; known specs: {', '.join(SPECS)}")


def _normalise_colour_name(text: str) -> str:
    name = re.sub(r"[\s_-]+", "-", text.strip().lower()).strip("-")
    return name.replace("gray", "grey")


def _preview(value: str, limit: int = 32) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


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
    if not (_is_number(value) and value > 0):  # type: ignore[operator]
        raise ValueError(f"{label} must be a number greater than 0")
    return float(value)  # type: ignore[arg-type]


def _whole_pixels(label: str, value: object) -> int:
    if isinstance(value, float) and _is_number(value) and value.is_integer():
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
    if isinstance(dpi, float) and _is_number(dpi) and dpi.is_integer():
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
    if not (isinstance(head_ratio, tuple) and len(head_ratio) == 2 and all(_is_number(v) for v in head_ratio)):
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
