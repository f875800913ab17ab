"""Lanes side by side with `rembg s` in one run (issue 15): a lone request, two clients, memory.

    .venv/bin/python -m bench.lanes                 # ~10 min on 2 cores; prints the table, writes
                                                    # bench/results/lanes.json and docs/BENCHMARKS.md (bench.report)
    .venv/bin/python -m bench.lanes --quick         # fewer requests; writes under $BENCH_WORK only

Three servers, each started as a user starts it, fresh, on the same u2net file and photos
(tests/support/photos.py): `rembg s --no-ui` (one process, onnxruntime's default threads), pilotlight with 2
workers and its default LONE_REQUEST_THREADS (every usable core), and pilotlight with
LONE_REQUEST_THREADS=1 (one thread per inference: the behaviour before lanes). For each: time to
ready, the first request and the steady median of a lone client (cut-out, and for pilotlight an ID
photo too), throughput with 2 clients, summed PSS after the traffic and each worker's private
memory. Ratios are taken within this one run, because machines differ (FACTS.md).
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

from tests.support.harness import Call, Server, closed_loop, must, sequential
from tests.support.photos import cutout_photo, portrait_photo

from . import peer
from .common import MODEL, RESULTS, ROOT, WORK, say, write_json
from .report import render_lanes, write

REST_S = 2.0 + 2.0  # RELEASE_MEMORY_IDLE_S's default, plus the watchdog's periods


def pilotlight(name: str, log_dir: Path, **env: str) -> Server:
    settings = {"PILOTLIGHT_NO_SETUP": "1", "WORKERS": "2", "MODELS": f"{MODEL},centerface", "SEGMENTATION_MODEL": MODEL,
                "ORT_PROVIDERS": "cpu", "LOG_LEVEL": "info", "RATE_LIMIT": "0", "GET_RATE_LIMIT": "0",
                "MAX_POSTS_PER_CLIENT": "0", **env}  # one loopback client: suite.py says why
    return Server(settings, log_dir / f"{name}.log", [str(ROOT / "start.sh")], name)


def measure(server: Server, cut: Call, idphoto: Call | None, *, steady: int, loop: int) -> dict:
    with server:
        times = server.wait_started(ready_path="/readyz" if server.kind == "pilotlight" else None)
        first = must(cut.send(server.url), f"{server.name} first")
        lone = sequential(server, cut, steady)
        result: dict = {**times, "first_s": first.seconds, "steady_s": statistics.median([r.seconds for r in lone])}
        result["cold_penalty"] = result["first_s"] / result["steady_s"]
        if idphoto is not None:
            first_id = must(idphoto.send(server.url), f"{server.name} first ID photo")
            lone_id = sequential(server, idphoto, steady)
            result.update(idphoto_first_s=first_id.seconds, idphoto_steady_s=statistics.median([r.seconds for r in lone_id]))
            result["idphoto_cold_penalty"] = result["idphoto_first_s"] / result["idphoto_steady_s"]
        result["two_clients"] = closed_loop(server, cut, clients=2, total=loop, max_seconds=600)
        time.sleep(0.5)
        after_burst = must(cut.send(server.url), f"{server.name} lone after the burst")
        result["lone_after_burst_s"] = after_burst.seconds
        result["memory_busy"] = server.memory()
        time.sleep(REST_S)  # idle workers give their working memory back (RELEASE_MEMORY_IDLE_S + watchdog)
        result["memory"] = server.memory()
        if server.kind == "pilotlight":
            result["lanes"] = _lanes(server.url)
        result["shutdown_s"] = server.stop()
    return result


def _lanes(url: str) -> dict[str, float]:
    import requests

    text = requests.get(url + "/metrics", timeout=10).text
    return {lane: float(value) for lane, value in re.findall(r'pilotlight_inference_lane_total\{lane="(\w+)"\} (\S+)', text)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer requests; results under $BENCH_WORK only")
    args = parser.parse_args()
    steady, loop = (4, 8) if args.quick else (15, 40)
    log_dir = WORK / "lanes"
    cut, portrait = cutout_photo(), portrait_photo()
    ours_cut = Call("remove-background", "/api/v1/remove-background", "image", cut.jpeg)
    ours_id = Call("idphoto", "/api/v1/idphoto", "image", portrait.jpeg, {"spec": "us-passport"})
    rembg = peer.ensure_venv()
    results: dict[str, dict] = {}
    say("[lanes] rembg s")
    results["rembg s"] = measure(Server(peer.env(), log_dir / "rembg.log", peer.command(rembg), "rembg-s", kind="rembg"),
                                 peer.call(cut.jpeg), None, steady=steady, loop=loop)
    say("[lanes] pilotlight")
    results["pilotlight"] = measure(pilotlight("pilotlight", log_dir), ours_cut, ours_id, steady=steady, loop=loop)
    say("[lanes] pilotlight, LONE_REQUEST_THREADS=1")
    results["pilotlight, LONE_REQUEST_THREADS=1"] = measure(
        pilotlight("pilotlight-narrow", log_dir, LONE_REQUEST_THREADS="1"), ours_cut, ours_id, steady=steady, loop=loop)
    text = render_lanes({"results": results})
    print(text)  # noqa: T201
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    target = (log_dir if args.quick else RESULTS) / "lanes.json"
    write_json(target, {"when": when, "quick": args.quick, "photo": cut.name, "results": results})
    if not args.quick:
        write(RESULTS / "cpu.json")  # docs/BENCHMARKS.md with this section


if __name__ == "__main__":
    main()
