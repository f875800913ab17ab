"""Issue 45: every source says what kind it is (primary, copy, secondary, none), and
`python -m app.specs --sources` counts them per spec."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.specs import SOURCES, SPECS, SpecDataError, load_table
from app.specs.__main__ import main
from app.specs.rules import DEFAULT_PREFIX, SOURCE_KINDS, Source
from app.specs.provenance import cited_sources, kind_counts, sources_table
from tests.support.spec_files import edits_toml, source_toml, spec_toml, write_table

# words in a title that say the text was read somewhere other than the authority's own page
NOT_THE_AUTHORITYS_PAGE = re.compile(r"reproduced|mirror|as quoted by|as recorded by|third-party|forum|copy|"
                                     r"blog|news|relay", re.IGNORECASE)


@pytest.mark.parametrize("key", sorted(SOURCES))
def test_every_source_has_a_kind_and_says_it_honestly(key: str) -> None:
    source = SOURCES[key]
    assert source.kind in SOURCE_KINDS
    assert (source.kind == "none") == source.title.startswith(DEFAULT_PREFIX)
    if source.kind == "primary":
        assert not NOT_THE_AUTHORITYS_PAGE.search(source.title), f"{key}: a primary source read elsewhere?"


def test_a_source_refuses_an_unknown_kind_and_a_default_that_is_not_none() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        Source(title="t", url="https://example.org", quote="q", kind="official")
    with pytest.raises(ValueError, match="'none' exactly"):
        Source(title=f"{DEFAULT_PREFIX} ours", url="https://example.org", quote="q", kind="primary")
    with pytest.raises(ValueError, match="'none' exactly"):
        Source(title="Authority", url="https://example.org", quote="q", kind="none")


SPEC = "\n".join([
    source_toml("own", "The face is 32 to 36 mm high.", title="X ministry, photo rules", url="https://x.example/photo"),
    source_toml("own-edits", "Photos must not be altered.", extends="own"),
    source_toml("relay", "35 x 45 mm.", title="X city hall, relaying the ministry's rules", url="https://city.x.example/photo",
                kind="copy"),
    source_toml("blog", "Mouth closed.", title="A photographer's page on X's rules", url="https://blog.example/x", kind="secondary"),
    spec_toml("x-passport", size="relay", expression="blog", head="own"),
    edits_toml("x-passport", {
        "crop_scale": '{ policy = "silent", apply = true, note = "nothing found" }',
        "level": '{ policy = "silent", apply = false, note = "nothing found" }',
        "replace_background": '{ policy = "forbidden", source = "own-edits" }',
        "extend_canvas": '{ policy = "forbidden", source = "own-edits" }',
        "adjust_tone": '{ policy = "silent", source = "blog", apply = false, note = "its general words" }',
    }),
])


def test_the_counts_per_kind(tmp_path: Path) -> None:
    """primary: own, own-edits (inherits the kind); copy: relay; secondary: blog (cited twice,
    counted once); none: the ISO pose tolerance, our words on hats and on glasses (no authority's
    found: `rules.NO_COVERING_WORDS`, `NO_GLASSES_WORDS`) and the two edits that rest on no source."""
    spec = load_table(write_table(tmp_path, SPEC)).specs["x-passport"]
    assert len(cited_sources(spec)) == 7
    assert kind_counts(spec) == {"primary": 2, "copy": 1, "secondary": 1, "none": 5}
    table = sources_table([spec, spec]).splitlines()
    assert table[0].split() == ["spec", *SOURCE_KINDS]
    assert table[2].split() == ["x-passport", "2", "1", "1", "5"]
    assert table[-1].split() == ["total", "4", "2", "2", "10"]


def test_the_loader_refuses_a_source_without_its_kind(tmp_path: Path) -> None:
    with pytest.raises(SpecDataError, match=r"sources\.relay: missing kind"):
        load_table(write_table(tmp_path, SPEC.replace('kind = "copy"\n', "")))
    with pytest.raises(SpecDataError, match=r"sources\.relay: Source\.kind must be one of"):
        load_table(write_table(tmp_path, SPEC.replace('kind = "copy"', 'kind = "official"')))


def test_the_command_prints_every_spec_and_the_totals(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sources"]) == 0
    rows = {line.split()[0]: [int(n) for n in line.split()[1:]] for line in capsys.readouterr().out.splitlines()
            if line and line[0].isalnum() and not line.startswith("spec")}
    assert set(rows) == {*SPECS, "total"}
    assert rows["total"] == [sum(rows[spec_id][i] for spec_id in SPECS) for i in range(len(SOURCE_KINDS))]
    for spec_id, spec in SPECS.items():
        assert rows[spec_id] == [kind_counts(spec)[kind] for kind in SOURCE_KINDS]
    assert main([]) == 2


@pytest.mark.parametrize(("spec_id", "cited", "address", "kind"), [
    ("us-visa", "expression", "https://travel.state.gov/content/travel/en/us-visas/", "primary"),
    ("us-visa", "adjust_tone", "https://fam.state.gov/fam/09FAM/09FAM030306.html", "primary"),
    ("us-visa", "replace_background", "https://abudhabi.usembassy.gov/", "primary"),
    ("us-passport", "replace_background", "https://docmgmt.miamibeachfl.gov/", "copy"),
    ("uk-passport", "expression", "https://gov.tc/", "copy"),
    ("uk-passport", "adjust_tone", "https://gov.tc/", "copy"),
    ("ca-passport", "expression", "https://www.canada.ca/", "primary"),
    ("ca-visa", "crop_scale", "https://www.canada.ca/", "primary"),
    ("ca-visa", "adjust_tone", "https://fr.scribd.com/", "copy"),
    ("au-passport", "adjust_tone", "https://www.passports.gov.au/", "primary"),
    ("de-passport", "expression", "https://www.gesetze-im-internet.de/passv_2007/anlage_8.html", "primary"),
    ("de-passport", "adjust_tone", "https://www.gesetze-im-internet.de/passv_2007/anlage_8.html", "primary"),
])
def test_where_an_official_page_was_found_the_spec_cites_it(spec_id: str, cited: str, address: str, kind: str) -> None:
    spec = SPECS[spec_id]
    source = spec.expression_source if cited == "expression" else spec.edit(cited).source
    assert source is not None and source.url.startswith(address) and source.kind == kind, source
