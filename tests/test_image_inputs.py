"""The image's inputs are pinned (issue 34): every wheel by hash, every apt package by version.

The locks (requirements.lock, requirements-nodeps.lock, written by scripts/lock-image-inputs.sh)
must pin exactly what the requirements files pin, each with a sha256, and the Dockerfile must
install from them with --require-hashes and name a version for every apt package it installs.
The build itself (CI builds the image) proves that the hashes and versions resolve.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pins(path: Path) -> list[str]:
    return [line.split("#")[0].strip() for line in path.read_text().splitlines() if line.split("#")[0].strip()]


@pytest.mark.parametrize("source", ["requirements.txt", "requirements-nodeps.txt"])
def test_each_lock_pins_what_its_requirements_file_pins_each_with_a_hash(source: str) -> None:
    lock = ROOT / source.replace(".txt", ".lock")
    text = lock.read_text()
    entries = re.findall(r"^(\S+==\S+) \\\n    --hash=sha256:([0-9a-f]{64})$", text, re.MULTILINE)
    assert [pin for pin, _ in entries] == pins(ROOT / source), f"{lock.name} is stale: run scripts/lock-image-inputs.sh"
    assert len(entries) == len(re.findall(r"==", text)), "every pin carries its hash"


def test_the_dockerfile_installs_only_pinned_inputs() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    installs = re.findall(r"pip install ([^\n]*-r (\S+))", dockerfile)
    assert {lock for _, lock in installs} == {"requirements.lock", "requirements-nodeps.lock"}
    assert all("--require-hashes" in command for command, _ in installs)
    packages = [word for line in re.findall(r"apt-get install -y --no-install-recommends ([^\\\n]+)", dockerfile)
                for word in line.split()]
    assert packages and all(re.fullmatch(r"[a-z0-9.+-]+=[0-9][^ ]*", word) for word in packages), packages
    assert 'org.opencontainers.image.base.name="${BASE_IMAGE}"' in dockerfile  # the build says which base it used
