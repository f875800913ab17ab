"""Slow and hostile clients against the real server, next to a good client (loopback only, bounded).

    .venv/bin/python -m bench.slowloris [--seconds 30] [--connections 24] [--scenario NAME ...]
    .venv/bin/python -m bench.slowloris --url http://127.0.0.1:PORT --check   # a running server (CI's container)

Starts the server as start.sh does (nginx in front of gunicorn, 2 workers, u2netp) on a free port
and runs each scenario of tests/support/hostile.py for --seconds. It prints, per scenario, the good
requests answered / sent and their p50 / p99 / max latency, plus what the hostile side saw.
`--memory N` also prints the server's PSS (nginx included) with 0 and with N idle connections open;
`--reader-memory N` the memory the answers cost while N slow readers hold them (nginx keeps 2 MiB of
each in memory and the rest in a temporary file under /tmp, which is reported apart: on a tmpfs it
is memory too).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tests.support.harness import Server
from tests.support.hostile import HOSTILE, SCENARIOS, big_photo, cutout_request, idle_memory, reader_memory, run_scenario
from tests.support.photos import portrait_photo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--connections", type=int, default=24)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scenario", action="append", choices=SCENARIOS)
    parser.add_argument("--memory", type=int, default=0, help="also measure PSS with this many idle connections")
    parser.add_argument("--reader-memory", type=int, default=0, help="also measure the memory of this many slow readers' answers")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    parser.add_argument("--log", type=Path, default=Path("/tmp/pilotlight-slowloris.log"))
    parser.add_argument("--label", default="nginx front", help="the column these figures go to in --json")
    parser.add_argument("--json", type=Path, default=None, help="merge the figures into this file (bench.report reads it)")
    parser.add_argument("--url", default=None, help="attack this running server (http://127.0.0.1:PORT, e.g. a container) "
                                                    "instead of starting one; scenarios only")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every good request of every scenario got 200")
    args = parser.parse_args()
    if args.url is not None:
        raise SystemExit(attack_running(args.url, scenarios=args.scenario or list(SCENARIOS[1:]),
                                        connections=args.connections, seconds=args.seconds, check=args.check))
    env = {"WORKERS": str(args.workers), "MODELS": "u2netp,centerface", "SEGMENTATION_MODEL": "u2netp", "WARMUP_REQUESTS": "1"}
    env.update(item.split("=", 1) for item in args.env)
    photo = portrait_photo().jpeg
    print(f"{args.workers} workers; {args.connections} hostile connections from {HOSTILE}; "  # noqa: T201
          f"{args.seconds:g} s per scenario; good client timeout 10 s")
    for kind in args.scenario or ([] if args.memory or args.reader_memory else SCENARIOS):  # memory alone: only that figure
        server = Server(env=env, log_path=args.log).start()
        try:
            server.wait_ready(timeout=180)
            good, attack = run_scenario(server, kind, connections=args.connections, seconds=args.seconds, photo=photo)
        finally:
            server.stop(timeout=60)
        hostile = ", ".join(f"{answer}: {n}" for answer, n in attack.answers.most_common(3)) or "none"
        print(f"{kind:15s} {good.summary()}", flush=True)  # noqa: T201
        print(f"{'':15s} hostile: {attack.opened} opened, {attack.closed} closed by the server ({hostile})", flush=True)  # noqa: T201
        record(args.json, args.label, f"{kind} x{args.connections if kind not in ('none', 'flood') else ''}".rstrip(" x"), {
            "sent": good.sent, "answered": good.answered, "ok": good.ok, "p50_s": good.percentile(50),
            "p99_s": good.percentile(99), "max_s": max(good.latencies, default=0.0), "statuses": dict(good.statuses),
            "hostile_opened": attack.opened, "hostile_closed": attack.closed, "seconds": args.seconds,
            "env": env,
        })
    if args.memory:
        server = Server(env=env, log_path=args.log).start()
        try:
            server.wait_ready(timeout=180)
            before, after = idle_memory(server, args.memory)
        finally:
            server.stop(timeout=60)
        print(f"memory: PSS {before:.1f} MiB, with {args.memory} idle connections {after:.1f} MiB "  # noqa: T201
              f"({(after - before) * 1024 / args.memory:.1f} KiB per connection)")
        record(args.json, args.label, "memory", {"connections": args.memory, "pss_before_mib": before, "pss_after_mib": after,
                                                 "kib_per_connection": (after - before) * 1024 / args.memory})
    if args.reader_memory:
        request = cutout_request(big_photo())
        server = Server(env={**env, "RELEASE_MEMORY": "off", "SEND_TIMEOUT": "600"}, log_path=args.log).start()
        try:
            server.wait_ready(timeout=180)
            held, holding, gone, spooled = reader_memory(server, args.reader_memory, request)
        finally:
            server.stop(timeout=60)
        per = (holding - gone) / max(held, 1)
        print(f"slow readers' answers: PSS {holding:.1f} MiB with {held} held, {gone:.1f} MiB once gone "  # noqa: T201
              f"({per:.1f} MiB per held answer, a cut-out of about 8 MB); nginx's temporary files meanwhile "
              f"{spooled:.1f} MiB")
        record(args.json, args.label, "reader memory", {"held": held, "pss_holding_mib": holding, "pss_gone_mib": gone,
                                                        "mib_per_answer": per, "temp_files_mib": spooled})


def attack_running(url: str, *, scenarios: list[str], connections: int, seconds: float, check: bool) -> int:
    """Each scenario against the server at `url` (loopback), beside the good client; prints one line
    each; with `check`, 1 unless every good request got 200 and the hostile connections were open
    beside it. The hostile clients connect from 127.0.0.1 too: a container's published port takes
    connections on that address only, and shows every client to the server as one address (the
    container network's gateway), so its MAX_CONNECTIONS_PER_IP and RATE_LIMIT must leave room for
    them."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    server = Server(port=port)  # not started here: only its address is used
    photo = portrait_photo().jpeg
    failed = 0
    for kind in scenarios:
        count = SLOW_CLIENT_COUNTS.get(kind, connections)
        good, attack = run_scenario(server, kind, connections=count, seconds=seconds, photo=photo, source="127.0.0.1")
        print(f"{kind:15s} x{count}: {good.summary()}; hostile: {attack.opened} opened, {attack.closed} closed by the server, "  # noqa: T201
              f"{attack.errors} errors", flush=True)
        failed += good.ok != good.sent or good.sent < 3 or attack.opened < min(count, 12)
    return 1 if check and failed else 0


# The slow-client proof: connections of each kind beside a good client.
SLOW_CLIENT_COUNTS = {"slow_headers": 64, "slow_body": 16, "slow_reader": 12}


def record(path: Path | None, label: str, key: str, figures: dict[str, object]) -> None:
    """Merge one scenario's figures into the JSON file `path` (nothing when None)."""
    if path is None:
        return
    data = json.loads(path.read_text()) if path.is_file() else {}
    data.setdefault(label, {})[key] = figures
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
