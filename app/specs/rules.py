"""Where a spec's numbers come from, and its geometric rules: `Source`, `Band`, `Rules`.

Frozen dataclasses that validate themselves; every bound in millimetres of the print with the
authority's words (`Source`). The conventions every spec follows are in `app/specs/model.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DEFAULT_PREFIX = "pilotlight default:"
# The address of a rule that is ours and has no authority page behind it (trade conventions,
# custom sizes). Every other Source has an http(s) address.
PILOTLIGHT_URL = "pilotlight:app/specs/data"
SOURCE_KINDS = ("primary", "copy", "secondary", "none")  # see Source.kind
CROWN_MEANINGS = ("hair", "skull", "unstated")
WIDTH_MEANINGS = ("face", "head")


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _fraction(mm: float | None, of_mm: float) -> float | None:
    return None if mm is None else round(mm / of_mm, 4)


# --- the spec ---------------------------------------------------------------------------------


# --- provenance and rules ---------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where a bound comes from.

    `title`: authority and document or page title (and, where we read it in someone else's stored
    copy, whose). `url`: the address the words were read at, or PILOTLIGHT_URL for a rule with no
    authority. `quote`: the authority's own words the bound comes from, short and verbatim. For a
    rule that is ours, `title` starts with "pilotlight default:" and `quote` gives our reason.
    `kind` (SOURCE_KINDS): "primary" (the authority's own page or document), "copy" (its text hosted
    by someone else: an uploaded or cached document, another government office relaying it),
    "secondary" (someone's account of it: blogs, news, photographers' pages, mirror sites, data
    packages quoting it) or "none" (a rule of ours: no words of the authority were found).
    """

    title: str
    url: str
    quote: str
    kind: str

    def __post_init__(self) -> None:
        for label in ("title", "url", "quote"):
            value = getattr(self, label)
            if not (isinstance(value, str) and value.strip()):
                raise ValueError(f"Source.{label} must be a non-empty string")
        if not (self.url.startswith(("https://", "http://")) or self.url == PILOTLIGHT_URL):
            raise ValueError(f"Source.url must be an http(s) address or {PILOTLIGHT_URL!r}")
        if self.kind not in SOURCE_KINDS:
            raise ValueError(f"Source.kind must be one of {', '.join(SOURCE_KINDS)}, not {self.kind!r}")
        if (self.kind == "none") != self.is_default:
            raise ValueError(f"Source.kind is 'none' exactly for a rule of ours (a title starting {DEFAULT_PREFIX!r})")

    @property
    def is_default(self) -> bool:
        """True when the rule is pilotlight's own (the authority states none)."""
        return self.title.startswith(DEFAULT_PREFIX)

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "url": self.url, "quote": self.quote, "kind": self.kind,
                "default": self.is_default}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Source:
        return cls(title=data["title"], url=data["url"], quote=data["quote"], kind=data["kind"])


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
            if value is not None and not (is_number(value) and value >= 0):
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
    kind="none",
)


def not_found(subject: str, quote: str) -> Source:
    """Where no words of the authority on `subject` were found: what we do, said as ours (kind none)."""
    return Source(title=f"{DEFAULT_PREFIX} no words of this authority on {subject}", url=PILOTLIGHT_URL,
                  quote=f"Not the authority's words: {quote}", kind="none")


NO_COVERING_WORDS = not_found(
    "hats or head coverings found in our stored sources",
    "the authorities whose words we hold (the US Department of State, Canada's IRCC) refuse hats and head coverings "
    "unless worn for religious or medical reasons, and ICAO-based rules ask for the full face and head to show; we "
    "fail a covering on this spec too, with that exception.")
NO_CROWN_WORDS = not_found(
    "which top of the head its head height is measured to",
    "we found none saying whether the head is measured to the top of the hair or to the crown of the head under it; "
    "we judge both, and where they give verdicts on both sides of the band the line does not pass.")
NO_GLASSES_WORDS = not_found(
    "eyeglasses found in our stored sources",
    "we do not refuse glasses on this spec; where it allows them, authorities commonly ask for no glare, no tinted "
    "lenses and frames clear of the eyes.")
GLASSES_POLICIES = ("forbidden", "conditions", "unstated")

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
    crown_source  the authority's words on which top it measures (NO_CROWN_WORDS, kind "none", where none were found)
    head_width_of "face": head_width is the face between the ear roots (GA 461's 脸部宽度(两耳根之间),
                  the Dutch 'van ooraanzet tot ooraanzet'); "head": the whole head, ears and hair included
    mouth_closed  True: a neutral expression with the mouth closed is required (ICAO Doc 9303 and the
                  rules that follow it); False: the authority allows a natural smile or states no rule
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
    head_width_of: str = "face"
    mouth_closed: bool = True
    max_yaw_deg: float = 5.0
    max_pitch_deg: float = 5.0
    max_roll_deg: float = 8.0
    pose_source: Source = ISO_POSE
    crown_source: Source = NO_CROWN_WORDS

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
        if self.head_width_of not in WIDTH_MEANINGS:
            raise ValueError(f"Rules.head_width_of must be one of {WIDTH_MEANINGS}")
        if not isinstance(self.mouth_closed, bool):
            raise ValueError("Rules.mouth_closed must be True or False")
        for label in ("max_yaw_deg", "max_pitch_deg", "max_roll_deg"):
            value = getattr(self, label)
            if not (is_number(value) and 0 < value <= 45):
                raise ValueError(f"Rules.{label} must be a number of degrees in (0, 45]")
        if not isinstance(self.pose_source, Source):
            raise ValueError("Rules.pose_source must be a Source")
        if not isinstance(self.crown_source, Source):
            raise ValueError("Rules.crown_source must be a Source")

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
        out["crown_source"] = self.crown_source.to_dict()
        out["head_width_of"] = self.head_width_of
        out["mouth_closed"] = self.mouth_closed
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
            head_width_of=data.get("head_width_of", "face"),
            mouth_closed=data.get("mouth_closed", True),
            max_yaw_deg=pose["max_yaw_deg"],
            max_pitch_deg=pose["max_pitch_deg"],
            max_roll_deg=pose["max_roll_deg"],
            pose_source=Source.from_dict(pose["source"]),
            crown_source=Source.from_dict(data["crown_source"]) if "crown_source" in data else NO_CROWN_WORDS,
        )
