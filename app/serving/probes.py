"""The management port's answers inside each worker: `/healthz`, `/readyz` and `/metrics` on a unix
socket of their own (`probe_socket`), answered by a thread of their own.

Behind nginx the kubelet's probes and the metrics scraper ask MANAGEMENT_PORT, which nginx sends
here, never to the worker's gthread pool: the pool's threads serve users, and a flood of users'
requests (or a slow handler) that takes every one of them must not fail a probe and take the pod out
of rotation. One thread, one connection at a time: only nginx connects (the socket is its group's
alone), each connection gets `READ_TIMEOUT` seconds to send a head of at most `HEAD_BYTES`, and
each answer is computed by the app itself (the same handlers, the same keys for /metrics).
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from werkzeug.test import EnvironBuilder, run_wsgi_app

log = logging.getLogger(__name__)

PATHS = ("/healthz", "/readyz", "/metrics")
HEAD_BYTES = 8192
READ_TIMEOUT = 2.0
PASSED = ("Authorization", "X-Request-ID", "Accept")  # the headers a probe or a scraper may need


def probe_socket(folder: Path, slot: int) -> Path:
    """The unix socket the worker in `slot` answers the management port's requests on."""
    return folder / f"probe-{slot}.sock"


def start(app: Callable[..., Any], listener: socket.socket) -> threading.Thread:
    """Answer on `listener` (listening, blocking) from a daemon thread, until the process exits."""
    listener.setblocking(True)
    thread = threading.Thread(target=_serve, args=(app, listener), name="probes", daemon=True)
    thread.start()
    return thread


def _serve(app: Callable[..., Any], listener: socket.socket) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:  # closed: the worker is exiting
            return
        try:
            client.settimeout(READ_TIMEOUT)
            client.sendall(answer(app, _read_head(client)))
        except Exception:  # noqa: BLE001  (one bad connection never stops the probes)
            log.debug("probe connection failed", exc_info=True)
        finally:
            client.close()


def _read_head(client: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data and len(data) < HEAD_BYTES:
        chunk = client.recv(HEAD_BYTES - len(data))
        if not chunk:
            break
        data += chunk
    return data


def answer(app: Callable[..., Any], head: bytes) -> bytes:
    """The whole HTTP/1.0 answer to the request `head` (GET or HEAD of one of PATHS, no body)."""
    lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    method, _, rest = lines[0].partition(" ")
    target = rest.rpartition(" ")[0] or rest
    path, _, query = target.partition("?")
    if method not in ("GET", "HEAD") or path not in PATHS:
        return _plain(404, b'{"error": {"code": "not_found", "message": "The management port answers GET /healthz, '
                           b'/readyz and /metrics only."}}')
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().title() in PASSED:
            headers[name.strip()] = value.strip()
    environ = EnvironBuilder(path=path, query_string=query, method=method, headers=headers).get_environ()
    body, status, answer_headers = run_wsgi_app(app, environ, buffered=True)
    try:
        payload = b"".join(body)
    finally:
        closer = getattr(body, "close", None)
        if closer is not None:
            closer()
    out = [f"HTTP/1.0 {status}".encode("latin-1")]
    for name, value in answer_headers.items():
        if name.lower() not in ("content-length", "connection"):
            out.append(f"{name}: {value}".encode("latin-1"))
    out += [f"Content-Length: {len(payload)}".encode(), b"Connection: close", b"", b""]
    return b"\r\n".join(out) + (b"" if method == "HEAD" else payload)


def _plain(status: int, body: bytes) -> bytes:
    return (f"HTTP/1.0 {status} Not Found\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode() + body
