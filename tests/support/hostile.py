"""Slow and hostile clients against the real server, next to a good client (loopback only, bounded):
hostile connections from 127.0.0.2 (slow headers at 4 bytes/s, a slow 5 MB multipart body at 4
bytes/s, connections that send nothing, kept-alive connections left open, a flood of short
connections, slow readers: a cut-out whose 8 MB answer is read at 4 bytes/s through a 4 KiB receive
buffer) while a good client on 127.0.0.1 sends /healthz, /readyz and a cut-out in turn, each with a
10 s timeout (a Kubernetes probe's); and the memory idle connections and held answers cost.

tests/test_slow_clients.py, tests/test_slow_readers.py and tests/test_front.py drive the server with
these; `python -m bench.slowloris` prints the same figures for every scenario.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import requests

from .harness import Server

HOSTILE = "127.0.0.2"
CUTOUT = "/api/v1/remove-background"
SCENARIOS = ("none", "slow_headers", "slow_body", "idle", "keepalive_idle", "flood", "slow_reader")  # none: the good client alone
BODY_BYTES = 5 * 1024 * 1024
READER_SIDE = 2048  # big_photo(): 1.9 MB of JPEG in, 8 MB of PNG out
READER_RCVBUF = 4096  # a slow reader's receive buffer (the kernel doubles it)
REST_WAIT_S = 2.0 + 2.0  # RELEASE_MEMORY_IDLE_S (default) + 2 s


def hostile_socket(port: int, *, source: str = HOSTILE, timeout: float = 5.0) -> socket.socket:
    """A TCP connection to the server from `source` (another loopback address)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def big_photo(side: int = READER_SIDE) -> bytes:
    """The astronaut at `side` px with strong noise (1.9 MB of JPEG): its cut-out (PNG, about
    8 MB) is more than loopback's socket buffers absorb (3 to 4 MB), so a client that does not
    read it leaves the writer waiting."""
    from PIL import Image
    from skimage import data

    rng = np.random.default_rng(0)
    pixels = np.asarray(Image.fromarray(data.astronaut()).resize((side, side), Image.BILINEAR)).astype(np.int16)
    pixels = np.clip(pixels + rng.normal(0, 40, pixels.shape), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=80)
    return buffer.getvalue()


def cutout_request(photo: bytes, *, keep_alive: bool = True) -> bytes:
    """The raw bytes of a POST of `photo` to the cut-out endpoint (PNG answer)."""
    body = (
        b'--b\r\nContent-Disposition: form-data; name="format"\r\n\r\npng\r\n'
        b'--b\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n'
        + photo + b"\r\n--b--\r\n"
    )
    head = (
        f"POST {CUTOUT} HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        f"Content-Length: {len(body)}\r\n{'' if keep_alive else 'Connection: close' + chr(13) + chr(10)}\r\n"
    ).encode()
    return head + body


def reader_socket(port: int, *, source: str = HOSTILE, rcvbuf: int = READER_RCVBUF, timeout: float = 30.0) -> socket.socket:
    """A connection whose receive buffer is small (set before connecting, so the window stays small)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(timeout)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def read_head(sock: socket.socket, *, timeout: float = 60.0) -> bytes:
    """An answer's status line and headers, read a byte at a time (the body stays unread).
    b"" when the connection closed first; bounded by `timeout` and 64 KiB."""
    deadline = time.monotonic() + timeout
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 65536 and time.monotonic() < deadline:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            piece = sock.recv(1)
        except OSError:
            return b""
        if not piece:
            return b""
        head += piece
    return head


def trickle_read(sock: socket.socket, size: int = 1) -> tuple[str, bytes]:
    """Read up to `size` bytes without blocking: ("read", them), ("waiting", b"") when nothing is
    there, or ("closed", b"") on a reset or end of data (the server dropped the connection)."""
    sock.setblocking(False)
    try:
        piece = sock.recv(size)
        return ("read", piece) if piece else ("closed", b"")
    except (BlockingIOError, InterruptedError):
        return "waiting", b""
    except OSError:
        return "closed", b""
    finally:
        sock.setblocking(True)


def open_readers(port: int, request: bytes, count: int, *, timeout: float = 180.0,
                 source: str = HOSTILE) -> list[tuple[socket.socket, bytes]]:
    """`count` slow readers whose answer has begun: each sends `request` whole through a small
    receive buffer and reads only the status line and headers of a 200 (a 503 busy is closed and
    sent again). Fewer come back when the server does not answer them within `timeout`."""
    deadline = time.monotonic() + timeout
    held: list[tuple[socket.socket, bytes]] = []
    while len(held) < count and time.monotonic() < deadline:
        batch = []
        for _ in range(count - len(held)):
            try:
                sock = reader_socket(port, source=source)
            except OSError:
                continue
            try:
                sock.sendall(request)
                batch.append(sock)
            except OSError:
                sock.close()
        for sock in batch:
            head = read_head(sock, timeout=max(1.0, deadline - time.monotonic()))
            if head.startswith(b"HTTP/1.1 200 "):
                held.append((sock, head))
            else:
                sock.close()
        if len(held) < count:
            time.sleep(0.5)
    return held


def content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return -1


def closed_by_server(sock: socket.socket) -> tuple[bool, bytes]:
    """(True, what it sent) when the server has closed this connection, without blocking."""
    sock.setblocking(False)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True, data
            data += chunk
    except (BlockingIOError, InterruptedError):
        return False, data
    except OSError:
        return True, data
    finally:
        sock.setblocking(True)


@dataclass
class Attack:
    """`count` hostile connections of one kind, kept open (reopened when the server closes one)
    until `stop()` or `seconds`, from one child process (in the measuring process, a thread busy
    with hundreds of connections a second would starve the good client of the GIL and time the
    client, not the server). Counts what the server did to them."""

    kind: str
    port: int
    count: int
    seconds: float = 60.0
    interval: float = 0.25  # seconds between two bytes of one slow connection (4 bytes/s)
    source: str = HOSTILE
    opened: int = 0
    closed: int = 0  # closed by the server
    answers: Counter[str] = field(default_factory=Counter)  # first status line of what it answered
    errors: int = 0
    request: bytes = b""  # slow_reader: the request each connection sends (default: a noise cut-out)
    _stop: Any = field(default_factory=threading.Event)
    _answering: Any = None  # slow_reader: how many of its readers' answers have begun with a 200 (shared)
    _process: Any = None
    _results: Any = None

    def start(self) -> Attack:
        context = multiprocessing.get_context("fork")
        self._stop = context.Event()
        self._answering = context.Value("i", 0)
        self._results, sender = context.Pipe(duplex=False)
        self._process = context.Process(target=self._child, args=(sender,), name=f"attack-{self.kind}", daemon=True)
        self._process.start()
        sender.close()
        return self

    def _child(self, sender: Any) -> None:
        try:
            self._run()
        finally:
            sender.send((self.opened, self.closed, dict(self.answers), self.errors))
            sender.close()

    def stop(self) -> Attack:
        self._stop.set()
        if self._process is not None:
            if self._results.poll(40):
                self.opened, self.closed, answers, self.errors = self._results.recv()
                self.answers = Counter(answers)
            self._process.join(timeout=10)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(timeout=10)
            self._process = None
        return self

    def wait_answering(self, count: int, *, timeout: float) -> int:
        """slow_reader: wait (at most `timeout` s) until `count` readers' answers have begun with a
        200, so every cut-out they asked for has been computed; returns how many have."""
        deadline = time.monotonic() + timeout
        while self._answering.value < count and time.monotonic() < deadline and not self._stop.is_set():
            time.sleep(0.1)
        return int(self._answering.value)

    def __enter__(self) -> Attack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what each kind sends -------------------------------------------------------------------

    def _open(self) -> tuple[socket.socket, bytes] | None:
        """A new connection and the bytes it will trickle (b"" for none)."""
        if self.kind == "slow_reader":
            return self._open_reader()
        try:
            sock = hostile_socket(self.port, source=self.source)
        except OSError:
            self.errors += 1
            return None
        self.opened += 1
        if self.kind == "slow_headers":
            return sock, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Padding: " + b"a" * 4000 + b"\r\n\r\n"
        if self.kind == "slow_body":
            head = (
                f"POST {CUTOUT} HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                f"Content-Length: {BODY_BYTES}\r\n\r\n"
            ).encode()
            try:
                sock.sendall(head + b'--b\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\n\r\n')
            except OSError:
                self.errors += 1
            return sock, b"\xff" * BODY_BYTES
        if self.kind == "keepalive_idle":
            try:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                sock.recv(65536)  # the answer; the connection is then left open, kept alive
            except OSError:
                self.errors += 1
            return sock, b""
        return sock, b""  # idle: connects and sends nothing

    def _open_reader(self) -> tuple[socket.socket, bytes] | None:
        """A cut-out sent whole through a small receive buffer; its answer is then read 1 byte per
        `interval` (what it has read so far is kept in place of a payload)."""
        try:
            sock = reader_socket(self.port, source=self.source)
            sock.sendall(self.request or cutout_request(big_photo()))
        except OSError:
            self.errors += 1
            return None
        self.opened += 1
        return sock, b""

    def _run_readers(self, deadline: float) -> None:
        if not self.request:
            self.request = cutout_request(big_photo())
        conns: list[list[Any]] = []  # [sock, what it read so far]
        while len(conns) < self.count and not self._stop.is_set() and time.monotonic() < deadline:
            opened = self._open_reader()
            if opened is not None:
                conns.append([opened[0], b""])
        while not self._stop.is_set() and time.monotonic() < deadline:
            for entry in conns:
                sock, seen = entry
                if sock is None:
                    continue
                state, piece = trickle_read(sock)
                if state == "read" and len(seen) < 64:
                    entry[1] = seen + piece
                    if len(seen) < 12 <= len(entry[1]) and entry[1].startswith(b"HTTP/1.1 200"):
                        with self._answering.get_lock():
                            self._answering.value += 1
                if state == "closed":
                    self.closed += 1
                    self.answers[seen.split(b"\r\n", 1)[0].decode("latin-1") or "(closed before its status line)"] += 1
                    sock.close()
                    reopened = self._open_reader() if not self._stop.is_set() else None
                    entry[:] = [reopened[0], b""] if reopened is not None else [None, b""]
            self._stop.wait(self.interval)
        for sock, _ in conns:
            if sock is not None:
                sock.close()

    def _run(self) -> None:
        deadline = time.monotonic() + self.seconds
        if self.kind == "none":
            return
        if self.kind == "slow_reader":
            self._run_readers(deadline)
            return
        if self.kind == "flood":
            self._flood(deadline)
            return
        conns: list[list[object]] = []  # [sock, payload, offset]
        while len(conns) < self.count and not self._stop.is_set() and time.monotonic() < deadline:
            opened = self._open()
            if opened is not None:
                conns.append([opened[0], opened[1], 0])
        while not self._stop.is_set() and time.monotonic() < deadline:
            for entry in conns:
                sock, payload, offset = entry
                gone, answer = closed_by_server(sock)  # type: ignore[arg-type]
                if not gone and payload and offset < len(payload):  # type: ignore[arg-type]
                    try:
                        sock.send(payload[offset : offset + 1])  # type: ignore[index,union-attr]
                        entry[2] = offset + 1  # type: ignore[operator]
                    except OSError:
                        gone = True
                if gone:
                    self.closed += 1
                    self.answers[answer.split(b"\r\n", 1)[0].decode("latin-1") or "(closed without answer)"] += 1
                    sock.close()  # type: ignore[union-attr]
                    reopened = self._open() if not self._stop.is_set() else None
                    if reopened is not None:
                        entry[:] = [reopened[0], reopened[1], 0]
                    else:
                        entry[1] = b""
            self._stop.wait(self.interval)
        for sock, *_ in conns:
            sock.close()  # type: ignore[union-attr]

    def _flood(self, deadline: float) -> None:
        """Short connections, as fast as one thread makes them: half close at once, half send a
        partial request line first."""
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                sock = hostile_socket(self.port, source=self.source, timeout=2.0)
            except OSError:
                self.errors += 1
                time.sleep(0.01)
                continue
            self.opened += 1
            if self.opened % 2:
                try:
                    sock.send(b"GET /heal")
                except OSError:
                    pass
            sock.close()
            if self.count and self.opened >= self.count:  # a bounded flood
                return


@dataclass
class GoodResult:
    statuses: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)

    @property
    def sent(self) -> int:
        return sum(self.statuses.values())

    @property
    def answered(self) -> int:
        return sum(count for status, count in self.statuses.items() if status.isdigit())

    @property
    def ok(self) -> int:
        return self.statuses.get("200", 0)

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q)) if self.latencies else float("nan")

    def summary(self) -> str:
        statuses = ", ".join(f"{status}: {count}" for status, count in sorted(self.statuses.items()))
        return (
            f"good requests answered {self.answered}/{self.sent} ({statuses}); "
            f"p50 {self.percentile(50):.3f} s, p99 {self.percentile(99):.3f} s, max {max(self.latencies, default=0):.3f} s"
        )


def good_client(url: str, photo: bytes, *, seconds: float, timeout: float = 10.0, stop: threading.Event | None = None) -> GoodResult:
    """Probes and cut-outs in turn from 127.0.0.1 for `seconds` (a new connection each, as probes do)."""
    result = GoodResult()
    deadline = time.monotonic() + seconds
    calls: list[tuple[str, Callable[[], requests.Response]]] = [
        ("/healthz", lambda: requests.get(url + "/healthz", timeout=timeout)),
        ("/readyz", lambda: requests.get(url + "/readyz", timeout=timeout)),
        (CUTOUT, lambda: requests.post(url + CUTOUT, files={"image": ("a.jpg", photo, "image/jpeg")}, timeout=timeout)),
    ]
    n = 0
    while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        _, call = calls[n % len(calls)]
        n += 1
        started = time.perf_counter()
        try:
            status = str(call().status_code)
        except requests.RequestException as exc:
            status = type(exc).__name__
        result.latencies.append(time.perf_counter() - started)
        result.statuses[status] += 1
        time.sleep(0.05)
    return result


def run_scenario(server: Server, kind: str, *, connections: int, seconds: float, photo: bytes,
                 source: str = HOSTILE) -> tuple[GoodResult, Attack]:
    """The `kind` attack from `source` beside a good client (from 127.0.0.1)."""
    count = connections if kind != "flood" else 0
    with Attack(kind, server.port, count, seconds=seconds + 30, source=source) as attack:
        # let the hostile connections pile up first; slow readers: until every cut-out they asked for
        # is computed and its answer has begun (a 200's first bytes), however slow the machine
        if kind == "slow_reader":
            attack.wait_answering(connections, timeout=30.0 * max(1, connections))
        else:
            time.sleep(min(3.0, seconds / 4))
        good = good_client(server.url, photo, seconds=seconds)
    return good, attack


def idle_memory(server: Server, connections: int) -> tuple[float, float]:
    """(summed PSS in MiB with no extra connection, with `connections` idle ones open), both at rest:
    after the idle release (RELEASE_MEMORY_IDLE_S + 2 s), which would otherwise fall in between."""
    time.sleep(REST_WAIT_S)
    before = server.tree_pss_kib() / 1024
    socks = []
    try:
        for _ in range(connections):
            sock = hostile_socket(server.port, source="127.0.0.1")
            sock.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # headers begun, never finished
            socks.append(sock)
        time.sleep(1.0)
        after = server.tree_pss_kib() / 1024
    finally:
        for sock in socks:
            sock.close()
    return before, after


def reader_memory(server: Server, count: int, request: bytes) -> tuple[int, float, float, float]:
    """(slow readers held, summed PSS in MiB while they hold their answers, PSS once they have gone,
    MiB of nginx's temporary files while they hold them). The server should run with
    RELEASE_MEMORY=off (the two PSS figures then differ only by the answers held) and a long
    SEND_TIMEOUT. The kernel's socket buffers are not in PSS."""
    held = open_readers(server.port, request, count, timeout=240)
    try:
        time.sleep(1.0)
        holding = server.tree_pss_kib() / 1024
        spooled = spooled_bytes(server) / (1024 * 1024)
    finally:
        for sock, _ in held:
            sock.close()
    time.sleep(2.0)  # nginx sees the reset on its next write and drops the answer
    return len(held), holding, server.tree_pss_kib() / 1024, spooled


def spooled_bytes(server: Server) -> int:
    """Bytes of nginx's temporary files of buffered answers (under the run folder's proxy/ tree)."""
    folder = None
    for pid in server.front():
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        match = re.search(r"-c (\S+)/nginx\.conf", command)  # nginx's master: "nginx: master process ... -c CONF"
        if match:
            folder = Path(match.group(1)) / "proxy"
    return 0 if folder is None else temp_file_bytes(server, folder)


def temp_file_bytes(server: Server, folder: Path) -> int:
    """The bytes of nginx's temporary files under `folder`: nginx unlinks each as it opens it, so
    they are counted through its processes' open descriptors ("... (deleted)"), as the disk holds
    them, not in the folder."""
    total = 0
    for pid in server.front():
        try:
            descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for descriptor in descriptors:
            try:
                if os.readlink(descriptor).startswith(f"{folder}/"):
                    total += descriptor.stat().st_size
            except OSError:
                continue
    return total
