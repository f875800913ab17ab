"""Slow and hostile clients (issue 16): the request intake (app/serving/intake.py) and API keys.

Pure tests of `RequestBuffer` and `BufferedUnreader`, then the real gunicorn (2 workers, u2netp)
with hostile connections from 127.0.0.2 beside a good client on 127.0.0.1, whose probes and
cut-outs must all be answered. Every loop and wait is bounded; nothing asserts a duration.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from app.config import ConfigError, Settings
from app.serving.intake import BufferedUnreader, IntakeLimits, Rejected, RequestBuffer
from bench.harness import Server
from bench.slowloris import (
    Attack,
    closed_by_server,
    content_length,
    cutout_request,
    good_client,
    hostile_socket,
    limit_count,
    big_photo,
    open_readers,
    trickle_read,
)
from tests.conftest import RunningServer

CUTOUT = "/api/v1/remove-background"
LIMITS = IntakeLimits(header_timeout=10, min_body_rate=1024, max_body_bytes=1000)
KEY = "k3y-abcdefghijklmnop-0123456789"
OTHER_KEY = "second-key-abcdefghijklmnop"


# -- the intake, pure -------------------------------------------------------------------------------


def fed(*pieces: bytes, limits: IntakeLimits = LIMITS, now: float = 0.0) -> RequestBuffer:
    buffer = RequestBuffer(limits, now=now)
    for piece in pieces:
        buffer.feed(piece, now=now)
    return buffer


def test_a_request_is_whole_only_with_its_headers_and_body() -> None:
    head = b"POST /api/v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n"
    assert not fed(head[:20]).complete
    assert not fed(head).complete
    assert not fed(head, b"12345").complete
    whole = fed(head, b"12345", b"67890GET /next")  # pipelined bytes stay behind it
    assert whole.complete and bytes(whole.data).endswith(b"GET /next")
    assert fed(b"GET /healthz?x=1 HTTP/1.1\r\nHost: a\r\n\r\n").is_probe
    assert not fed(b"POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n").is_probe


def test_chunked_bodies_end_at_the_last_chunk_and_trailers() -> None:
    head = b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert not fed(head, b"5\r\nhello\r\n").complete
    assert not fed(head, b"5;ext=1\r\nhello\r\n0\r\n").complete
    assert fed(head, b"5\r\nhello\r\n0\r\n\r\n").complete
    assert fed(head, b"5\r\nhel", b"lo\r\n0\r\nX-T: 1\r\n\r\n").complete
    with pytest.raises(Rejected) as caught:
        fed(head, b"400\r\n" + b"a" * 1024 + b"\r\n")  # over max_body_bytes
    assert caught.value.status == 413 and caught.value.code == "payload_too_large"
    assert fed(head, b"zz\r\n").complete  # passed on: gunicorn answers the bad chunk size


def test_limits_headers_size_and_time() -> None:
    with pytest.raises(Rejected) as caught:
        fed(b"POST /x HTTP/1.1\r\nContent-Length: 1001\r\n\r\n")
    assert (caught.value.status, caught.value.reason) == (413, "body_too_large")
    with pytest.raises(Rejected) as caught:
        fed(b"GET / HTTP/1.1\r\nX: " + b"a" * (70 * 1024))
    assert (caught.value.status, caught.value.reason) == (431, "headers_too_large")
    slow = fed(b"GET / HTTP/1.1\r\nHo")
    slow.check_time(9.0)
    with pytest.raises(Rejected) as caught:
        slow.check_time(10.5)
    assert (caught.value.status, caught.value.reason) == (408, "header_timeout")
    with pytest.raises(Rejected) as caught:
        fed().check_time(11.0)
    assert caught.value.reason == "idle_timeout"
    body = fed(b"POST /x HTTP/1.1\r\nContent-Length: 900\r\n\r\n", b"a" * 10)
    body.check_time(4.0)  # within the grace period
    with pytest.raises(Rejected) as caught:
        body.check_time(6.0)  # 10 bytes in 6 s
    assert caught.value.reason == "body_too_slow"
    malformed = fed(b"GET /\r\n\r\n")
    assert malformed.complete  # gunicorn's parser answers 400


def test_expect_continue_is_answered_once() -> None:
    buffer = fed(b"POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
    assert buffer.send_continue and not buffer.complete
    buffer.feed(b"abc", now=0.0)
    assert buffer.complete and b"expect" not in bytes(buffer.data).lower()
    assert bytes(buffer.data) == b"POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"


def test_gunicorns_parser_reads_a_buffered_request_without_the_socket() -> None:
    from gunicorn.config import Config
    from gunicorn.http.parser import RequestParser

    left, right = socket.socketpair()
    try:
        body = b"x" * 300_000
        raw = b"POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n%sGET /next HTTP/1.1\r\n" % (len(body), body)
        parser = RequestParser(Config(), left, ("127.0.0.1", 1))
        parser.unreader = BufferedUnreader(left, raw)
        request = next(parser)
        assert request.path == "/u" and request.body.read() == body
        assert parser.unreader.buf.getvalue() == b"GET /next HTTP/1.1\r\n"  # the pipelined rest
        left.setblocking(False)  # a read from the socket would raise: none happens
        assert parser.unreader.read(10) == b"GET /next "
    finally:
        left.close()
        right.close()


def test_intake_settings() -> None:
    defaults = Settings.from_env({})
    assert (defaults.header_timeout, defaults.min_body_rate, defaults.max_connections_per_ip) == (10.0, 1024, 32)
    custom = Settings.from_env({"HEADER_TIMEOUT": "3", "MIN_BODY_RATE": "0", "MAX_CONNECTIONS_PER_IP": "0"})
    assert (custom.header_timeout, custom.min_body_rate, custom.max_connections_per_ip) == (3.0, 0, 0)
    for name, value in (("HEADER_TIMEOUT", "0"), ("MIN_BODY_RATE", "-1"), ("WORKER_CONNECTIONS", "2")):
        with pytest.raises(ConfigError, match=name):
            Settings.from_env({name: value})


def test_api_keys_setting(tmp_path: Path) -> None:
    assert Settings.from_env({"API_KEYS": f"{KEY}, {OTHER_KEY}"}).api_keys == (KEY, OTHER_KEY)
    secret = tmp_path / "keys"
    secret.write_text(f"{KEY}\n\n{OTHER_KEY}\n")
    settings = Settings.from_env({"API_KEYS": str(secret)})
    assert settings.api_keys == (KEY, OTHER_KEY) and KEY not in repr(settings)
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"API_KEYS": "short"})
    assert "short" not in str(caught.value)
    assert Settings.from_env({}).api_keys == ()


# -- the real server ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(running_server: RunningServer) -> Iterator[Server]:
    with running_server(WORKERS="2", HEADER_TIMEOUT="4", QUEUE_DEPTH="2") as server:
        yield server


def trickle(sock: socket.socket, piece: bytes, *, every: float, seconds: float) -> tuple[bool, bytes]:
    """Send `piece` every `every` s until the server closes the connection, at most `seconds`:
    (closed by the server, what it answered)."""
    deadline = time.monotonic() + seconds
    answer, gone = b"", False
    while time.monotonic() < deadline and not gone:
        gone, data = closed_by_server(sock)
        answer += data
        if not gone:
            try:
                sock.send(piece)
            except OSError:  # reset: the server closed it
                return True, answer
            time.sleep(every)
    return gone, answer


@pytest.mark.server
@pytest.mark.parametrize(
    ("kind", "count"),
    [("slow_headers", 40), ("slow_body", 24), ("idle", 40), ("keepalive_idle", 40), ("flood", 1500)],
)
def test_a_good_client_is_served_beside_hostile_ones(server: Server, astronaut_jpeg: bytes, kind: str, count: int) -> None:
    with Attack(kind, server.port, count, seconds=60, interval=0.25) as attack:
        time.sleep(2.0)  # the hostile connections are open (or flooding) first
        good = good_client(server.url, astronaut_jpeg, seconds=8, timeout=20)
    assert good.sent >= 3 and good.ok == good.sent, good.summary()
    assert attack.opened >= min(count, 24), (attack.opened, attack.errors)


@pytest.mark.server
def test_the_header_deadline_closes_a_slow_connection_and_is_counted(server: Server) -> None:
    before = limit_count(server, "header_timeout")
    sock = hostile_socket(server.port)
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHo")
        gone, answer = trickle(sock, b"s", every=0.25, seconds=15)  # still trickling
    finally:
        sock.close()
    assert gone, "the server kept a connection whose headers took longer than HEADER_TIMEOUT"
    assert answer.startswith(b"HTTP/1.1 408 ") and b'"code": "request_timeout"' in answer
    assert limit_count(server, "header_timeout") > before
    assert "client 127.0.0.2: header_timeout" in server.wait_log("client 127.0.0.2: header_timeout")


@pytest.mark.server
def test_a_slow_body_is_closed_and_counted(server: Server) -> None:
    before = limit_count(server, "body_too_slow")
    sock = hostile_socket(server.port)
    try:
        sock.sendall(b"POST " + CUTOUT.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n--b")
        _, answer = trickle(sock, b"abcd", every=1.0, seconds=20)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert limit_count(server, "body_too_slow") > before


@pytest.mark.server
def test_a_slow_reader_is_dropped_and_counted(server: Server) -> None:
    """A cut-out of about 8 MB read 1 byte a second through a small receive buffer: once the socket's
    buffers are full, MIN_RESPONSE_RATE (1024 bytes/s by default) drops it after its 5 s grace."""
    before = limit_count(server, "response_too_slow")
    readers = open_readers(server.port, cutout_request(big_photo()), 1, timeout=120)
    assert readers, "the cut-out was not answered"
    sock, head = readers[0]
    taken, dropped = 0, False
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and not dropped:
            taken += len(trickle_read(sock)[1])
            time.sleep(1.0)
            dropped = limit_count(server, "response_too_slow") > before
        # what its receive buffer still holds, read at once: then the reset, short of the whole answer
        sock.settimeout(10)
        for _ in range(10_000):
            try:
                piece = sock.recv(65536)
            except OSError:
                break
            if not piece:
                break
            taken += len(piece)
    finally:
        sock.close()
    assert dropped, "the server kept a client that read its answer at 1 byte/s"
    assert taken < content_length(head), "the whole answer was sent to a client the server dropped"
    assert "client 127.0.0.2: response_too_slow" in server.wait_log("client 127.0.0.2: response_too_slow")


@pytest.mark.server
def test_probes_are_answered_while_every_slot_and_queue_place_is_taken(server: Server, astronaut_jpeg: bytes) -> None:
    stop = threading.Event()
    outcomes: list[int | str] = []

    def flood() -> None:
        deadline = time.monotonic() + 60
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                outcomes.append(server.post(CUTOUT, files={"image": ("a.jpg", astronaut_jpeg, "image/jpeg")}, timeout=60).status_code)
            except requests.RequestException as exc:
                outcomes.append(type(exc).__name__)

    threads = [threading.Thread(target=flood, daemon=True) for _ in range(12)]  # 2 x (1 + QUEUE_DEPTH 2) slots
    for thread in threads:
        thread.start()
    probes: list[int | str] = []
    try:
        time.sleep(1.0)
        for _ in range(20):
            for path in ("/healthz", "/readyz"):
                try:
                    probes.append(server.get(path, timeout=10).status_code)
                except requests.RequestException as exc:
                    probes.append(type(exc).__name__)
            time.sleep(0.1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    assert 503 in outcomes, "12 clients on 2 x 3 slots must fill every slot and queue place"
    assert set(outcomes) <= {200, 503}, outcomes
    assert probes and set(probes) == {200}, probes


@pytest.fixture(scope="module")
def limited(running_server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    secret = tmp_path_factory.mktemp("limited") / "api-keys"
    secret.write_text(f"{KEY}\n{OTHER_KEY}\n")
    with running_server(WORKERS="2", MAX_CONNECTIONS_PER_IP="4", API_KEYS=str(secret)) as server:
        yield server


@pytest.mark.server
def test_connections_per_address_are_capped(limited: Server) -> None:
    before = limit_count(limited, "too_many_connections")
    socks = []
    try:
        for _ in range(20):
            sock = hostile_socket(limited.port)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # headers begun, never finished
            socks.append(sock)
        time.sleep(1.0)
        refused = []
        for sock in socks:
            gone, answer = closed_by_server(sock)
            if gone:
                refused.append(answer)
        # 4 per worker, 2 workers: at most 8 are kept; the others were answered 429 and closed
        assert len(refused) >= 20 - 4 * 2, len(refused)
        assert any(answer.startswith(b"HTTP/1.1 429 ") for answer in refused), refused[:3]
        assert limited.get("/healthz", timeout=20).status_code == 200  # 127.0.0.1 is not limited by them
    finally:
        for sock in socks:
            sock.close()
    assert limit_count(limited, "too_many_connections") > before
    assert "client 127.0.0.2: too_many_connections" in limited.wait_log("client 127.0.0.2: too_many_connections")


@pytest.mark.server
def test_api_keys_guard_the_api_and_never_reach_the_log(limited: Server, astronaut_jpeg: bytes) -> None:
    upload = {"image": ("a.jpg", astronaut_jpeg, "image/jpeg")}
    missing = limited.post(CUTOUT, files=upload)
    wrong = limited.post(CUTOUT, files=upload, headers={"Authorization": "Bearer not-the-key-at-all-000"})
    specs = limited.get("/api/v1/specs")
    for response in (missing, wrong, specs):
        assert response.status_code == 401 and response.headers["Content-Type"] == "application/json"
        assert response.json()["error"]["code"] == "unauthorized"
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    right = limited.post(CUTOUT, files=upload, headers={"Authorization": f"Bearer {KEY}"})
    assert right.status_code == 200 and right.headers["Content-Type"] == "image/png"
    assert limited.get("/api/v1/specs", headers={"Authorization": f"Bearer {OTHER_KEY}"}).status_code == 200
    for open_path in ("/healthz", "/readyz", "/metrics"):
        assert limited.get(open_path).status_code == 200
    metrics = limited.get("/metrics").text
    assert 'pilotlight_api_key_requests_total{key="none",status="401"}' in metrics
    assert KEY not in metrics and OTHER_KEY not in metrics
    time.sleep(0.5)  # the access lines of the last answers
    log = limited.log_text()
    assert "/api/v1/specs" in log and KEY not in log and OTHER_KEY not in log


def test_limits_are_logged_once_per_client_and_minute(caplog: pytest.LogCaptureFixture) -> None:
    from app.serving.intake_worker import LimitLog

    limit_log = LimitLog(every=60)
    with caplog.at_level("WARNING", logger="app.serving.intake_worker"):
        for second in (0, 1, 2, 59):
            limit_log.record("header_timeout", "10.0.0.1", "slow", now=second)
        limit_log.record("header_timeout", "10.0.0.2", "slow", now=3)
        limit_log.record("body_too_slow", "10.0.0.1", "slow", now=4)
        limit_log.record("header_timeout", "10.0.0.1", "slow", now=61)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 4, lines
    assert lines[-1].startswith("client 10.0.0.1: header_timeout") and "3 more since the last line" in lines[-1]
