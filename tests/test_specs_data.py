"""The spec data files (app/specs/data/*.toml) against their own quotes, and no entry twice.

What "a rule quoted in a source is in the data" means here:
- every source is used by at least one spec (a band or one of its ends, the size, the file
  rules or the pose): a source nothing uses holds words no rule applies;
- every number a band or a file rule gives, written as in the data (in the authority's unit:
  "1 3/8 in", "3,2 cm", "70 %", "207 px", "10 MB"), stands in the quote of the source behind it,
  as a whole number (not part of a longer one), and the quote names that unit. Rules of ours
  (a "pilotlight default:" source) are held to the same: their quote gives our number.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from app.specs import DATA_DIR, SOURCES, SPECS, TABLE, SpecTable, load_table
from app.specs.loader import FILE_UNITS, RULE_NAMES
from tests.support.spec_files import edits_toml, source_toml, spec_toml, write_table

LABELS = ("id", "name", "source")  # PhotoSpec.to_dict() keys that only label a spec
LABEL_KEYS = ("name", "citation")  # the same labels as the data files write them

# How a quote may name each unit, in the languages of the sources.
UNIT_WORDS: dict[str, str] = {
    "mm": r"mm|мм|millimet|milímetro",
    "cm": r"cm",
    "in": r"inch|\d in\b",
    "%": r"%|pct|Prozent|percent",
    "px": r"px|pixel|像素|പിക്സൽ",
    "KB": r"KB|kB|kb|K字节",
    "MB": r"MB",
}


def _number_in(number: str, quote: str) -> bool:
    """`number` as written ("32", "3,2", "1 3/8") stands in `quote`, not inside a longer number."""
    return re.search(rf"(?<![\d.,/]){re.escape(number)}(?![\d/]|[.,]\d)", quote) is not None


def _claims(table: SpecTable) -> list[tuple[str, str, str, str]]:
    """(where, number as written, unit, source key) for every number the data gives."""
    claims: list[tuple[str, str, str, str]] = []
    for spec_id, entry in table.entries.items():
        for rule in RULE_NAMES:
            band = entry.get(rule)
            if band is None:
                continue
            for end in ("low", "high", "nominal", "tolerance"):
                if end in band:
                    number, unit = band[end].rsplit(" ", 1)
                    source = band.get(f"{end}_source", band["source"])
                    claims.append((f"{spec_id}.{rule}.{end}", number, unit, source))
        for key in ("min_px", "max_px"):
            for value in entry.get(key, []):
                claims.append((f"{spec_id}.{key}", str(value), "px", entry["file_source"]))
        for key in ("min_file_size", "max_file_size"):
            if key in entry:
                number, unit = entry[key].rsplit(" ", 1)
                claims.append(
                    (f"{spec_id}.{key}", number, unit.upper() if unit == "kB" else unit, entry["file_source"])
                )
    return claims


def _unused_sources(table: SpecTable) -> list[str]:
    used: set[str] = set()
    for entry in table.entries.values():
        used.update(entry[key] for key in ("size_source", "file_source", "expression_source", "covering_source",
                                               "glasses_source", "crown_source") if key in entry)
        used.update(policy["source"] for policy in entry.get("edits", {}).values() if "source" in policy)
        if "pose" in entry:
            used.add(entry["pose"]["source"])
        for rule in RULE_NAMES:
            band = entry.get(rule, {})
            used.update(band[key] for key in ("source", "low_source", "high_source") if key in band)
    return sorted(set(table.sources) - used)


def _unquoted(table: SpecTable) -> list[str]:
    """Each number whose source's quote does not give it, or does not name its unit."""
    wrong = []
    for where, number, unit, key in _claims(table):
        quote = table.sources[key].quote
        if not _number_in(number, quote):
            wrong.append(f"{where}: {number} {unit} is not in sources.{key}: {quote!r}")
        elif not re.search(UNIT_WORDS[unit], quote):
            wrong.append(f"{where}: sources.{key} does not name the unit {unit!r}: {quote!r}")
    return wrong


def test_every_source_is_used_by_a_spec() -> None:
    unused = _unused_sources(TABLE)
    assert not unused, "sources no spec uses (their words are in no rule):\n" + "\n".join(
        f"{TABLE.files[key]}: sources.{key}: {SOURCES[key].quote!r}" for key in unused
    )


def test_every_number_stands_in_its_quote_with_its_unit() -> None:
    claims = _claims(TABLE)
    assert len(claims) > 150  # every band end and file rule of 40 specs
    assert {unit for _, _, unit, _ in claims} == {"mm", "cm", "in", "%", "px", *FILE_UNITS} - {"kB"}
    wrong = _unquoted(TABLE)
    assert not wrong, "numbers their quotes do not give:\n" + "\n".join(wrong)


def test_the_checks_catch_an_unused_source_and_a_number_the_quote_lacks(tmp_path: Path) -> None:
    write_table(
        tmp_path,
        source_toml("head", "between 32 and 36 mm"),
        source_toml("size", "45 mm x 35 mm"),
        source_toml("spare", "the eyes 20-30 mm above the bottom edge"),
        source_toml("eyes", "the eye line between 20 and 30 from the bottom"),
        spec_toml("x", size="size", expression="head", head="head", head_band=("31 mm", "36 mm"),
                  more='eye_line = { low = "20 mm", high = "30 mm", source = "eyes" }\n'),
        edits_toml("x", {"crop_scale": '{ policy = "allowed", source = "size" }'}
                   | {operation: '{ policy = "no_authority" }' for operation in ("level", "replace_background", "extend_canvas", "adjust_tone")}),
        specs=("x",),
    )
    table = load_table(tmp_path)
    assert _unused_sources(table) == ["spare"]
    assert _unquoted(table) == [
        "x.head_height.low: 31 mm is not in sources.head: 'between 32 and 36 mm'",
        "x.eye_line.low: sources.eyes does not name the unit 'mm': 'the eye line between 20 and 30 from the bottom'",
        "x.eye_line.high: sources.eyes does not name the unit 'mm': 'the eye line between 20 and 30 from the bottom'",
    ]


@pytest.mark.parametrize(
    ("number", "quote", "found"),
    [
        ("1 3/8", "between 1 -1 3/8 inches", True),
        ("1", "between 1 -1 3/8 inches", True),
        ("3,2", "entre 3,2 et 3,6 cm", True),
        ("3", "entre 3,2 et 3,6 cm", False),
        ("2", "between 32 and 36 mm", False),
        ("32", "between 32 and 36 mm", True),
        ("1-3/8", "between 1-1/8 inches to 1-3", False),
        ("207", "臉部寬207像素±14像素", True),
    ],
)
def test_the_number_check_itself(number: str, quote: str, found: bool) -> None:
    assert _number_in(number, quote) is found


def _content(spec_id: str) -> dict[str, Any]:
    """What a spec makes and checks, and the words it cites: everything but its labels."""
    described = SPECS[spec_id].to_dict()
    return {key: value for key, value in described.items() if key not in LABELS}


def _written(spec_id: str) -> dict[str, Any]:
    """The spec's table as its file writes it (before `extends` is applied)."""
    with (DATA_DIR / TABLE.files[spec_id]).open("rb") as stream:
        return tomllib.load(stream)["specs"][spec_id]


def _relabels(variant: str, base: str) -> bool:
    """`variant` is declared as the same photo as `base` under another document's name."""
    written = _written(variant)
    return written.get("extends") == base and set(written) <= {"extends", *LABEL_KEYS}


def test_no_two_specs_are_identical() -> None:
    """Two specs that differ only in id, name and short citation make the same photo, check it
    against the same rules and cite the same words. That is allowed only where the data says so:
    one extends the other and changes nothing but those labels (the German ID card takes the
    passport's photo). Anything else is the same entry twice: merge them, or say which is which."""
    same = [
        (a, b)
        for a, b in itertools.combinations(SPECS, 2)
        if _content(a) == _content(b) and not (_relabels(a, b) or _relabels(b, a))
    ]
    assert not same, f"identical specs: {same}"


def test_the_identical_check_sees_a_copy() -> None:
    """A spec written out twice is caught; the declared relabel is not a copy."""
    copy = dataclasses.replace(SPECS["icao"], id="icao-copy", name="Another name", source="another citation")
    described = copy.to_dict()
    assert {key: value for key, value in described.items() if key not in LABELS} == _content("icao")
    assert _content("de-id-card") == _content("de-passport") and _relabels("de-id-card", "de-passport")
    assert not _relabels("us-dv-lottery", "us-visa")  # a variant that changes rules is not a relabel
    assert _content("us-dv-lottery") != _content("us-visa")


def test_no_two_sources_are_identical() -> None:
    same = [(a, b) for a, b in itertools.combinations(SOURCES, 2) if SOURCES[a] == SOURCES[b]]
    assert not same, f"sources defined twice: {same}"
