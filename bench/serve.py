"""Start-up, latency, memory and shutdown of the real server, as a user runs it.

    .venv/bin/python -m bench.serve [--model u2net] [--workers 1 4] [--requests 20]

For each worker count: run ./start.sh (venv and models already in place) on a free loopback port,
time it to /readyz 200, send one request and then --requests more (one at a time), then have every
worker serve a few concurrent requests, read the summed PSS of the process tree, and time a SIGTERM
shutdown. Prints a table. (bench.suite measures the same, and more, for docs/BENCHMARKS.md.)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from .common import WORK, portrait_photo, summary
from .harness import ROOT, Call, Server, must, sequential, serve_every_worker
from .report import table


def run(model: str, workers: int, requests_after: int, log_dir: Path) -> list[str]:
    call = Call("remove-background", "/api/v1/remove-background", "image", portrait_photo().jpeg)
    env = {"WORKERS": str(workers), "MODELS": f"{model},centerface", "SEGMENTATION_MODEL": model}
    with Server(env, log_dir / f"serve-{model}-{workers}.log", [str(ROOT / "start.sh")], f"serve-{workers}") as server:
        ready = server.wait_started(timeout=600)["ready_s"]
        first = must(call.send(server.url), "first request").seconds
        steady = summary([reply.seconds for reply in sequential(server, call, requests_after)])
        serve_every_worker(server, call, workers=workers, per_worker=3, max_waves=12)
        time.sleep(0.5)
        pss_mib = server.tree_pss_kib() / 1024
        shutdown = server.stop()
    return [str(workers), f"{ready:.2f}", f"{first:.3f}", f"{steady['p50']:.3f}", f"{steady['p90']:.3f}", f"{first / steady['p50']:.2f}",
            f"{pss_mib:.0f}", f"{shutdown:.2f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="u2net")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--logs", type=Path, default=WORK)
    args = parser.parse_args()
    rows = [run(args.model, workers, args.requests, args.logs) for workers in args.workers]
    print(f"model {args.model}, photo 512x512 astronaut JPEG, {args.requests} sequential requests after the first")  # noqa: T201
    print(table(["workers", "start.sh->ready s", "first s", f"median of next {args.requests} s", "p90 s", "cold penalty",  # noqa: T201
                 "tree PSS MiB", "SIGTERM s"], rows))


if __name__ == "__main__":
    main()
