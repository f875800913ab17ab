"""The real thing: gunicorn with gunicorn.conf.py and --preload semantics, two workers, the default
models (u2net, centerface), real HTTP on a free loopback port."""

from __future__ import annotations

import base64
import io
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.conftest import WARM, RunningServer, png_bytes
from tests.support.harness import Server, alive

pytestmark = pytest.mark.server

WORKERS = 2
FACE = (slice(60, 170), slice(180, 280))  # rows, cols of the astronaut's face
BACKGROUND_TOP_RIGHT = (slice(0, 128), slice(384, 512))


@pytest.fixture(scope="module")
def server(running_server: RunningServer) -> Iterator[Server]:
    with running_server(
        WORKERS=str(WORKERS), MODELS="u2net,centerface", SEGMENTATION_MODEL="u2net", WARMUP_REQUESTS="2",
        MAX_UPLOAD_MB="4", MAX_IMAGE_PIXELS="30000000",
    ) as srv:
        yield srv


def warm_line_index(lines: list[str], pid: int) -> int:
    return next(i for i, line in enumerate(lines) if f"worker {pid} warm after" in line)


def first_access_index(lines: list[str], pid: int) -> int:
    return next(i for i, line in enumerate(lines) if "gunicorn.access" in line and f"[{pid}]" in line)


def readyz_by_pid(server: Server, expected: set[int], *, timeout: float = 90.0) -> dict[int, dict]:
    """Ask /readyz until every pid in `expected` has answered (bounded in time)."""
    seen: dict[int, dict] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # a fresh connection each time so the kernel spreads them over the workers
        response = server.get("/readyz", headers={"Connection": "close"})
        body = response.json()
        seen[body["pid"]] = {**body, "http": response.status_code}
        if expected <= set(seen):
            return seen
        time.sleep(0.02)
    raise AssertionError(f"only {sorted(seen)} answered; expected {sorted(expected)}")


def test_every_worker_is_warm_before_it_serves(server: Server) -> None:
    pids = set(server.wait_workers(WORKERS))
    seen = readyz_by_pid(server, pids)
    for pid in pids:
        body = seen[pid]
        assert body["http"] == 200 and body["status"] == "ready"
        assert body["worker"]["warm"] is True
        assert body["worker"]["warmup_seconds"] > 0
        assert body["workers"] == {"warm": WORKERS, "expected": WORKERS}
        assert body["models"]["u2net"]["provider"] == "CPUExecutionProvider"
        assert body["models"]["centerface"]["role"] == "face_detection"
        assert {"imports", "load u2net (CPUExecutionProvider)"} <= set(body["startup"])
    for pid in pids:  # the access line is written just after the response: wait for it
        server.wait_log(f"[{pid}] [INFO] gunicorn.access")
    lines = server.log_text().splitlines()
    for pid in pids:
        assert warm_line_index(lines, pid) < first_access_index(lines, pid), f"worker {pid} served before warm"
    # the models were read from disk once, in the master
    assert len([line for line in lines if "startup phase load u2net" in line]) == 1
    assert f"[{server.master}]" in next(line for line in lines if "startup phase load u2net" in line)


def test_healthz_is_liveness(server: Server) -> None:
    body = server.get("/healthz").json()
    assert body["status"] == "alive" and body["models_loaded"] is True


def test_remove_background_cuts_out_the_person(server: Server, astronaut_jpeg: bytes) -> None:
    response = server.post("/api/v1/remove-background", files={"image": ("astronaut.jpg", astronaut_jpeg, "image/jpeg")})
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "image/png"
    assert "segment;dur=" in response.headers["Server-Timing"]
    image = Image.open(io.BytesIO(response.content))
    assert image.size == (512, 512) and image.mode == "RGBA"
    alpha = np.asarray(image)[:, :, 3].astype(np.float32)
    assert alpha[FACE].mean() > 230, "the face must be kept"
    assert alpha[BACKGROUND_TOP_RIGHT].mean() < 10, "the white background must be removed"


def test_json_answer_and_background_colour(server: Server, astronaut_jpeg: bytes) -> None:
    response = server.post(
        "/api/v1/remove-background",
        files={"image": ("a.jpg", astronaut_jpeg, "image/jpeg")},
        data={"background": "#00ff00", "format": "jpeg"},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["content_type"] == "image/jpeg" and body["width"] == 512 and body["model"] == "u2net"
    assert body["timings"]["segment"] > 0
    image = np.asarray(Image.open(io.BytesIO(base64.b64decode(body["image"]))).convert("RGB")).astype(int)
    corner = image[BACKGROUND_TOP_RIGHT].reshape(-1, 3).mean(axis=0)
    assert corner[1] > 230 and corner[0] < 30 and corner[2] < 30, f"corner is {corner}, not green"


def test_alpha_matting_runs_in_a_forked_worker(server: Server, astronaut_jpeg: bytes) -> None:
    """pymatting's numba kernels run in the workers (a fork-unsafe threading layer would kill them)."""
    workers_before = server.wait_workers(WORKERS)
    response = server.post(
        "/api/v1/remove-background", files={"image": ("a.jpg", astronaut_jpeg, "image/jpeg")}, data={"alpha_matting": "true"}
    )
    assert response.status_code == 200, response.text
    alpha = np.asarray(Image.open(io.BytesIO(response.content)))[:, :, 3].astype(np.float32)
    assert alpha[FACE].mean() > 200 and alpha[BACKGROUND_TOP_RIGHT].mean() < 20
    assert server.wait_workers(WORKERS) == workers_before
    assert "Terminating" not in server.log_text()


def bomb_png() -> bytes:
    """A small file that declares 20000x20000 pixels (a decompression bomb)."""
    return png_bytes(Image.new("1", (20000, 20000)))


@pytest.mark.parametrize(
    ("name", "request_kwargs", "status", "code"),
    [
        ("no body", {}, 415, "expected_multipart"),
        ("json body", {"json": {"image": "aGVsbG8="}}, 415, "expected_multipart"),
        ("no image field", {"files": {"photo": ("a.jpg", b"x", "image/jpeg")}}, 400, "missing_image"),
        ("text named jpg", {"files": {"image": ("a.jpg", b"hello, I am not a photo", "image/jpeg")}}, 415, "unsupported_media_type"),
        ("zero bytes", {"files": {"image": ("a.jpg", b"", "image/jpeg")}}, 400, "empty_image"),
        ("truncated jpeg", "truncated", 400, "invalid_image"),
        ("decompression bomb", "bomb", 413, "image_too_large"),
        ("over the upload limit", "huge", 413, "payload_too_large"),
        ("unknown model", "model=../../etc/passwd", 400, "unknown_model"),
        ("bad colour", "background=not-a-colour", 400, "invalid_background"),
        ("bad format", "format=tiff", 400, "invalid_format"),
    ],
)
def test_bad_input_gets_a_json_error_and_the_worker_lives_on(
    server: Server, astronaut_jpeg: bytes, name: str, request_kwargs: object, status: int, code: str
) -> None:
    workers_before = server.wait_workers(WORKERS)
    if request_kwargs == "truncated":
        request_kwargs = {"files": {"image": ("a.jpg", astronaut_jpeg[: len(astronaut_jpeg) // 2], "image/jpeg")}}
    elif request_kwargs == "bomb":
        request_kwargs = {"files": {"image": ("bomb.png", bomb_png(), "image/png")}}
    elif request_kwargs == "huge":
        request_kwargs = {"files": {"image": ("big.jpg", os.urandom(5 * 1024 * 1024), "image/jpeg")}}
    elif isinstance(request_kwargs, str):
        field, value = request_kwargs.split("=", 1)
        request_kwargs = {"files": {"image": ("a.jpg", astronaut_jpeg, "image/jpeg")}, "data": {field: value}}
    response = server.post("/api/v1/remove-background", **request_kwargs)  # type: ignore[arg-type]
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == code and error["message"]
    assert "Traceback" not in response.text and "/app/" not in response.text
    assert server.wait_workers(WORKERS) == workers_before
    assert server.get("/readyz").status_code == 200


def test_a_killed_worker_is_replaced_by_a_warm_one(server: Server, astronaut_jpeg: bytes) -> None:
    old = server.wait_workers(WORKERS)
    victim = old[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        current = [pid for pid in server.workers() if alive(pid)]
        if victim not in current and len(current) == WORKERS:
            break
        time.sleep(0.05)
    new = set(server.workers()) - set(old)
    assert len(new) == 1, f"workers before {old}, now {server.workers()}"
    (replacement,) = new
    seen = readyz_by_pid(server, {replacement})
    assert seen[replacement]["http"] == 200 and seen[replacement]["worker"]["warm"] is True
    server.wait_log(f"[{replacement}] [INFO] gunicorn.access")
    lines = server.log_text().splitlines()
    assert warm_line_index(lines, replacement) < first_access_index(lines, replacement)
    assert len([line for line in lines if "startup phase load u2net" in line]) == 1, "the replacement reloaded a model"
    response = server.post("/api/v1/remove-background", files={"image": ("a.jpg", astronaut_jpeg, "image/jpeg")})
    assert response.status_code == 200


def test_sigterm_ends_every_process_promptly(server: Server) -> None:
    tree = [server.pid, *server.workers()]
    seconds = server.stop(sig=signal.SIGTERM, timeout=25)
    assert not any(alive(pid) for pid in tree)
    assert server.process is not None and server.process.returncode == 0
    assert seconds < 10, f"shutdown took {seconds:.1f} s (onnxruntime exit hang?)"


def test_lazy_mode_is_unready_until_loaded(running_server: RunningServer) -> None:
    with running_server(ready=False, PRELOAD_MODELS="false") as srv:
        srv.wait_ready(path="/healthz", timeout=60)
        first = srv.get("/readyz")
        assert first.status_code == 503
        assert first.json()["status"] == "not_ready" and first.json()["mode"] == "lazy"
        srv.wait_ready(timeout=120)  # the 503 started the load in the background
        warm = srv.post("/warmup", headers=WARM).json()
        assert warm["passes"] >= 1 and warm["warmup_seconds"] > 0 and "u2netp" in warm["models"]
        assert "load u2netp" in srv.log_text()


def test_a_corrupt_model_stops_start_up_with_one_clear_line(running_server: RunningServer, model_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "models"
    home.mkdir()
    (home / "u2netp.onnx").write_bytes((model_home / "u2netp.onnx").read_bytes()[:100_000])
    (home / "centerface.onnx").write_bytes((model_home / "centerface.onnx").read_bytes())
    with running_server(ready=False, WORKERS="2", MODEL_HOME=str(home)) as srv:
        assert srv.process is not None
        returncode = srv.process.wait(timeout=60)
        log = srv.log_text()
    assert returncode != 0
    errors = [line for line in log.splitlines() if "[ERROR]" in line]
    assert len(errors) == 1, log
    assert re.search(r"u2netp\.onnx .*run: python -m app\.models fetch u2netp", errors[0]), errors[0]
    assert "Booting worker" not in log and "Traceback" not in log
