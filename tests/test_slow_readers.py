"""Slow readers: a client that reads its answer slowly, or never, holds no worker thread.

nginx buffers every answer (proxy_buffering: memory, then a temporary file), so a worker hands its
answer over at once and takes the next request. The real pair (2 workers, QUEUE_DEPTH 2: 4 pool
threads each) with a long SEND_TIMEOUT, so that slow readers stay for as long as the test wants:
more of them than the workers have threads, each with a cut-out of about 8 MB (more than
loopback's socket buffers absorb) in flight, while a good client on 127.0.0.1 is served. That
SEND_TIMEOUT drops a reader that stops is in tests/test_slow_clients.py. Every loop and wait is
bounded; nothing asserts a duration.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tests.support.hostile import (
    content_length,
    cutout_request,
    good_client,
    big_photo,
    open_readers,
    read_head,
    trickle_read,
)
from tests.conftest import RunningServer
from tests.support.harness import Server

READERS = 12  # more than the 2 x 4 pool threads of the two workers
LOOPBACK_ABSORBS = 6 * 1024 * 1024  # more than loopback's send + receive buffers take of an unread answer


# -- the real server ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def held(running_server: RunningServer) -> Iterator[Server]:
    # the readers share one address: their POST share (MAX_POSTS_PER_CLIENT) is not what this measures
    with running_server(WORKERS="2", QUEUE_DEPTH="2", SEND_TIMEOUT="600", MAX_POSTS_PER_CLIENT="0") as server:
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
        assert "closed" not in still_open, still_open  # a long SEND_TIMEOUT: they were all still there
    finally:
        for sock, _ in readers:
            sock.close()  # gone mid-answer (unread bytes: a reset)
    # the workers drop them and go on: same processes, nothing logged as an error
    assert held.get("/healthz", timeout=10).status_code == 200
    assert held.wait_workers(2) == workers
    log = held.log_text()
    assert "Traceback" not in log and "Socket error" not in log, log[-3000:]


@pytest.mark.server
def test_a_large_answer_keeps_the_connection_alive(held: Server, big_cutout: bytes) -> None:
    """Pipelined: nginx writes the cut-out (more than the socket buffers hold, so it waits for the
    client), then answers the next request off the same connection."""
    sock = socket.create_connection(("127.0.0.1", held.port), timeout=60)
    try:
        sock.sendall(big_cutout + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(1.0)  # the answer waits for us in nginx
        head, body = read_answer(sock)
        assert head.startswith(b"HTTP/1.1 200 ") and len(body) == content_length(head) > LOOPBACK_ABSORBS
        assert body.startswith(b"\x89PNG")
        head, body = read_answer(sock)
        assert head.startswith(b"HTTP/1.1 200 ") and b'"status"' in body
    finally:
        sock.close()
