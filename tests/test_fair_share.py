"""No client can shut the others out, against the real front (nginx in front of gunicorn) on the
Kubernetes base's own ConfigMap (small models): each client holds at most its share of the
server's places for POSTs, so keeping another client from being served takes `lockout_addresses`
of them (at least half as many as there are places), however slowly each uploads or reads.
Clients are loopback addresses bound as distinct sources; every loop and wait is bounded; nothing
asserts a duration."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from app.assets import IMMUTABLE, STATIC, asset_version, module_url
from app.config import Settings
from tests.conftest import WARM, RunningServer, reachable_folder
from tests.support import kube
from tests.support.harness import Server, cmdline, free_port
from tests.support.hostile import big_photo, hostile_socket, spooled_bytes, temp_file_bytes
from tests.support.lockout import PIECE, METHODS, PATHS, VICTIM, Holders, address, framed, served, slow_upload_head

pytestmark = [pytest.mark.server, pytest.mark.heavy]

SMALL = {"MODELS": "u2netp,centerface", "SEGMENTATION_MODEL": "u2netp", "PORTRAIT_MODEL": "auto"}


@pytest.fixture(scope="module")
def base_env() -> dict[str, str]:
    return {**kube.configmap_env(kube.base()), **SMALL, "MANAGEMENT_PORT": str(free_port())}  # the pod's 9000 may be taken here


@pytest.fixture(scope="module")
def pod_and_temp(running_server: RunningServer, base_env: dict[str, str]) -> Iterator[tuple[Server, Path]]:
    with reachable_folder() as folder, running_server(**{**base_env, "FRONT_TEMP_DIR": str(folder)}) as server:
        [temp_dir] = list(folder.glob("pilotlight-*"))
        yield server, temp_dir


@pytest.fixture(scope="module")
def pod(pod_and_temp: tuple[Server, Path]) -> Server:
    return pod_and_temp[0]


def test_a_lockout_takes_as_many_addresses_as_the_share_says(pod: Server, base_env: dict[str, str],
                                                              astronaut_jpeg: bytes) -> None:
    """One address short of `lockout_addresses`, each at its cap (slow uploads, and two addresses'
    answers never read), another client is served; a third POST from a holder is refused 429 naming
    MAX_POSTS_PER_CLIENT; with one more address every place is held and the next POST is refused
    429 naming the server's cap; probes answer throughout; once the holders leave, a POST is served."""
    settings = Settings.from_env(base_env)
    places, each, needed = settings.max_posts_in_progress, settings.posts_per_client, settings.lockout_addresses
    assert places and each and needed and 2 * needed >= places
    holders = Holders(pod.port)
    photo = big_photo(1600)
    try:
        for index in range(needed - 1):
            if index < 2:  # two addresses ask for large cut-outs and never read them
                assert holders.read_never(address(index), each, photo) == each
            else:
                assert holders.upload(address(index), each) == each
        assert holders.upload(address(0), 1) == 0  # the holder's share is full
        assert b'"too_many_connections"' in holders.refused[-1] and b"MAX_POSTS_PER_CLIENT" in holders.refused[-1]
        assert served(pod.port, astronaut_jpeg)[0] == 200, "one address short of a lockout, others are served"
        assert pod.get("/readyz", timeout=20).status_code == 200
        held = each * (needed - 1)
        last = address(needed - 1)
        assert holders.upload(last, places - held) == places - held  # the last places
        status, answer = served(pod.port, astronaut_jpeg)
        assert status == 429 and b"POSTs on this server (TEMP_BUDGET_MB)" in answer, answer[:400]
        assert pod.get("/readyz", timeout=20).status_code == 200 and pod.get("/healthz", timeout=20).status_code == 200
        assert holders.alive_uploads() == len(holders.uploads) > 0  # held by trickling, not yet ended
    finally:
        holders.close()
    deadline, status = time.monotonic() + 30, 0
    while status != 200 and time.monotonic() < deadline:
        status = served(pod.port, astronaut_jpeg)[0]
        time.sleep(0.2 if status != 200 else 0)
    assert status == 200


def test_no_method_path_or_framing_takes_more_than_one_share(pod_and_temp: tuple[Server, Path], base_env: dict[str, str],
                                                               astronaut_jpeg: bytes) -> None:
    """From one address, four slow bodies of each method x path x framing (METHODS x PATHS x
    Content-Length or chunked: probes by any spelling, nginx's error pages, the cut-out): the
    address keeps at most its MAX_POSTS_PER_CLIENT places, every other request is refused before its
    body is read, nginx's temporary files stay within the address's share, and another client is
    served. (Before issue 49 a POST to a probe path counted under no client and a body to
    /.front-errors/ under nothing: this address alone held every place and the cut-out got 429.)"""
    pod, temp_dir = pod_and_temp
    settings = Settings.from_env(base_env)
    share = settings.posts_per_client
    assert share and settings.max_posts_in_progress and settings.max_posts_in_progress > 4 * share
    requests = [framed(method, path, framing) for _ in range(4) for method in METHODS for path in PATHS
                for framing in ("length", "chunked")]
    holders, peak = Holders(pod.port), 0
    try:
        kept = holders.hold(address(60), requests, settle=1.5)
        assert kept <= share, f"one address holds {kept} requests with a body; its share is {share}"
        for _ in range(4):
            peak = max(peak, temp_file_bytes(pod, temp_dir))
            time.sleep(0.25)
        assert peak <= share * settings.request_disk_mb * 2**20, peak
        refusals = {answer.split(b"\r\n", 1)[0] for answer in holders.refused}
        assert refusals <= {b"HTTP/1.1 404 Not Found", b"HTTP/1.1 405 Not Allowed", b"HTTP/1.1 413 Request Entity Too Large",
                            b"HTTP/1.1 429 Too Many Requests"}, refusals
        assert all(b"\r\nContent-Type: application/json\r\n" in answer for answer in holders.refused if answer)
        assert served(pod.port, astronaut_jpeg)[0] == 200, "another client is served"
        assert pod.get("/readyz", timeout=20).status_code == 200
    finally:
        holders.close()
    print(f"one address, {len(requests)} slow bodies: {kept} kept, temporary files {peak / 2**20:.1f} MiB")  # noqa: T201


def raw(port: int, request: bytes, *, source: str = VICTIM, read: bool = True, timeout: float = 20.0) -> tuple[socket.socket, bytes]:
    sock = hostile_socket(port, source=source, timeout=timeout)
    sock.sendall(request)
    if not read:
        return sock, b""
    data = b""
    deadline = time.monotonic() + timeout
    while b"\r\n\r\n" not in data and time.monotonic() < deadline:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return sock, data


def test_every_path_to_disk_stays_within_the_budget(running_server: RunningServer, astronaut_jpeg: bytes) -> None:
    """MAX_UPLOAD_MB=3 + MAX_ANSWER_MB=12 a POST, TEMP_BUDGET_MB=45: 3 POSTs at once. Each way a
    request could make nginx write to disk is tried at once, from many addresses: bodies on GET,
    OPTIONS and PUT (refused unread), the largest static file and a proxied GET read slowly (no
    temporary file at all), slow uploads and unread answers (the POSTs' places). nginx's temporary
    files never pass the budget, and nothing but POSTs ever writes one."""
    # BODY_TIMEOUT: the two uploads send all but their last 4 KiB at once and then wait, held while
    # the unread cut-out is made (seconds on a busy machine): the default 10 s between two reads
    # could end them first, freeing a place the last check counts on
    env = {"WORKERS": "1", "QUEUE_DEPTH": "1", "MAX_UPLOAD_MB": "3", "MAX_ANSWER_MB": "12", "TEMP_BUDGET_MB": "45",
           "MAX_CONNECTIONS_PER_IP": "4", "BODY_TIMEOUT": "600"}
    with reachable_folder() as folder, running_server(**env, FRONT_TEMP_DIR=str(folder)) as server:
        [temp_dir] = list(folder.glob("pilotlight-*"))
        peak, held = 0, []

        def sample() -> int:
            nonlocal peak
            used = temp_file_bytes(server, temp_dir) + spooled_bytes(server)
            peak = max(peak, used)
            return used

        try:
            # bodies on anything but POST: refused at once, before a byte of them is read
            for index, method in enumerate(("GET", "OPTIONS", "HEAD", "DELETE", "PUT", "PATCH")):
                sock, head = raw(server.port, f"{method} /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 3000000\r\n\r\n".encode()
                                 + b"a" * 65536, source=address(20 + index))
                held.append(sock)
                expected = b"HTTP/1.1 413 " if method in ("GET", "OPTIONS", "HEAD") else b"HTTP/1.1 405 "
                assert head.startswith(expected), (method, head[:200])
            sock, head = raw(server.port, b"GET /readyz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                             + b"100000\r\n" + b"a" * 65536, source=address(30))
            held.append(sock)
            assert head.startswith(b"HTTP/1.1 413 ") and b"body_not_allowed" in head
            # the largest file of the page and a proxied answer, read by clients that stop reading
            largest = max((p for p in (STATIC.glob("*"))), key=lambda p: p.stat().st_size)
            for index, path in enumerate((f"/ui/{largest.name}?v={asset_version()}", "/api/v1/specs", "/")):
                sock = hostile_socket(server.port, source=address(40 + index))
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                held.append(sock)
            time.sleep(1.0)
            assert sample() == 0, "no request but a POST writes a temporary file"
            # the POSTs: two slow uploads of the whole MAX_UPLOAD_MB, and an answer never read
            holders = Holders(server.port)
            try:
                for index in range(2):
                    sock = hostile_socket(server.port, source=address(index))
                    sock.sendall(f"POST /api/v1/remove-background HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; "
                                 f"boundary=b\r\nContent-Length: {3 * 2**20}\r\n\r\n".encode() + b"a" * (3 * 2**20 - 4096))
                    held.append(sock)
                assert holders.read_never(address(5), 1, big_photo(2048)) == 1
                deadline = time.monotonic() + 20
                while sample() < 2 * (3 * 2**20 - 4096) and time.monotonic() < deadline:
                    time.sleep(0.25)
                for _ in range(8):
                    assert sample() <= 45 * 2**20
                    time.sleep(0.25)
                status, answer = served(server.port, astronaut_jpeg, source=address(9))
                assert status == 429 and b"3 POSTs on this server" in answer, answer[:300]
            finally:
                holders.close()
            assert server.get("/readyz", timeout=20).status_code == 200
        finally:
            for sock in held:
                sock.close()
        assert 0 < peak <= 45 * 2**20, peak
        print(f"nginx's temporary files peaked at {peak / 2**20:.1f} MiB of the 45 MiB budget")  # noqa: T201


_CLIENTS = iter(range(1, 60000))


def another_client() -> dict[str, str]:
    """X-Forwarded-For naming a client no other request named (the front trusts the test's address)."""
    index = next(_CLIENTS)
    return {"X-Forwarded-For": f"198.18.{index // 250}.{index % 250 + 1}"}


IN_PROGRESS = 5  # the fewest the `limited` server's one worker admits (1 + QUEUE_DEPTH)


@pytest.fixture(scope="module")
def management() -> int:
    return free_port()


@pytest.fixture(scope="module")
def limited(running_server: RunningServer, management: int) -> Iterator[Server]:
    with running_server(WORKERS="1", GET_RATE_LIMIT="6", GET_RATE_BURST="3", MAX_CONNECTIONS_PER_IP="2",
                        TRUSTED_PROXIES="127.0.0.1", MANAGEMENT_PORT=str(management),
                        MAX_REQUESTS_IN_PROGRESS=str(IN_PROGRESS)) as server:
        yield server


def test_other_methods_have_a_rate_limit_of_their_own_and_probes_none(limited: Server, management: int,
                                                                     astronaut_jpeg: bytes) -> None:
    """GET_RATE_LIMIT=6 a minute, 3 more at once: a client's fifth quick GET is refused 429 with the
    message of that limit, the public /healthz and /readyz included (MANAGEMENT_PORT is set); the
    management port's probes are never counted, and the client's POSTs are counted apart."""
    client = {"X-Forwarded-For": "198.51.100.20"}
    answers = [limited.get("/api/v1/specs", headers=client, timeout=20) for _ in range(6)]
    statuses = [answer.status_code for answer in answers]
    assert statuses[:4] == [200] * 4 and 429 in statuses[4:], statuses
    refused = next(answer for answer in answers if answer.status_code == 429)
    assert refused.json()["error"]["code"] == "rate_limited" and "GET, HEAD and OPTIONS" in refused.json()["error"]["message"]
    assert refused.headers["Retry-After"] == "10"
    assert limited.get("/healthz", headers=client, timeout=20).status_code == 429  # public: a GET as any other
    for _ in range(30):
        for path in ("/readyz", "/healthz", "/metrics"):
            assert requests.get(f"http://127.0.0.1:{management}{path}", headers=client, timeout=20).status_code == 200, path
    post = limited.post("/api/v1/remove-background", files={"image": ("a.jpg", astronaut_jpeg, "image/jpeg")},
                        headers=client, timeout=60)
    assert post.status_code == 200


def test_a_probe_flood_from_one_address_leaves_the_management_port_answering(limited: Server, management: int) -> None:
    """500 connections from one address at the public /healthz, each a whole request, kept open: the
    address gets its 2 places and 429s; the kubelet's probes on the management port still answer,
    and the management port answers nothing but its three paths."""
    flood = []
    try:
        for _ in range(500):
            sock = hostile_socket(limited.port, source=address(80), timeout=20)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            flood.append(sock)
        for path in ("/readyz", "/healthz"):
            answer = requests.get(f"http://127.0.0.1:{management}{path}", timeout=5)
            assert answer.status_code == 200 and answer.json(), path
        for method, path in (("GET", "/api/v1/specs"), ("GET", "/"), ("POST", "/readyz"), ("GET", "/.front-errors/404")):
            answer = requests.request(method, f"http://127.0.0.1:{management}{path}", timeout=20)
            assert answer.status_code in (404, 405) and answer.json()["error"]["code"], (method, path)
    finally:
        for sock in flood:
            sock.close()


def test_only_four_methods_and_no_body_but_a_posts(limited: Server) -> None:
    for method in ("PUT", "DELETE", "PATCH", "TRACE", "PROPFIND", "FOO"):
        sock, head = raw(limited.port, f"{method} /api/v1/specs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        sock.close()
        assert head.startswith(b"HTTP/1.1 405 ") and b"\r\nAllow: GET, HEAD, POST, OPTIONS\r\n" in head, (method, head[:300])
    answer = limited.get("/healthz", data=b"x" * 100, headers=another_client(), timeout=20)
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "body_not_allowed"
    assert requests.options(limited.url + "/api/v1/specs", headers=another_client(), timeout=20).status_code in (200, 204)
    assert requests.head(limited.url + "/", headers=another_client(), timeout=20).status_code == 200


def test_the_pages_files_come_from_disk_with_the_pages_headers(limited: Server) -> None:
    """nginx sends them itself (no X-Request-ID: no worker saw the request), byte for byte, with
    the page's security headers: the stylesheet cached for a year under the current ?v= and
    revalidated otherwise, the page's modules under their versioned URLs, immutable."""
    def from_disk(url: str, name: str) -> requests.Response:
        answer = limited.get(url, headers=another_client(), timeout=20)
        assert answer.status_code == 200 and answer.content == (STATIC / name).read_bytes(), url
        assert "X-Request-ID" not in answer.headers, f"{url}: served by a worker, not from disk"
        assert "script-src 'self' 'wasm-unsafe-eval'" in answer.headers["Content-Security-Policy"]
        assert answer.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
        return answer

    assert from_disk(f"/ui/app.css?v={asset_version()}", "app.css").headers["Cache-Control"] == "public, max-age=31536000"
    plain = limited.get("/ui/app.css", headers=another_client(), timeout=20)
    assert plain.headers["Cache-Control"] == "no-cache" and plain.headers.get("ETag")
    again = limited.get("/ui/app.css", headers={"If-None-Match": plain.headers["ETag"], **another_client()}, timeout=20)
    assert again.status_code == 304
    for name in ("app.js", "results.js", "ondevice.js"):
        assert from_disk(module_url(name), name).headers["Cache-Control"] == IMMUTABLE


def test_warmup_needs_its_key_from_any_address(limited: Server) -> None:
    """No address stands in for WARMUP_KEY: loopback and a client nginx names from afar alike get 401
    without it, and 200 with it."""
    for headers in ({"X-Forwarded-For": "198.51.100.30"}, {"X-Forwarded-For": "127.0.0.1"}, {}):
        refused = limited.post("/warmup", headers=headers, timeout=120)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized", headers
    assert limited.post("/warmup", headers={"X-Forwarded-For": "198.51.100.30", **WARM}, timeout=120).status_code == 200


def test_a_redirect_keeps_its_location_through_the_front(limited: Server) -> None:
    sock, head = raw(limited.port, b"GET /api//v1/specs HTTP/1.0\r\n\r\n")
    sock.close()
    assert head.startswith(b"HTTP/1.1 308 ") and b"\r\nLocation: /api/v1/specs\r\n" in head, head[:300]


def test_past_the_requests_in_progress_nginx_refuses_and_the_probes_answer(limited: Server, management: int) -> None:
    """MAX_REQUESTS_IN_PROGRESS=5 (issue 49: nginx's memory for requests in progress is bounded): five
    slow uploads from five addresses, each within its own share, hold every place; the next request
    of any kind from anyone is refused 429 in its API's shape, naming the cap; the page's files (from
    disk) and the management port's probes are not counted and answer; once the uploads end, a
    request is served again."""
    holders = Holders(limited.port)
    try:
        assert sum(holders.upload(address(100 + index), 1) for index in range(IN_PROGRESS)) == IN_PROGRESS
        assert holders.upload(address(100 + IN_PROGRESS), 1) == 0
        assert holders.refused[-1].startswith(b"HTTP/1.1 429 ") and b"MAX_REQUESTS_IN_PROGRESS" in holders.refused[-1]
        answer = limited.get("/api/v1/specs", headers=another_client(), timeout=20)
        assert answer.status_code == 429 and answer.headers["Retry-After"] == "1"
        assert answer.json()["error"]["code"] == "too_many_connections"
        assert f"{IN_PROGRESS} requests of any kind on this server (MAX_REQUESTS_IN_PROGRESS)" in answer.json()["error"]["message"]
        rembg = limited.post("/api/remove", files={"file": ("a.jpg", b"x" * 100, "image/jpeg")}, headers=another_client(), timeout=20)
        assert rembg.status_code == 429 and "MAX_REQUESTS_IN_PROGRESS" in rembg.json()["detail"]
        page = limited.get(f"/ui/app.css?v={asset_version()}", headers=another_client(), timeout=20)
        assert page.status_code == 200 and page.content == (STATIC / "app.css").read_bytes() and "X-Request-ID" not in page.headers
        for path in ("/readyz", "/healthz", "/metrics"):
            assert requests.get(f"http://127.0.0.1:{management}{path}", timeout=20).status_code == 200, path
        assert holders.alive_uploads() == IN_PROGRESS
    finally:
        holders.close()
    deadline, status = time.monotonic() + 30, 0
    while status != 200 and time.monotonic() < deadline:
        status = limited.get("/api/v1/specs", headers=another_client(), timeout=20).status_code
        time.sleep(0.2 if status != 200 else 0)
    assert status == 200


# -- a backend's key: its own share, and nginx's refusals in each API's shape (issue 50) -----------

KEY = "backend-key-0123456789abcdef"  # the key file's one line: backend:KEY:8
KEY_SHARE = 8


@pytest.fixture(scope="module")
def keyed_pod(running_server: RunningServer, base_env: dict[str, str],
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The same base with API_KEYS: a mounted key file whose one backend may have 8 POSTs in progress."""
    secret = tmp_path_factory.mktemp("keys") / "api-keys"
    secret.write_text(f"backend:{KEY}:{KEY_SHARE}\n")
    secret.chmod(0o600)
    with reachable_folder() as folder, running_server(**{**base_env, "API_KEYS": str(secret), "FRONT_TEMP_DIR": str(folder),
                                                         "MANAGEMENT_PORT": str(free_port())}) as server:
        yield server


def test_a_backend_with_one_key_is_counted_by_its_key_not_its_address(keyed_pod: Server, base_env: dict[str, str]) -> None:
    """8 POSTs in progress at once from one address with one valid key (slow uploads: all 8 held
    together), where an address's share is MAX_POSTS_PER_CLIENT=2: none is refused. The key's 9th
    is refused 429 naming the key's share; the same address without a key, or with a wrong one,
    keeps its own share of 2, counted apart. The key is in no log line, and nginx's configuration,
    which holds it, is readable by its owner alone. (Before issue 50 the third POST got 429.)"""
    assert Settings.from_env(base_env).posts_per_client == 2
    holders, source = Holders(keyed_pod.port), address(80)
    try:
        kept = holders.hold(source, [slow_upload_head(key=KEY) + b"a" * PIECE] * KEY_SHARE)
        assert kept == KEY_SHARE and not holders.refused, holders.refused[:1]
        assert holders.hold(source, [slow_upload_head(key=KEY)]) == 0
        refused = holders.refused[-1]
        assert refused.startswith(b"HTTP/1.1 429 ") and b"the share of this API key (8 at once" in refused, refused[:600]
        others = [slow_upload_head(), slow_upload_head(key="not-the-key-0123456789"), slow_upload_head()]
        assert holders.hold(source, others) == 2
        assert b"MAX_POSTS_PER_CLIENT" in holders.refused[-1] and holders.alive_uploads() == KEY_SHARE + 2
    finally:
        holders.close()
    # nginx's master writes its own title: "nginx: master process ... -c <run folder>/nginx.conf"
    [conf] = [word for pid in keyed_pod.front() for arg in cmdline(pid) for word in arg.split() if word.endswith("/nginx.conf")][:1]
    assert os.stat(conf).st_mode & 0o777 == 0o600
    assert KEY not in keyed_pod.log_text()


SHAPES = (("/api/v1/remove-background", "api"), ("/api/remove", "rembg"), ("/idphoto", "hivision"))


def as_client_reads(answer: bytes, shape: str) -> tuple[int, dict[str, str], str]:
    """(status, headers, the message) as each API's clients read an error: ours `error.message`,
    rembg's clients `detail`, HivisionIDPhotos' `error` once `status` is false."""
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    assert headers["content-type"] == "application/json", head
    data = json.loads(body[:int(headers["content-length"])])
    if shape == "rembg":
        return int(status_line.split()[1]), headers, data["detail"]
    if shape == "hivision":
        assert data["status"] is False, data
        return int(status_line.split()[1]), headers, data["error"]
    return int(status_line.split()[1]), headers, data["error"]["message"]


def test_nginx_refuses_in_the_shape_of_the_api_asked(keyed_pod: Server, base_env: dict[str, str]) -> None:
    """Per API (ours, rembg's /api/remove, HivisionIDPhotos' /idphoto), three of nginx's own
    refusals, each read as that API's clients read an error: 413 for a body declared past
    MAX_UPLOAD_MB, 429 past the address's share of POSTs (Retry-After: 1), 405 for a method the
    server does not answer (Allow); the same code and headers in every shape."""
    settings = Settings.from_env(base_env)
    share = settings.posts_per_client
    assert share
    holders = Holders(keyed_pod.port)
    try:
        for index, (path, shape) in enumerate(SHAPES):
            source = address(90 + index)
            assert holders.hold(source, [slow_upload_head(path=path, declared=settings.max_upload_bytes + 1)], settle=0.3) == 0
            status, _, message = as_client_reads(holders.refused[-1], shape)
            assert (status, message) == (413, f"The upload is larger than the {settings.max_upload_mb:g} MB limit.")
            assert holders.hold(source, [slow_upload_head(path=path) + b"a" * PIECE] * share, settle=0.3) == share
            assert holders.hold(source, [slow_upload_head(path=path)], settle=0.3) == 0
            status, headers, message = as_client_reads(holders.refused[-1], shape)
            assert status == 429 and headers["retry-after"] == "1" and "MAX_POSTS_PER_CLIENT" in message, message
            assert holders.hold(source, [f"PUT {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()], settle=0.3) == 0
            status, headers, message = as_client_reads(holders.refused[-1], shape)
            assert status == 405 and headers["allow"] == "GET, HEAD, POST, OPTIONS" and "answers GET" in message
    finally:
        holders.close()
