"""Photo specifications for passport, visa, ID and résumé photos, kept as data.

The specs and their sources live in `app/specs/data/*.toml`, one file per country or family,
every bound in the authority's unit with its verbatim words and address (the format:
`app/specs/loader.py`). They are read once, at import, into the frozen dataclasses of
`app/specs/model.py` (`rules.py`: sources and rules; `edits.py`: edit policies), which
validate them; `SPECS` is the table in the order of
`data/order.toml`.
"""

from __future__ import annotations

from pathlib import Path

from .loader import SpecDataError, SpecTable, load_table
from .edits import EDIT_OPERATIONS, KEEP_BACKGROUND, OPERATION_WORDS, Edit, EditPolicy
from .model import (
    BACKGROUND_COLOURS,
    MAX_DPI,
    MAX_SIDE_PX,
    MIN_DPI,
    MM_PER_INCH,
    PhotoSpec,
    custom_spec,
    mm_to_px,
    parse_background,
    parse_colour,
    px_to_mm,
)
from .rules import DEFAULT_PREFIX, HORIZONTAL_RULES, ISO_POSE, PILOTLIGHT_URL, VERTICAL_RULES, Band, Rules, Source

__all__ = [
    "BACKGROUND_COLOURS",
    "DATA_DIR",
    "DEFAULT_PREFIX",
    "EDIT_OPERATIONS",
    "HORIZONTAL_RULES",
    "KEEP_BACKGROUND",
    "OPERATION_WORDS",
    "ISO_POSE",
    "MAX_DPI",
    "MAX_SIDE_PX",
    "MIN_DPI",
    "MM_PER_INCH",
    "PILOTLIGHT_URL",
    "SOURCES",
    "SPECS",
    "TABLE",
    "VERTICAL_RULES",
    "Band",
    "Edit",
    "EditPolicy",
    "PhotoSpec",
    "Rules",
    "Source",
    "SpecDataError",
    "SpecTable",
    "custom_spec",
    "get_spec",
    "load_table",
    "mm_to_px",
    "parse_background",
    "parse_colour",
    "px_to_mm",
]

DATA_DIR = Path(__file__).parent / "data"
TABLE: SpecTable = load_table(DATA_DIR)
SPECS: dict[str, PhotoSpec] = TABLE.specs
SOURCES: dict[str, Source] = TABLE.sources


def get_spec(spec_id: str) -> PhotoSpec:
    """The spec with this id or alias (case-insensitive, '_' accepted for '-').

    Raises KeyError listing the known ids; the requested value is not echoed back.
    """
    if isinstance(spec_id, str):
        key = spec_id.strip().lower().replace("_", "-")
        spec = SPECS.get(TABLE.aliases.get(key, key))
        if spec is not None:
            return spec
    raise KeyError(f"unknown photo spec; known specs: {', '.join(SPECS)}")
