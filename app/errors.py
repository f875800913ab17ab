"""One error shape for every failure: `{"error": {"code": "...", "message": "..."}}`.

Two kinds of errors reach a client. `ApiError` is HTTP-level and raised at the edges (a bad form
field, an upload that is not an image). `DomainError`s say what happened in the pipelines and the
service (`PhotoRejected`, `NoFace`, `Busy`, ...) and know nothing of HTTP: this module alone maps
them to a status (`DOMAIN_STATUS`). werkzeug's HTTP errors (404, 405, 413 from MAX_CONTENT_LENGTH)
and any unexpected exception are turned into the same shape. Nothing leaks a stack trace or a path.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

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


class DomainError(Exception):
    """An outcome of the pipelines or the service that the client must hear about: a stable
    machine `code`, a human `message`, and `details` for the JSON body. No HTTP status here."""

    def __init__(self, code: str, message: str, *, details: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}


class PhotoRejected(DomainError):
    """The photo cannot make what was asked (face count, cut off, file size): the photo's fault."""


class NoFace(DomainError):
    """No face where one is needed (`details` names the field when there are several photos)."""


class FaceIndexOutOfRange(DomainError):
    """The face asked for by index is not in the photo."""


class TooCostly(DomainError):
    """The request's own parameters would make its work cost more than the server allows (alpha
    matting's unknown band): refused before the work starts."""


class ModelUnavailable(DomainError):
    """The deployment does not load the model this needs; the message names the install command."""


class NotReady(DomainError):
    """The models are still loading (or could not be loaded)."""


class Busy(DomainError):
    """Every inference slot and queue place of this worker is taken (backpressure)."""


# The one place a domain error becomes an HTTP answer: (status, extra headers).
DOMAIN_STATUS: dict[type[DomainError], tuple[int, dict[str, str]]] = {
    PhotoRejected: (422, {}),
    NoFace: (422, {}),
    FaceIndexOutOfRange: (422, {}),
    TooCostly: (422, {}),
    ModelUnavailable: (503, {}),
    NotReady: (503, {"Retry-After": "5"}),
    Busy: (503, {"Retry-After": "1"}),
}


def bad_request(code: str, message: str) -> ApiError:
    return ApiError(400, code, message)


def error_response(status: int, code: str, message: str, *, details: dict[str, object] | None = None) -> Response:
    body: dict[str, object] = {"code": code, "message": message}
    if details:
        body.update(details)
    response = jsonify({"error": body})
    response.status_code = status
    return response


def relative_location(location: str) -> str:
    """`location` without its scheme and host, and never protocol-relative (`//host/...`)."""
    parts = urlsplit(location)
    path = "/" + (parts.path or "/").lstrip("/")
    return urlunsplit(("", "", path, parts.query, parts.fragment))


def _http_code(exc: HTTPException) -> str:
    name = (exc.name or "error").lower()
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_")


@dataclass(frozen=True)
class Failure:
    """What any exception means to a client, whatever shape its answer takes: the one JSON error
    shape here, or a drop-in API's own (app/api/hivision.py, app/api/rembg.py)."""

    status: int
    code: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)
    details: dict[str, object] = field(default_factory=dict)


def describe(exc: Exception, *, max_upload_mb: float) -> Failure:
    """The one mapping from an exception to (status, code, message, headers, details); counts a
    `Busy` refusal and logs an unexpected exception (the client sees no trace of it)."""
    if isinstance(exc, ApiError):
        return Failure(exc.status, exc.code, exc.message, dict(exc.headers), dict(exc.details))
    if isinstance(exc, DomainError):
        if isinstance(exc, Busy):
            observability.count_rejection(str(exc.details.get("reason", "queue_full")))
        status, headers = DOMAIN_STATUS[type(exc)]
        return Failure(status, exc.code, exc.message, dict(headers), dict(exc.details))
    if isinstance(exc, HTTPException):
        status = exc.code or 500
        if status == 413:
            return Failure(413, "payload_too_large", f"The upload is larger than the {max_upload_mb:g} MB limit.")
        return Failure(status, _http_code(exc), exc.description or exc.name)
    log.exception("unhandled error")
    return Failure(500, "internal_error", "The server failed to process this request.")


def init_app(app: Flask) -> None:
    def answer(exc: Exception) -> Response:
        failure = describe(exc, max_upload_mb=app.config["PILOTLIGHT_SETTINGS"].max_upload_mb)
        response = error_response(failure.status, failure.code, failure.message, details=failure.details)
        response.headers.update(failure.headers)
        return response

    for kind in (ApiError, DomainError, HTTPException, Exception):
        app.register_error_handler(kind, answer)

    @app.after_request
    def _relative_redirect(response: Response) -> Response:
        """A redirect Flask makes itself (a doubled slash, a missing trailing one) names the path
        alone: built from the client's Host header it pointed nowhere on HTTP/1.0 (no Host) and
        anywhere a client chose otherwise. A relative Location is right behind any proxy."""
        location = response.headers.get("Location")
        if location and 300 <= response.status_code < 400:
            relative = response.headers["Location"] = relative_location(location)
            # Werkzeug's own body is HTML naming the absolute URL (the client's Host again): JSON instead
            response.set_data(json.dumps({"redirect": {"location": relative,
                                                       "message": f"This resource is at {relative}: send the request there."}}))
            response.mimetype = "application/json"
        return response
