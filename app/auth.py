"""Optional API keys (API_KEYS): every /api/v1/* call needs `Authorization: Bearer <key>`, and so
does every route of the drop-in blueprints (`rembg s`'s /api/remove, HivisionIDPhotos' routes).

Off unless API_KEYS is set; then a missing or wrong key gets `401` in the one JSON error shape
(with `WWW-Authenticate: Bearer`). Keys are compared in constant time (their SHA-256 digests,
each one compared whatever the outcome), never logged, and appear in /metrics only as the first 8
hex digits of their SHA-256 (`pilotlight_api_key_requests_total{key=...}`). /metrics needs a key
too (it shows key labels and counts) unless METRICS_NEED_KEY=false.

`POST /warmup` runs real inference, so it always needs a key: one of API_KEYS, or WARMUP_KEY (a key
of its own, for a keep-alive job that needs no other). With neither set it answers `403` to every
client: no address stands in for a key (a sidecar's or a local proxy's connections come from
loopback, and a trusted proxy names any address it likes).

Probes stay open. CORS preflights (OPTIONS) are not checked: browsers send them without
credentials. Warm-up requests (marked in the WSGI environ, unreachable over HTTP) pass.
"""

from __future__ import annotations

import hashlib
import hmac

from flask import Flask, Response, g, request

from . import observability
from .config import Settings, key_label  # key_label: what /metrics shows for a key
from .errors import ApiError

API_PREFIX = "/api/v1/"
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="pilotlight"'}


class KeyRing:
    def __init__(self, keys: tuple[str, ...]) -> None:
        self._digests = [(hashlib.sha256(key.encode()).digest(), key_label(key)) for key in keys]

    def match(self, given: str) -> str | None:
        """The label of the key `given` is, or None; takes the same time whichever key matches."""
        digest = hashlib.sha256(given.encode("utf-8", "surrogateescape")).digest()
        found = None
        for expected, label in self._digests:
            if hmac.compare_digest(digest, expected) and found is None:
                found = label
        return found


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def init_app(app: Flask, settings: Settings, *, blueprints: tuple[str, ...] = ()) -> None:
    """`blueprints`: the names of blueprints guarded whatever their paths (the drop-in APIs)."""
    ring = KeyRing(settings.api_keys) if settings.api_keys else None
    warmup_keys = settings.api_keys + ((settings.warmup_key,) if settings.warmup_key else ())
    warmup_ring = KeyRing(warmup_keys) if warmup_keys else None

    def ring_for() -> KeyRing | None:
        """The keys this request needs (None: none), or 403 for /warmup with no key set."""
        if request.method == "OPTIONS" or observability.is_warmup():
            return None
        if request.path == "/warmup":
            if warmup_ring is None:
                raise ApiError(403, "forbidden", "POST /warmup runs real inference and needs a key: set WARMUP_KEY "
                               "(or API_KEYS) and send it as Authorization: Bearer <key>.")
            return warmup_ring
        if request.path.startswith(API_PREFIX) or request.blueprint in blueprints:
            return ring
        return ring if settings.metrics_need_key and request.path == "/metrics" else None

    @app.before_request
    def _check_key() -> None:
        keys = ring_for()
        if keys is None:
            return
        token = bearer_token(request.headers.get("Authorization"))
        if token is None:
            g.api_key_label = "none"
            raise ApiError(401, "unauthorized", "This server needs an API key: send Authorization: Bearer <key>.",
                           headers=CHALLENGE)
        label = keys.match(token)
        if label is None:
            g.api_key_label = "invalid"
            raise ApiError(401, "unauthorized", "The API key is not valid.", headers=CHALLENGE)
        g.api_key_label = label

    @app.after_request
    def _count(response: Response) -> Response:
        label = g.get("api_key_label")
        if label is not None:
            observability.api_key_request(label, response.status_code)
        return response
