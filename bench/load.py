"""Load the real server with concurrent clients uploading real photos (loopback only, bounded).

    .venv/bin/python -m bench.load [--clients 6] [--requests 2000] [--workers 2] [--model u2net]
    .venv/bin/python -m bench.load --soak [--clients 3] [--requests 2000] [--every 250]

Starts gunicorn with gunicorn.conf.py on a free loopback port, sends --requests requests from
--clients closed-loop clients (more clients than workers: the queue fills), alternating the ID photo
and the background-removal endpoints on scikit-image's astronaut, and prints: requests by status,
latency p50/p99/max, how many 503s carried Retry-After, and the summed PSS of the process tree
after warm-up and after the run. It stops by itself after --max-seconds.

`--soak` cycles over varied photos (scikit-image's astronaut at 256 to 2048 px as JPEG, PNG and
WebP, insightface's six-face t1.jpg when installed, generated 12 and 20 megapixel photos) and
over cut-outs, ID photos of several specs and print sheets, with no more clients than the
workers' slots (no 503 expected). Every --every requests it stops sending, waits
RELEASE_MEMORY_IDLE_S + 2 s (the idle release) and reads the summed PSS at rest; it also samples
PSS under load. It prints the table docs/BENCHMARKS.md shows and the growth at rest from the
first checkpoint to the last (the target: under 10 %, and no 5xx).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tests.support.harness import Server
from tests.support.load import run_load, run_soak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=None, help="default 6, with --soak 3 (no 503 expected)")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--model", default="u2net")
    parser.add_argument("--queue-depth", type=int, default=None)
    parser.add_argument("--max-seconds", type=float, default=3600)
    parser.add_argument("--soak", action="store_true", help="varied photos and endpoints, PSS at rest every --every requests")
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--json", type=Path, default=None, help="--soak: write the table's figures here (bench.report reads it)")
    parser.add_argument("--log", type=Path, default=Path("/tmp/pilotlight-load.log"))
    args = parser.parse_args()
    if args.clients is None:
        args.clients = 3 if args.soak else 6
    env = {"WORKERS": str(args.workers), "MODELS": f"{args.model},centerface", "SEGMENTATION_MODEL": args.model}
    if args.queue_depth is not None:
        env["QUEUE_DEPTH"] = str(args.queue_depth)
    server = Server(env=env, log_path=args.log).start()
    try:
        server.wait_ready(timeout=600)
        if args.soak:
            print(f"soak: model {args.model}, {args.workers} workers, {args.clients} clients, "  # noqa: T201
                  f"{args.requests} requests, PSS at rest every {args.every}", flush=True)
            soak = run_soak(server, clients=args.clients, total=args.requests, every=args.every, max_seconds=args.max_seconds,
                            progress=lambda row: print(f"  {row.requests} requests: at rest {row.pss_rest_mib:.0f} MiB, "  # noqa: T201
                                                       f"under load max {row.pss_load_max_mib:.0f} MiB", flush=True))
        else:
            result = run_load(server, clients=args.clients, total=args.requests, max_seconds=args.max_seconds)
    finally:
        server.stop(timeout=60)
    if args.soak:
        print(soak.table())  # noqa: T201
        if args.json is not None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({
                "model": args.model, "workers": args.workers, "clients": args.clients, "requests": args.requests,
                "every": args.every, "pss_start_mib": soak.pss_start_mib, "rest_growth": soak.rest_growth,
                "server_errors": soak.server_errors,
                "rows": [{"requests": r.requests, "pss_rest_mib": r.pss_rest_mib, "pss_load_max_mib": r.pss_load_max_mib,
                          "statuses": dict(r.statuses), "p50_s": r.p50, "p99_s": r.p99} for r in soak.rows],
            }, indent=1) + "\n")
        return
    print(f"model {args.model}, {args.workers} workers, {args.clients} clients")  # noqa: T201
    print(result.summary())  # noqa: T201


if __name__ == "__main__":
    main()
