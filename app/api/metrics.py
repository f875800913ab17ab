"""GET /metrics: Prometheus text format, totals over every gunicorn worker (app.observability)."""

from __future__ import annotations

from flask import Blueprint, Response

from .. import observability

bp = Blueprint("metrics", __name__)


@bp.get("/metrics")
def metrics() -> Response:
    response = Response(observability.exposition(), mimetype="text/plain")
    response.headers["Content-Type"] = observability.CONTENT_TYPE
    response.headers["Cache-Control"] = "no-store"
    return response
