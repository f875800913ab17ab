"""Slow and hostile clients through the real front (nginx in front of gunicorn, 2 workers, u2netp):
hostile connections from 127.0.0.2 beside a good client on 127.0.0.1, whose probes and cut-outs
must all be answered; the client limits nginx enforces; API keys. (Probes while every queue is full:
tests/test_pod_under_load.py, on the Kubernetes base's settings.) Every loop and wait is bounded;
nothing asserts a duration.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import ConfigError, Settings
from tests.support.harness import Server
from tests.support.hostile import (
    Attack,
    closed_by_server,
    content_length,
    cutout_request,
    good_client,
    hostile_socket,
    big_photo,
    open_readers,
    temp_file_bytes,
)
from tests.conftest import RunningServer

pytestmark = pytest.mark.heavy  # a minute or more of servers under load: collected first (conftest.py)

CUTOUT = "/api/v1/remove-background"
KEY = "k3y-abcdefghijklmnop-0123456789"
OTHER_KEY = "second-key-abcdefghijklmnop"


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


def test_a_key_line_may_name_the_key_and_give_its_share(tmp_path: Path) -> None:
    """API_KEYS entries `key`, `name:key` or `name:key:posts` (issue 50): nginx counts a keyed
    request under the name, its POSTs against the share (else MAX_POSTS_PER_KEY: half the server's
    places with TEMP_BUDGET_MB, else 16), and the rendered configuration holds the key only as the
    regex of nginx's map, in a file only its owner reads (launch.py)."""
    from app.config import key_label
    from app.serving import front

    secret = tmp_path / "keys"
    secret.write_text(f"backend:{KEY}:8\n{OTHER_KEY}\n")
    settings = Settings.from_env({"API_KEYS": str(secret), "TEMP_BUDGET_MB": "3072", "MAX_UPLOAD_MB": "20",
                                  "MAX_ANSWER_MB": "96"})
    assert settings.api_keys == (KEY, OTHER_KEY) and KEY not in repr(settings)
    assert [(share.name, share.posts) for share in settings.keyed_clients] == [("backend", 8), (key_label(OTHER_KEY), 13)]
    assert Settings.from_env({"API_KEYS": OTHER_KEY}).keyed_clients[0].posts == 16
    assert Settings.from_env({"API_KEYS": OTHER_KEY, "MAX_POSTS_PER_KEY": "3"}).keyed_clients[0].posts == 3
    for bad in (f"a:{KEY}:0", f"a b:{KEY}", f"a:{KEY}:2:x", f"a:{KEY},a:{OTHER_KEY}", "a:short:2"):
        with pytest.raises(ConfigError, match="API_KEYS") as caught:
            Settings.from_env({"API_KEYS": bad})
        assert KEY not in str(caught.value) and "short" not in str(caught.value)
    with pytest.raises(ConfigError, match="WARMUP_KEY"):
        Settings.from_env({"WARMUP_KEY": f"a:{KEY}"})
    conf = front.render(settings, run_dir=tmp_path, sockets=tmp_path, user=None, rlimit_nofile=4096)
    assert f'"~^{KEY}$" backend;' in conf and conf.count(KEY) == 1 and conf.count(OTHER_KEY) == 1
    assert "limit_conn key_posts_8 8;" in conf and "limit_conn key_posts_13 13;" in conf
    assert 'map $http_authorization $bearer_token { "~*^bearer +(?<token>\\S+)$" $token;' in conf
    dotted = front.keyed_clients(Settings.from_env({"API_KEYS": "a.b+c-0123456789abcdef"}))[0]
    assert dotted.pattern == "a\\.b\\+c-0123456789abcdef"


# -- the real server ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(running_server: RunningServer) -> Iterator[Server]:
    with running_server(WORKERS="2", HEADER_TIMEOUT="4", BODY_TIMEOUT="4", SEND_TIMEOUT="4", QUEUE_DEPTH="2") as server:
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
    [("slow_headers", 64), ("slow_body", 16), ("slow_reader", 12), ("idle", 64), ("keepalive_idle", 64), ("flood", 1500)],
)
def test_a_good_client_is_served_beside_hostile_ones(server: Server, astronaut_jpeg: bytes, kind: str, count: int) -> None:
    with Attack(kind, server.port, count, seconds=60, interval=0.25) as attack:
        # the hostile connections are open (or flooding) first; slow readers' cut-outs are computed first
        time.sleep(count * 0.6 if kind == "slow_reader" else 2.0)
        good = good_client(server.url, astronaut_jpeg, seconds=8, timeout=20)
    assert good.sent >= 3 and good.ok == good.sent, good.summary()
    assert attack.opened >= min(count, 12), (attack.opened, attack.errors)


@pytest.mark.server
def test_the_header_deadline_closes_a_slow_connection(server: Server) -> None:
    sock = hostile_socket(server.port)
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHo")
        gone, _ = trickle(sock, b"s", every=0.25, seconds=15)  # still trickling
    finally:
        sock.close()
    assert gone, "the server kept a connection whose headers took longer than HEADER_TIMEOUT"


@pytest.mark.server
def test_a_body_that_goes_silent_is_closed(server: Server) -> None:
    """Most of a body at once, then nothing: BODY_TIMEOUT counts from the last read (the old
    intake's average rate held such a client for hours)."""
    sock = hostile_socket(server.port)
    try:
        sock.sendall(b"POST " + CUTOUT.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n" + b"a" * 4_000_000)
        gone, _ = trickle(sock, b"", every=0.25, seconds=15)
    finally:
        sock.close()
    assert gone, "the server kept a connection whose body stopped for longer than BODY_TIMEOUT"


@pytest.mark.server
def test_a_reader_that_stops_reading_is_dropped(server: Server) -> None:
    """A cut-out of about 8 MB through a small receive buffer, never read past its head: nginx holds
    the answer (no worker thread does) and drops the client after SEND_TIMEOUT without progress."""
    readers = open_readers(server.port, cutout_request(big_photo()), 1, timeout=120)
    assert readers, "the cut-out was not answered"
    sock, head = readers[0]
    taken = 0
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not server_closed(server.port, sock):
            time.sleep(0.5)
        assert server_closed(server.port, sock), "the server kept a client that stopped reading"
        sock.settimeout(10)
        for _ in range(10_000):  # what the kernel's buffers still hold, then the end
            try:
                piece = sock.recv(65536)
            except OSError:
                break
            if not piece:
                break
            taken += len(piece)
    finally:
        sock.close()
    assert taken < content_length(head), "the whole answer was sent to a client the server dropped"


def server_closed(port: int, sock: socket.socket) -> bool:
    """The server's end of `sock` is gone (no established connection from its local port)."""
    import subprocess

    local = sock.getsockname()
    listing = subprocess.run(["ss", "-Htn", "state", "established", f"( sport = :{port} and dport = :{local[1]} )"],
                             capture_output=True, text=True, check=True, timeout=10).stdout
    return not listing.strip()


@pytest.fixture(scope="module")
def limited(running_server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    secret = tmp_path_factory.mktemp("limited") / "api-keys"
    secret.write_text(f"{KEY}\n{OTHER_KEY}\n")
    with running_server(WORKERS="2", MAX_CONNECTIONS_PER_IP="4", API_KEYS=str(secret)) as server:
        yield server


@pytest.mark.server
def test_requests_in_progress_per_address_are_capped(limited: Server) -> None:
    """MAX_CONNECTIONS_PER_IP=4: of 10 uploads in progress from one address, 6 are refused 429 at once
    (JSON, Retry-After), and another address is served meanwhile."""
    socks = []
    try:
        for _ in range(10):
            sock = hostile_socket(limited.port)
            sock.sendall(f"POST {CUTOUT} HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n--b".encode())  # the body never ends
            socks.append(sock)
        time.sleep(1.0)
        answers = [closed_by_server(sock)[1] for sock in socks]
        refused = [answer for answer in answers if answer.startswith(b"HTTP/1.1 429 ")]
        assert len(refused) == 6, answers
        assert all(b"Retry-After: 1" in answer and b'"too_many_connections"' in answer for answer in refused)
        assert limited.get("/healthz", timeout=20).status_code == 200  # 127.0.0.1 is not limited by them
    finally:
        for sock in socks:
            sock.close()
    assert '127.0.0.2 "POST /api/v1/remove-background HTTP/1.1" 429' in limited.wait_log("HTTP/1.1\" 429")


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
    for open_path in ("/healthz", "/readyz"):
        assert limited.get(open_path).status_code == 200
    # POST /warmup runs real inference, and /metrics shows key labels and counts: a key for both
    assert limited.post("/warmup").status_code == 401
    assert limited.post("/warmup", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    assert limited.get("/metrics").status_code == 401
    metrics = limited.get("/metrics", headers={"Authorization": f"Bearer {OTHER_KEY}"}).text
    assert 'pilotlight_api_key_requests_total{key="none",status="401"}' in metrics
    assert KEY not in metrics and OTHER_KEY not in metrics
    time.sleep(0.5)  # the access lines of the last answers
    log = limited.log_text()
    assert "/api/v1/specs" in log and KEY not in log and OTHER_KEY not in log


@pytest.mark.server
def test_slow_readers_temporary_files_stay_within_the_budget(running_server: RunningServer, front_temp_dir: Path) -> None:
    """MAX_ANSWER_MB=12 (a noisy 2048 px cut-out's PNG is about 8 MB), MAX_UPLOAD_MB=3: a request holds
    at most 15 MB of nginx's temporary files, so TEMP_BUDGET_MB=45 lets 3 POSTs be in progress on the
    server. Two readers that never read, from one address (MAX_CONNECTIONS_PER_IP=2), hold their
    answers on disk within 2 x MAX_ANSWER_MB; a third from that address is refused 429, a reader
    from another address takes the server's last place, and the next POST, from a third address,
    is refused 429 (the server's cap). Probes go on; once the readers leave, a cut-out is served."""
    front_dir = front_temp_dir
    env = {"WORKERS": "1", "QUEUE_DEPTH": "1", "MAX_UPLOAD_MB": "3", "MAX_ANSWER_MB": "12", "TEMP_BUDGET_MB": "45",
           "MAX_CONNECTIONS_PER_IP": "2", "FRONT_TEMP_DIR": str(front_dir)}
    request = cutout_request(big_photo())
    with running_server(**env) as server:
        [temp_dir] = list(front_dir.glob("pilotlight-*"))  # the launcher's folder for nginx's temporary files

        def refused_from(source: str) -> bytes:
            sock = hostile_socket(server.port, source=source)
            try:
                sock.sendall(request[:4096])  # the head and the start of the body: refused before the rest
                deadline = time.monotonic() + 10
                closed, answer = closed_by_server(sock)
                while not answer and time.monotonic() < deadline:
                    time.sleep(0.2)
                    closed, answer = closed_by_server(sock)
                return answer
            finally:
                sock.close()

        readers = open_readers(server.port, request, 2, source="127.0.0.2")
        try:
            assert len(readers) == 2, "two cut-outs must be answered to the slow readers"
            on_disk = temp_file_bytes(server, temp_dir)
            deadline = time.monotonic() + 20
            while on_disk == 0 and time.monotonic() < deadline:  # nginx is still taking the answers in
                time.sleep(0.25)
                on_disk = temp_file_bytes(server, temp_dir)
            assert 0 < on_disk <= 2 * 12 * 2**20, on_disk  # the answers wait in temporary files, within the cap
            same_address = refused_from("127.0.0.2")
            assert same_address.startswith(b"HTTP/1.1 429 ") and b"too_many_connections" in same_address, same_address[:300]
            readers += open_readers(server.port, request, 1, source="127.0.0.3")
            assert len(readers) == 3
            full = refused_from("127.0.0.4")
            assert full.startswith(b"HTTP/1.1 429 ") and b"3 POSTs on this server (TEMP_BUDGET_MB)" in full, full[:300]
            assert server.get("/readyz", timeout=20).status_code == 200  # probes are not POSTs: never counted
            assert temp_file_bytes(server, temp_dir) <= 45 * 2**20
        finally:
            for sock, _ in readers:
                sock.close()
        deadline = time.monotonic() + 30
        status = 0
        while time.monotonic() < deadline:
            status = server.post(CUTOUT, files={"image": ("a.jpg", big_photo(512), "image/jpeg")}, timeout=60).status_code
            if status == 200:
                break
            time.sleep(0.5)
        assert status == 200
