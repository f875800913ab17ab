"""Load the real server with concurrent clients uploading real photos (loopback only, bounded).

    .venv/bin/python -m bench.load [--clients 6] [--requests 2000] [--workers 2] [--model u2net]

Starts gunicorn with gunicorn.conf.py on a free loopback port, sends --requests requests from
--clients closed-loop clients (more clients than workers: the queue fills), alternating the ID photo
and the background-removal endpoints on scikit-image's astronaut, and prints: requests by status,
latency p50/p99/max, how many 503s carried Retry-After, and the summed PSS of the process tree
after warm-up and after the run. It stops by itself after --max-seconds.
"""

from __future__ import annotations

import argparse
import io
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import requests
from PIL import Image

from tests.server import Server

ENDPOINTS = (
    ("/api/v1/remove-background", {}),
    ("/api/v1/idphoto", {"spec": "us-passport"}),
)


@dataclass
class LoadResult:
    statuses: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    retry_after_503: int = 0
    pss_before_mib: float = 0.0
    pss_after_mib: float = 0.0
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.statuses.values())

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q)) if self.latencies else 0.0

    @property
    def pss_growth(self) -> float:
        return self.pss_after_mib / self.pss_before_mib - 1.0 if self.pss_before_mib else 0.0

    def summary(self) -> str:
        statuses = ", ".join(f"{status}: {count}" for status, count in sorted(self.statuses.items()))
        return (
            f"{self.total} requests in {self.seconds:.0f} s ({self.total / max(self.seconds, 1e-9):.2f}/s); "
            f"statuses {statuses}; 503 with Retry-After {self.retry_after_503}; "
            f"latency p50 {self.percentile(50):.3f} s, p99 {self.percentile(99):.3f} s, max {max(self.latencies, default=0):.3f} s; "
            f"PSS {self.pss_before_mib:.0f} -> {self.pss_after_mib:.0f} MiB ({self.pss_growth * 100:+.1f}%)"
        )


def photo_jpeg() -> bytes:
    from skimage import data

    buffer = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buffer, "JPEG", quality=92)
    return buffer.getvalue()


def run_load(server: Server, *, clients: int, total: int, max_seconds: float) -> LoadResult:
    """`clients` closed-loop clients share `total` requests; stops early after `max_seconds`."""
    photo = photo_jpeg()
    result = LoadResult(pss_before_mib=server.tree_pss_kib() / 1024)
    lock = threading.Lock()
    issued = iter(range(total))
    deadline = time.monotonic() + max_seconds

    def client() -> None:
        session = requests.Session()
        while time.monotonic() < deadline:
            with lock:
                n = next(issued, None)
            if n is None:
                return
            path, fields = ENDPOINTS[n % len(ENDPOINTS)]
            started = time.perf_counter()
            try:
                response = session.post(server.url + path, files={"image": ("me.jpg", photo, "image/jpeg")}, data=fields, timeout=120)
                status = str(response.status_code)
                retry = response.status_code == 503 and "Retry-After" in response.headers
            except requests.RequestException as exc:
                status, retry = type(exc).__name__, False
            elapsed = time.perf_counter() - started
            with lock:
                result.statuses[status] += 1
                result.latencies.append(elapsed)
                result.retry_after_503 += int(retry)
            if retry:  # a well-behaved client waits as told before it tries again
                time.sleep(min(float(response.headers["Retry-After"]), 5.0))

    started = time.monotonic()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max_seconds + 180)
    result.seconds = time.monotonic() - started
    time.sleep(0.5)
    result.pss_after_mib = server.tree_pss_kib() / 1024
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--model", default="u2net")
    parser.add_argument("--queue-depth", type=int, default=None)
    parser.add_argument("--max-seconds", type=float, default=3600)
    parser.add_argument("--log", type=Path, default=Path("/tmp/pilotlight-load.log"))
    args = parser.parse_args()
    env = {"WORKERS": str(args.workers), "MODELS": f"{args.model},centerface", "SEGMENTATION_MODEL": args.model}
    if args.queue_depth is not None:
        env["QUEUE_DEPTH"] = str(args.queue_depth)
    server = Server(env=env, log_path=args.log).start()
    try:
        server.wait_ready(timeout=600)
        result = run_load(server, clients=args.clients, total=args.requests, max_seconds=args.max_seconds)
    finally:
        server.stop(timeout=60)
    print(f"model {args.model}, {args.workers} workers, {args.clients} clients")  # noqa: T201
    print(result.summary())  # noqa: T201


if __name__ == "__main__":
    main()
