"""The fetch command: sources in order, sha256 verification, atomic replacement, idempotence."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from app.models import __main__ as cli
from app.models.fetch import FetchError, fetch, inspect
from app.models.manifest import MANIFEST, ModelSpec, Role, UrlSource, get_spec

PAYLOAD = b"pretend this is an onnx model " * 1000


def spec_for(*sources: UrlSource, payload: bytes = PAYLOAD) -> ModelSpec:
    return ModelSpec(
        name="tiny",
        role=Role.SEGMENTATION,
        family="rembg",
        filename="tiny.onnx",
        size=len(payload),
        sha256=hashlib.sha256(payload).hexdigest(),
        licence="test",
        sources=sources,
        description="test model",
    )


@pytest.fixture()
def upstream(tmp_path: Path) -> dict[str, UrlSource]:
    good = tmp_path / "good.onnx"
    good.write_bytes(PAYLOAD)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(PAYLOAD[:-1] + b"X")
    return {
        "good": UrlSource(good.as_uri()),
        "bad": UrlSource(bad.as_uri()),
        "missing": UrlSource((tmp_path / "nope.onnx").as_uri()),
    }


def test_falls_through_to_a_source_with_the_right_checksum(tmp_path: Path, upstream: dict[str, UrlSource]) -> None:
    home = tmp_path / "home"
    spec = spec_for(upstream["missing"], upstream["bad"], upstream["good"])
    path = fetch(spec, home, progress=False)
    assert path.read_bytes() == PAYLOAD and inspect(spec, home).ok
    assert [p.name for p in home.iterdir()] == ["tiny.onnx"], "no temporary files left behind"


def test_a_right_file_is_left_alone(tmp_path: Path, upstream: dict[str, UrlSource]) -> None:
    home = tmp_path / "home"
    spec = spec_for(upstream["good"])
    path = fetch(spec, home, progress=False)
    os.utime(path, (1, 1))
    fetch(spec_for(upstream["missing"]), home, progress=False)  # would fail if it tried to download
    assert path.stat().st_mtime == 1


def test_a_corrupt_file_is_detected_and_replaced(tmp_path: Path, upstream: dict[str, UrlSource]) -> None:
    home = tmp_path / "home"
    home.mkdir()
    spec = spec_for(upstream["good"])
    (home / "tiny.onnx").write_bytes(PAYLOAD[:-1] + b"Z")  # right size, wrong content
    assert inspect(spec, home).status == "corrupt (sha256 mismatch)"
    assert inspect(spec, home, verify_hash=False).ok  # the cheap start-up check cannot see it
    fetch(spec, home, progress=False)
    assert (home / "tiny.onnx").read_bytes() == PAYLOAD
    (home / "tiny.onnx").write_bytes(PAYLOAD[:100])  # partial download
    assert inspect(spec, home).status == "wrong size"
    fetch(spec, home, progress=False)
    assert inspect(spec, home).ok


def test_failure_names_every_source_and_keeps_the_old_file(tmp_path: Path, upstream: dict[str, UrlSource]) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "tiny.onnx").write_bytes(b"old")
    spec = spec_for(upstream["missing"], upstream["bad"])
    with pytest.raises(FetchError) as info:
        fetch(spec, home, progress=False)
    message = str(info.value)
    assert "nope.onnx" in message and "bad.onnx" in message and "sha256" in message
    assert (home / "tiny.onnx").read_bytes() == b"old"
    assert [p.name for p in home.iterdir()] == ["tiny.onnx"]


def test_manifest_entries_are_complete() -> None:
    for name, spec in MANIFEST.items():
        known = spec.pinned or spec.published  # insightface's weights: published, not verified here
        assert known is not None and len(known.sha256) == 64 and known.size > 0, name
        assert spec.name == name and spec.sources and spec.licence
    with pytest.raises(KeyError, match="known models"):
        get_spec("../../etc/passwd")


def test_cli_list_and_unknown_name(monkeypatch: pytest.MonkeyPatch, model_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MODEL_HOME", str(model_home))
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "u2net " in out and "ok" in out
    assert cli.main(["fetch", "no-such-model"]) == 2
    assert cli.main(["ensure", "u2netp"]) == 0


def test_a_download_larger_than_its_model_is_cut_off_before_it_is_hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """file:// answers carry a Content-Length; the cap also holds for a stream without one."""
    from app.models import fetch as fetching

    huge = tmp_path / "huge.onnx"
    huge.write_bytes(PAYLOAD * 3)  # three times what the pinned size allows
    spec = spec_for(UrlSource(huge.as_uri()))
    hashed: list[Path] = []
    monkeypatch.setattr(fetching, "sha256_of", lambda path: hashed.append(path) or "0" * 64)
    with pytest.raises(FetchError, match="at most"):
        fetch(spec, tmp_path / "home", progress=False)
    assert hashed == [] and not (tmp_path / "home" / "tiny.onnx").exists()
    # without a Content-Length: the copy itself stops at the limit
    import io

    with pytest.raises(OSError, match="refused"):
        fetching._copy_with_progress(io.BytesIO(b"x" * 5000), io.BytesIO(), total=None, label="stream", progress=False, limit=4096)
