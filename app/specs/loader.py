"""Reads the photo specs from TOML files (`app/specs/data/`) into the validated dataclasses of
`app.specs.model`. Pure: a folder in, a `SpecTable` out; any mistake raises `SpecDataError`,
whose message names the file and the entry (`cn.toml: specs.cn-visa.head_height.low: ...`).

The format, one file per country or family (`us.toml`, `cn.toml`, `int.toml` for ICAO and the
CV photo), plus `order.toml`:

    [sources.de-head]              # a source: defined once, referred to by its key from any file
    title = "BMI / Bundesdruckerei 'Fotomustertafel' ..."
    url = "https://..."            # may be left out for a rule of ours (title "pilotlight default: ...")
    quote = "Die Gesichtshöhe muss 70 - 80 % des Fotos einnehmen. ..."   # the authority's words
    kind = "copy"                  # primary, copy, secondary or none: see model.Source (inherited by extends)

    [sources.de-size]
    extends = "de-head"            # same title and url; its own quote
    quote = "..."

    [specs.de-passport]
    name = "German passport / ID card (biometric)"
    country = "DE"                 # ISO 3166 alpha-2, "EU", or "INT"
    width = "35 mm"                # mm, cm, in, or px (px at `dpi`: the authority states a file)
    height = "45 mm"
    dpi = 600
    size_source = "de-size"
    backgrounds = ["light-grey", "white"]    # names of app.specs.BACKGROUND_COLOURS; first is the default
    citation = "BMI / Bundesdruckerei 'Fotomustertafel'"   # the short citation (PhotoSpec.source)
    crown = "skull"                # "hair", "skull" or "unstated" (the default)
    crown_source = "de-head"       # the authority's words on which top it measures (optional: else ours, kind "none")
    head_width_of = "face"         # head_width is the "face" between the ear roots (the default) or the whole "head"
    mouth_closed = true            # a closed mouth is required (the default); false where a natural smile is allowed
    expression_source = "de-expr"  # the authority's words on the expression (required; "pilotlight default:" where none)
    covering_source = "de-hats"    # the authority's words on hats and head coverings (optional: else ours, kind "none")
    glasses = "conditions"         # "forbidden", "conditions" or "unstated" (the default), with glasses_source
    glasses_source = "de-glasses"
    head_height = { low = "32 mm", high = "36 mm", source = "de-head" }
    eye_line = { low = "50 %", high = "70 %", source = "iso-eyes", note = "50-70 % of 45 mm." }

A band (`head_height`, `eye_line`, `crown_margin`, `chin_margin`, `head_width`, `side_margin`,
`centre_x`, `eye_distance`; see `model.Rules`) gives each end in the authority's unit, written as
the quote writes the number: "32 mm", "3,2 cm", "1 3/8 in", "1-3/8 in", "70 %" (of the photo's
height, or width for a horizontal band), "207 px" (pixels of the spec's file). `nominal` and
`tolerance` ("207 px" and "14 px") stand for low = nominal - tolerance, high = nominal +
tolerance. An end may have its own source (`low_source`, `high_source`); `note` gives our
reading. File rules: `min_px`/`max_px` ([width, height]), `min_file_size`/`max_file_size`
("50 KB", "10 MB": 1 MB = 1024 KB), `file_source`. Pose (optional, else ISO/IEC 19794-5's
tolerances): `[specs.X.pose]` with `max_yaw_deg`, `max_pitch_deg`, `max_roll_deg` and `source`.

Edits (required): `[specs.X.edits]` gives each of `crop_scale`, `level`, `replace_background`,
`extend_canvas` and `adjust_tone` as `{ policy = "allowed" | "forbidden", source = "key" }` (the
authority's words), `{ policy = "silent", apply = true | false, note = "..." }` (the authority does
not address it: what we do, and why; a `source` may give its general words), or
`{ policy = "no_authority", note = "..." }` (no authority stands behind the spec). `instead`
(optional) says what to do for the authority's own route: required where `crop_scale`, the edit
no formatter can avoid, is forbidden; on a silent edit it puts an information line in the report.
See `model.EditPolicy`.

A variant says `extends = "base-id"`: the base's table, with the variant's keys merged over it
(tables key by key, any other value replaced). `aliases = ["old-id"]` lets `get_spec` answer to
another id (not inherited). `order.toml` lists every spec id once, in the order of
`GET /api/v1/specs`.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .edits import EDIT_OPERATIONS, POLICIES, EditPolicy
from .model import MM_PER_INCH, PhotoSpec, mm_to_px, px_to_mm
from .rules import DEFAULT_PREFIX, HORIZONTAL_RULES, PILOTLIGHT_URL, SOURCE_KINDS, VERTICAL_RULES, Band, Rules, Source

ORDER_FILE = "order.toml"
UNAVOIDABLE_EDIT = "crop_scale"  # making a photo of the size crops and scales it
RULE_NAMES = VERTICAL_RULES + HORIZONTAL_RULES
SOURCE_KEYS = frozenset({"extends", "title", "url", "quote", "kind"})
BAND_KEYS = frozenset({"low", "high", "nominal", "tolerance", "source", "low_source", "high_source", "note"})
POSE_KEYS = frozenset({"max_yaw_deg", "max_pitch_deg", "max_roll_deg", "source"})
FILE_KEYS = ("min_px", "max_px", "min_file_size", "max_file_size", "file_source")
REQUIRED_SPEC_KEYS = ("name", "country", "width", "height", "dpi", "size_source", "backgrounds", "citation")
SPEC_KEYS = frozenset({"extends", "aliases", "crown", "crown_source", "head_width_of", "mouth_closed", "pose", "edits", "expression_source",
                       "covering_source", "glasses", "glasses_source",
                       *REQUIRED_SPEC_KEYS,
                       *FILE_KEYS, *RULE_NAMES})
EDIT_KEYS = frozenset({"policy", "source", "apply", "note", "instead"})
SIZE_UNITS = ("mm", "cm", "in", "px")
BAND_UNITS = ("mm", "cm", "in", "%", "px")
FILE_UNITS = {"KB": 1, "kB": 1, "MB": 1024}
_QUANTITY = re.compile(r"(?P<number>\d+[ -]\d+/\d+|\d+/\d+|\d+(?:[.,]\d+)?) (?P<unit>\S+)")


class SpecDataError(ValueError):
    """A spec data file is wrong; the message names the file and the entry."""


@dataclass(frozen=True)
class SpecTable:
    """What a data folder holds.

    `specs`: by id, in the order of order.toml. `sources`: by key. `aliases`: another id -> a spec
    id. `entries`: each spec's table as written (authority's units), with `extends` applied.
    `files`: the file each spec id and each source key comes from.
    """

    specs: dict[str, PhotoSpec]
    sources: dict[str, Source]
    aliases: dict[str, str]
    entries: dict[str, dict[str, Any]]
    files: dict[str, str]


@dataclass(frozen=True)
class _Frame:
    """A spec's size, which shares (%) and pixels (px) are converted against."""

    width_mm: float
    height_mm: float
    width_px: int
    height_px: int
    dpi: int
    in_px: bool  # the size itself was given in px: px convert at the dpi

    def extent(self, rule: str) -> tuple[float, int]:
        return (self.height_mm, self.height_px) if rule in VERTICAL_RULES else (self.width_mm, self.width_px)


_Raw = dict[str, tuple[str, dict[str, Any]]]  # key -> (file name, table as written)


def load_table(folder: Path) -> SpecTable:
    """Every spec and source in `folder` (*.toml, and order.toml for the order)."""
    raw_sources: _Raw = {}
    raw_specs: _Raw = {}
    for path in sorted(folder.glob("*.toml")):
        if path.name == ORDER_FILE:
            continue
        data = _read(path)
        for section in set(data) - {"sources", "specs"}:
            raise SpecDataError(f"{path.name}: unknown section {section!r} (a file holds [sources.*] and [specs.*])")
        for section, into in (("sources", raw_sources), ("specs", raw_specs)):
            for key, table in data.get(section, {}).items():
                where = f"{path.name}: {section}.{key}"
                if key in into:
                    raise SpecDataError(f"{where}: already defined in {into[key][0]}")
                if not isinstance(table, dict):
                    raise SpecDataError(f"{where}: must be a table")
                _check_keys(where, table, SOURCE_KEYS if section == "sources" else SPEC_KEYS)
                into[key] = (path.name, table)
    files = {key: file for key, (file, _) in (raw_sources | raw_specs).items()}
    sources = {key: _source(key, raw_sources) for key in raw_sources}
    entries = {spec_id: _resolve("specs", spec_id, raw_specs) for spec_id in raw_specs}
    built = {spec_id: _spec(spec_id, files[spec_id], entries[spec_id], sources) for spec_id in raw_specs}
    order = _order(folder / ORDER_FILE, built)
    return SpecTable(
        specs={spec_id: built[spec_id] for spec_id in order},
        sources=sources,
        aliases=_aliases(raw_specs, built),
        entries={spec_id: entries[spec_id] for spec_id in order},
        files=files,
    )


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as stream:
            return tomllib.load(stream)
    except tomllib.TOMLDecodeError as error:
        raise SpecDataError(f"{path.name}: not valid TOML: {error}") from None
    except OSError as error:
        raise SpecDataError(f"{path.name}: cannot be read: {error.strerror}") from None


def _check_keys(where: str, table: dict[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise SpecDataError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")
    for name, value in table.items():
        if name in RULE_NAMES or name == "pose":
            if not isinstance(value, dict):
                raise SpecDataError(f"{where}.{name}: must be a table")
            _check_keys(f"{where}.{name}", value, BAND_KEYS if name in RULE_NAMES else POSE_KEYS)
        if name == "edits":
            if not isinstance(value, dict):
                raise SpecDataError(f"{where}.edits: must be a table")
            _check_keys(f"{where}.edits", value, frozenset(EDIT_OPERATIONS))
            for operation, entry in value.items():
                if not isinstance(entry, dict):
                    raise SpecDataError(f"{where}.edits.{operation}: must be a table")
                _check_keys(f"{where}.edits.{operation}", entry, EDIT_KEYS)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` merged into `base`: tables key by key, any other value replaced."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _resolve(section: str, key: str, raw: _Raw, chain: tuple[str, ...] = ()) -> dict[str, Any]:
    """The entry's table with `extends` applied (the base's aliases are not inherited)."""
    file, table = raw[key]
    base_key = table.get("extends")
    own = {name: value for name, value in table.items() if name != "extends"}
    if base_key is None:
        return own
    where = f"{file}: {section}.{key}"
    if not isinstance(base_key, str) or base_key not in raw:
        raise SpecDataError(f"{where}: extends {base_key!r}, which is not in {section} (no file defines it)")
    if base_key in (*chain, key):
        raise SpecDataError(f"{where}: extends itself through {' -> '.join((*chain, key, base_key))}")
    base = _resolve(section, base_key, raw, (*chain, key))
    base.pop("aliases", None)
    return _merge(base, own)


def _source(key: str, raw: _Raw) -> Source:
    where = f"{raw[key][0]}: sources.{key}"
    table = _resolve("sources", key, raw)
    for name in ("title", "quote", "kind"):
        if name not in table:
            raise SpecDataError(f"{where}: missing {name}" + (f" ({', '.join(SOURCE_KINDS)})" if name == "kind" else ""))
    ours = isinstance(table["title"], str) and table["title"].startswith(DEFAULT_PREFIX)
    if "url" not in table and not ours:
        raise SpecDataError(f"{where}: missing url (only a rule of ours, titled {DEFAULT_PREFIX!r}, may leave it out)")
    try:
        return Source(title=table["title"], url=table.get("url", PILOTLIGHT_URL), quote=table["quote"], kind=table["kind"])
    except ValueError as error:
        raise SpecDataError(f"{where}: {error}") from None


def _ref(where: str, key: object, sources: dict[str, Source]) -> Source:
    if not isinstance(key, str) or key not in sources:
        raise SpecDataError(f"{where}: unknown source {key!r} (define it under [sources.<key>] in one file)")
    return sources[key]


def _quantity(where: str, text: object, units: tuple[str, ...]) -> tuple[float, str]:
    """("32 mm" | "3,2 cm" | "1 3/8 in" | "1-3/8 in" | "70 %" | "207 px") -> (number, unit)."""
    found = _QUANTITY.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        raise SpecDataError(f"{where}: {text!r} is not a number and a unit such as '32 mm' ({', '.join(units)})")
    number, unit = found["number"], found["unit"]
    if unit not in units:
        raise SpecDataError(f"{where}: unit {unit!r} is not one of {', '.join(units)}")
    fraction = re.fullmatch(r"(?:(\d+)[ -])?(\d+)/(\d+)", number)
    if fraction:
        whole, numerator, denominator = fraction.groups()
        if int(denominator) == 0:
            raise SpecDataError(f"{where}: {text!r} divides by zero")
        return (int(whole) if whole else 0) + int(numerator) / int(denominator), unit
    return (float(number.replace(",", ".")) if re.search(r"[.,]", number) else int(number)), unit


def _band_mm(number: float, unit: str, rule: str, frame: _Frame) -> float:
    """A band end in millimetres of the print."""
    if unit == "mm":
        return number
    if unit == "cm":
        return number * 10
    if unit == "in":
        return number * MM_PER_INCH
    extent_mm, extent_px = frame.extent(rule)
    if unit == "%":
        return number / 100 * extent_mm
    return px_to_mm(number, frame.dpi) if frame.in_px else number / extent_px * extent_mm


def _band(where: str, rule: str, table: dict[str, Any], frame: _Frame, sources: dict[str, Source]) -> Band:
    if "source" not in table:
        raise SpecDataError(f"{where}: missing source")
    ends: dict[str, float | None] = {}
    if "nominal" in table or "tolerance" in table:
        if not {"nominal", "tolerance"} <= set(table) or {"low", "high"} & set(table):
            raise SpecDataError(f"{where}: give nominal and tolerance together, without low or high")
        nominal, unit = _quantity(f"{where}.nominal", table["nominal"], BAND_UNITS)
        tolerance, tolerance_unit = _quantity(f"{where}.tolerance", table["tolerance"], BAND_UNITS)
        if tolerance_unit != unit:
            raise SpecDataError(f"{where}: nominal and tolerance must share a unit ({unit!r}, {tolerance_unit!r})")
        ends = {
            "low": _band_mm(nominal - tolerance, unit, rule, frame),
            "high": _band_mm(nominal + tolerance, unit, rule, frame),
        }
    else:
        for end in ("low", "high"):
            if end in table:
                ends[end] = _band_mm(*_quantity(f"{where}.{end}", table[end], BAND_UNITS), rule, frame)
    extra = {
        f"{end}_source": _ref(f"{where}.{end}_source", table[f"{end}_source"], sources)
        for end in ("low", "high")
        if f"{end}_source" in table
    }
    source = _ref(f"{where}.source", table["source"], sources)
    try:
        return Band(ends.get("low"), ends.get("high"), source, note=table.get("note", ""), **extra)
    except ValueError as error:
        raise SpecDataError(f"{where}: {error}") from None


def _frame(where: str, table: dict[str, Any]) -> _Frame:
    dpi = table["dpi"]
    if not (isinstance(dpi, int) and not isinstance(dpi, bool) and dpi > 0):
        raise SpecDataError(f"{where}.dpi: must be a whole number above 0, got {dpi!r}")
    sizes: dict[str, tuple[float, str]] = {}
    for side in ("width", "height"):
        number, unit = _quantity(f"{where}.{side}", table[side], SIZE_UNITS)
        mm = {"mm": number, "cm": number * 10, "in": number * MM_PER_INCH}.get(unit)
        sizes[side] = (px_to_mm(number, dpi) if mm is None else mm, unit)
    (width_mm, width_unit), (height_mm, height_unit) = sizes["width"], sizes["height"]
    if (width_unit == "px") != (height_unit == "px"):
        raise SpecDataError(f"{where}: give width and height both in px or both in lengths")
    return _Frame(width_mm, height_mm, mm_to_px(width_mm, dpi), mm_to_px(height_mm, dpi), dpi, width_unit == "px")


def _edits(where: str, table: dict[str, Any], sources: dict[str, Source]) -> dict[str, EditPolicy]:
    """The spec's `edits` table: every operation, each with its policy (and source where the
    authority speaks); `apply` follows from "allowed", "forbidden" and "no_authority", and must be
    given for "silent"."""
    missing = [operation for operation in EDIT_OPERATIONS if operation not in table]
    if missing:
        raise SpecDataError(f"{where}: missing {', '.join(missing)} (every operation says allowed, forbidden, silent "
                            "or no_authority)")
    edits = {}
    for operation in EDIT_OPERATIONS:
        entry = table[operation]
        here = f"{where}.{operation}"
        policy = entry.get("policy")
        if policy not in POLICIES:
            raise SpecDataError(f"{here}.policy: must be one of {', '.join(POLICIES)}, not {policy!r}")
        implied = {"allowed": True, "forbidden": False, "no_authority": True}.get(policy)
        apply = entry.get("apply", implied)
        if not isinstance(apply, bool):
            raise SpecDataError(f"{here}: a silent policy says apply = true or false (what a careful studio does)")
        if implied is not None and apply != implied:
            raise SpecDataError(f"{here}: an {policy} edit is {'always' if implied else 'never'} applied; drop apply")
        key = entry.get("source")
        source = None if key is None else _ref(f"{here}.source", key, sources)
        if operation == UNAVOIDABLE_EDIT and policy == "forbidden" and not entry.get("instead"):
            raise SpecDataError(f"{here}: a forbidden {operation} (the edit no formatter can avoid) says what to do "
                                "instead (instead = \"...\", the authority's own route)")
        try:
            edits[operation] = EditPolicy(operation, policy, apply, source=source, source_key=key,
                                          note=entry.get("note", ""), instead=entry.get("instead", ""))
        except ValueError as error:
            raise SpecDataError(f"{here}: {str(error).removeprefix(f'{operation}: ')}") from None
    return edits


def _kb(where: str, text: object) -> int:
    number, unit = _quantity(where, text, tuple(FILE_UNITS))
    kb = number * FILE_UNITS[unit]
    if kb != int(kb):
        raise SpecDataError(f"{where}: {text!r} is not a whole number of KB")
    return int(kb)


def _pair(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


def _spec(spec_id: str, file: str, table: dict[str, Any], sources: dict[str, Source]) -> PhotoSpec:
    where = f"{file}: specs.{spec_id}"
    missing = [key for key in (*REQUIRED_SPEC_KEYS, "head_height") if key not in table]
    if missing:
        raise SpecDataError(f"{where}: missing {', '.join(missing)}")
    for key in ("name", "citation"):
        if not (isinstance(table[key], str) and table[key].strip()):
            raise SpecDataError(f"{where}.{key}: must be a non-empty string")
    if not isinstance(table["backgrounds"], list):
        raise SpecDataError(f"{where}.backgrounds: must be a list of colour names")
    frame = _frame(where, table)
    bands = {name: _band(f"{where}.{name}", name, table[name], frame, sources) for name in RULE_NAMES if name in table}
    pose = dict(table.get("pose", {}))
    if pose:
        pose["pose_source"] = _ref(f"{where}.pose.source", pose.pop("source", None), sources)
    file_rules = {
        "min_px": _pair(table.get("min_px")),
        "max_px": _pair(table.get("max_px")),
        "min_kb": None if "min_file_size" not in table else _kb(f"{where}.min_file_size", table["min_file_size"]),
        "max_kb": None if "max_file_size" not in table else _kb(f"{where}.max_file_size", table["max_file_size"]),
        "file_source": _ref(f"{where}.file_source", table["file_source"], sources) if "file_source" in table else None,
    }
    size_source = _ref(f"{where}.size_source", table["size_source"], sources)
    if "expression_source" not in table:
        raise SpecDataError(f"{where}: missing expression_source (the authority's words on the expression, or a "
                            f"source titled {DEFAULT_PREFIX!r} saying none were found)")
    expression_source = _ref(f"{where}.expression_source", table["expression_source"], sources)
    if "edits" not in table:
        raise SpecDataError(f"{where}: missing edits (what its authority says of each edit: {', '.join(EDIT_OPERATIONS)})")
    edits = _edits(f"{where}.edits", table["edits"], sources)
    attire: dict[str, Any] = {}
    if "covering_source" in table:
        attire["covering_source"] = _ref(f"{where}.covering_source", table["covering_source"], sources)
    if "glasses" in table:
        attire["glasses"] = table["glasses"]
        attire["glasses_source"] = _ref(f"{where}.glasses_source", table.get("glasses_source"), sources)
    if "crown_source" in table:
        pose = {**pose, "crown_source": _ref(f"{where}.crown_source", table["crown_source"], sources)}
    try:
        rules = Rules(
            **bands,  # type: ignore[arg-type]
            crown=table.get("crown", "unstated"),
            head_width_of=table.get("head_width_of", "face"),
            mouth_closed=table.get("mouth_closed", True),
            **pose,
        )
        eye = rules.eye_line
        return PhotoSpec(
            id=spec_id,
            name=table["name"],
            country=table["country"],
            width_mm=frame.width_mm,
            height_mm=frame.height_mm,
            dpi=frame.dpi,
            width_px=frame.width_px,
            height_px=frame.height_px,
            head_height=_fractions(rules.head_height, frame.height_mm),
            eye_line=None if eye is None else _fractions(eye, frame.height_mm),
            backgrounds=tuple(table["backgrounds"]),
            source=table["citation"],
            rules=rules,
            size_source=size_source,
            expression_source=expression_source,
            edits=edits,
            **attire,
            **file_rules,  # type: ignore[arg-type]
        )
    except (ValueError, TypeError) as error:  # PhotoSpec's own messages start with the id
        raise SpecDataError(f"{where}: {str(error).removeprefix(f'{spec_id}: ')}") from None


def _fractions(band: Band, height_mm: float) -> tuple[float, float]:
    """A closed band's ends as fractions of `height_mm`, rounded to 4 places."""
    return (round(band.low / height_mm, 4), round(band.high / height_mm, 4))  # type: ignore[operator]


def _order(path: Path, specs: dict[str, PhotoSpec]) -> list[str]:
    order = _read(path).get("specs")
    if not (isinstance(order, list) and all(isinstance(spec_id, str) for spec_id in order)):
        raise SpecDataError(f"{path.name}: needs specs = [...], the spec ids in order")
    repeated = sorted({spec_id for spec_id in order if order.count(spec_id) > 1})
    unknown = [spec_id for spec_id in order if spec_id not in specs]
    missing = [spec_id for spec_id in specs if spec_id not in order]
    for problem, ids in (("listed more than once", repeated), ("not defined in any file", unknown)):
        if ids:
            raise SpecDataError(f"{path.name}: {', '.join(ids)}: {problem}")
    if missing:
        raise SpecDataError(f"{path.name}: {', '.join(missing)}: not listed (add each id where the list shows it)")
    return order


def _aliases(raw_specs: _Raw, specs: dict[str, PhotoSpec]) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for spec_id, (file, table) in raw_specs.items():
        names = table.get("aliases", [])
        where = f"{file}: specs.{spec_id}.aliases"
        if not (isinstance(names, list) and all(isinstance(name, str) for name in names)):
            raise SpecDataError(f"{where}: must be a list of ids")
        for name in names:
            if name in specs or name in aliases:
                raise SpecDataError(f"{where}: {name!r} is already a spec id or another spec's alias")
            aliases[name] = spec_id
    return aliases
