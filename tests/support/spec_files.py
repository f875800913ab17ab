"""Small spec tables written as the loader reads them (app/specs/loader.py), for the tests of the
loader's checks: TOML text built from a few parts, and a folder holding it with its order file."""

from __future__ import annotations

from pathlib import Path

from app.specs.loader import ORDER_FILE


def source_toml(key: str, quote: str, *, title: str = "Authority", url: str = "https://example.org",
           kind: str | None = "primary", extends: str | None = None) -> str:
    """One `[sources.KEY]` table (`extends`: only the quote of its own; `kind=None`: no kind line)."""
    if extends is not None:
        return f'[sources.{key}]\nextends = "{extends}"\nquote = "{quote}"\n'
    kind_line = "" if kind is None else f'kind = "{kind}"\n'
    return f'[sources.{key}]\ntitle = "{title}"\nurl = "{url}"\nquote = "{quote}"\n{kind_line}'


def spec_toml(spec_id: str, *, size: str, expression: str, head: str, head_band: tuple[str, str] = ("32 mm", "36 mm"),
         country: str = "DE", more: str = "") -> str:
    """One `[specs.ID]` table of a 35 x 45 mm, 300 dpi spec on white; `size`, `expression` and `head`
    name the sources of its size, its expression rule and its head height band."""
    low, high = head_band
    return (f'[specs.{spec_id}]\nname = "{spec_id.upper()}"\ncountry = "{country}"\nwidth = "35 mm"\nheight = "45 mm"\n'
            f'dpi = 300\nsize_source = "{size}"\nbackgrounds = ["white"]\ncitation = "Authority"\n'
            f'expression_source = "{expression}"\nhead_height = {{ low = "{low}", high = "{high}", source = "{head}" }}\n{more}')


def edits_toml(spec_id: str, policies: dict[str, str]) -> str:
    """`[specs.ID.edits]`: one line per operation, each an inline table's text."""
    return f"[specs.{spec_id}.edits]\n" + "".join(f"{operation} = {entry}\n" for operation, entry in policies.items())


def write_table(folder: Path, *parts: str, specs: tuple[str, ...] = ("x-passport",)) -> Path:
    """`folder` holding the parts as one spec file, and the order file listing `specs`."""
    (folder / ORDER_FILE).write_text("specs = [" + ", ".join(f'"{spec_id}"' for spec_id in specs) + "]\n")
    (folder / "x.toml").write_text("\n".join(parts), encoding="utf-8")
    return folder
