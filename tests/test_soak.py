"""A short soak through the real gunicorn (bench/load.py --soak runs the 2,000-request one): varied
photos (256 px to 20 megapixels, JPEG/PNG/WebP, one with six faces) over cut-outs, ID photos and
print sheets; no 5xx, and PSS at rest (after the idle release) does not keep growing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.load import run_soak
from tests.server import Server

pytestmark = pytest.mark.server


def test_a_short_soak_has_no_5xx_and_memory_at_rest_stays_flat(model_home: Path, tmp_path: Path) -> None:
    server = Server(
        env={
            "WORKERS": "2",
            "MODEL_HOME": str(model_home),
            "MODELS": "u2netp,centerface",
            "SEGMENTATION_MODEL": "u2netp",
            "WARMUP_REQUESTS": "1",
        },
        log_path=tmp_path / "soak.log",
    ).start()
    try:
        server.wait_ready(timeout=120)
        result = run_soak(server, clients=3, total=42, every=14, max_seconds=900)  # every photo meets every endpoint once
    finally:
        server.stop()
    print(result.table())  # noqa: T201 (shown with -s)
    assert sum(row.statuses.total() for row in result.rows) == 42, result.table()
    assert result.server_errors == 0, result.table()
    assert set(result.statuses) <= {"200", "422"}, result.table()
    # generous for a short run: the first checkpoints still see allocator high-water marks settle
    assert result.rest_growth < 0.25, result.table()
