"""CORS for the JSON API, off unless CORS_ORIGINS is set (no CORS header at all by default).

With CORS_ORIGINS set, responses under /api/v1/ to a request whose Origin is allowed carry
Access-Control-Allow-Origin (the origin itself, or `*` when every origin is allowed), and every
API response carries `Vary: Origin`; a preflight (OPTIONS with Access-Control-Request-Method)
from an allowed origin is answered 204 with the methods and headers the API accepts. Credentials
are never allowed (the API has no cookies; API_KEYS are sent as an Authorization header).
"""

from __future__ import annotations

from flask import Flask, Response, request

API_PREFIX = "/api/v1/"
ALLOW_METHODS = "GET, POST"
ALLOW_HEADERS = "Accept, Authorization, Content-Type, X-Request-ID"
EXPOSE_HEADERS = "X-Request-ID, Server-Timing, Retry-After, Content-Disposition, X-Model, X-Pilotlight-Not-Applied"
PREFLIGHT_MAX_AGE = "600"


def allowed_origin(origin: str | None, origins: tuple[str, ...]) -> str | None:
    """The Access-Control-Allow-Origin value for `origin`, or None when it is not allowed."""
    if not origin or not origins:
        return None
    if origins == ("*",):
        return "*"
    return origin if origin.rstrip("/").lower() in origins else None


def init_app(app: Flask, origins: tuple[str, ...], *, blueprints: tuple[str, ...] = ()) -> None:
    """`blueprints`: the names of blueprints in scope whatever their paths (the drop-in APIs)."""
    if not origins:
        return

    def in_scope() -> bool:
        return request.path.startswith(API_PREFIX) or request.blueprint in blueprints

    @app.before_request
    def _preflight() -> Response | None:
        if request.method != "OPTIONS" or not in_scope() or request.url_rule is None:
            return None
        if "Access-Control-Request-Method" not in request.headers:
            return None
        if allowed_origin(request.headers.get("Origin"), origins) is None:
            return None  # Flask's own OPTIONS answer, without CORS headers: the browser refuses
        response = Response(status=204)
        response.headers["Access-Control-Allow-Methods"] = ALLOW_METHODS
        response.headers["Access-Control-Allow-Headers"] = ALLOW_HEADERS
        response.headers["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
        return response

    @app.after_request
    def _cors_headers(response: Response) -> Response:
        if not in_scope():
            return response
        response.vary.add("Origin")
        allow = allowed_origin(request.headers.get("Origin"), origins)
        if allow is not None:
            response.headers["Access-Control-Allow-Origin"] = allow
            response.headers["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
        return response
