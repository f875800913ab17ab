"""A short soak through the real gunicorn (`python -m bench.load --soak` runs the 2,000-request one): varied
photos (256 px to 20 megapixels, JPEG/PNG/WebP, one with six faces) over cut-outs, ID photos and
print sheets; no 5xx, and PSS at rest (after the idle release) does not keep growing."""

from __future__ import annotations


import pytest

from tests.support.load import run_soak
from tests.conftest import RunningServer

pytestmark = [pytest.mark.server, pytest.mark.heavy]


def test_a_short_soak_has_no_5xx_and_memory_at_rest_stays_flat(running_server: RunningServer) -> None:
    with running_server(WORKERS="2") as server:
        result = run_soak(server, clients=3, total=42, every=14, max_seconds=900)  # every photo meets every endpoint once
    print(result.table())  # noqa: T201 (shown with -s)
    assert sum(row.statuses.total() for row in result.rows) == 42, result.table()
    assert result.server_errors == 0, result.table()
    assert set(result.statuses) <= {"200", "422"}, result.table()
    # generous for a short run: the first checkpoints still see allocator high-water marks settle
    assert result.rest_growth < 0.25, result.table()
