"""Liveness, readiness and on-demand warm-up."""

from __future__ import annotations

import os

from flask import Blueprint, Response, current_app, jsonify


bp = Blueprint("health", __name__)


def _runtime():  # noqa: ANN202 (import cycle: app.get_runtime)
    from .. import get_runtime

    return get_runtime(current_app)


@bp.get("/healthz")
def healthz() -> Response:
    """200 while the process can answer: liveness only, never blocked by model loading."""
    runtime = _runtime()
    return jsonify({"status": "alive", "pid": os.getpid(), "models_loaded": runtime.models_loaded, "warm": runtime.warm})


@bp.get("/readyz")
def readyz() -> Response:
    """200 only when this worker's models are loaded and warm (and, at start-up, every worker's)."""
    runtime = _runtime()
    if not runtime.settings.preload_models and not runtime.warm:
        runtime.start_background_load()
    ready, body = runtime.readiness()
    response = jsonify(body)
    if not ready:
        response.status_code = 503
        response.headers["Retry-After"] = "2"
    return response


@bp.post("/warmup")
def warmup() -> Response:
    """Load (lazy mode) and run the warm-up passes in the answering worker; returns the timings."""
    runtime = _runtime()
    runtime.require_ready()  # lazy mode: loads and warms here, once
    passes = max(1, runtime.settings.warmup_requests)
    seconds = runtime.run_warmup(passes=passes)  # its requests queue at the inference gate like any other
    return jsonify({"pid": os.getpid(), "passes": passes, "warmup_seconds": round(seconds, 4), "models": list(runtime.registry.names())})
