"""Load on the real server from concurrent clients uploading real photos (loopback only, bounded):
`run_load` (closed-loop clients alternating the ID photo and cut-out endpoints on the astronaut, or
any plan of requests) and `run_soak` (varied photos from 256 px to 20 MP over cut-outs, ID photos and
print sheets, with the summed PSS read at rest after each batch). tests/test_load.py and
tests/test_soak.py run them short; `python -m bench.load` runs them long.
"""

from __future__ import annotations

import io
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import requests
from PIL import Image

from .harness import Server
from .photos import portrait_photo

ENDPOINTS = (
    ("/api/v1/remove-background", {}),
    ("/api/v1/idphoto", {"spec": "us-passport"}),
)
SOAK_ENDPOINTS = (
    ("/api/v1/remove-background", {}),
    ("/api/v1/idphoto", {"spec": "us-passport", "face": "largest"}),
    ("/api/v1/remove-background", {"background": "white", "format": "jpeg"}),
    ("/api/v1/idphoto", {"spec": "schengen-visa", "face": "largest", "format": "png"}),
    ("/api/v1/idphoto/sheet", {"spec": "icao", "paper": "4x6", "face": "largest"}),
    ("/api/v1/idphoto", {"spec": "cn-1inch", "face": "largest", "max_kb": "40"}),
)
RELEASE_WAIT_S = 2.0 + 2.0  # RELEASE_MEMORY_IDLE_S (default) + 2 s
T1_JPG = "insightface/data/images/t1.jpg"

# (path, form fields, (file name, bytes, content type)) for request number n
Plan = Callable[[int], tuple[str, dict[str, str], tuple[str, bytes, str]]]


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


def _encoded(image: Image.Image, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def soak_photos() -> list[tuple[str, bytes, str]]:
    """Varied uploads: (file name, bytes, content type)."""
    import importlib.util

    from skimage import data

    astronaut = Image.fromarray(data.astronaut())
    photos = [
        ("astronaut-512.jpg", _encoded(astronaut, "JPEG", quality=92), "image/jpeg"),
        ("astronaut-256.png", _encoded(astronaut.resize((256, 256)), "PNG"), "image/png"),
        ("astronaut-1024.webp", _encoded(astronaut.resize((1024, 1024)), "WEBP", quality=90), "image/webp"),
        ("astronaut-2048.jpg", _encoded(astronaut.resize((2048, 2048), Image.LANCZOS), "JPEG", quality=90), "image/jpeg"),
        ("portrait-12mp.jpg", _encoded(astronaut.resize((3000, 4000), Image.BICUBIC), "JPEG", quality=85), "image/jpeg"),
        ("photo-20mp.jpg", _encoded(astronaut.resize((5000, 4000), Image.BICUBIC), "JPEG", quality=85), "image/jpeg"),
    ]
    spec = importlib.util.find_spec("insightface")
    if spec is not None and spec.origin is not None:
        t1 = Path(spec.origin).parent.parent / T1_JPG
        if t1.is_file():
            photos.append(("t1.jpg", t1.read_bytes(), "image/jpeg"))
    return photos


def soak_plan() -> Plan:
    photos = soak_photos()

    def plan(n: int) -> tuple[str, dict[str, str], tuple[str, bytes, str]]:
        path, fields = SOAK_ENDPOINTS[(n // len(photos)) % len(SOAK_ENDPOINTS)]  # every photo meets every endpoint
        return path, fields, photos[n % len(photos)]

    return plan


def run_load(
    server: Server, *, clients: int, total: int, max_seconds: float, plan: Plan | None = None, first: int = 0,
    on_sample: Callable[[float], None] | None = None,
) -> LoadResult:
    """`clients` closed-loop clients share `total` requests; stops early after `max_seconds`.

    `plan(n)` gives request n (default: the astronaut, alternating ENDPOINTS); `first` is the
    number of the first request; `on_sample` gets the summed PSS (MiB) every half second."""
    if plan is None:
        photo = portrait_photo().jpeg

        def plan(n: int) -> tuple[str, dict[str, str], tuple[str, bytes, str]]:
            path, fields = ENDPOINTS[n % len(ENDPOINTS)]
            return path, fields, ("me.jpg", photo, "image/jpeg")

    result = LoadResult(pss_before_mib=server.tree_pss_kib() / 1024)
    lock = threading.Lock()
    issued = iter(range(first, first + total))
    deadline = time.monotonic() + max_seconds

    def client() -> None:
        session = requests.Session()
        while time.monotonic() < deadline:
            with lock:
                n = next(issued, None)
            if n is None:
                return
            path, fields, upload = plan(n)
            started = time.perf_counter()
            try:
                response = session.post(server.url + path, files={"image": upload}, data=fields, timeout=120)
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
        while thread.is_alive() and time.monotonic() < deadline + 180:
            thread.join(timeout=0.5)
            if on_sample is not None:
                try:
                    on_sample(server.tree_pss_kib() / 1024)
                except OSError:  # a worker exiting between the listing and the read
                    pass
    result.seconds = time.monotonic() - started
    time.sleep(0.5)
    result.pss_after_mib = server.tree_pss_kib() / 1024
    return result


@dataclass
class SoakRow:
    requests: int
    pss_rest_mib: float
    pss_load_max_mib: float
    statuses: Counter[str]
    p50: float
    p99: float


@dataclass
class SoakResult:
    rows: list[SoakRow] = field(default_factory=list)
    pss_start_mib: float = 0.0  # at rest after warm-up, before any request

    @property
    def statuses(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for row in self.rows:
            total.update(row.statuses)
        return total

    @property
    def server_errors(self) -> int:
        return sum(count for status, count in self.statuses.items() if not status.isdigit() or status.startswith("5"))

    @property
    def rest_growth(self) -> float:
        """Growth of PSS at rest from the first checkpoint to the last."""
        if len(self.rows) < 2:
            return 0.0
        return self.rows[-1].pss_rest_mib / self.rows[0].pss_rest_mib - 1.0

    def table(self) -> str:
        lines = [
            f"at rest before the first request: {self.pss_start_mib:.0f} MiB",
            "| requests | PSS at rest (MiB) | PSS under load, max (MiB) | statuses | p50 (s) | p99 (s) |",
            "| ---: | ---: | ---: | --- | ---: | ---: |",
        ]
        for row in self.rows:
            statuses = ", ".join(f"{s}: {n}" for s, n in sorted(row.statuses.items()))
            lines.append(f"| {row.requests} | {row.pss_rest_mib:.0f} | {row.pss_load_max_mib:.0f} | {statuses} | {row.p50:.2f} | {row.p99:.2f} |")
        lines.append(f"growth at rest from {self.rows[0].requests if self.rows else 0} requests to the end: "
                     f"{self.rest_growth * 100:+.1f}%; 5xx or failed: {self.server_errors}")
        return "\n".join(lines)


def run_soak(server: Server, *, clients: int, total: int, every: int, max_seconds: float,
             rest_wait: float = RELEASE_WAIT_S, progress: Callable[[SoakRow], None] | None = None) -> SoakResult:
    """`total` varied requests in batches of `every`, PSS read at rest after each batch."""
    plan = soak_plan()
    time.sleep(rest_wait)
    result = SoakResult(pss_start_mib=server.tree_pss_kib() / 1024)
    deadline = time.monotonic() + max_seconds
    done = 0
    while done < total and time.monotonic() < deadline:
        batch = min(every, total - done)
        samples: list[float] = []
        load = run_load(server, clients=clients, total=batch, max_seconds=max(1.0, deadline - time.monotonic()),
                        plan=plan, first=done, on_sample=samples.append)
        done += load.total
        time.sleep(rest_wait)  # the idle release
        row = SoakRow(done, server.tree_pss_kib() / 1024, max(samples, default=load.pss_after_mib), load.statuses,
                      load.percentile(50), load.percentile(99))
        result.rows.append(row)
        if progress is not None:
            progress(row)
        if load.total < batch:
            break
    return result
