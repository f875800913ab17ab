"""Lanes on the real gunicorn (LONE_REQUEST_THREADS): a lone request runs on the worker's wide
session, a request that meets another worker inferring runs on the one-thread session, a worker
with LONE_REQUEST_THREADS=1 never opens a wide session, and a worker killed in the middle of a wide
inference is replaced by a warm one while lone requests keep the wide lane. Every wait is bounded."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest
import requests
from PIL import Image

from tests.conftest import RunningServer, jpeg_bytes
from tests.support.harness import Server, alive, busy_worker, wait_for

pytestmark = [pytest.mark.server, pytest.mark.heavy]

CUTOUT = "/api/v1/remove-background"


def lane_of(response: requests.Response) -> str:
    match = re.search(r'lane;desc="(\w+)"', response.headers.get("Server-Timing", ""))
    assert match, response.headers.get("Server-Timing")
    return match.group(1)


def cutout(server: Server, photo: bytes, **fields: str) -> requests.Response:
    response = server.post(CUTOUT, files={"image": ("a.jpg", photo, "image/jpeg")}, data=fields, timeout=120)
    assert response.status_code == 200, response.text[:300]
    return response


def in_background(call: Callable[[], requests.Response]) -> tuple[threading.Thread, list[object]]:
    result: list[object] = []

    def run() -> None:
        try:
            result.append(call())
        except (requests.RequestException, AssertionError) as exc:
            result.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


@pytest.fixture(scope="module")
def slow_photo(astronaut: np.ndarray) -> bytes:
    """Its cut-out with alpha matting and a wide band (alpha_matting_erode_size=40) runs for seconds
    (8 s here): the solver works at most MATTING_MAX_SIDE px, so the band's width, not the photo's
    size, is what keeps it busy while the other requests arrive."""
    return jpeg_bytes(np.asarray(Image.fromarray(astronaut).resize((1800, 1800))))


def test_a_lone_request_takes_the_wide_lane_and_a_concurrent_one_the_narrow(
    running_server: RunningServer, astronaut_jpeg: bytes, slow_photo: bytes
) -> None:
    with running_server(WORKERS="2", LONE_REQUEST_THREADS="2") as server:
        ready = server.get("/readyz").json()
        assert ready["worker"]["lanes"]["wide_threads"] == 2
        assert lane_of(cutout(server, astronaut_jpeg)) == "wide"
        assert lane_of(cutout(server, astronaut_jpeg)) == "wide"  # and again: nobody else is inferring

        thread, first = in_background(lambda: cutout(server, slow_photo, alpha_matting="true", alpha_matting_erode_size="40"))
        busy_worker(server)  # the slow request is running on one worker
        second = cutout(server, astronaut_jpeg)  # the other worker: it meets one inferring
        thread.join(timeout=120)
        assert isinstance(first[0], requests.Response), first
        assert lane_of(first[0]) == "wide" and lane_of(second) == "narrow"
        metrics = server.get("/metrics").text
        wide = float(re.search(r'pilotlight_inference_lane_total\{lane="wide"\} (\S+)', metrics).group(1))
        narrow = float(re.search(r'pilotlight_inference_lane_total\{lane="narrow"\} (\S+)', metrics).group(1))
        assert (wide, narrow) == (3.0, 1.0)  # warm-up not counted


def test_lazy_mode_opens_the_wide_lane_with_its_models(running_server: RunningServer, astronaut_jpeg: bytes) -> None:
    """PRELOAD_MODELS=false: the models, and their wide lanes, open in the worker after the fork;
    a lone request takes the wide lane once they are open (it stayed narrow while the gate heard of
    lanes only at the fork, when a lazy worker has none)."""
    with running_server(WORKERS="1", LONE_REQUEST_THREADS="2", PRELOAD_MODELS="false") as server:
        cutout(server, astronaut_jpeg)  # loads and warms if the readiness probe has not yet
        assert lane_of(cutout(server, astronaut_jpeg)) == "wide"
        assert server.get("/readyz").json()["worker"]["lanes"]["wide_threads"] == 2


def test_one_thread_means_no_wide_session(running_server: RunningServer, astronaut_jpeg: bytes) -> None:
    with running_server(WORKERS="1", LONE_REQUEST_THREADS="1") as server:
        assert server.get("/readyz").json()["worker"]["lanes"]["wide_threads"] == 0
        assert lane_of(cutout(server, astronaut_jpeg)) == "narrow"
        assert "wide lanes" not in server.log_text()


def test_a_worker_killed_on_the_wide_lane_is_replaced_warm(
    running_server: RunningServer, astronaut_jpeg: bytes, slow_photo: bytes
) -> None:
    with running_server(WORKERS="2", LONE_REQUEST_THREADS="2") as server:
        survivors = set(server.workers())
        thread, victim_result = in_background(lambda: cutout(server, slow_photo, alpha_matting="true", alpha_matting_erode_size="40"))
        victim = busy_worker(server)
        os.kill(victim, signal.SIGKILL)
        thread.join(timeout=60)
        assert victim_result and isinstance(victim_result[0], (requests.RequestException, AssertionError))
        wait_for(lambda: len([pid for pid in server.workers() if alive(pid)]) == 2 and victim not in server.workers(),
                 timeout=30, what="a replacement worker")
        (replacement,) = set(server.workers()) - (survivors - {victim})
        wait_for(lambda: f"worker {replacement} warm after" in server.log_text(), timeout=120, what="the replacement's warm-up")
        assert f"worker {replacement}: wide lanes of 2 threads" in server.log_text()
        # the dead worker no longer counts as inferring: a lone request takes the wide lane again
        assert lane_of(cutout(server, astronaut_jpeg)) == "wide"


def test_two_kept_alive_clients_share_the_workers_on_one_thread_each(running_server: RunningServer, astronaut_jpeg: bytes) -> None:
    """Two clients that connect together and keep their connections: one worker each, so their
    inferences overlap and take the narrow lane (the first of a pair may still find the other
    worker idle and run wide)."""
    with running_server(WORKERS="2", LONE_REQUEST_THREADS="2", RELEASE_MEMORY_IDLE_S="0.5") as server:
        for _ in range(3):  # lone requests, then a quiet spell: one worker keeps its memory, the other gave it back
            cutout(server, astronaut_jpeg)
        time.sleep(0.5 + 2.0)
        lanes: list[str] = []
        barrier = threading.Barrier(2)

        def client(index: int) -> None:
            with requests.Session() as session:
                barrier.wait(timeout=30)
                for request in range(6):
                    response = session.post(server.url + CUTOUT, files={"image": ("a.jpg", astronaut_jpeg, "image/jpeg")},
                                            headers={"X-Request-ID": f"pair-{index}-{request}"}, timeout=120)
                    assert response.status_code == 200
                    lanes.append(lane_of(response))

        threads = [threading.Thread(target=client, args=(index,)) for index in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert len(lanes) == 12
        log = server.wait_log("pair-1-5")
        pids = {re.search(r"\[(\d+)\]", line).group(1) for line in log.splitlines() if '"POST /api/v1/remove-background' in line}
        assert len(pids) == 2, "both workers served the pair"
        assert lanes.count("narrow") >= 8, lanes
