"""app/specs/loader.py on small data folders: units, extends, aliases, and an error that names the
file and the entry for every kind of mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.specs import MM_PER_INCH, SpecDataError, SpecTable, load_table, mm_to_px, px_to_mm

BASE = """\
[sources.head]
title = "Authority, page"
url = "https://example.org/page"
quote = "between 32 and 36 mm"
kind = "primary"

[sources.size]
extends = "head"
quote = "35 x 45 mm"

[sources.ours]
title = "pilotlight default: authority states no rule"
quote = "our reason"
kind = "none"

[specs.base]
name = "Base"
country = "DE"
width = "35 mm"
height = "45 mm"
dpi = 600
size_source = "size"
backgrounds = ["white"]
citation = "Authority"
expression_source = "ours"
edits = { crop_scale = { policy = "no_authority" }, level = { policy = "no_authority" }, replace_background = { policy = "no_authority" }, extend_canvas = { policy = "no_authority" }, adjust_tone = { policy = "no_authority" } }
head_height = { low = "32 mm", high = "36 mm", source = "head", note = "base note" }
"""


def _folder(tmp_path: Path, files: dict[str, str], order: list[str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "order.toml").write_text("specs = [" + ", ".join(f'"{spec_id}"' for spec_id in order) + "]\n")
    return tmp_path


def _load(tmp_path: Path, extra: str = "", *, order: tuple[str, ...] = ("base",)) -> SpecTable:
    return load_table(_folder(tmp_path, {"de.toml": BASE + extra}, list(order)))


def _load_text(tmp_path: Path, text: str) -> SpecTable:
    return load_table(_folder(tmp_path, {"de.toml": text}, ["base"]))


def _changed(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new)


def _error(tmp_path: Path, files: dict[str, str], order: tuple[str, ...] = ("base",)) -> str:
    with pytest.raises(SpecDataError) as info:
        load_table(_folder(tmp_path, files, list(order)))
    return str(info.value)


def test_a_small_folder_loads(tmp_path: Path) -> None:
    table = _load(tmp_path)
    spec = table.specs["base"]
    assert (spec.width_mm, spec.height_mm, spec.width_px, spec.height_px) == (35, 45, 827, 1063)
    assert (spec.rules.head_height.low, spec.rules.head_height.high) == (32, 36)
    assert spec.head_height == (round(32 / 45, 4), round(36 / 45, 4))
    assert spec.rules.head_height.note == "base note"
    # the size source extends the head source: its title and url, its own quote
    assert spec.size_source is not None and spec.size_source.title == "Authority, page"
    assert (spec.size_source.url, spec.size_source.quote) == ("https://example.org/page", "35 x 45 mm")
    # a rule of ours may leave out its url
    assert table.sources["ours"].is_default and table.sources["ours"].url.startswith("pilotlight:")
    assert table.files == {"head": "de.toml", "size": "de.toml", "ours": "de.toml", "base": "de.toml"}
    assert table.entries["base"]["width"] == "35 mm"  # as written, in the authority's unit


def test_extends_merges_the_variant_over_its_base(tmp_path: Path) -> None:
    variant = """
[specs.variant]
extends = "base"
name = "Variant"
dpi = 300
head_height = { note = "variant note", low_source = "ours" }
"""
    table = _load(tmp_path, variant, order=("variant", "base"))
    assert list(table.specs) == ["variant", "base"]  # order.toml's order
    base, spec = table.specs["base"], table.specs["variant"]
    assert (spec.name, spec.country, spec.backgrounds, spec.source) == ("Variant", "DE", ("white",), "Authority")
    assert (spec.dpi, spec.width_px) == (300, mm_to_px(35, 300))
    head = spec.rules.head_height
    assert (head.low, head.high, head.source, head.note) == (32, 36, base.rules.head_height.source, "variant note")
    assert head.low_source == table.sources["ours"]
    assert base.rules.head_height.note == "base note" and base.rules.head_height.low_source is None


def test_an_alias_answers_for_its_spec_and_is_not_inherited(tmp_path: Path) -> None:
    text = _changed("[specs.base]\n", '[specs.base]\naliases = ["old-id"]\n')
    table = load_table(_folder(tmp_path, {"de.toml": text + '[specs.v]\nextends = "base"\n'}, ["base", "v"]))
    assert table.aliases == {"old-id": "base"}


@pytest.mark.parametrize(
    ("band", "expected"),
    [
        ('{ low = "3,2 cm", high = "3.6 cm" }', (32, 36)),
        ('{ low = "1 in", high = "1 3/8 in" }', (MM_PER_INCH, 1.375 * MM_PER_INCH)),
        ('{ low = "1-1/8 in", high = "1-3/8 in" }', (1.125 * MM_PER_INCH, 1.375 * MM_PER_INCH)),
        ('{ low = "70 %", high = "80 %" }', (0.70 * 45, 0.80 * 45)),  # of the height (45 mm)
        ('{ low = "31.5 mm", high = "80 %" }', (31.5, 36)),  # each end in its own unit
        ('{ low = "700 px", high = "800 px" }', (700 / 1063 * 45, 800 / 1063 * 45)),  # of the file's 1063 px
    ],
)
def test_units_convert_to_millimetres_of_the_print(tmp_path: Path, band: str, expected: tuple[float, float]) -> None:
    text = _changed('head_height = { low = "32 mm", high = "36 mm", ', "head_height = " + band[:-2] + ", ")
    head = _load_text(tmp_path, text).specs["base"].rules.head_height
    assert head.low == pytest.approx(expected[0], abs=1e-12) and head.high == pytest.approx(expected[1], abs=1e-12)


def test_pixels_of_a_file_stated_in_pixels_convert_at_the_dpi(tmp_path: Path) -> None:
    """A size in px is the file at `dpi`; px rules convert at the dpi. A size in mm: px are shares
    of the file's pixel frame (GA 461's 358 x 441 px on a 26 x 32 mm print)."""
    text = _changed('width = "35 mm"\nheight = "45 mm"\ndpi = 600', 'width = "354 px"\nheight = "472 px"\ndpi = 300')
    text += 'crown_margin = { low = "10 px", high = "70 px", source = "head" }\n'
    text += 'head_width = { nominal = "205 px", tolerance = "14 px", source = "head" }\n'
    spec = _load_text(tmp_path, text).specs["base"]
    assert (spec.width_px, spec.height_px) == (354, 472) and spec.height_mm == px_to_mm(472, 300)
    margin, width = spec.rules.crown_margin, spec.rules.head_width
    assert margin is not None and (margin.low, margin.high) == (px_to_mm(10, 300), px_to_mm(70, 300))
    assert width is not None and (width.low, width.high) == (px_to_mm(191, 300), px_to_mm(219, 300))

    text = _changed('width = "35 mm"\nheight = "45 mm"\ndpi = 600', 'width = "26 mm"\nheight = "32 mm"\ndpi = 350')
    text = text.replace('{ low = "32 mm", high = "36 mm",', '{ low = "62 %", high = "78 %",')
    text += 'head_width = { nominal = "207 px", tolerance = "14 px", source = "head" }\n'
    spec = _load_text(tmp_path, text).specs["base"]
    assert (spec.width_px, spec.height_px) == (358, 441)
    assert spec.rules.head_width is not None
    assert (spec.rules.head_width.low, spec.rules.head_width.high) == (193 / 358 * 26, 221 / 358 * 26)


def test_file_rules(tmp_path: Path) -> None:
    text = BASE + 'min_px = [600, 750]\nmin_file_size = "50 KB"\nmax_file_size = "10 MB"\nfile_source = "head"\n'
    spec = _load_text(tmp_path, text).specs["base"]
    assert (spec.min_px, spec.min_kb, spec.max_kb) == ((600, 750), 50, 10 * 1024)
    assert spec.file_source is not None and spec.file_source.url == "https://example.org/page"


HEAD_LINE = 'head_height = { low = "32 mm", high = "36 mm", source = "head", note = "base note" }'


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # an unknown source key
        ('source = "head"', 'source = "nope"', "de.toml: specs.base.head_height.source: unknown source 'nope'"),
        ('size_source = "size"', 'size_source = "sizes"', "de.toml: specs.base.size_source: unknown source 'sizes'"),
        ('extends = "head"', 'extends = "heads"', "de.toml: sources.size: extends 'heads', which is not in sources"),
        # a missing field
        ("dpi = 600\n", "", "de.toml: specs.base: missing dpi"),
        (HEAD_LINE, "", "de.toml: specs.base: missing head_height"),
        ('quote = "our reason"\n', "", "de.toml: sources.ours: missing quote"),
        ('url = "https://example.org/page"\n', "", "de.toml: sources.head: missing url"),
        (', source = "head"', "", "de.toml: specs.base.head_height: missing source"),
        # a wrong unit
        ('low = "32 mm"', 'low = "32 furlongs"', "de.toml: specs.base.head_height.low: unit 'furlongs' is not one of"),
        ('width = "35 mm"', 'width = "35 %"', "de.toml: specs.base.width: unit '%' is not one of mm, cm, in, px"),
        ('width = "35 mm"', 'width = "413 px"', "de.toml: specs.base: give width and height both in px"),
        # a bad value
        ('low = "32 mm"', 'low = "32mm"', "de.toml: specs.base.head_height.low: '32mm' is not a number and a unit"),
        ('low = "32 mm"', "low = 32", "de.toml: specs.base.head_height.low: 32 is not a number and a unit"),
        ('low = "32 mm"', 'low = "40 mm"', "de.toml: specs.base.head_height: Band low 40 is above high 36"),
        ("dpi = 600", "dpi = 0", "de.toml: specs.base.dpi: must be a whole number above 0"),
        ("dpi = 600", "dpi = 10", "de.toml: specs.base: dpi must be an integer between 72 and 1200"),
        ('["white"]', '["mauve"]', "de.toml: specs.base: unknown background name(s): mauve"),
        ('country = "DE"', 'country = "Germany"', "de.toml: specs.base: country must be"),
        ('name = "Base"', 'name = ""', "de.toml: specs.base.name: must be a non-empty string"),
        ('url = "https://example.org/page"', 'url = "example.org"', "de.toml: sources.head: Source.url must be"),
        # a typo in a key or a table
        ('note = "base note"', 'nots = "base note"', "de.toml: specs.base.head_height: unknown key(s) nots"),
        ('width = "35 mm"', 'widht = "35 mm"', "de.toml: specs.base: unknown key(s) widht"),
        ("[specs.base]", "[spec.base]", "de.toml: unknown section 'spec'"),
        ("[specs.base]", "[specs.base", "de.toml: not valid TOML"),
    ],
)
def test_errors_name_the_file_and_the_entry(tmp_path: Path, old: str, new: str, expected: str) -> None:
    assert _error(tmp_path, {"de.toml": _changed(old, new)}).startswith(expected)


def test_file_rule_errors(tmp_path: Path) -> None:
    message = _error(tmp_path, {"de.toml": BASE + 'max_file_size = "3.14 MB"\nfile_source = "head"\n'})
    assert message.startswith("de.toml: specs.base.max_file_size: '3.14 MB' is not a whole number of KB")
    message = _error(tmp_path, {"de.toml": BASE + "min_px = [600, 750]\n"})
    assert message.startswith("de.toml: specs.base: a pixel window or file-size bound needs a file_source")
    message = _error(tmp_path, {"de.toml": BASE + 'max_file_size = "10 GB"\nfile_source = "head"\n'})
    assert message.startswith("de.toml: specs.base.max_file_size: unit 'GB' is not one of KB, kB, MB")


def test_extends_errors(tmp_path: Path) -> None:
    loop = '[specs.a]\nextends = "b"\n[specs.b]\nextends = "a"\n'
    message = _error(tmp_path, {"de.toml": BASE + loop}, ("base", "a", "b"))
    assert message.startswith("de.toml: specs.b: extends itself through a -> b -> a")
    message = _error(tmp_path, {"de.toml": BASE + '[specs.v]\nextends = "bas"\n'}, ("base", "v"))
    assert message.startswith("de.toml: specs.v: extends 'bas', which is not in specs")


def test_each_key_is_defined_once_across_files(tmp_path: Path) -> None:
    other = '[sources.head]\ntitle = "T"\nurl = "https://example.org"\nquote = "q"\nkind = "primary"\n'
    assert _error(tmp_path, {"de.toml": BASE, "fr.toml": other}).startswith(
        "fr.toml: sources.head: already defined in de.toml"
    )
    twice = BASE.split("[specs.base]")[1]
    message = _error(tmp_path, {"de.toml": BASE, "fr.toml": "[specs.base]" + twice})
    assert message.startswith("fr.toml: specs.base: already defined in de.toml")


def test_order_lists_every_spec_once(tmp_path: Path) -> None:
    assert _error(tmp_path, {"de.toml": BASE}, ()).startswith("order.toml: base: not listed")
    assert _error(tmp_path, {"de.toml": BASE}, ("base", "other")).startswith(
        "order.toml: other: not defined in any file"
    )
    assert _error(tmp_path, {"de.toml": BASE}, ("base", "base")).startswith("order.toml: base: listed more than once")


def test_an_alias_must_be_free(tmp_path: Path) -> None:
    text = _changed("[specs.base]\n", '[specs.base]\naliases = ["base"]\n')
    assert _error(tmp_path, {"de.toml": text}).startswith("de.toml: specs.base.aliases: 'base' is already a spec id")


def test_a_source_used_by_another_file_is_found(tmp_path: Path) -> None:
    """Sources are defined once and referred to by key from any file."""
    sources, spec = BASE.split("[specs.base]")
    table = load_table(_folder(tmp_path, {"a.toml": sources, "de.toml": "[specs.base]" + spec}, ["base"]))
    assert table.files["head"] == "a.toml" and table.files["base"] == "de.toml"
    assert table.specs["base"].rules.head_height.source is table.sources["head"]
