"""Metrics, request ids, JSON logs, CORS and the no-debug guarantees: the Flask test client, pure
functions, and the real gunicorn with two workers (metrics summed over workers, a killed worker)."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from app import create_app
from app.config import ConfigError, Settings
from app.errors import Busy
from app.models.registry import Registry
from app.observability import JsonFormatter
from app.service import Service
from app.serving.admission import InferenceGate
from tests.conftest import RunningServer
from tests.support.harness import ROOT, Server, alive

HEX_ID = re.compile(r"^[0-9a-f]{32}$")
ORIGIN = "https://photos.example"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse_metrics(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def bare_app(**overrides: object) -> Flask:
    """An app with no models loaded: enough for headers, CORS and errors."""
    return create_app(Settings(workers=1).with_overrides(**overrides), Registry())


# -- request ids ------------------------------------------------------------------------------------


def test_a_sane_request_id_is_echoed() -> None:
    client = bare_app().test_client()
    response = client.get("/healthz", headers={"X-Request-ID": "Req-1.abc_DEF"})
    assert response.status_code == 200 and response.headers["X-Request-ID"] == "Req-1.abc_DEF"
    assert client.get("/healthz", headers={"X-Request-ID": "a" * 128}).headers["X-Request-ID"] == "a" * 128


def test_a_request_id_is_generated_when_absent() -> None:
    client = bare_app().test_client()
    first, second = (client.get("/healthz").headers["X-Request-ID"] for _ in range(2))
    assert HEX_ID.match(first) and HEX_ID.match(second) and first != second


@pytest.mark.parametrize("bad", ["", "a b", "a" * 129, "<script>", "id/../x", 'a"b', "caf\u00e9", "a,b"])
def test_a_bad_request_id_is_replaced(bad: str) -> None:
    response = bare_app().test_client().get("/healthz", headers={"X-Request-ID": bad})
    assert HEX_ID.match(response.headers["X-Request-ID"])


def test_errors_carry_the_request_id_too() -> None:
    client = bare_app().test_client()
    not_found = client.get("/nowhere", headers={"X-Request-ID": "r404"})
    assert not_found.status_code == 404 and not_found.headers["X-Request-ID"] == "r404"
    unsupported = client.post("/api/v1/remove-background", headers={"X-Request-ID": "r415"})
    assert unsupported.status_code == 415 and unsupported.headers["X-Request-ID"] == "r415"
    not_ready = client.post(
        "/api/v1/remove-background", data={"image": (io.BytesIO(b"x"), "a.jpg")}, headers={"X-Request-ID": "r503"}
    )
    assert not_ready.status_code == 503 and not_ready.headers["X-Request-ID"] == "r503"


# -- CORS -------------------------------------------------------------------------------------------


def preflight(client: FlaskClient, path: str = "/api/v1/remove-background", origin: str = ORIGIN) -> object:
    return client.options(
        path,
        headers={"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"},
    )


def test_cors_is_off_by_default() -> None:
    client = bare_app().test_client()
    for response in (client.get("/api/v1/specs", headers={"Origin": ORIGIN}), preflight(client)):
        assert not [name for name in response.headers.keys() if name.lower().startswith("access-control-")]
        assert "Origin" not in response.vary


def test_cors_for_configured_origins() -> None:
    client = bare_app(cors_origins=(ORIGIN, "http://localhost:3000")).test_client()
    allowed = client.get("/api/v1/specs", headers={"Origin": ORIGIN})
    assert allowed.status_code == 200
    assert allowed.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert "Origin" in allowed.vary and "X-Request-ID" in allowed.headers["Access-Control-Expose-Headers"]
    assert "Access-Control-Allow-Credentials" not in allowed.headers
    other = client.get("/api/v1/specs", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in other.headers and "Origin" in other.vary
    error = client.post("/api/v1/remove-background", headers={"Origin": "http://localhost:3000"})
    assert error.status_code == 415 and error.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    page = client.get("/healthz", headers={"Origin": ORIGIN})  # not the API: no CORS
    assert "Access-Control-Allow-Origin" not in page.headers


def test_cors_preflight() -> None:
    client = bare_app(cors_origins=(ORIGIN,)).test_client()
    response = preflight(client)
    assert response.status_code == 204 and response.data == b""
    assert response.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert {m.strip() for m in response.headers["Access-Control-Allow-Methods"].split(",")} == {"POST", "GET"}
    allowed_headers = {h.strip().lower() for h in response.headers["Access-Control-Allow-Headers"].split(",")}
    assert allowed_headers == {"accept", "authorization", "content-type", "x-request-id"}  # Authorization: API_KEYS
    assert HEX_ID.match(response.headers["X-Request-ID"])
    refused = preflight(client, origin="https://evil.example")
    assert "Access-Control-Allow-Origin" not in refused.headers and "Access-Control-Allow-Methods" not in refused.headers


def test_cors_any_origin() -> None:
    client = bare_app(cors_origins=("*",)).test_client()
    assert client.get("/api/v1/specs", headers={"Origin": "https://x.example"}).headers["Access-Control-Allow-Origin"] == "*"
    assert preflight(client).headers["Access-Control-Allow-Origin"] == "*"


def test_settings_of_this_feature() -> None:
    defaults = Settings.from_env({})
    assert defaults.cors_origins == () and defaults.log_format == "text" and defaults.metrics_dir is None
    settings = Settings.from_env(
        {"CORS_ORIGINS": "https://A.example/, http://localhost:3000", "LOG_FORMAT": "JSON", "METRICS_DIR": "/run/m"}
    )
    assert settings.cors_origins == ("https://a.example", "http://localhost:3000")
    assert settings.log_format == "json" and settings.metrics_dir == Path("/run/m")
    assert Settings.from_env({"CORS_ORIGINS": "*"}).cors_origins == ("*",)
    for bad in ("*, https://a.example", "a.example", "https://a.example/path", "ftp://a.example"):
        with pytest.raises(ConfigError, match="CORS_ORIGINS"):
            Settings.from_env({"CORS_ORIGINS": bad})
    with pytest.raises(ConfigError, match="LOG_FORMAT"):
        Settings.from_env({"LOG_FORMAT": "xml"})


# -- no debug, no leaks --------------------------------------------------------------------------------


def test_debug_mode_is_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLASK_DEBUG", "1")
    app = bare_app()
    assert app.debug is False and app.config["DEBUG"] is False

    @app.get("/boom")
    def boom() -> str:
        raise RuntimeError(f"secret detail in {Path(__file__).resolve()}")

    client = app.test_client()
    for path in ("/console", "/console?__debugger__=yes&cmd=resource&f=style.css"):
        response = client.get(path)
        assert response.status_code == 404 and response.get_json()["error"]["code"] == "not_found"
    response = client.get("/boom")
    assert response.status_code == 500 and response.get_json() == {
        "error": {"code": "internal_error", "message": "The server failed to process this request."}
    }
    text = response.get_data(as_text=True)
    assert "Traceback" not in text and "secret" not in text and str(ROOT) not in text


# -- JSON logs --------------------------------------------------------------------------------------


def test_json_formatter_access_records() -> None:
    from gunicorn.glogging import SafeAtoms

    atoms = SafeAtoms(
        {
            "h": "10.0.0.7", "m": "POST", "U": '/api/v1/x"y', "q": "", "s": "201", "B": 512, "D": 123456,
            "a": "curl/8", "{x-request-id}o": "req-42",
        }
    )
    record = logging.LogRecord("gunicorn.access", logging.INFO, __file__, 1, '%(h)s "%(r)s"', (atoms,), None)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["logger"] == "gunicorn.access" and entry["level"] == "info" and entry["pid"] == os.getpid()
    assert entry["method"] == "POST" and entry["path"] == '/api/v1/x"y' and "query" not in entry
    assert entry["status"] == 201 and entry["bytes"] == 512 and entry["duration_ms"] == 123.456
    assert entry["request_id"] == "req-42" and entry["remote"] == "10.0.0.7" and entry["user_agent"] == "curl/8"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", entry["time"])
    no_id = logging.LogRecord("gunicorn.access", logging.INFO, __file__, 1, "x", (SafeAtoms({"s": "400"}),), None)
    assert json.loads(JsonFormatter().format(no_id))["request_id"] is None


def test_json_formatter_app_records() -> None:
    formatter = JsonFormatter()
    record = logging.LogRecord("app.runtime", logging.WARNING, __file__, 1, "loaded %s in %.1f s", ("u2netp", 1.25), None)
    entry = json.loads(formatter.format(record))
    assert entry["message"] == "loaded u2netp in 1.2 s" and entry["level"] == "warning" and "request_id" not in entry
    try:
        raise ValueError("bad\nthing")
    except ValueError:
        failed = logging.LogRecord("app.errors", logging.ERROR, __file__, 1, "unhandled error", (), sys.exc_info())
    line = formatter.format(failed)
    assert "\n" not in line and "ValueError: bad" in json.loads(line)["exc"]
    app = bare_app()
    with app.test_request_context("/", headers={"X-Request-ID": "in-request"}):
        app.preprocess_request()
        assert json.loads(formatter.format(record))["request_id"] == "in-request"


# -- metrics through the test client --------------------------------------------------------------------


def test_busy_rejections_are_told_apart() -> None:
    gate = InferenceGate(queue_depth=0, wait_timeout=0.05)
    with gate.slot():
        with pytest.raises(Busy) as full:
            with gate.slot():
                pass
    assert full.value.code == "busy" and full.value.details["reason"] == "queue_full"
    gate = InferenceGate(queue_depth=1, wait_timeout=0.05)
    caught: list[Busy] = []

    def wait() -> None:
        try:
            with gate.slot():
                pass
        except Busy as exc:
            caught.append(exc)

    with gate.slot():
        waiter = threading.Thread(target=wait)
        waiter.start()
        waiter.join(5)
    assert caught and caught[0].details["reason"] == "wait_timeout"


def test_metrics_through_the_test_client(small_settings: Settings, small_registry: Registry, astronaut_jpeg: bytes) -> None:
    app = create_app(small_settings.with_overrides(queue_depth=0), small_registry)
    client = app.test_client()
    before = parse_metrics(client.get("/metrics").get_data(as_text=True))
    gate = InferenceGate(queue_depth=0, wait_timeout=1.0)
    Service.of(app).admission = gate  # as post_fork installs it in a worker
    Service.of(app).warm()  # through the app, but not counted as requests
    ok = client.post("/api/v1/remove-background", data={"image": (io.BytesIO(astronaut_jpeg), "a.jpg")})
    assert ok.status_code == 200
    bad = client.post("/api/v1/remove-background", data={"image": (io.BytesIO(astronaut_jpeg), "a.jpg"), "format": "tiff"})
    assert bad.status_code == 400
    with gate.slot():  # the worker is busy and QUEUE_DEPTH=0
        busy = client.post("/api/v1/remove-background", data={"image": (io.BytesIO(astronaut_jpeg), "a.jpg")})
    assert busy.status_code == 503 and busy.get_json()["error"]["code"] == "busy"
    response = client.get("/metrics")
    assert response.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    after = parse_metrics(response.get_data(as_text=True))

    def delta(name: str, **labels: str) -> float:
        return (value(after, name, **labels) or 0.0) - (value(before, name, **labels) or 0.0)

    route = {"endpoint": "/api/v1/remove-background", "method": "POST"}
    assert delta("pilotlight_requests_total", **route, status="200") == 1
    assert delta("pilotlight_requests_total", **route, status="400") == 1
    assert delta("pilotlight_requests_total", **route, status="503") == 1
    assert delta("pilotlight_requests_total", endpoint="/api/v1/idphoto/sheet", method="POST", status="200") == 0
    assert delta("pilotlight_request_seconds_count", endpoint="/api/v1/remove-background") == 3
    assert delta("pilotlight_rejected_total", reason="queue_full") == 1
    assert delta("pilotlight_inference_seconds_count", model="u2netp", stage="segment") == 1
    assert delta("pilotlight_warmup_seconds_count") == 1
    assert value(after, "pilotlight_workers_ready") == 1
    assert value(after, "pilotlight_model_load_seconds", model="u2netp") is not None


def test_multiprocess_mode_is_set_even_after_an_early_import(tmp_path: Path) -> None:
    """start_master empties METRICS_DIR and switches prometheus_client to multiprocess mode even
    when something imported it first (in a fresh interpreter: it changes process-wide state)."""
    (tmp_path / "counter_999.db").write_bytes(b"stale")
    (tmp_path / "keep.txt").write_text("not ours")
    script = f"""
import os, prometheus_client  # imported before the variable is set
from app import observability
from app.config import Settings
path = observability.start_master(Settings(metrics_dir=__import__("pathlib").Path({str(tmp_path)!r})))
assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(path)
observability.model_loaded("u2netp", 1.5)
pid = os.fork()
if pid == 0:
    observability.worker_warm(2.0)
    os._exit(0)
os.waitpid(pid, 0)
text = observability.exposition().decode()
assert 'pilotlight_workers_ready 1.0' in text, text
observability.worker_gone(pid)
text = observability.exposition().decode()
assert 'pilotlight_workers_ready 0.0' in text, text
assert 'pilotlight_warmup_seconds_count 1.0' in text, text
assert 'pilotlight_model_load_seconds{{model="u2netp"}} 1.5' in text, text
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
    assert not (tmp_path / "counter_999.db").exists() and (tmp_path / "keep.txt").exists()


# -- the real gunicorn ---------------------------------------------------------------------------------

WORKERS = 2


@pytest.fixture(scope="module")
def json_server(running_server: RunningServer) -> Iterator[Server]:
    with running_server(WORKERS=str(WORKERS), LOG_FORMAT="json") as srv:
        yield srv


def scrape(server: Server) -> Samples:
    response = server.get("/metrics", headers={"Connection": "close"})
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return parse_metrics(response.text)


def json_lines(server: Server) -> list[dict]:
    return json_records(server.log_text())


def json_records(text: str) -> list[dict]:
    """Every JSON log record in `text` (complete lines only: see Server.log_text)."""
    entries = []
    for line in text.splitlines():
        start = line.rfind('{"time"')
        if start >= 0:
            entries.append(json.loads(line[start:]))
    return entries


@pytest.mark.server
def test_metrics_are_summed_over_workers_and_survive_a_killed_worker(json_server: Server, astronaut_jpeg: bytes) -> None:
    server = json_server
    pids = set(server.wait_workers(WORKERS))
    # healthz over fresh connections until both workers have answered some
    served: dict[int, int] = {}
    sent_health = 0
    deadline = time.monotonic() + 60
    while (len(served) < WORKERS or sent_health < 12) and time.monotonic() < deadline:
        response = server.get("/healthz", headers={"Connection": "close", "X-Request-ID": f"obs-health-{sent_health}"})
        assert response.status_code == 200 and response.headers["X-Request-ID"] == f"obs-health-{sent_health}"
        served[response.json()["pid"]] = served.get(response.json()["pid"], 0) + 1
        sent_health += 1
    assert set(served) == pids, f"answered by {served}, workers {pids}"

    image = {"image": ("a.jpg", astronaut_jpeg, "image/jpeg")}
    for i in range(2):
        response = server.post("/api/v1/remove-background", files=image, headers={"X-Request-ID": f"obs-bg-{i}"})
        assert response.status_code == 200, response.text
    bad = server.post(
        "/api/v1/remove-background", files=image, data={"background": "no-such-colour"}, headers={"X-Request-ID": "obs-bad"}
    )
    assert bad.status_code == 400 and bad.headers["X-Request-ID"] == "obs-bad"
    photo = server.post("/api/v1/idphoto", files=image, data={"spec": "icao"}, headers={"X-Request-ID": "obs-id"})
    assert photo.status_code == 200, photo.text

    before = scrape(server)
    requests_total = "pilotlight_requests_total"
    assert value(before, requests_total, endpoint="/healthz", method="GET", status="200") == sent_health
    bg = {"endpoint": "/api/v1/remove-background", "method": "POST"}
    assert value(before, requests_total, **bg, status="200") == 2  # the warm-up's are not counted
    assert value(before, requests_total, **bg, status="400") == 1
    assert value(before, requests_total, endpoint="/api/v1/idphoto", method="POST", status="200") == 1
    assert not [key for key in before if ("endpoint", "/api/v1/idphoto/sheet") in key[1]], "warm-up was counted"
    assert value(before, "pilotlight_request_seconds_count", endpoint="/api/v1/remove-background") == 3
    assert value(before, "pilotlight_workers_ready") == WORKERS
    assert value(before, "pilotlight_model_load_seconds", model="u2netp") > 0
    assert value(before, "pilotlight_model_load_seconds", model="centerface") > 0
    assert value(before, "pilotlight_inference_seconds_count", model="u2netp", stage="segment") == 3
    assert value(before, "pilotlight_inference_seconds_count", model="centerface", stage="detect") == 1
    assert value(before, "pilotlight_warmup_seconds_count") == WORKERS
    assert value(before, "pilotlight_rejected_total", reason="queue_full") == 0

    victim = sorted(pids)[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 120
    replacement = None
    while time.monotonic() < deadline and replacement is None:
        current = {pid for pid in server.workers() if alive(pid)}
        new = current - pids
        if new and len(current) == WORKERS:
            (candidate,) = new
            # fresh connections: ask until the replacement itself answers (it only accepts once warm)
            for _ in range(40):
                if server.get("/readyz", headers={"Connection": "close"}).json()["pid"] == candidate:
                    replacement = candidate
                    break
        if replacement is None:
            time.sleep(0.1)
    assert replacement is not None, f"no warm replacement for {victim}; workers {server.workers()}"

    after = scrape(server)
    assert value(after, "pilotlight_workers_ready") == WORKERS, "the dead worker is still counted"
    assert value(after, "pilotlight_warmup_seconds_count") == WORKERS + 1
    assert value(after, requests_total, endpoint="/healthz", method="GET", status="200") == sent_health
    went_back = {key: (old, after.get(key)) for key, old in before.items()
                 if key[0].endswith(("_total", "_count", "_sum", "_bucket")) and (after.get(key) or 0.0) < old}
    assert not went_back, went_back

    text = server.wait_log(f'"request_id": "obs-health-{sent_health - 1}"')  # one read for both counts
    entries = json_records(text)
    access = [entry for entry in entries if entry.get("logger") == "gunicorn.access"]
    raw_access = [line for line in text.splitlines() if '"gunicorn.access"' in line]
    assert len(access) == len(raw_access) > sent_health
    by_id = {entry["request_id"]: entry for entry in access}
    for i in range(sent_health):
        entry = by_id[f"obs-health-{i}"]
        assert entry["method"] == "GET" and entry["path"] == "/healthz" and entry["status"] == 200
        assert entry["pid"] in pids and entry["duration_ms"] >= 0 and entry["bytes"] > 0
    assert by_id["obs-bad"]["status"] == 400 and by_id["obs-id"]["path"] == "/api/v1/idphoto"
    assert any(entry.get("message", "").startswith("startup phase load u2netp") for entry in entries)
    folder = next(e["message"] for e in entries if e.get("message", "").startswith("metrics: multiprocess files in "))
    folder_path = Path(folder.removeprefix("metrics: multiprocess files in "))
    assert folder_path.is_dir() and (folder_path.stat().st_mode & 0o777) == 0o700
    server.stop(timeout=20)
    assert not folder_path.exists(), "the temporary metrics folder was left behind"
