"""Start-up, latency, memory and shutdown of the real server, as a user runs it.

    .venv/bin/python -m bench.serve [--model u2net] [--workers 1 4] [--requests 20]

For each worker count: run ./start.sh (venv and models already in place) on a free loopback port,
time it to /readyz 200, send one request and then --requests more (one at a time), then load every
worker, read the summed PSS of the process tree, and time a SIGTERM shutdown. Prints a table.
"""

from __future__ import annotations

import argparse
import io
import statistics
import threading
import time
from pathlib import Path

import numpy as np
import requests
from PIL import Image

from .harness import ROOT, Server


def photo_jpeg() -> bytes:
    """scikit-image's astronaut (512x512 real portrait) as a JPEG."""
    from skimage import data

    buffer = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buffer, "JPEG", quality=92)
    return buffer.getvalue()


def timed_post(server: Server, photo: bytes) -> float:
    started = time.perf_counter()
    response = requests.post(server.url + "/api/v1/remove-background", files={"image": ("p.jpg", photo, "image/jpeg")}, timeout=300)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"request failed: {response.status_code} {response.text[:200]}")
    return elapsed


def load_every_worker(server: Server, photo: bytes, *, workers: int, rounds: int) -> None:
    """`rounds` waves of `workers` concurrent requests, so each worker serves some (and its arena grows)."""
    for _ in range(rounds):
        threads = [threading.Thread(target=timed_post, args=(server, photo)) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)


def run(model: str, workers: int, requests_after: int, log_dir: Path) -> dict[str, float]:
    photo = photo_jpeg()
    server = Server(
        env={"WORKERS": str(workers), "MODELS": f"{model},centerface", "SEGMENTATION_MODEL": model},
        log_path=log_dir / f"serve-{model}-{workers}.log",
        command=(str(ROOT / "start.sh"),),
    ).start()
    try:
        ready = server.wait_ready(timeout=600)
        first = timed_post(server, photo)
        steady = [timed_post(server, photo) for _ in range(requests_after)]
        load_every_worker(server, photo, workers=workers, rounds=3)
        time.sleep(0.5)
        pss_mib = server.tree_pss_kib() / 1024
    finally:
        shutdown = server.stop(timeout=60)
    median = statistics.median(steady)
    return {
        "workers": workers,
        "ready_s": ready,
        "first_s": first,
        "median_s": median,
        "p90_s": float(np.percentile(steady, 90)),
        "cold_penalty": first / median,
        "pss_mib": pss_mib,
        "shutdown_s": shutdown,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="u2net")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--logs", type=Path, default=Path("/tmp/pilotlight-bench"))
    args = parser.parse_args()
    args.logs.mkdir(parents=True, exist_ok=True)
    rows = [run(args.model, workers, args.requests, args.logs) for workers in args.workers]
    print(f"model {args.model}, photo 512x512 astronaut JPEG, {args.requests} sequential requests after the first")  # noqa: T201
    header = ("workers", "start.sh->ready s", "first s", f"median of next {args.requests} s", "p90 s", "cold penalty", "tree PSS MiB", "SIGTERM s")
    print("| " + " | ".join(header) + " |")  # noqa: T201
    print("|" + "---|" * len(header))  # noqa: T201
    for row in rows:
        print(  # noqa: T201
            f"| {row['workers']} | {row['ready_s']:.2f} | {row['first_s']:.3f} | {row['median_s']:.3f} | "
            f"{row['p90_s']:.3f} | {row['cold_penalty']:.2f} | {row['pss_mib']:.0f} | {row['shutdown_s']:.2f} |"
        )


if __name__ == "__main__":
    main()
