"""The page's WebAssembly runtime from an npm tarball: `npm pack`, the tarball's integrity (sha512),
each file's sha256, atomic install, idempotence. A stand-in `npm` on PATH hands over a tarball made
here, so nothing touches the network."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest

from app.models.fetch import FetchError, fetch_npm, inspect_npm
from app.models.manifest import WEB_RUNTIME, Checksum, NpmFiles

FILES = {"package/dist/ort.tiny.mjs": b"export const x = 1;\n", "package/dist/ort-tiny.wasm": b"\0asm" + b"w" * 5000}


def tarball(path: Path, files: dict[str, bytes]) -> bytes:
    with tarfile.open(path, "w:gz") as archive:
        for name, body in {**files, "package/README.md": b"readme"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    return path.read_bytes()


def pin_for(tgz: bytes, files: dict[str, bytes] = FILES) -> NpmFiles:
    return NpmFiles(
        name="web-runtime", package="tiny-runtime", version="1.0.0",
        integrity="sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode(),
        files={name: Checksum(hashlib.sha256(body).hexdigest(), len(body)) for name, body in files.items()},
        licence="test", description="test runtime",
    )


@pytest.fixture()
def fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An `npm` whose `pack` copies $FAKE_TGZ into --pack-destination; it logs each call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "npm"
    script.write_text(
        '#!/bin/sh\necho "$@" >> "$FAKE_NPM_LOG"\n'
        'while [ $# -gt 0 ]; do [ "$1" = --pack-destination ] && dest=$2; shift; done\n'
        'cp "$FAKE_TGZ" "$dest/tiny-runtime-1.0.0.tgz"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NPM_LOG", str(tmp_path / "npm.log"))
    return tmp_path / "npm.log"


def test_installs_the_pinned_files_once(tmp_path: Path, fake_npm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tgz = tmp_path / "runtime.tgz"
    pin = pin_for(tarball(tgz, FILES))
    monkeypatch.setenv("FAKE_TGZ", str(tgz))
    home = tmp_path / "models"
    assert inspect_npm(pin, home).status == "missing"
    folder = fetch_npm(pin, home, progress=False)
    assert folder == home / "web" / "tiny-runtime-1.0.0"
    assert sorted(path.name for path in folder.iterdir()) == ["ort-tiny.wasm", "ort.tiny.mjs"]  # only the pinned files
    assert (folder / "ort-tiny.wasm").read_bytes() == FILES["package/dist/ort-tiny.wasm"]
    assert inspect_npm(pin, home).ok
    assert fake_npm.read_text().splitlines()[0].startswith("pack tiny-runtime@1.0.0 --pack-destination")
    fetch_npm(pin, home, progress=False)  # already right: npm is not called again
    assert len(fake_npm.read_text().splitlines()) == 1


def test_a_tarball_with_another_integrity_installs_nothing(tmp_path: Path, fake_npm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pin = pin_for(tarball(tmp_path / "pinned.tgz", FILES))
    tarball(tmp_path / "other.tgz", {**FILES, "package/dist/extra.js": b"1"})
    monkeypatch.setenv("FAKE_TGZ", str(tmp_path / "other.tgz"))
    with pytest.raises(FetchError, match="integrity"):
        fetch_npm(pin, tmp_path / "models", progress=False)
    assert not (tmp_path / "models" / pin.folder / "ort.tiny.mjs").exists()


def test_a_file_with_another_sha256_installs_nothing(tmp_path: Path, fake_npm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tgz = tmp_path / "runtime.tgz"
    changed = {**FILES, "package/dist/ort-tiny.wasm": b"\0asm" + b"x" * 5000}
    pin = pin_for(tarball(tgz, changed), files=FILES)  # the tarball is as pinned, one member is not
    monkeypatch.setenv("FAKE_TGZ", str(tgz))
    with pytest.raises(FetchError, match="ort-tiny.wasm has sha256"):
        fetch_npm(pin, tmp_path / "models", progress=False)
    assert not any((tmp_path / "models" / pin.folder).iterdir())


def test_the_web_runtime_pin_is_complete() -> None:
    assert WEB_RUNTIME.integrity.startswith("sha512-") and len(base64.b64decode(WEB_RUNTIME.integrity[7:])) == 64
    names = sorted(Path(member).name for member in WEB_RUNTIME.files)
    assert names == ["ort-wasm-simd-threaded.wasm", "ort.wasm.bundle.min.mjs"]
    assert all(len(checksum.sha256) == 64 and checksum.size > 0 for checksum in WEB_RUNTIME.files.values())
