"""One error shape for every failure: `{"error": {"code": "...", "message": "..."}}`.

Blueprints raise `ApiError`; werkzeug's HTTP errors (404, 405, 413 from MAX_CONTENT_LENGTH) and any
unexpected exception are turned into the same shape here. Nothing leaks a stack trace or a path.
"""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from . import observability

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An error the client should see: HTTP `status`, a stable machine `code`, a human `message`."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        details: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}
        self.details = details or {}


def bad_request(code: str, message: str) -> ApiError:
    return ApiError(400, code, message)


def error_response(status: int, code: str, message: str, *, details: dict[str, object] | None = None) -> Response:
    body: dict[str, object] = {"code": code, "message": message}
    if details:
        body.update(details)
    response = jsonify({"error": body})
    response.status_code = status
    return response


def _http_code(exc: HTTPException) -> str:
    name = (exc.name or "error").lower()
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_")


def init_app(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def _api_error(exc: ApiError) -> Response:
        if exc.code == "busy":  # backpressure (app.runtime.InferenceGate)
            observability.count_rejection(exc.message)
        response = error_response(exc.status, exc.code, exc.message, details=exc.details)
        response.headers.update(exc.headers)
        return response

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        if status == 413:
            limit_mb = app.config["PILOTLIGHT_SETTINGS"].max_upload_mb
            return error_response(413, "payload_too_large", f"The upload is larger than the {limit_mb:g} MB limit.")
        return error_response(status, _http_code(exc), exc.description or exc.name)

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        log.exception("unhandled error")
        return error_response(500, "internal_error", "The server failed to process this request.")
