"""Holding a server's places for POSTs from many client addresses, as a lockout attempt does: slow
uploads (a piece every few seconds of a body declared much larger) and answers never read, from
loopback addresses bound as distinct clients (127.0.0.2 ...). Used by tests/test_fair_share.py and
python -m bench.lockout. Every wait and loop is bounded; `Holders.close()` ends every connection."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field

from tests.support.hostile import closed_by_server, cutout_request, hostile_socket, open_readers

CUTOUT = "/api/v1/remove-background"
DECLARED = 8 * 2**20  # what a slow upload says it will send
PIECE = 1024  # what it sends at a time
EVERY = 2.0  # seconds between pieces: well inside any BODY_TIMEOUT, so only a rate floor could end it


def address(index: int) -> str:
    """The index-th attacker's loopback address (127.0.0.2 ...; 127.0.1.x past 254)."""
    return f"127.0.{index // 253}.{index % 253 + 2}"


VICTIM = "127.0.3.200"


METHODS = ("GET", "HEAD", "POST", "PUT", "OPTIONS", "PROPFIND")
PATHS = ("/healthz", "//healthz", "/x/../readyz", "/readyz", "/.front-errors/x", "/.front-errors/405",
         "/%2Efront-errors/429", CUTOUT)
"""Every method and path a slow body was once sent through outside the accounting (issue 49): the
probes by any spelling, nginx's error pages, and the cut-out for comparison."""


def framed(method: str, path: str, framing: str, *, first: int = 300_000) -> bytes:
    """A request head and the first `first` bytes of a body declared at DECLARED, framed by a
    Content-Length (`framing` "length") or as one chunk of that size ("chunked"): past nginx's
    256 KiB body buffer, so a body nginx read would wait in a temporary file."""
    if framing == "length":
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {DECLARED}\r\n\r\n"
    else:
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n{DECLARED:x}\r\n"
    return head.encode() + b"a" * first


def slow_upload_head(*, declared: int = DECLARED, path: str = CUTOUT, key: str | None = None) -> bytes:
    """A multipart upload's head to `path` (with `Authorization: Bearer <key>` when given) and its
    first bytes, of a body declared at `declared` bytes."""
    bearer = f"Authorization: Bearer {key}\r\n" if key else ""
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\n{bearer}Content-Type: multipart/form-data; boundary=b\r\n"
            f"Content-Length: {declared}\r\n\r\n").encode() + b"--b\r\n"


@dataclass
class Holders:
    """POSTs held open on the server at `port`; a thread sends each upload its next piece."""

    port: int
    uploads: list[socket.socket] = field(default_factory=list)
    readers: list[socket.socket] = field(default_factory=list)
    refused: list[bytes] = field(default_factory=list)  # what the server answered an attempt it refused
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def upload(self, source: str, count: int, *, settle: float = 0.5) -> int:
        """Start `count` slow uploads from `source`; returns how many the server kept (the others
        were answered at once: their answers go to `refused`)."""
        return self.hold(source, [slow_upload_head() + b"a" * PIECE] * count, settle=settle)

    def hold(self, source: str, requests: list[bytes], *, settle: float = 0.5) -> int:
        """Send each of `requests` (a head and the start of a body declared larger) on a connection
        of its own from `source`, then trickle more body on each the server keeps; returns how many
        it kept (what it answered the others goes to `refused`)."""
        opened = []
        for request in requests:
            sock = hostile_socket(self.port, source=source)
            try:
                sock.sendall(request)
            except OSError:  # answered and closed before all of it was sent
                pass
            opened.append(sock)
        time.sleep(settle)
        kept = 0
        for sock in opened:
            gone, answer = closed_by_server(sock)
            if answer or gone:
                self.refused.append(answer)
                sock.close()
            else:
                kept += 1
                with self._lock:
                    self.uploads.append(sock)
        self._start()
        return kept

    def read_never(self, source: str, count: int, photo: bytes, *, timeout: float = 120.0) -> int:
        """`count` cut-outs of `photo` from `source` whose answers are never read past their heads."""
        held = open_readers(self.port, cutout_request(photo), count, timeout=timeout, source=source)
        self.readers += [sock for sock, _ in held]
        return len(held)

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._trickle, daemon=True)
            self._thread.start()

    def _trickle(self) -> None:
        deadline = time.monotonic() + 900  # never longer than a quarter of an hour
        while not self._stop.wait(EVERY) and time.monotonic() < deadline:
            with self._lock:
                for sock in list(self.uploads):
                    try:
                        sock.send(b"a" * PIECE)
                    except OSError:  # the server ended it
                        self.uploads.remove(sock)

    def alive_uploads(self) -> int:
        with self._lock:
            return sum(1 for sock in self.uploads if not closed_by_server(sock)[0])

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        with self._lock:
            for sock in self.uploads + self.readers:
                sock.close()
            self.uploads.clear()
            self.readers.clear()


def served(port: int, photo: bytes, *, source: str = VICTIM, timeout: float = 60.0) -> tuple[int, bytes]:
    """One cut-out of `photo` from `source`, read whole: (status, the answer's first bytes)."""
    sock = hostile_socket(port, source=source, timeout=timeout)
    try:
        sock.sendall(cutout_request(photo, keep_alive=False))
        data = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
    return status, data[:2048]
