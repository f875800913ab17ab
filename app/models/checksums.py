"""Which checksum an installed model file must match, and the record kept for files not pinned.

The manifest pins most models (`ModelSpec.pinned`). A file installed against any other checksum
(a published one, or one the user gave to `add` / `fetch --sha256`) gets a record beside it,
`<filename>.checksum.json` = `{"sha256": ..., "size": ..., "source": ...}`, written only after the
file's sha256 was verified. Start-up checks the size against it, `list --verify` the sha256.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .manifest import Checksum, ModelSpec

RECORD_SUFFIX = ".checksum.json"
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Expected:
    """The checksum a file must match and where that checksum comes from."""

    checksum: Checksum
    origin: str  # "manifest", "recorded at install" or "published"


def normalise_sha256(value: str) -> str:
    """Lower-case 64-digit hex; ValueError otherwise."""
    digest = value.strip().lower()
    if not _HEX64.fullmatch(digest):
        raise ValueError(f"{value!r} is not a sha256 (64 hex digits)")
    return digest


def record_path(spec: ModelSpec, model_home: Path) -> Path:
    return model_home / f"{spec.filename}{RECORD_SUFFIX}"


def read_record(spec: ModelSpec, model_home: Path) -> Checksum | None:
    """The checksum recorded when the file was installed; None when there is no (readable) record."""
    try:
        data = json.loads(record_path(spec, model_home).read_text(encoding="utf-8"))
        return Checksum(normalise_sha256(str(data["sha256"])), int(data["size"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_record(spec: ModelSpec, model_home: Path, checksum: Checksum, *, source: str) -> None:
    """Record `checksum` for the installed file (atomically: a reader sees the old record or the new)."""
    path = record_path(spec, model_home)
    body = json.dumps({"sha256": checksum.sha256, "size": checksum.size, "source": source}, indent=1) + "\n"
    handle, name = tempfile.mkstemp(dir=model_home, prefix=f".{spec.name}-record-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(body)
        os.chmod(name, 0o644)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def remove_record(spec: ModelSpec, model_home: Path) -> None:
    record_path(spec, model_home).unlink(missing_ok=True)


def expected_checksum(spec: ModelSpec, model_home: Path) -> Expected | None:
    """What the installed file must match: the pinned checksum; else the one recorded at install;
    else the published one; None when nothing is known (a file copied in by hand, no record)."""
    if spec.pinned is not None:
        return Expected(spec.pinned, "manifest")
    recorded = read_record(spec, model_home)
    if recorded is not None:
        return Expected(recorded, "recorded at install")
    if spec.published is not None:
        return Expected(spec.published, "published")
    return None


def install_command(spec: ModelSpec) -> str:
    """The command that installs this model."""
    if spec.pinned is not None or spec.published is not None:
        return f"python -m app.models fetch {spec.name}"
    return f"python -m app.models add {spec.name} FILE --sha256 HEX"
