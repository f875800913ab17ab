"""`python -m app idphoto`: the same pipeline without a server, failures reported per file."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.__main__ import main


def test_batch_writes_one_photo_per_input_and_reports_failures(
    tmp_path: Path, model_home: Path, astronaut: np.ndarray, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MODEL_HOME", str(model_home))
    monkeypatch.setenv("MODELS", "u2netp,centerface")
    monkeypatch.setenv("SEGMENTATION_MODEL", "u2netp")
    good = tmp_path / "me.png"
    Image.fromarray(astronaut).save(good)
    bad = tmp_path / "notes.jpg"
    bad.write_text("not a photo")
    out = tmp_path / "out"
    with caplog.at_level(logging.INFO, logger="app"):
        code = main(["idphoto", str(good), str(bad), str(tmp_path / "missing.jpg"), "--spec", "us-passport", "--out", str(out), "--sheet", "4x6"])
    assert code == 1
    with Image.open(out / "me-us-passport-600x600.jpg") as photo:
        assert photo.size == (600, 600) and round(photo.info["dpi"][0]) == 300
    with Image.open(out / "me-us-passport-sheet-4x6-2x.jpg") as sheet:
        assert sheet.size in ((1200, 1800), (1800, 1200))
    assert sorted(p.name for p in out.iterdir()) == ["me-us-passport-600x600.jpg", "me-us-passport-sheet-4x6-2x.jpg"]
    assert "FAILED  " + str(bad) in caplog.text and "missing.jpg" in caplog.text and "1 of 3 done" in caplog.text


def test_unknown_spec_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["idphoto", str(tmp_path / "x.jpg"), "--spec", "moon-passport", "--out", str(tmp_path)]) == 2
