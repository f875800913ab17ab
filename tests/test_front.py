"""nginx in front of gunicorn (app/serving/front.py, app/serving/launch.py).

Pure tests of the rendered configuration, then the real pair as start.sh runs it: hostile
requests over raw sockets (after each one the gunicorn workers and nginx are the same processes,
/readyz answers and a good cut-out succeeds), the pair living and dying together, and gunicorn
alone on loopback without nginx. Every loop and wait is bounded; nothing asserts a duration.
"""

from __future__ import annotations

import ipaddress
import json
import os
import random
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.config import ConfigError, Settings
from app.serving import front
from tests.support.harness import GUNICORN, Server, alive, busy_worker, descendants, wait_for
from tests.support.hostile import HOSTILE, closed_by_server, hostile_socket
from tests.conftest import RunningServer

CUTOUT = "/api/v1/remove-background"


# -- the configuration, pure ----------------------------------------------------------------------


def rendered(**env: str) -> str:
    settings = Settings.from_env({"WORKERS": "2", **env})
    return front.render(settings, run_dir=Path("/run/x"), sockets=Path("/run/x/w"), user=None, rlimit_nofile=4096)


def test_settings_map_onto_nginx_directives() -> None:
    conf = rendered(HEADER_TIMEOUT="7", BODY_TIMEOUT="2.5", SEND_TIMEOUT="9", MAX_UPLOAD_MB="3", KEEPALIVE="4",
                    MAX_CONNECTIONS_PER_IP="6", WORKER_CONNECTIONS="900", GRACEFUL_TIMEOUT="12", TIMEOUT="50")
    for directive in ("client_header_timeout 7s;", "client_body_timeout 2500ms;", "send_timeout 9s;",
                      f"client_max_body_size {3 * 1024 * 1024};", "keepalive_timeout 4s;", "limit_conn per_client 6;",
                      "worker_connections 900;", "worker_shutdown_timeout 12s;", "proxy_read_timeout 110s;",
                      "listen 127.0.0.1:8000", "proxy_request_buffering on;", "proxy_buffering on;"):
        assert directive in conf, directive
    # every temporary path under the run folder (a read-only root filesystem), the pid too
    for path in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        assert re.search(rf"^\s*{path}_temp_path /run/x/", conf, re.MULTILINE), path
    assert "pid /run/x/nginx.pid;" in conf and "user " not in conf


def test_workers_are_chosen_idle_first_keepers_first_then_least_queued() -> None:
    upstreams = front.inference_upstreams(Path("/w"), workers=3, keepers=1)
    idle, queued = upstreams[:3], upstreams[3:]
    assert [u.socket.name for u in idle] == [u.socket.name for u in queued] == ["worker-0.sock", "worker-1.sock", "worker-2.sock"]
    assert all(u.max_conns == 1 and not u.backup for u in idle) and all(u.max_conns is None and u.backup for u in queued)
    assert [u.weight for u in idle] == [front.KEEPER_WEIGHT, 1, 1]
    assert {u.weight for u in front.inference_upstreams(Path("/w"), workers=2, keepers=0)} == {1}
    conf = rendered(KEEP_MEMORY_WORKERS="1")
    assert "worker-0.sock weight=1000000 max_conns=1" in conf and "worker-1.sock backup" in conf
    # without RELEASE_MEMORY=idle nothing is released, so no worker is preferred
    assert "weight=" not in rendered(RELEASE_MEMORY="off")


def test_nginx_errors_have_the_json_shape_of_the_api_asked() -> None:
    """Ours, rembg's `detail` and HivisionIDPhotos' `status: false`, by the request's path ($front_api)."""
    conf = rendered(MAX_UPLOAD_MB="5")
    errors = {error.status: error for error in front.front_errors(Settings.from_env({"MAX_UPLOAD_MB": "5"}))}
    assert {400, 408, 413, 414, 429, 494, 502, 504} <= set(errors)
    for error in errors.values():
        body = json.loads(error.body)
        assert set(body["error"]) == {"code", "message"} and body["error"]["code"] == error.code
        assert json.loads(error.body_for("rembg"))["detail"] == error.message
        assert json.loads(error.body_for("hivision")) == {"status": False, "error": error.message, "code": error.code}
        assert f"error_page {error.status} = /.front-errors/$front_api/{error.status};" in conf
        for shape in front.API_SHAPES:
            assert f"location = /.front-errors/{shape}/{error.status} {{" in conf
            assert f"return {error.answer} '{error.body_for(shape)}';" in conf
    assert errors[413].message == "The upload is larger than the 5 MB limit."  # the app's own words
    assert (errors[502].answer, errors[494].answer) == (503, 431)


def test_trusted_proxies_and_their_validation() -> None:
    conf = rendered(TRUSTED_PROXIES="10.0.0.0/8, 192.168.1.7")
    assert "set_real_ip_from 10.0.0.0/8;" in conf and "set_real_ip_from 192.168.1.7/32;" in conf
    assert "real_ip_header X-Forwarded-For;" in conf
    assert "set_real_ip_from" not in rendered()
    with pytest.raises(ConfigError, match="TRUSTED_PROXIES"):
        Settings.from_env({"TRUSTED_PROXIES": "10.0.0.0/33"})


def bucket_of(address: str) -> str:
    """The key nginx's `map $remote_addr $client` gives `address`, the map's rules run by `re`
    (PCRE and Python agree on these: anchors, classes, counted repeats, groups)."""
    for pattern, key in front.client_buckets():
        match = re.search(pattern, address)
        if match:
            return re.sub(r"\$(\d)", lambda ref: match.group(int(ref.group(1))), key)
    return address


def test_an_ipv6_client_is_one_bucket_per_64_whatever_the_spelling() -> None:
    """Every spelling nginx can write (RFC 5952, as Python's `compressed`) of 20,000 addresses,
    zero runs placed at random: the key is the /64, in full; an IPv4 address is itself."""
    rng = random.Random(34)
    for _ in range(20_000):
        hextets = [rng.choice((0, 0, 0, rng.randrange(1, 16), rng.randrange(1 << 16))) for _ in range(8)]
        address = ipaddress.IPv6Address(sum(value << 16 * (7 - index) for index, value in enumerate(hextets)))
        if address.ipv4_mapped is not None:
            continue
        network = ipaddress.IPv6Network(f"{address}/64", strict=False).network_address.exploded.split(":")[:4]
        assert bucket_of(address.compressed) == ":".join(f"{int(part, 16):x}" for part in network), address.compressed
    assert bucket_of("2001:db8::1") == bucket_of("2001:db8:0:0:ffff::") == "2001:db8:0:0"
    assert bucket_of("2001:db8:0:1::1") != bucket_of("2001:db8::1")
    assert bucket_of("203.0.113.9") == bucket_of("::ffff:203.0.113.9") == "203.0.113.9"
    conf = rendered()
    assert "limit_conn_zone $conn_client zone=per_client:10m;" in conf and "map $remote_addr $client {" in conf
    assert 'map "$probe $counted_as" $counted_client { "~^0 (?<who>.+)$" $who; default ""; }' in conf


def test_the_rate_limit_and_its_settings() -> None:
    conf = rendered(RATE_LIMIT="30", RATE_BURST="5", GET_RATE_LIMIT="90", GET_RATE_BURST="7")
    assert "limit_req_zone $post_client zone=per_client_rate:10m rate=30r/m;" in conf
    assert "limit_req zone=per_client_rate burst=5 nodelay;" in conf
    assert "limit_req_zone $other_client zone=per_client_other_rate:10m rate=90r/m;" in conf
    assert "limit_req zone=per_client_other_rate burst=7 nodelay;" in conf
    # POSTs and the other methods count apart; probes (a GET or HEAD) under no key at all
    assert 'map $request_method $post_client { POST $counted_client; default ""; }' in conf
    assert 'map $request_method $other_client { POST ""; default $counted_client; }' in conf
    assert re.search(r'map "\$request_method \$uri" \$probe \{\s+"~\^\(GET\|HEAD\) /healthz\$" 1;\s+'
                     r'"~\^\(GET\|HEAD\) /readyz\$" 1;\s+default 0;', conf)
    errors = {error.status: error for error in front.front_errors(Settings.from_env({"RATE_LIMIT": "30"}))}
    limited = errors[front.RATE_LIMITED]
    assert (limited.answer, limited.code, dict(limited.headers)["Retry-After"]) == (429, "rate_limited", "$rate_retry_after")
    assert 'map $request $rate_retry_after { "~^POST " 2; default 1; }' in conf
    assert "the limit is 30 a minute, 5 more at once" in conf and "the limit is 90 GET, HEAD and OPTIONS" in conf
    assert "limit_req zone=per_client_rate" not in rendered(RATE_LIMIT="0")
    assert "limit_req zone" not in rendered(RATE_LIMIT="0", GET_RATE_LIMIT="0")
    defaults = Settings.from_env({})
    assert (defaults.rate_limit, defaults.rate_burst, defaults.get_rate_limit, defaults.get_rate_burst) == (600, 40, 1200, 120)


def test_the_disk_budget_caps_posts_in_progress_and_every_answer_is_buffered_whole() -> None:
    """A request holds at most MAX_UPLOAD_MB + MAX_ANSWER_MB of nginx's temporary files, so
    TEMP_BUDGET_MB allows budget // that many POSTs in progress on the server; a budget that
    cannot hold what the workers admit is refused at start. nginx's per-answer temporary file is
    MAX_ANSWER_MB, the largest answer the app sends (so a worker never waits on a slow reader)."""
    conf = rendered(MAX_UPLOAD_MB="20", MAX_ANSWER_MB="96", TEMP_BUDGET_MB="3072", QUEUE_DEPTH="4")
    assert "limit_conn posts 26;" in conf and "limit_conn_zone $any_post zone=posts:1m;" in conf
    assert f"proxy_max_temp_file_size {96 * 2**20};" in conf
    assert "limit_conn posts " not in rendered()  # no budget, no server-wide cap
    settings = Settings.from_env({"TEMP_BUDGET_MB": "3072"})
    assert settings.max_posts_in_progress == 26
    assert "26 POSTs on this server (TEMP_BUDGET_MB)" in front.limit_messages(settings).too_many_post
    assert "26 POSTs on this server (TEMP_BUDGET_MB)" in rendered(TEMP_BUDGET_MB="3072")
    # only POSTs write temporary files: every other answer stays in memory
    assert "proxy_max_temp_file_size 0;" in conf and conf.count("proxy_max_temp_file_size") == 2
    with pytest.raises(ConfigError, match=r"TEMP_BUDGET_MB=1000 holds 8 requests .* fewer than the 10"):
        Settings.from_env({"WORKERS": "2", "QUEUE_DEPTH": "4", "TEMP_BUDGET_MB": "1000"})


def test_each_client_holds_a_fair_share_of_the_posts() -> None:
    """MAX_POSTS_PER_CLIENT caps a client's POSTs in progress (nginx limit_conn, from the head to the
    answer's last byte); by default 2 where TEMP_BUDGET_MB caps the server, so that holding every
    place takes at least half as many addresses as there are places, else 4; 0: no cap."""
    base = Settings.from_env({"TEMP_BUDGET_MB": "3072", "MAX_UPLOAD_MB": "20", "MAX_ANSWER_MB": "96"})
    assert (base.max_posts_in_progress, base.posts_per_client, base.lockout_addresses) == (26, 2, 13)
    assert base.lockout_addresses * 2 >= base.max_posts_in_progress
    assert Settings.from_env({}).posts_per_client == 4 and Settings.from_env({}).lockout_addresses is None
    assert Settings.from_env({"MAX_POSTS_PER_CLIENT": "0"}).posts_per_client is None
    conf = rendered(MAX_POSTS_PER_CLIENT="3")
    assert "limit_conn_zone $share_client zone=posts_per_client:10m;" in conf and "limit_conn posts_per_client 3;" in conf
    assert "limit_conn posts_per_client" not in rendered(MAX_POSTS_PER_CLIENT="0")
    message = front.limit_messages(Settings.from_env({"MAX_POSTS_PER_CLIENT": "3", "MAX_CONNECTIONS_PER_IP": "8"}))
    assert "at most 3 POSTs from one address (MAX_POSTS_PER_CLIENT)" in message.too_many_post
    assert message.too_many_other.startswith("Too many requests in progress: at most 8 from this address (MAX_CONNECTIONS_PER_IP)")


def test_only_four_methods_and_a_body_on_post_only() -> None:
    conf = rendered()
    # a probe is a GET or HEAD: any other method to its path counts as any request (issue 49)
    assert '"~^(GET|HEAD) /healthz$" 1;' in conf and 'map "$request_method $uri" $probe {' in conf
    # nginx's error pages: internal redirects only; a client's own request there is a 404 (JSON)
    assert "location ^~ /.front-errors/ {\n            internal;\n        }" in conf
    assert "error_page 404 = /.front-errors/$front_api/404;" in conf
    assert '"~^(GET|HEAD|OPTIONS) 00 " "";' in conf and '"~^POST " post;' in conf
    assert "if ($gate = method) {\n            return 405;" in conf
    assert f"if ($gate = body) {{" in conf and f"return {front.BODY_NOT_ALLOWED};" in conf
    errors = {error.status: error for error in front.front_errors(Settings.from_env({}))}
    assert dict(errors[405].headers)["Allow"] == "GET, HEAD, POST, OPTIONS"
    assert (errors[front.BODY_NOT_ALLOWED].answer, errors[front.BODY_NOT_ALLOWED].code) == (413, "body_not_allowed")


def test_the_pages_files_are_served_from_disk_with_the_pages_headers(tmp_path: Path) -> None:
    from app.assets import SECURITY_HEADERS, ServedFile, asset_version

    files = [ServedFile("/ui/app.js", tmp_path / "app.js", "text/javascript", False),
             ServedFile("/ui/ondevice/0123456789abcdef/m.onnx", tmp_path / "m.onnx", "application/octet-stream", True)]
    settings = Settings.from_env({"WORKERS": "2"})
    conf = front.render(settings, run_dir=Path("/run/x"), sockets=Path("/run/x/w"), user=None, rlimit_nofile=4096,
                        served=files)
    block = conf.split("location = /ui/app.js {", 1)[1].split("\n        }\n", 1)[0]
    assert f"alias {tmp_path}/app.js;" in block and "default_type text/javascript;" in block
    assert "add_header Cache-Control $asset_cache always;" in block
    for name, value in SECURITY_HEADERS:
        assert f'add_header {name} "{value}" always;' in block
    assert f'map $arg_v $asset_cache {{ "{asset_version()}" "public, max-age=31536000"; default "no-cache"; }}' in conf
    immutable = conf.split("location = /ui/ondevice/0123456789abcdef/m.onnx {", 1)[1].split("\n        }\n", 1)[0]
    assert 'add_header Cache-Control "public, max-age=31536000, immutable" always;' in immutable


@pytest.mark.parametrize("run_dir", ["/tmp/a b", "/tmp/x;user root", "/tmp/a\nb", "/tmp/{x}", "/tmp/$x", "/tmp/'x'"])
def test_a_value_nginx_cannot_take_unquoted_is_refused(run_dir: str) -> None:
    settings = Settings.from_env({"WORKERS": "2"})
    with pytest.raises(ConfigError, match="nginx"):
        front.render(settings, run_dir=Path(run_dir), sockets=Path("/run/x/w"), user=None, rlimit_nofile=4096)


@pytest.mark.parametrize("host", ["0.0.0.0;", "127.0.0.1 x", "a{b}", "fe80::1%a;b", "-bad"])
def test_a_host_that_is_neither_an_address_nor_a_name_is_refused(host: str) -> None:
    with pytest.raises(ConfigError, match="HOST"):
        Settings.from_env({"HOST": host})
    for good in ("0.0.0.0", "::", "::1", "localhost", "pilotlight.internal"):
        assert front.listen_address(Settings.from_env({"HOST": good})).endswith(":8000")


def test_front_settings_and_retired_ones() -> None:
    defaults = Settings.from_env({})
    assert (defaults.front, defaults.header_timeout, defaults.body_timeout, defaults.send_timeout) == ("auto", 10.0, 10.0, 30.0)
    assert defaults.max_connections_per_ip == 16 and not defaults.behind_front
    for name, value in (("FRONT", "apache"), ("BODY_TIMEOUT", "0"), ("WORKER_CONNECTIONS", "2")):
        with pytest.raises(ConfigError, match=name):
            Settings.from_env({name: value})
    assert Settings.retired({"MIN_BODY_RATE": "10", "MIN_RESPONSE_RATE": ""}) == {"MIN_BODY_RATE": "BODY_TIMEOUT"}


def test_nginx_runs_its_workers_unprivileged() -> None:
    assert front.nginx_user(euid=1000) is None
    user = front.nginx_user(euid=0)
    assert user is not None and not user.startswith("root")


def test_the_rendered_configuration_is_valid_nginx(tmp_path: Path) -> None:
    settings = Settings.from_env({"WORKERS": "3", "TRUSTED_PROXIES": "10.0.0.0/8", "LOG_FORMAT": "json"})
    conf = tmp_path / "nginx.conf"
    conf.write_text(front.render(settings, run_dir=tmp_path, sockets=tmp_path, user=front.nginx_user(), rlimit_nofile=4096))
    check = subprocess.run(["nginx", "-t", "-e", "stderr", "-p", str(tmp_path), "-c", str(conf)],
                           capture_output=True, text=True, timeout=30, check=False)
    assert check.returncode == 0, check.stderr


# -- hostile requests against the real pair ---------------------------------------------------------


@dataclass(frozen=True)
class Hostile:
    name: str
    raw: bytes
    expect: tuple[int, ...]  # acceptable statuses; () = the connection may be closed without an answer
    half_close: bool = False  # shut our sending side after the bytes
    drip: bytes = b""  # sent after `raw`, 1 KiB at a time, until the server closes the connection


def post(headers: str, body: bytes = b"", *, path: str = CUTOUT) -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode() + body


def get(path: str = "/healthz", extra: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n".encode()


MULTIPART = "Content-Type: multipart/form-data; boundary=b\r\n"
IMAGE_PART = b'--b\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\n\r\n'
HOSTILE_REQUESTS = [
    # Content-Length
    Hostile("length of 5000 digits", post(f"Content-Length: {'9' * 5000}\r\n"), (400,)),
    Hostile("length past 64 bits", post("Content-Length: 99999999999999999999\r\n"), (400,)),
    Hostile("negative length", post("Content-Length: -5\r\n", b"abcde"), (400,)),
    Hostile("signed length", post("Content-Length: +5\r\n", b"abcde"), (400,)),
    Hostile("hex length", post("Content-Length: 0x10\r\n", b"a" * 16), (400,)),
    Hostile("length with a space inside", post("Content-Length: 1 0\r\n", b"a" * 10), (400,)),
    Hostile("length that is not a number", post("Content-Length: ten\r\n"), (400,)),
    Hostile("two different lengths", post("Content-Length: 5\r\nContent-Length: 6\r\n", b"abcdef"), (400,)),
    Hostile("the same length twice", post("Content-Length: 5\r\nContent-Length: 5\r\n", b"abcde"), (400,)),
    Hostile("length and chunked together", post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", b"0\r\n\r\n"), (400,)),
    Hostile("a length larger than MAX_UPLOAD_MB", post(f"Content-Length: {30 * 1024 * 1024}\r\n"), (413,)),
    # chunked bodies
    Hostile("negative chunk size", post("Transfer-Encoding: chunked\r\n", b"-5\r\nabcde\r\n0\r\n\r\n"), (400,)),
    Hostile("0x-prefixed chunk size", post("Transfer-Encoding: chunked\r\n", b"0x5\r\nabcde\r\n0\r\n\r\n"), (400,)),
    Hostile("signed chunk size", post("Transfer-Encoding: chunked\r\n", b"+5\r\nabcde\r\n0\r\n\r\n"), (400,)),
    Hostile("chunk size with an underscore", post("Transfer-Encoding: chunked\r\n", b"5_0\r\n" + b"a" * 80 + b"\r\n0\r\n\r\n"), (400,)),
    Hostile("chunk size past 64 bits", post("Transfer-Encoding: chunked\r\n", b"ffffffffffffffffffff\r\nab\r\n"), (400, 413)),
    Hostile("chunks past MAX_UPLOAD_MB", post("Transfer-Encoding: chunked\r\n", b"1500000\r\n" + b"a" * 1000), (413,)),
    Hostile("a long chunk extension", post(MULTIPART + "Transfer-Encoding: chunked\r\n",
                                           b"5;" + b"e" * 16000 + b"\r\nabcde\r\n0\r\n\r\n"), (400, 415)),
    Hostile("endless trailers", post("Transfer-Encoding: chunked\r\n", b"5\r\nabcde\r\n0\r\n"),
            (), drip=b"X-Trailer: " + b"t" * 1000 + b"\r\n"),
    Hostile("a chunk without its line end", post("Transfer-Encoding: chunked\r\n", b"5\r\nabcdeXY0\r\n\r\n"), (400,)),
    Hostile("gzip then chunked", post("Transfer-Encoding: gzip, chunked\r\n", b"0\r\n\r\n"), (400, 501)),
    Hostile("chunked twice", post("Transfer-Encoding: chunked, chunked\r\n", b"0\r\n\r\n"), (400, 501)),
    Hostile("an unknown transfer coding", post("Transfer-Encoding: identity\r\n", b""), (400, 501)),
    # headers and request lines
    Hostile("a 20 KB URL", get("/" + "a" * 20000), (414,)),
    Hostile("a 20 KB header", get("/healthz", "X-Big: " + "b" * 20000 + "\r\n"), (431,)),
    Hostile("2,000 headers", get("/healthz", "".join(f"X-H{i}: v\r\n" for i in range(2000))), (400, 431)),
    Hostile("a header without a colon", get("/healthz", "NoColonHere\r\n"), (200, 400)),  # nginx drops invalid header lines
    Hostile("a NUL in a header", get("/healthz", "X-A: a\x00b\r\n"), (400,)),
    Hostile("an obsolete folded header", get("/healthz", "X-A: a\r\n  folded\r\n"), (400,)),
    Hostile("a control byte in the method", b"G\x01ET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", (400,)),
    Hostile("HTTP/9.9", b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n", (400, 505)),
    Hostile("HTTP/1.1 without Host", b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", (400,)),
    Hostile("two Host headers", b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", (400,)),
    # other protocols and garbage
    Hostile("HTTP/0.9", b"GET /\r\n", ()),
    Hostile("the HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", (400,)),
    Hostile("a TLS ClientHello", bytes.fromhex("16030100a5010000a10303") + os.urandom(160), (400,)),
    Hostile("4 KB of random bytes", bytes(range(256)) * 16, (400,)),
    # bodies and sockets
    Hostile("Expect 100-continue with an oversize body", post(f"Expect: 100-continue\r\nContent-Length: {99 * 1024 * 1024}\r\n"), (413,)),
    Hostile("an unknown expectation", post("Expect: 999-nonsense\r\nContent-Length: 0\r\n"), (400, 415, 417)),
    Hostile("a body that stops midway", post(MULTIPART + "Content-Length: 100000\r\n", IMAGE_PART + b"\xff" * 1000), (), half_close=True),
    Hostile("a half-closed socket after the head", post("Content-Length: 5000\r\n"), (), half_close=True),
    Hostile("a half-closed socket mid-head", b"GET /healthz HTTP/1.1\r\nHo", (), half_close=True),
    Hostile("a multipart body without a boundary", post("Content-Type: multipart/form-data\r\nContent-Length: 5\r\n", b"abcde"), (400, 415)),
    Hostile("a mangled multipart body", post(MULTIPART + "Content-Length: 30\r\n", b"--b\r\nnot a part header at all\r\n"), (400, 415)),
]


def exchange(port: int, case: Hostile, *, seconds: float = 6.0) -> bytes:
    """Send `case` from the hostile address; what the server answered until it closed the
    connection, `seconds` passed, or one answer arrived whole (bounded)."""
    sock = hostile_socket(port, timeout=seconds)
    answer = b""
    try:
        sock.sendall(case.raw)
        if case.half_close:
            sock.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            gone, data = closed_by_server(sock)
            answer += data
            if gone or whole_answer(answer):
                break
            if case.drip:
                try:
                    sock.send(case.drip)
                except OSError:
                    break
            time.sleep(0.02)
    finally:
        sock.close()
    return answer


def whole_answer(data: bytes) -> bool:
    head, sep, body = data.partition(b"\r\n\r\n")
    match = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return bool(sep and match and len(body) >= int(match.group(1)))


def status_of(answer: bytes) -> int | None:
    match = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
    return int(match.group(1)) if match else None


@pytest.fixture(scope="module")
def pair(running_server: RunningServer) -> Iterator[Server]:
    with running_server(WORKERS="2", HEADER_TIMEOUT="3", BODY_TIMEOUT="3", MAX_CONNECTIONS_PER_IP="64") as server:
        yield server


def assert_unharmed(server: Server, processes: dict[str, list[int]], photo: bytes) -> None:
    assert {"workers": server.workers(), "front": server.front()} == processes, "a process died or was replaced"
    assert server.get("/readyz", timeout=20).status_code == 200
    reply = server.post(CUTOUT, files={"image": ("a.jpg", photo, "image/jpeg")}, timeout=60)
    assert reply.status_code == 200 and reply.headers["Content-Type"] == "image/png"


def test_there_are_forty_hostile_requests() -> None:
    assert len(HOSTILE_REQUESTS) >= 40 and len({case.name for case in HOSTILE_REQUESTS}) == len(HOSTILE_REQUESTS)


@pytest.mark.server
@pytest.mark.parametrize("case", HOSTILE_REQUESTS, ids=lambda case: case.name)
def test_a_hostile_request_harms_nothing(pair: Server, case: Hostile, astronaut_jpeg: bytes) -> None:
    processes = {"workers": pair.wait_workers(2), "front": pair.front()}
    answer = exchange(pair.port, case)
    status = status_of(answer)
    if case.expect or status is not None:
        assert status in case.expect, (status, answer[:300])
        head, _, body = answer.partition(b"\r\n\r\n")
        if status is not None and status >= 400:
            assert re.search(rb"(?im)^content-type: application/json", head), head
            assert "code" in json.loads(body)["error"]
    elif case.name == "HTTP/0.9":  # no status line exists in 0.9: the JSON error alone
        assert answer == b"" or json.loads(answer)["error"]["code"] == "bad_request"
    assert_unharmed(pair, processes, astronaut_jpeg)


@pytest.mark.server
def test_two_hundred_pipelined_requests_are_all_answered(pair: Server, astronaut_jpeg: bytes) -> None:
    processes = {"workers": pair.wait_workers(2), "front": pair.front()}
    sock = hostile_socket(pair.port, timeout=30)
    data = b""
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 199 + get("/healthz"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            piece = sock.recv(1 << 20)
            if not piece:
                break
            data += piece
    finally:
        sock.close()
    assert len(re.findall(rb"HTTP/1\.1 200 OK\r\n", data)) == 200
    assert_unharmed(pair, processes, astronaut_jpeg)


@pytest.mark.server
def test_ten_thousand_idle_connections_harm_nothing(pair: Server, astronaut_jpeg: bytes) -> None:
    processes = {"workers": pair.wait_workers(2), "front": pair.front()}
    socks = []
    try:
        for _ in range(10_000):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.bind((HOSTILE, 0))
            sock.connect_ex(("127.0.0.1", pair.port))
            socks.append(sock)
        time.sleep(1.0)
        # while they are open, probes and cut-outs from another address are still served
        assert_unharmed(pair, processes, astronaut_jpeg)
    finally:
        for sock in socks:
            sock.close()
    assert_unharmed(pair, processes, astronaut_jpeg)


# -- the pair lives and dies together -------------------------------------------------------------------


def exits_within(server: Server, seconds: float) -> int | None:
    assert server.process is not None
    try:
        return server.process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


@pytest.mark.server
@pytest.mark.parametrize("victim", ["nginx", "gunicorn"])
def test_the_server_stops_when_either_process_dies(running_server: RunningServer, victim: str) -> None:
    with running_server(WORKERS="1") as server:
        tree = [server.pid, *descendants(server.pid)]
        (nginx_master,) = set(descendants(server.pid, depth=1)) - {server.master}
        os.kill(nginx_master if victim == "nginx" else server.master, signal.SIGKILL)
        code = exits_within(server, 60)
        assert code not in (None, 0), f"the launcher went on without {victim} (exit {code})"
        wait_for(lambda: not any(alive(pid) for pid in tree), timeout=30, what="a process of the pair outlived it")
        assert f"{victim} exited" in server.log_text()


@pytest.mark.server
def test_sigterm_closes_the_port_at_once_and_finishes_what_is_in_flight(running_server: RunningServer, big_photo: bytes) -> None:
    import threading

    import requests

    with running_server(WORKERS="1", GRACEFUL_TIMEOUT="30") as server:
        result: list[object] = []

        def slow() -> None:
            try:
                result.append(server.post(CUTOUT, files={"image": ("big.jpg", big_photo, "image/jpeg")},
                                          data={"alpha_matting": "true"}, timeout=120).status_code)
            except requests.RequestException as exc:
                result.append(exc)

        thread = threading.Thread(target=slow)
        thread.start()
        busy_worker(server)  # the slow request is running
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        wait_for(lambda: not port_accepts(server.port), timeout=10, what="the port still accepts after SIGTERM")
        thread.join(timeout=120)
        assert result == [200], result
        assert exits_within(server, 60) == 0


def port_accepts(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


# -- without nginx ---------------------------------------------------------------------------------------


@pytest.mark.server
@pytest.mark.parametrize("how", ["FRONT=none", "nginx not installed"])
def test_without_nginx_gunicorn_serves_alone_on_loopback(model_home: Path, tmp_path: Path, how: str) -> None:
    env = {"WORKERS": "1", "MODELS": "u2netp", "SEGMENTATION_MODEL": "u2netp", "WARMUP_REQUESTS": "1",
           "MODEL_HOME": str(model_home), "HOST": "0.0.0.0"}  # noqa: S104  (asked for; must be refused)
    if how == "FRONT=none":
        env["FRONT"] = "none"
    else:
        env["PATH"] = str(Path(GUNICORN[0]).parent)  # the venv's bin: no nginx there
    with Server(env=env, log_path=tmp_path / "server.log") as server:
        server.wait_ready(timeout=240)
        assert server.master == server.pid and server.front() == []  # gunicorn itself, nothing beside it
        log = server.log_text()
        assert "serving gunicorn alone on http://127.0.0.1:" in log and "HOST=0.0.0.0" in log
        listening = subprocess.run(["ss", "-Htln", f"sport = :{server.port}"], capture_output=True, text=True, check=True).stdout
        assert listening.split() and all(line.split()[3].startswith("127.0.0.1:") for line in listening.splitlines()), listening
        assert server.get("/healthz").headers.get("Server", "").startswith("gunicorn")


@pytest.mark.server
def test_the_rate_limit_counts_posts_per_client_and_an_ipv6_client_per_64(running_server: RunningServer) -> None:
    """RATE_LIMIT=1 a minute, RATE_BURST=2: a client's fourth POST in a minute is refused 429
    `rate_limited`, and so is the next one from another address of its /64, however written; a
    client of another /64, or of IPv4, still gets through, and probes are never counted. The
    client is named by X-Forwarded-For from a trusted proxy (the test, on loopback). The POSTs
    are not multipart: the app answers each with a fast 415, and nginx counts it all the same."""
    with running_server(WORKERS="1", TRUSTED_PROXIES="127.0.0.1", RATE_LIMIT="1", RATE_BURST="2") as server:

        def from_client(address: str) -> tuple[int, dict[str, object]]:
            reply = server.post(CUTOUT, data={"x": "1"}, headers={"X-Forwarded-For": address}, timeout=30)
            return reply.status_code, reply.json()["error"] | {"retry_after": reply.headers.get("Retry-After")}

        same_64 = ["2001:db8:7:1::a", "2001:db8:7:1:0:0:0:b", "2001:db8:7:1:ffff::c"]
        assert [from_client(address)[0] for address in same_64] == [415, 415, 415]
        status, error = from_client("2001:db8:7:1:1:2:3:4")
        assert status == 429 and error["code"] == "rate_limited" and error["retry_after"] == "60", error
        assert from_client("2001:db8:7:2::a")[0] == 415  # the next /64: a client of its own
        assert from_client("198.51.100.7")[0] == 415
        for _ in range(5):
            assert server.get("/healthz", headers={"X-Forwarded-For": "2001:db8:7:1::a"}).status_code == 200


def test_the_ondevice_files_are_nginxs_whenever_they_appear(tmp_path: Path) -> None:
    """Issue 49: nginx serves each on-device file from where the fetch will put it, installed or not
    (a worker's thread never sends the 14 MB wasm), and any other path under /ui/ondevice/ is its
    404; the app keeps an upload's file parts in memory, within a bound the launcher states."""
    from app.assets import ondevice_files, ondevice_places, served_files

    assert ondevice_files(tmp_path) is None  # nothing installed: the page offers nothing
    places = ondevice_places(tmp_path)
    assert places is not None
    urls = {item.url for item in served_files(tmp_path)}
    assert {item.url for item in places.values()} <= urls
    conf = front.render(Settings.from_env({"WORKERS": "2"}), run_dir=Path("/run/x"), sockets=Path("/run/x/w"), user=None,
                        rlimit_nofile=4096, served=served_files(tmp_path))
    assert f"location = {places['wasm'].url} {{\n            alias {places['wasm'].path};" in conf
    assert "location ^~ /ui/ondevice/ {\n            return 404;" in conf
    base = Settings.from_env({"WORKERS": "2", "QUEUE_DEPTH": "4", "MAX_UPLOAD_MB": "20"})
    assert base.upload_memory_bytes == 2 * (4 + 2 + 3) * 20 * 2**20  # THREADS: QUEUE_DEPTH + 2 + the live lane's 3


def test_an_uploads_file_parts_never_go_to_a_file(app: object) -> None:
    import io

    from flask import Flask, request
    from werkzeug.test import EnvironBuilder

    from tests.support.harness import multipart

    assert isinstance(app, Flask)
    body, content_type = multipart({"image": ("a.jpg", b"a" * 1_500_000, "image/jpeg")}, {})  # past Werkzeug's 500 KiB
    environ = EnvironBuilder(path="/x", method="POST", input_stream=io.BytesIO(body), content_type=content_type,
                             content_length=len(body)).get_environ()
    with app.request_context(environ):
        part = request.files["image"]
        assert isinstance(part.stream, io.BytesIO) and len(part.read()) == 1_500_000
