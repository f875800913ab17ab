"""Start a server as a user would (its own command, a free loopback port), time its start-up, drive
it with bounded traffic, read its memory, kill its workers, stop it. Loopback only; every wait
is bounded; every process started is stopped (`with Launched(...) as server:`)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import requests

from .common import ROOT, cpu_seconds, descendants, summary, tree_memory

LOOPBACK = "127.0.0.1"
# Thread settings the suite must not hand down by accident (the app sets them in its own processes).
SCRUB = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER")
ACCESS = re.compile(r"\[(\d+)\].*\"(?:POST|GET) (\S+) HTTP/[\d.]+\" (\d{3})")
WARM = re.compile(r"worker (\d+) warm after (\d+) warm-up pass\(es\) in ([\d.]+) s")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((LOOPBACK, port)) == 0


@dataclass
class Reply:
    status: int
    seconds: float
    server_timing: dict[str, float]
    error: str | None = None


@dataclass
class Launched:
    """One server process tree. `kind`: "pilotlight" (gunicorn) or "rembg" (rembg s)."""

    name: str
    command: Sequence[str]
    env: Mapping[str, str]
    log_path: Path
    kind: str = "pilotlight"
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    shutdown_s: float | None = None
    readyz: dict[str, object] = field(default_factory=dict)  # the /readyz body that said ready

    # -- life ----------------------------------------------------------------------------------

    def __enter__(self) -> Launched:
        env = {key: value for key, value in os.environ.items() if key not in SCRUB}
        env.update({"HOST": LOOPBACK, "PORT": str(self.port), **self.env})
        command = [part.replace("{port}", str(self.port)) for part in self.command]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.started_at = time.monotonic()
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
        return self

    def __exit__(self, *exc: object) -> None:
        if self.shutdown_s is None:
            try:
                self.stop()
            except Exception:  # noqa: BLE001  (already failing: make sure nothing is left running)
                self.kill_tree()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def workers(self) -> list[int]:
        """gunicorn's worker processes (the master's children); rembg s has none."""
        if self.kind != "pilotlight":
            return []
        children = []
        for pid in descendants(self.pid):
            try:
                with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.pid and fields[0] != "Z":
                children.append(pid)
        return children

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, timeout: float = 60.0) -> float:
        """SIGTERM the master (or rembg's one process); seconds until the whole tree is gone."""
        if not self.alive():
            self.shutdown_s = 0.0
            return 0.0
        tree = [self.pid, *descendants(self.pid)]
        started = time.monotonic()
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_tree()
            raise
        deadline = time.monotonic() + timeout
        while any(_alive(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.shutdown_s = time.monotonic() - started
        return self.shutdown_s

    def kill_tree(self) -> None:
        if self.process is None:
            return
        for pid in [self.pid, *descendants(self.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    # -- start-up ------------------------------------------------------------------------------

    def wait_started(self, *, timeout: float = 300.0, ready_path: str | None = "/readyz") -> dict[str, float]:
        """Poll until the port accepts a connection, then (with `ready_path`) until it answers 200.
        Returns {"port_s", "ready_s"} in seconds since the process was started."""
        deadline = time.monotonic() + timeout
        times: dict[str, float] = {}
        while time.monotonic() < deadline:
            self._check_alive()
            if port_open(self.port):
                times["port_s"] = time.monotonic() - self.started_at
                break
            time.sleep(0.01)
        else:
            raise TimeoutError(f"{self.name}: port {self.port} closed after {timeout} s; log: {self.log_text()[-2000:]}")
        if ready_path is None:
            times["ready_s"] = times["port_s"]
            return times
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                response = requests.get(self.url + ready_path, timeout=max(1.0, deadline - time.monotonic()))
                if response.status_code == 200:
                    times["ready_s"] = time.monotonic() - self.started_at
                    self.readyz = response.json() if "json" in response.headers.get("Content-Type", "") else {}
                    return times
            except requests.RequestException:
                pass
            time.sleep(0.02)
        raise TimeoutError(f"{self.name}: {ready_path} not 200 after {timeout} s; log: {self.log_text()[-2000:]}")

    def _check_alive(self) -> None:
        if not self.alive():
            assert self.process is not None
            raise RuntimeError(f"{self.name} exited with {self.process.returncode}; log: {self.log_text()[-3000:]}")

    def warm_lines(self) -> dict[int, float]:
        """pid -> warm-up seconds, from the workers' "worker PID warm after N pass(es) in X s" lines."""
        return {int(match[1]): float(match[3]) for match in WARM.finditer(self.log_text())}

    def served_by(self, path: str) -> Counter[int]:
        """Requests answered 200 per worker pid, from the access log (gunicorn's lines carry the pid)."""
        counts: Counter[int] = Counter()
        for match in ACCESS.finditer(self.log_text()):
            if match[2].startswith(path) and match[3] == "200":
                counts[int(match[1])] += 1
        return counts

    # -- traffic -------------------------------------------------------------------------------

    def memory(self) -> dict[str, float]:
        return tree_memory(self.pid, self.workers() if self.kind == "pilotlight" else descendants(self.pid))

    def cpu(self) -> dict[int, float]:
        result = {}
        for pid in self.workers():
            try:
                result[pid] = cpu_seconds(pid)
            except OSError:
                pass
        return result


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@dataclass(frozen=True)
class Call:
    """One kind of request: where it goes and what it carries."""

    label: str
    path: str
    file_field: str
    photo: bytes
    fields: Mapping[str, str] = field(default_factory=dict)

    def send(self, base_url: str, session: requests.Session | None = None, timeout: float = 300.0) -> Reply:
        poster = session or requests
        started = time.perf_counter()
        try:
            response = poster.post(
                base_url + self.path,
                files={self.file_field: ("photo.jpg", self.photo, "image/jpeg")},
                data=dict(self.fields),
                timeout=timeout,
            )
            elapsed = time.perf_counter() - started
            _ = response.content
        except requests.RequestException as exc:
            return Reply(0, time.perf_counter() - started, {}, f"{type(exc).__name__}: {exc}")
        return Reply(response.status_code, elapsed, parse_server_timing(response.headers.get("Server-Timing", "")),
                     None if response.status_code == 200 else response.text[:300])


def parse_server_timing(header: str) -> dict[str, float]:
    stages = {}
    for part in header.split(","):
        name, _, duration = part.strip().partition(";dur=")
        if duration:
            try:
                stages[name] = float(duration) / 1000.0
            except ValueError:
                pass
    return stages


def must(reply: Reply, what: str) -> Reply:
    if reply.status != 200:
        raise RuntimeError(f"{what}: status {reply.status}: {reply.error}")
    return reply


def sequential(server: Launched, call: Call, count: int) -> list[Reply]:
    session = requests.Session()
    try:
        return [must(call.send(server.url, session), f"{server.name} {call.label}") for _ in range(count)]
    finally:
        session.close()


def closed_loop(server: Launched, call: Call, *, clients: int, total: int, max_seconds: float) -> dict[str, object]:
    """`clients` clients each send the next request as soon as their last one is answered, until
    `total` requests are answered or `max_seconds` pass. Throughput counts 200s over the wall time."""
    lock = threading.Lock()
    issued = iter(range(total))
    replies: list[Reply] = []
    deadline = time.monotonic() + max_seconds

    def client() -> None:
        session = requests.Session()
        while time.monotonic() < deadline:
            with lock:
                if next(issued, None) is None:
                    break
            reply = call.send(server.url, session)
            with lock:
                replies.append(reply)
        session.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max_seconds + 330)
    wall = time.perf_counter() - started
    ok = [reply.seconds for reply in replies if reply.status == 200]
    statuses = Counter(str(reply.status) for reply in replies)
    return {
        "clients": clients,
        "requests": len(replies),
        "ok": len(ok),
        "statuses": dict(statuses),
        "wall_s": wall,
        "throughput_rps": len(ok) / wall if wall > 0 else 0.0,
        "latency": summary(ok),
    }


def serve_every_worker(server: Launched, call: Call, *, workers: int, per_worker: int, max_waves: int) -> dict[str, object]:
    """Waves of `workers` concurrent requests until every worker has answered `per_worker` of them
    (read from the access log), at most `max_waves` waves."""
    waves = 0
    counts: Counter[int] = Counter()
    pids = server.workers()
    failures: list[str] = []

    def one() -> None:
        reply = call.send(server.url)
        if reply.status != 200:
            failures.append(f"{reply.status}: {reply.error}")

    while waves < max_waves:
        threads = [threading.Thread(target=one) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        waves += 1
        if failures:
            raise RuntimeError(f"{server.name}: a request of the waves failed: {failures[0]}")
        pids = server.workers()
        counts = server.served_by(call.path)
        if pids and all(counts.get(pid, 0) >= per_worker for pid in pids):
            break
    return {"waves": waves, "workers": len(pids), "served": sum(1 for pid in pids if counts.get(pid, 0) >= per_worker),
            "requests_per_worker": sorted(counts.get(pid, 0) for pid in pids)}


def wait_for(predicate: Callable[[], object], *, timeout: float, interval: float = 0.01) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError("condition not met in time")
