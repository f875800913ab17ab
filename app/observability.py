"""Metrics, request ids and structured logs.

Metrics are Prometheus metrics kept by `prometheus_client` in multiprocess mode under gunicorn:
every process writes its own memory-mapped files in one folder and `GET /metrics` (any worker)
reads and merges them all, so counters are totals over every worker, dead ones included, and
`workers_ready` (a "livesum" gauge) counts live warm workers. The folder is chosen in the master
by `start_master()` (called by the `on_starting` hook) and exported as PROMETHEUS_MULTIPROC_DIR
there, in one place, before `prometheus_client` is first imported: the library picks its
multiprocess value class when `prometheus_client.values` is imported, so nothing in this module
imports it at module level, and `start_master()` corrects the class if something else imported the
library first. `child_exit` (master) calls `worker_gone()`, which drops a dead worker's live gauges.

Outside gunicorn (the Flask test client, the CLI) the same metrics live in one private registry
of this process.

Warm-up requests (sent by the app factory through the test client, marked in the WSGI environ
where no HTTP client can reach) are left out of the request and inference metrics.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, g, has_request_context, request

if TYPE_CHECKING:
    from .config import Settings
    from .timings import Timings

log = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
REQUEST_ID_HEADER = "X-Request-ID"
WARMUP_ENVIRON = "pilotlight.warmup"  # set by the app factory's warm-up client; not reachable over HTTP
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
REQUEST_BUCKETS = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 13.0, 20.0, 30.0)
INFERENCE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
WARMUP_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
REJECTION_REASONS = ("queue_full", "wait_timeout")
LANES = ("wide", "narrow")

_lock = threading.Lock()
_multiproc_dir: Path | None = None  # set in the master by start_master(); inherited by the workers
_owned_dir = False  # the folder is a fresh temporary one this process created (removed at exit)
_master_pid: int | None = None
_metrics: _Metrics | None = None
_record_failed = False


# -- the metrics ----------------------------------------------------------------------------------


class _Metrics:
    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

        disable_created_metrics()  # no *_created series (multiprocess mode has none either)
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "pilotlight_requests",
            "HTTP requests answered, by route template (unmatched: no route), method and status; warm-up excluded.",
            ["endpoint", "method", "status"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "pilotlight_request_seconds",
            "Time from the app receiving a request to its response being ready, by route template.",
            ["endpoint"],
            buckets=REQUEST_BUCKETS,
            registry=r,
        )
        self.inference_seconds = Histogram(
            "pilotlight_inference_seconds",
            "Seconds of one model-running pipeline stage of a request (segment, detect, align), by model.",
            ["model", "stage"],
            buckets=INFERENCE_BUCKETS,
            registry=r,
        )
        self.model_load_seconds = Gauge(
            "pilotlight_model_load_seconds",
            "Seconds it took to load each model (in the master in preload mode).",
            ["model"],
            multiprocess_mode="max",
            registry=r,
        )
        self.model_variant = Gauge(
            "pilotlight_model_variant",
            "1 for the weights each loaded model runs: variant fp32 or int8 (MODEL_PRECISION).",
            ["model", "variant"],
            multiprocess_mode="max",
            registry=r,
        )
        self.warmup_seconds = Histogram(
            "pilotlight_warmup_seconds",
            "Seconds a worker's warm-up passes took before it accepted connections (and POST /warmup runs).",
            buckets=WARMUP_BUCKETS,
            registry=r,
        )
        self.workers_ready = Gauge(
            "pilotlight_workers_ready",
            "Live workers that finished their warm-up.",
            multiprocess_mode="livesum",
            registry=r,
        )
        self.rejected = Counter(
            "pilotlight_rejected",
            "Requests turned away by backpressure with 503 busy (queue_full: QUEUE_DEPTH already waiting; "
            "wait_timeout: no inference slot within TIMEOUT).",
            ["reason"],
            registry=r,
        )
        for reason in REJECTION_REASONS:  # the series exist (at 0) before the first rejection
            self.rejected.labels(reason)
        self.lanes = Counter(
            "pilotlight_inference_lane",
            "Inferences by lane: wide (the worker's session over every usable core, taken when no other "
            "worker was inferring) or narrow (one thread); warm-up excluded.",
            ["lane"],
            registry=r,
        )
        for lane in LANES:
            self.lanes.labels(lane)
        self.api_key_requests = Counter(
            "pilotlight_api_key_requests",
            "/api/v1 requests by API key (API_KEYS): `key` is the first 8 hex digits of the key's SHA-256, "
            "`none` for a missing key and `invalid` for a wrong one.",
            ["key", "status"],
            registry=r,
        )


def metrics() -> _Metrics:
    """This process's metric objects, created on first use (after `start_master`, under gunicorn)."""
    global _metrics
    if _metrics is None:
        with _lock:
            if _metrics is None:
                _metrics = _Metrics()
    return _metrics


def _record(update: Any) -> None:
    """Run one metric update; a failure (a full temp folder) is logged once and never fails a request."""
    global _record_failed
    try:
        update(metrics())
    except Exception:
        if not _record_failed:
            _record_failed = True
            log.exception("metrics update failed; further failures are not logged")


# -- process lifecycle (called from app.serving.hooks) ------------------------------------------------


def start_master(settings: Settings) -> Path:
    """Master, before anything records a metric: create and empty the metrics folder and switch
    `prometheus_client` to multiprocess mode for this process and every worker forked from it."""
    global _multiproc_dir, _owned_dir, _metrics, _master_pid
    if settings.metrics_dir is None:
        path = Path(tempfile.mkdtemp(prefix=f"pilotlight-metrics-{os.getpid()}-"))  # 0700, unique
        _owned_dir = True
        _master_pid = os.getpid()
        atexit.register(_remove_owned_dir)  # any master exit, a failed start-up included
    else:
        path = settings.metrics_dir
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        for stale in path.glob("*.db"):  # left by an earlier run: counters must start at zero
            stale.unlink()
        _owned_dir = False
    _multiproc_dir = path
    os.environ[MULTIPROC_ENV] = str(path)  # the one writer of this variable
    from prometheus_client import values

    if not getattr(values.ValueClass, "_multiprocess", False):  # imported before the variable was set
        values.ValueClass = values.MultiProcessValue()
    _metrics = None  # (re)created on first use, in multiprocess mode
    log.info("metrics: multiprocess files in %s", path)
    return path


def _remove_owned_dir() -> None:
    """At the master's exit: remove the temporary metrics folder (never from a worker, which
    inherits the atexit list; a METRICS_DIR given is left in place)."""
    if _owned_dir and _multiproc_dir is not None and os.getpid() == _master_pid:
        shutil.rmtree(_multiproc_dir, ignore_errors=True)


def worker_gone(pid: int) -> None:
    """Master, when a worker has exited (any cause): drop its live gauges (workers_ready). Its
    counters and histograms stay in the totals, so nothing goes backwards."""
    if _multiproc_dir is None:
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid, path=str(_multiproc_dir))


def model_loaded(name: str, seconds: float, *, variant: str = "fp32") -> None:
    def update(m: _Metrics) -> None:
        m.model_load_seconds.labels(name).set(seconds)
        m.model_variant.labels(name, variant).set(1)

    _record(update)


def worker_warm(seconds: float) -> None:
    """This process finished its warm-up passes: it counts as a ready worker."""

    def update(m: _Metrics) -> None:
        m.warmup_seconds.observe(seconds)
        m.workers_ready.set(1)

    _record(update)


def count_rejection(reason: str) -> None:
    """One `503 busy` answer; `reason` is one of REJECTION_REASONS (app.serving.admission)."""
    _record(lambda m: m.rejected.labels(reason).inc())


def count_lane(lane: str) -> None:
    """One inference that took `lane` (app/serving/admission.py); warm-up excluded."""
    if not is_warmup():
        _record(lambda m: m.lanes.labels(lane).inc())


def api_key_request(key_label: str, status: int) -> None:
    """An /api/v1 request checked against API_KEYS; `key_label` is a short hash, never the key."""
    _record(lambda m: m.api_key_requests.labels(key_label, str(status)).inc())


def observe_inference(timings: Timings) -> None:
    """Per-model stage times of the current request: the stages named in `timings.models`."""
    if is_warmup():
        return

    def update(m: _Metrics) -> None:
        for stage, model in timings.models.items():
            if stage in timings.stages:
                m.inference_seconds.labels(model, stage).observe(timings.stages[stage])

    _record(update)


def exposition() -> bytes:
    """The Prometheus text format (0.0.4) of every process's metrics, or this process's alone
    outside gunicorn."""
    from prometheus_client import CollectorRegistry, generate_latest

    if _multiproc_dir is None:
        return generate_latest(metrics().registry)
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(_multiproc_dir))
    return generate_latest(registry)


# -- per request ------------------------------------------------------------------------------------


def is_warmup() -> bool:
    return has_request_context() and bool(request.environ.get(WARMUP_ENVIRON))


def request_id_from(value: str | None) -> str:
    """The client's X-Request-ID when it is a sane token, otherwise a new one."""
    if value is not None and _REQUEST_ID.match(value):
        return value
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    if not has_request_context():
        return None
    return g.get("request_id")


def _method() -> str:
    return request.method if request.method in _METHODS else "other"


def init_app(app: Flask) -> None:
    """Request ids on every response and the request metrics. Register before other hooks."""

    @app.before_request
    def _start() -> None:
        g.request_started = time.perf_counter()
        g.request_id = request_id_from(request.headers.get(REQUEST_ID_HEADER))

    @app.after_request
    def _finish(response: Response) -> Response:
        request_id = g.get("request_id") or request_id_from(request.headers.get(REQUEST_ID_HEADER))
        response.headers[REQUEST_ID_HEADER] = request_id
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        if is_warmup():
            return response
        endpoint = request.url_rule.rule if request.url_rule is not None else "unmatched"
        status = str(response.status_code)
        started = g.get("request_started")
        elapsed = None if started is None else time.perf_counter() - started

        def update(m: _Metrics) -> None:
            m.requests.labels(endpoint, _method(), status).inc()
            if elapsed is not None:
                m.request_seconds.labels(endpoint).observe(elapsed)

        _record(update)
        return response


# -- logs -------------------------------------------------------------------------------------------


def _iso(created: float) -> str:
    return datetime.fromtimestamp(created, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _atom(atoms: Mapping[str, Any], key: str) -> Any:
    value = atoms.get(key)
    if isinstance(value, str):
        value = value.replace('\\"', '"')  # gunicorn escapes quotes for its text format
        return None if value == "-" else value
    return value


def _access_fields(atoms: Mapping[str, Any]) -> dict[str, Any]:
    status = _atom(atoms, "s")
    micros = atoms.get("D")
    fields = {
        "remote": _atom(atoms, "h"),
        "method": _atom(atoms, "m"),
        "path": _atom(atoms, "U"),
        "query": _atom(atoms, "q") or None,
        "status": int(status) if isinstance(status, str) and status.isdigit() else status,
        "bytes": atoms.get("B"),
        "duration_ms": round(micros / 1000, 3) if isinstance(micros, int) else None,
        "request_id": _atom(atoms, "{x-request-id}o"),
        "user_agent": _atom(atoms, "a"),
    }
    return {key: value for key, value in fields.items() if value is not None or key in ("status", "request_id")}


class JsonFormatter(logging.Formatter):
    """One JSON object per record (LOG_FORMAT=json).

    gunicorn's access records carry its atoms as the record's mapping argument: they become
    fields (remote, method, path, status, bytes, duration_ms, request_id, ...). Other records carry
    their message, the request id when logged inside a request, and a formatted exception if any
    (exceptions go to the log, never to a client).
    """

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": _iso(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
        }
        if record.name == "gunicorn.access" and isinstance(record.args, Mapping):
            entry.update(_access_fields(record.args))
        else:
            entry["message"] = record.getMessage()
            request_id = current_request_id()
            if request_id is not None:
                entry["request_id"] = request_id
            if record.exc_info:
                entry["exc"] = self.formatException(record.exc_info)
            elif record.exc_text:
                entry["exc"] = record.exc_text
            if record.stack_info:
                entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str)


# -- gunicorn's logging ------------------------------------------------------------------------------

# the request id (X-Request-ID, echoed by the app on every response) ends each access line
ACCESS_LOG_FORMAT = '%(h)s "%(r)s" %(s)s %(B)s %(M)sms %({x-request-id}o)s'


def logging_config(*, level: str, json_lines: bool) -> dict[str, Any]:
    """gunicorn's `logconfig_dict`: errors to stderr, access lines to stdout; LOG_FORMAT=json makes
    every line one JSON object (`JsonFormatter`), access lines as fields."""
    upper = level.upper()
    formatter = (
        {"()": "app.observability.JsonFormatter"}
        if json_lines
        else {"format": "%(asctime)s [%(process)d] [%(levelname)s] %(name)s: %(message)s"}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"generic": formatter},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": "generic", "stream": "ext://sys.stderr"},
            "access": {"class": "logging.StreamHandler", "formatter": "generic", "stream": "ext://sys.stdout"},
        },
        "root": {"level": upper, "handlers": ["console"]},
        "loggers": {
            "gunicorn.error": {"level": upper, "handlers": ["console"], "propagate": False, "qualname": "gunicorn.error"},
            "gunicorn.access": {"level": "INFO", "handlers": ["access"], "propagate": False, "qualname": "gunicorn.access"},
        },
    }
