"""The one server harness of the tests and the benchmarks: start a server as a user starts it (its
own command on a free loopback port), wait for it, drive it, read its processes from /proc, stop
it. Loopback only; every wait is bounded; every process started is stopped
(`with Server(...) as server:`, or `start()` ... `stop()`).

Nothing here imports the app: the measuring process stays small and leaves the thread settings of
the servers it starts alone (app/native_threads.py sets OMP_NUM_THREADS & co. on import).
"""

from __future__ import annotations

import http.client
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"
# what start.sh runs once set up: nginx in front of gunicorn (app/serving/launch.py)
LAUNCH = (sys.executable, "-m", "app.serving.launch")
# gunicorn alone, without the front (for comparisons: what nginx adds)
GUNICORN = (sys.executable, "-m", "gunicorn", "--config", "gunicorn.conf.py")
# Thread settings a server must not inherit by accident (the app sets them in its own processes).
SCRUB = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER")
ACCESS = re.compile(r"\[(\d+)\].*\"(?:POST|GET) (\S+) HTTP/[\d.]+\" (\d{3})")
WARM = re.compile(r"worker (\d+) warm after (\d+) warm-up pass\(es\) in ([\d.]+) s")


def post_from(server: Server, source: str, path: str, body: bytes, content_type: str, *,
              accept: str = "*/*", timeout: float = 600) -> tuple[int, bytes]:
    """POST from the loopback address `source` (127.0.0.2 ...: a client of its own to nginx's
    per-client limits): (status, body)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout, source_address=(source, 0))
    try:
        connection.request("POST", path, body=body, headers={"Content-Type": content_type, "Accept": accept})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def multipart(files: dict[str, tuple[str, bytes, str]], data: dict[str, str]) -> tuple[bytes, str]:
    prepared = requests.Request("POST", "http://x/", files=files, data=data).prepare()
    assert isinstance(prepared.body, bytes)
    return prepared.body, prepared.headers["Content-Type"]


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), without numpy."""
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values: Sequence[float]) -> dict[str, float]:
    values = list(values)
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": statistics.median(values), "p90": percentile(values, 90), "p99": percentile(values, 99),
            "mean": statistics.fmean(values), "min": min(values), "max": max(values)}


# Ports handed out by free_port: a block per test process, below the kernel's ephemeral range.
PORT_BLOCK = 1000
PORT_BASE = 15000
_handed_out: list[int] = []


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _port_block() -> range | None:
    """This process's ports: pytest-xdist's worker gwN takes block N (the main process block 0),
    all of them below the ephemeral range, where no outgoing connection takes its source port.
    None where the ephemeral range starts too low for the blocks."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    start = PORT_BASE + index * PORT_BLOCK
    return range(start, start + PORT_BLOCK) if start + PORT_BLOCK <= _ephemeral_low() else None


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A loopback port nobody listens on, for a server to bind. Each test process draws from a block
    of its own, in turn (`_port_block`): the port the kernel picks for bind(0) comes from the
    ephemeral range, where another test process, or any outgoing connection, could take it between
    this check and the server's own bind."""
    block = _port_block()
    if block is None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((LOOPBACK, 0))
            return int(sock.getsockname()[1])
    # after the last port handed out, not at the count of them: once a busy port was skipped, the
    # count points at a port handed out but not yet bound (a MANAGEMENT_PORT), which would come twice
    start = block.index(_handed_out[-1]) + 1 if _handed_out else 0
    for offset in range(len(block)):  # bounded: one look at each port of the block
        port = block[(start + offset) % len(block)]
        if _bindable(port):
            _handed_out.append(port)
            return port
    raise RuntimeError(f"no free loopback port in {block.start}-{block.stop - 1}")


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((LOOPBACK, port)) == 0


def wait_for(predicate: Callable[[], object], *, timeout: float, interval: float = 0.05, what: str = "condition not met in time") -> object:
    """The first truthy value of `predicate()`, polled until `timeout`; TimeoutError(what) after."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(what)


# -- processes, from /proc ----------------------------------------------------------------------


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name: [state, ppid, ...]."""
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
        return handle.read().rsplit(")", 1)[1].split()


def alive(pid: int) -> bool:
    try:
        return _stat(pid)[0] != "Z"
    except OSError:
        return False


def descendants(pid: int, *, depth: int | None = None) -> list[int]:
    """Live processes below `pid` (children only with depth=1), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = _stat(int(entry.name))
            except OSError:
                continue
            if fields[0] != "Z":
                parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    level = [pid]
    while level and (depth is None or depth > 0):
        level = [child for parent in level for child in parents.get(parent, [])]
        found += level
        depth = None if depth is None else depth - 1
    return sorted(found)


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
    except OSError:
        return []


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def minor_faults(pid: int) -> int:
    """Pages one process has faulted in from memory so far (minflt)."""
    return int(_stat(pid)[7])


def smaps_rollup(pid: int) -> dict[str, int]:
    """/proc/PID/smaps_rollup as KiB per field (Rss, Pss, Shared_Clean, Private_Dirty, ...)."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 3 and parts[-1] == "kB":
                fields[parts[0].rstrip(":")] = int(parts[1])
    return fields


def private_kib(fields: dict[str, int]) -> int:
    return fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)


def shared_kib(fields: dict[str, int]) -> int:
    return fields.get("Shared_Clean", 0) + fields.get("Shared_Dirty", 0)


def tree_memory(pid: int, workers: Sequence[int], *, others: Sequence[int] = ()) -> dict[str, float]:
    """MiB: summed PSS of the tree (the master, its workers and `others`: the launcher and nginx),
    the master's PSS, the others' PSS, and per worker PSS / private / shared."""
    master = smaps_rollup(pid)
    front = 0
    for other in others:
        try:
            front += smaps_rollup(other).get("Pss", 0)
        except OSError:
            continue
    per_worker = []
    for worker in workers:
        try:
            per_worker.append(smaps_rollup(worker))
        except OSError:
            continue
    mib = 1024.0
    result = {
        "tree_pss_mib": (master.get("Pss", 0) + front + sum(w.get("Pss", 0) for w in per_worker)) / mib,
        "master_pss_mib": master.get("Pss", 0) / mib,
        "front_pss_mib": front / mib,
        "master_rss_mib": master.get("Rss", 0) / mib,
        "workers_measured": len(per_worker),
    }
    if per_worker:
        result.update(
            worker_pss_mib=statistics.fmean(w.get("Pss", 0) for w in per_worker) / mib,
            worker_private_mib=statistics.fmean(private_kib(w) for w in per_worker) / mib,
            worker_private_max_mib=max(private_kib(w) for w in per_worker) / mib,
            worker_shared_mib=statistics.fmean(shared_kib(w) for w in per_worker) / mib,
            worker_rss_mib=statistics.fmean(w.get("Rss", 0) for w in per_worker) / mib,
        )
    return result


# -- the server ---------------------------------------------------------------------------------


@dataclass
class Server:
    """One server process tree. `kind`: "pilotlight" (the launcher: nginx in front of a gunicorn
    master and its workers; or gunicorn alone with command=GUNICORN or FRONT=none) or "rembg" (rembg
    s: one process). `command` may hold "{port}"; `root` is the checkout it runs in."""

    env: Mapping[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    command: Sequence[str] = LAUNCH
    name: str = "pilotlight"
    kind: str = "pilotlight"
    root: Path = ROOT
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    shutdown_s: float | None = None
    readyz: dict[str, object] = field(default_factory=dict)  # the /readyz body that said ready

    def start(self) -> Server:
        env = {key: value for key, value in os.environ.items() if key not in SCRUB}
        env.update({"HOST": LOOPBACK, "PORT": str(self.port), "LOG_LEVEL": "info", **self.env})
        command = [part.replace("{port}", str(self.port)) for part in self.command]
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path or os.devnull, "wb") as log:  # the child keeps its own descriptor
            self.started_at = time.monotonic()
            self.process = subprocess.Popen(command, cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
        return self

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.shutdown_s is None:
            try:
                self.stop()
            except Exception:  # noqa: BLE001  (already failing: make sure nothing is left running)
                self.kill_tree()

    @property
    def pid(self) -> int:
        assert self.process is not None, "server not started"
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def master(self) -> int:
        """gunicorn's master: the launcher's gunicorn child, or the process itself when gunicorn runs
        alone (the launcher replaces itself with gunicorn without nginx); rembg s: its one process."""
        if self.kind != "pilotlight" or _is_gunicorn(self.pid):
            return self.pid
        for child in descendants(self.pid, depth=1):
            if _is_gunicorn(child):
                return child
        return self.pid  # not started yet

    def front(self) -> list[int]:
        """The launcher and nginx's processes: what runs beside gunicorn (empty when it runs alone)."""
        master = self.master
        if master == self.pid:
            return []
        gunicorn = {master, *descendants(master)}
        return [self.pid, *(pid for pid in descendants(self.pid) if pid not in gunicorn)]

    def workers(self) -> list[int]:
        """gunicorn's live workers (the master's children); rembg s has none."""
        return descendants(self.master, depth=1) if self.kind == "pilotlight" else []

    def get(self, path: str, **kwargs: object) -> requests.Response:
        return requests.get(self.url + path, timeout=kwargs.pop("timeout", 60), **kwargs)  # type: ignore[arg-type]

    def post(self, path: str, **kwargs: object) -> requests.Response:
        return requests.post(self.url + path, timeout=kwargs.pop("timeout", 120), **kwargs)  # type: ignore[arg-type]

    # -- start-up -------------------------------------------------------------------------------

    def wait_started(self, *, timeout: float = 300.0, ready_path: str | None = "/readyz") -> dict[str, float]:
        """Poll until the port accepts a connection, then (with `ready_path`) until it answers 200.
        Returns {"port_s", "ready_s"} in seconds since the process was started."""
        deadline = time.monotonic() + timeout
        times: dict[str, float] = {}
        while "port_s" not in times:
            self._check(deadline, f"port {self.port} closed")
            if port_open(self.port):
                times["port_s"] = time.monotonic() - self.started_at
            else:
                time.sleep(0.01)
        if ready_path is None:
            return {**times, "ready_s": times["port_s"]}
        while True:
            self._check(deadline, f"{ready_path} not 200")
            try:
                response = self.get(ready_path, timeout=max(1.0, deadline - time.monotonic()))
                if response.status_code == 200:
                    self.readyz = response.json() if "json" in response.headers.get("Content-Type", "") else {}
                    return {**times, "ready_s": time.monotonic() - self.started_at}
            except requests.RequestException:
                pass
            time.sleep(0.02)

    def wait_ready(self, *, timeout: float = 180.0, path: str = "/readyz") -> float:
        """Seconds from start until `path` answered 200."""
        return self.wait_started(timeout=timeout, ready_path=path)["ready_s"]

    def _check(self, deadline: float, what: str) -> None:
        if not self.running():
            code = None if self.process is None else self.process.returncode
            raise RuntimeError(f"{self.name} exited with {code}; log: {self.log_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{self.name}: {what} in time; log: {self.log_text()[-3000:]}")

    def wait_workers(self, count: int, *, timeout: float = 30.0) -> list[int]:
        def settled() -> list[int] | None:
            pids = self.workers()
            return pids if len(pids) == count else None

        return wait_for(settled, timeout=timeout, what=f"expected {count} workers")  # type: ignore[return-value]

    # -- the log --------------------------------------------------------------------------------

    def log_text(self) -> str:
        """The log up to its last complete line (a worker may be writing the next one right now)."""
        if not self.log_path or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace")
        return text[: text.rfind("\n") + 1]

    def wait_log(self, needle: str, *, timeout: float = 10.0) -> str:
        """The log once it contains `needle` (bounded); raises TimeoutError otherwise."""
        def found() -> str:
            text = self.log_text()
            return text if needle in text else ""

        return wait_for(found, timeout=timeout, what=f"{needle!r} not in the log after {timeout} s")  # type: ignore[return-value]

    def warm_lines(self) -> dict[int, float]:
        """pid -> warm-up seconds, from the workers' "worker PID warm after N pass(es) in X s" lines."""
        return {int(match[1]): float(match[3]) for match in WARM.finditer(self.log_text())}

    def served_by(self, path: str) -> Counter[int]:
        """Requests answered 200 per worker pid, from the access log (gunicorn's lines carry the pid)."""
        return Counter(int(m[1]) for m in ACCESS.finditer(self.log_text()) if m[2].startswith(path) and m[3] == "200")

    # -- resources ------------------------------------------------------------------------------

    def memory(self) -> dict[str, float]:
        if self.kind != "pilotlight":
            return tree_memory(self.pid, descendants(self.pid))
        return tree_memory(self.master, self.workers(), others=self.front())

    def tree_pss_kib(self) -> int:
        total = 0
        for pid in [self.pid, *descendants(self.pid)]:
            try:
                total += smaps_rollup(pid).get("Pss", 0)
            except OSError:
                continue
        return total

    def cpu(self) -> dict[int, float]:
        result = {}
        for pid in self.workers():
            try:
                result[pid] = cpu_seconds(pid)
            except OSError:
                pass
        return result

    # -- the end --------------------------------------------------------------------------------

    def stop(self, *, sig: int = signal.SIGTERM, timeout: float = 60.0) -> float:
        """Send `sig` to the master (or rembg's one process); seconds until the whole tree is gone."""
        if not self.running():
            self.shutdown_s = 0.0
            return 0.0
        assert self.process is not None
        tree = [self.pid, *descendants(self.pid)]
        started = time.monotonic()
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_tree(tree)
            raise
        deadline = time.monotonic() + timeout
        while any(alive(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.shutdown_s = time.monotonic() - started
        return self.shutdown_s

    def kill_tree(self, tree: Sequence[int] | None = None) -> None:
        if self.process is None:
            return
        for pid in tree or [self.pid, *descendants(self.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def _is_gunicorn(pid: int) -> bool:
    return any("gunicorn" in part for part in cmdline(pid)[:3])


def busy_worker(server: Server, *, timeout: float = 30.0) -> int:
    """The worker burning CPU now (the one running a slow request); bounded by `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = server.cpu()
        time.sleep(0.4)
        used = {pid: seconds - before[pid] for pid, seconds in server.cpu().items() if pid in before}
        if used:
            pid, seconds = max(used.items(), key=lambda item: item[1])
            if seconds > 0.03:  # an idle worker uses next to none
                return pid
    raise TimeoutError("no worker is busy")


# -- traffic ------------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    seconds: float
    server_timing: dict[str, float]
    error: str | None = None


def parse_server_timing(header: str) -> dict[str, float]:
    """A Server-Timing header as {stage: seconds}."""
    stages = {}
    for part in header.split(","):
        name, _, duration = part.strip().partition(";dur=")
        try:
            stages[name] = float(duration) / 1000.0
        except ValueError:
            pass
    return stages


@dataclass(frozen=True)
class Call:
    """One kind of request: where it goes and what it carries."""

    label: str
    path: str
    file_field: str
    photo: bytes
    fields: Mapping[str, str] = field(default_factory=dict)
    filename: str = "photo.jpg"
    content_type: str = "image/jpeg"

    def send(self, base_url: str, session: requests.Session | None = None, timeout: float = 300.0) -> Reply:
        poster = session or requests
        started = time.perf_counter()
        try:
            response = poster.post(base_url + self.path, files={self.file_field: (self.filename, self.photo, self.content_type)},
                                   data=dict(self.fields), timeout=timeout)
            elapsed = time.perf_counter() - started
            _ = response.content
        except requests.RequestException as exc:
            return Reply(0, time.perf_counter() - started, {}, f"{type(exc).__name__}: {exc}")
        return Reply(response.status_code, elapsed, parse_server_timing(response.headers.get("Server-Timing", "")),
                     None if response.status_code == 200 else response.text[:300])


def must(reply: Reply, what: str) -> Reply:
    if reply.status != 200:
        raise RuntimeError(f"{what}: status {reply.status}: {reply.error}")
    return reply


def sequential(server: Server, call: Call, count: int) -> list[Reply]:
    with requests.Session() as session:
        return [must(call.send(server.url, session), f"{server.name} {call.label}") for _ in range(count)]


def closed_loop(server: Server, call: Call, *, clients: int, total: int, max_seconds: float) -> dict[str, object]:
    """`clients` clients each send the next request as soon as their last one is answered, until
    `total` requests are answered or `max_seconds` pass. Throughput counts 200s over the wall time."""
    lock = threading.Lock()
    issued = iter(range(total))
    replies: list[Reply] = []
    deadline = time.monotonic() + max_seconds

    def client() -> None:
        with requests.Session() as session:
            while time.monotonic() < deadline:
                with lock:
                    if next(issued, None) is None:
                        break
                reply = call.send(server.url, session)
                with lock:
                    replies.append(reply)

    started = time.perf_counter()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max_seconds + 330)
    wall = time.perf_counter() - started
    ok = [reply.seconds for reply in replies if reply.status == 200]
    return {
        "clients": clients,
        "requests": len(replies),
        "ok": len(ok),
        "statuses": dict(Counter(str(reply.status) for reply in replies)),
        "wall_s": wall,
        "throughput_rps": len(ok) / wall if wall > 0 else 0.0,
        "latency": summary(ok),
    }


def serve_every_worker(server: Server, call: Call, *, workers: int, per_worker: int, max_waves: int) -> dict[str, object]:
    """Waves of `workers` concurrent requests until every worker has answered `per_worker` of them
    (read from the access log), at most `max_waves` waves."""
    counts: Counter[int] = Counter()
    pids = server.workers()
    failures: list[str] = []

    def one() -> None:
        reply = call.send(server.url)
        if reply.status != 200:
            failures.append(f"{reply.status}: {reply.error}")

    waves = 0
    while waves < max_waves:
        threads = [threading.Thread(target=one) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        waves += 1
        if failures:
            raise RuntimeError(f"{server.name}: a request of the waves failed: {failures[0]}")
        pids, counts = server.workers(), server.served_by(call.path)
        if pids and all(counts.get(pid, 0) >= per_worker for pid in pids):
            break
    return {"waves": waves, "workers": len(pids), "served": sum(1 for pid in pids if counts.get(pid, 0) >= per_worker),
            "requests_per_worker": sorted(counts.get(pid, 0) for pid in pids)}
