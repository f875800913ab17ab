"""Slow readers (issue 16): a client that reads its answer slowly, or never, holds no thread.

The pool thread renders the answer into memory (`ResponseSink`) and the worker's event loop sends
it without blocking (`PendingResponse`, app/serving/intake.py). Pure tests of both, then the real
gunicorn (2 workers, QUEUE_DEPTH 2: 4 pool threads each) with MIN_RESPONSE_RATE=0, so that slow
readers stay for as long as the test wants: more of them than the workers have threads, each
with a cut-out of about 8 MB (more than loopback's socket buffers absorb) in flight, while a good
client on 127.0.0.1 is served. That the limit drops a slow reader is in tests/test_slow_clients.py
(the default MIN_RESPONSE_RATE). Every loop and wait is bounded; nothing asserts a duration.
"""

from __future__ import annotations

import io
import socket
import time
from collections.abc import Iterator

import pytest

from app.config import Settings
from app.serving.intake import PendingResponse, ResponseSink
from bench.slowloris import (
    content_length,
    cutout_request,
    good_client,
    limit_count,
    big_photo,
    open_readers,
    read_head,
    trickle_read,
)
from tests.conftest import RunningServer
from bench.harness import Server

READERS = 12  # more than the 2 x 4 pool threads of the two workers
LOOPBACK_ABSORBS = 6 * 1024 * 1024  # more than loopback's send + receive buffers take of an unread answer


# -- pure -------------------------------------------------------------------------------------------


def test_the_sink_keeps_what_gunicorn_writes_and_never_blocks() -> None:
    sink = ResponseSink()
    body = b"x" * 100_000
    sink.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
    assert sink.send(body) == len(body)
    assert sink.parts[1] is body  # the application's bytes, not a copy
    sink.sendfile(io.BytesIO(b"0123456789"), offset=2, count=5)
    assert b"".join(sink.parts).endswith(b"23456") and sink.size == 19 + 100_000 + 5
    sink.setblocking(True)
    sink.settimeout(3)
    assert sink.gettimeout() is None and sink.recv(10) == b"" and not sink.aborted
    sink.shutdown(socket.SHUT_WR)  # gunicorn's close after an error past the headers
    assert sink.aborted
    with pytest.raises(BrokenPipeError):
        sink.sendall(b"more")


def test_a_pending_answer_advances_across_its_parts() -> None:
    out = PendingResponse([b"head", b"", b"body-body"], min_rate=10, grace_s=5)
    assert out.size == 13 and [bytes(v) for v in out.next_buffers()] == [b"head", b"body-body"]
    out.advance(6)
    assert [bytes(v) for v in out.next_buffers()] == [b"dy-body"] and out.sent == 6 and not out.done
    out.advance(7)
    assert out.done


def test_the_read_rate_counts_from_the_first_stall() -> None:
    out = PendingResponse([b"a" * 1000], min_rate=10, grace_s=5)
    assert not out.too_slow(1000.0)  # never stalled: the client takes everything as it comes
    out.advance(100)
    out.stalled(10.0)
    out.stalled(12.0)  # only the first stall starts the clock
    assert not out.too_slow(14.0)  # within the grace period
    out.advance(60)
    assert not out.too_slow(15.5)  # 60 bytes in 5.5 s: above 10 bytes/s
    assert out.too_slow(17.0)  # 60 bytes in 7 s
    assert not PendingResponse([b"a"], min_rate=0, grace_s=5).too_slow(1e9)  # 0: no floor


def test_min_response_rate_setting() -> None:
    assert Settings.from_env({}).min_response_rate == 1024
    assert Settings.from_env({"MIN_RESPONSE_RATE": "0"}).min_response_rate == 0


# -- the real server ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def held(running_server: RunningServer) -> Iterator[Server]:
    with running_server(WORKERS="2", QUEUE_DEPTH="2", MIN_RESPONSE_RATE="0") as server:
        yield server


@pytest.fixture(scope="module")
def big_cutout() -> bytes:
    return cutout_request(big_photo())


def read_answer(sock: socket.socket, *, timeout: float = 60.0) -> tuple[bytes, bytes]:
    """(head, body) of one answer with a Content-Length, read whole (bounded)."""
    head = read_head(sock, timeout=timeout)
    assert head, "the connection closed before an answer"
    length = content_length(head)
    body = b""
    deadline = time.monotonic() + timeout
    sock.settimeout(timeout)
    while len(body) < length and time.monotonic() < deadline:
        piece = sock.recv(min(1 << 20, length - len(body)))
        if not piece:
            break
        body += piece
    return head, body


@pytest.mark.server
def test_slow_readers_hold_no_thread(held: Server, big_cutout: bytes, astronaut_jpeg: bytes) -> None:
    workers = held.wait_workers(2)
    readers = open_readers(held.port, big_cutout, READERS, timeout=240)
    try:
        # with a thread per answer, the 9th would never have been answered: every thread writing
        assert len(readers) == READERS, f"only {len(readers)} of {READERS} slow readers were answered"
        assert all(content_length(head) > LOOPBACK_ABSORBS for _, head in readers)
        good = good_client(held.url, astronaut_jpeg, seconds=8, timeout=20)
        assert good.sent >= 3 and good.ok == good.sent, good.summary()
        still_open = [trickle_read(sock)[0] for sock, _ in readers]
        assert "closed" not in still_open, still_open  # MIN_RESPONSE_RATE=0: no floor, they were all there
    finally:
        for sock, _ in readers:
            sock.close()  # gone mid-answer (unread bytes: a reset)
    # the workers drop them and go on: same processes, nothing logged as an error
    assert held.get("/healthz", timeout=10).status_code == 200
    assert held.wait_workers(2) == workers
    assert limit_count(held, "response_too_slow") == 0
    log = held.log_text()
    assert "Traceback" not in log and "Socket error" not in log, log[-3000:]


@pytest.mark.server
def test_a_large_answer_keeps_the_connection_alive(held: Server, big_cutout: bytes) -> None:
    """Pipelined: the event loop writes the cut-out (more than the socket buffers hold, so it waits
    for the client), then reads the next request off the same connection."""
    sock = socket.create_connection(("127.0.0.1", held.port), timeout=60)
    try:
        sock.sendall(big_cutout + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(1.0)  # the answer waits for us in the event loop
        head, body = read_answer(sock)
        assert head.startswith(b"HTTP/1.1 200 ") and len(body) == content_length(head) > LOOPBACK_ABSORBS
        assert body.startswith(b"\x89PNG")
        head, body = read_answer(sock)
        assert head.startswith(b"HTTP/1.1 200 ") and b'"status"' in body
    finally:
        sock.close()
