"""Liveness, readiness and on-demand warm-up."""

from __future__ import annotations

import os

from flask import Blueprint, Response, jsonify

from ..service import current_service

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> Response:
    """200 while the process can answer: liveness only, never blocked by model loading."""
    service = current_service()
    return jsonify({"status": "alive", "pid": os.getpid(), "models_loaded": service.models_loaded, "warm": service.warmed})


@bp.get("/readyz")
def readyz() -> Response:
    """200 only when this worker's models are loaded and warm (and, at start-up, every worker's)."""
    service = current_service()
    if not service.settings.preload_models and not service.warmed:
        service.start_background_load()
    ready, body = service.readiness()
    response = jsonify(body)
    if not ready:
        response.status_code = 503
        response.headers["Retry-After"] = "2"
    return response


@bp.post("/warmup")
def warmup() -> Response:
    """Load (lazy mode) and run the warm-up passes in the answering worker; returns the timings.
    It needs a key (app/auth.py); one runs at a time per worker, and each of its steps queues for the
    inference slot like a request (a full queue: 503 busy)."""
    service = current_service()
    service.require_ready()  # lazy mode: loads and warms here, once
    seconds = service.warm_on_demand()
    return jsonify(
        {
            "pid": os.getpid(),
            "passes": service.settings.warmup_requests,
            "warmup_seconds": round(seconds, 4),
            "models": list(service.registry.names()),
        }
    )
