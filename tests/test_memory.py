"""RELEASE_MEMORY=idle through the real server: quiet workers give their working memory back, one
keeps it (KEEP_MEMORY_WORKERS=1: the worker in slot 0) and nginx gives it the first request after
the quiet spell; concurrent requests spread over the workers."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import RunningServer

from tests.support.harness import Server, minor_faults, private_kib, smaps_rollup, wait_for

pytestmark = pytest.mark.heavy  # a minute or more of servers under load: collected first (conftest.py)

KEEPS = re.compile(r"worker (\d+) keeps its working memory")
GAVE_BACK = re.compile(r"worker (\d+) idle for [\d.]+ s: working memory given back")


def logged_pids(pattern: re.Pattern[str], server: Server, *, count: int, timeout: float = 30.0) -> list[int]:
    """The pids of the first `count` workers that logged `pattern` (bounded)."""

    def found() -> list[int] | None:
        pids = sorted({int(pid) for pid in pattern.findall(server.log_text())})
        return pids if len(pids) >= count else None

    return wait_for(found, timeout=timeout, interval=0.1, what=f"{pattern.pattern!r} for {count} worker(s) not in the log")  # type: ignore[return-value]


def served_by(server: Server, request_id: str) -> int:
    line = next(line for line in server.wait_log(request_id).splitlines() if line.endswith(request_id))
    return int(re.search(r"\[(\d+)\]", line).group(1))  # the generic formatter's [pid]


def test_idle_workers_give_memory_back_and_the_keeper_serves_first(running_server: RunningServer, astronaut_jpeg: bytes) -> None:
    # one loopback client sends every request: its POST share would refuse the burst (MAX_POSTS_PER_CLIENT)
    with running_server(MODELS="u2netp", WORKERS="3", KEEP_MEMORY_WORKERS="1", RELEASE_MEMORY_IDLE_S="0.5", ORT_PROVIDERS="cpu",
                        MAX_POSTS_PER_CLIENT="0") as server:
        workers = server.wait_workers(3)
        keeper = logged_pids(KEEPS, server, count=1)
        released = logged_pids(GAVE_BACK, server, count=2)
        assert len(keeper) == 1 and set(keeper + released) == set(workers) and keeper[0] not in released

        # traffic on every worker at once grows all three again; once quiet, the same split
        def cutout(index: int) -> int:
            reply = server.post("/api/v1/remove-background", files={"image": ("a.jpg", astronaut_jpeg, "image/jpeg")},
                                headers={"X-Request-ID": f"burst-{index}"})
            return reply.status_code

        with ThreadPoolExecutor(max_workers=6) as pool:
            assert list(pool.map(cutout, range(12))) == [200] * 12
        time.sleep(0.5 + 1.5)  # RELEASE_MEMORY_IDLE_S plus watchdog periods
        memory = {pid: private_kib(smaps_rollup(pid)) / 1024 for pid in workers}
        others = [memory[pid] for pid in workers if pid != keeper[0]]
        # the keeper still holds u2netp's buffers; the others kept little beyond what they share
        assert memory[keeper[0]] - max(others) > 150, memory

        # after the quiet spell, a lone request goes to the keeper (nginx: idle workers first, keepers first)
        for attempt in range(5):
            request_id = f"after-quiet-{attempt}"
            reply = server.post("/api/v1/remove-background", files={"image": ("a.jpg", astronaut_jpeg, "image/jpeg")},
                                headers={"X-Request-ID": request_id})
            assert reply.status_code == 200
            assert served_by(server, request_id) == keeper[0]
            time.sleep(0.2)

        # a burst after a quiet spell goes to every worker instead of queueing on the keeper
        time.sleep(0.5 + 1.5)
        with ThreadPoolExecutor(max_workers=3) as pool:
            statuses = list(pool.map(lambda index: cutout(100 + index), range(3)))
        assert statuses == [200] * 3
        assert len({served_by(server, f"burst-{100 + index}") for index in range(3)}) >= 2


def test_a_worker_reuses_what_its_last_request_freed(running_server: RunningServer, big_photo: bytes) -> None:
    """After its first request of a size, a worker serves the same request again from the blocks
    that request freed (app/native_threads.py: glibc's thresholds). With the former 4 MiB mmap
    threshold each cut-out of the 1600 px photo faulted in about 21,000 fresh pages (its decode,
    matte and encode buffers), every time."""
    with running_server(RELEASE_MEMORY="off") as server:  # nothing given back between the requests
        (pid,) = server.wait_workers(1)
        faults = []
        for _ in range(4):
            before = minor_faults(pid)
            reply = server.post("/api/v1/remove-background", files={"image": ("big.jpg", big_photo, "image/jpeg")})
            assert reply.status_code == 200
            faults.append(minor_faults(pid) - before)
        assert max(faults[1:]) < 1000, faults  # 1,000 pages: 4 MB, less than the photo's own RGB
