"""Start the real gunicorn with the real gunicorn.conf.py on a free loopback port, for tests and
benchmarks. Every wait is bounded; every process started is stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def children(pid: int) -> list[int]:
    """Direct child pids of `pid`, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def smaps_rollup(pid: int) -> dict[str, int]:
    """/proc/PID/smaps_rollup as {field: KiB}."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        fields[name.rstrip(":")] = int(value)
    return fields


def pss_kib(pid: int) -> int:
    """Proportional set size of one process in KiB."""
    return smaps_rollup(pid)["Pss"]


def private_kib(pid: int) -> int:
    """Memory only this process maps (Private_Clean + Private_Dirty), KiB."""
    fields = smaps_rollup(pid)
    return fields["Private_Clean"] + fields["Private_Dirty"]


@dataclass
class Server:
    env: Mapping[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    command: tuple[str, ...] = (sys.executable, "-m", "gunicorn", "--config", "gunicorn.conf.py")
    port: int = field(default_factory=free_port)
    root: Path = ROOT  # the checkout to run (bench/slowloris.py compares with another one)
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self) -> Server:
        env = {**os.environ, "HOST": LOOPBACK, "PORT": str(self.port), "LOG_LEVEL": "info", **self.env}
        self.started_at = time.monotonic()
        with open(self.log_path or os.devnull, "wb") as log:  # the child keeps its own descriptor
            self.process = subprocess.Popen(  # noqa: S603 (our own interpreter and config)
                list(self.command),
                cwd=self.root,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None, "server not started"
        return self.process.pid

    def workers(self) -> list[int]:
        return children(self.pid)

    def get(self, path: str, **kwargs: object) -> requests.Response:
        return requests.get(self.url + path, timeout=kwargs.pop("timeout", 60), **kwargs)  # type: ignore[arg-type]

    def post(self, path: str, **kwargs: object) -> requests.Response:
        return requests.post(self.url + path, timeout=kwargs.pop("timeout", 120), **kwargs)  # type: ignore[arg-type]

    def wait_ready(self, *, timeout: float = 180.0, path: str = "/readyz") -> float:
        """Poll `path` until 200; returns seconds since start. Raises if the server dies or times out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}; log: {self.log_text()[-3000:]}")
            try:
                if self.get(path, timeout=5).status_code == 200:
                    return time.monotonic() - self.started_at
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"{path} not 200 after {timeout} s; log: {self.log_text()[-3000:]}")

    def wait_workers(self, count: int, *, timeout: float = 30.0) -> list[int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = [pid for pid in self.workers() if alive(pid)]
            if len(pids) == count:
                return pids
            time.sleep(0.05)
        raise TimeoutError(f"expected {count} workers, have {self.workers()}")

    def log_text(self) -> str:
        """The log up to its last complete line (a worker may be writing the next one right now:
        gunicorn writes a request's access line after the response has gone out)."""
        if not self.log_path or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace")
        return text[: text.rfind("\n") + 1]

    def wait_log(self, needle: str, *, timeout: float = 10.0) -> str:
        """The log once it contains `needle` (bounded); raises TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log_text()
            if needle in text:
                return text
            time.sleep(0.05)
        raise TimeoutError(f"{needle!r} not in the log after {timeout} s")

    def stop(self, *, sig: int = signal.SIGTERM, timeout: float = 40.0) -> float:
        """Send `sig` to the master and wait for the whole process tree to end; returns seconds taken."""
        if self.process is None or self.process.poll() is not None:
            return 0.0
        tree = [self.pid, *self.workers()]
        started = time.monotonic()
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            for pid in tree:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.process.wait(timeout=10)
            raise
        deadline = time.monotonic() + timeout
        while any(alive(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.02)
        return time.monotonic() - started

    def tree_pss_kib(self) -> int:
        return sum(pss_kib(pid) for pid in [self.pid, *self.workers()])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busy_worker(server: Server, *, timeout: float = 30.0) -> int:
    """The worker burning CPU now (the one running a slow request); bounded by `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = {pid: cpu_seconds(pid) for pid in server.workers()}
        time.sleep(0.4)
        used = {pid: cpu_seconds(pid) - start for pid, start in before.items() if alive(pid)}
        if used:
            pid, seconds = max(used.items(), key=lambda item: item[1])
            if seconds > 0.03:  # an idle worker uses next to none
                return pid
    raise TimeoutError("no worker is busy")


def wait_for(predicate: Callable[[], bool], *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise TimeoutError(what)
