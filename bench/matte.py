"""The portrait matte (MODNet) against u2net: quality against a known answer, and speed against rembg s.

    .venv/bin/python -m bench.matte quality [--idphoto] [--json OUT]
    .venv/bin/python -m bench.matte servers [--starts N] [--workers W ...] [--quick] [--json OUT]
    .venv/bin/python -m bench.matte warmup [--passes N ...] [--skip STEP ...] [--starts N] [--quick] [--json OUT]
    .venv/bin/python -m bench.matte allocator [--json OUT]

quality   Portraits on a plain backdrop, their person read from the backdrop's colour and pasted on
          busy photos (tests/support/composites.py): per model, the median and worst IoU of the
          mask (alpha >= 128) and the mean absolute alpha error, both outside a band around the
          outline. Then the colours under soft edges: on MODNet's cut-outs of the composites, the
          mean distance of the edge band's colour (0.1 < alpha < 0.9) from the busy photo behind
          it, as photographed and after the foreground estimate (larger: less of the old
          background left). With --idphoto, every corpus portrait through the ICAO ID photo with
          each matte, judged by the independent inspector.
servers   pilotlight with its default models started fresh --starts times with 2 workers and as
          many with 4 (as a user starts it), rembg s (u2net) idle beside it: on every start, time
          to ready against the bare u2net forward pass (one thread, measured in the same run) and
          each kind's cold penalty on each lane (below); on the last 2-worker start, lone requests
          sent to both servers in turn (a cut-out of a real portrait with model=modnet and with
          model=u2net, an ID photo of it, rembg s's cut-out), then two clients of each cut-out. Then 2
          workers again with one memory keeper (KEEP_MEMORY_WORKERS=1, the default until issue
          35): the narrow lanes' penalty with the second worker's buffers given back.
warmup    WARMUP_REQUESTS 0, 1 and 2, and the default with each warm-up step it runs left out in
          turn and each it leaves out put back (WARMUP_SKIP), each on --starts fresh servers with
          the default models (2 workers): time to ready, each warm-up step and its cost (/readyz),
          and each kind's cold penalty per lane.
allocator glibc's malloc settings (app/native_threads.py) against the former ones (a 4 MiB mmap
          threshold, two arenas), 2 workers with RELEASE_MEMORY=off: per kind, the page faults of
          a worker's first request and of the three after it, and their median time; then the
          workers' private memory after a burst of the three kinds from six clients.

The cold penalty of a kind of request, on a server that has served none of that kind: on the wide
lane, the first lone request against the median of the lone ones after it; on the narrow lanes,
the first pair sent together against the median of the pairs after it. One start gives one reading
of each, as noisy as one request, so every figure is the median over the starts, with the lowest
and highest beside it.

Figures depend on the machine: compare the ratios printed in one run.
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

from .common import WORK, model_home, outcome_lines, say, write_json
from tests.support import composites
from tests.support.harness import ROOT, Server

MODELS = ("modnet", "u2net")
DEFAULTS = {"MODELS": "u2net,modnet,centerface,landmarks68", "SEGMENTATION_MODEL": "u2net"}  # app/config.py's defaults
PORTRAIT = "obama"  # the corpus portrait the servers are timed on (1137x910 px, one person, busy backdrop)


PRINTED: list[str] = []  # what this command printed: saved as bench/results/matte-<command>.md


def out(line: str = "") -> None:
    PRINTED.append(line)
    print(line, flush=True)  # noqa: T201


def save(command: str, *, quick: bool = False) -> None:
    """What the command printed, into bench/results/matte-<command>.md and docs/BENCHMARKS.md (a
    --quick run's figures stay in $BENCH_WORK)."""
    from .common import RESULTS
    from .report import write

    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = "\n".join([f"<!-- python -m bench.matte {command}, {when} -->", *PRINTED]) + "\n"
    target = (WORK if quick else RESULTS) / f"matte-{command}.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    if not quick:
        write(RESULTS / "cpu.json")


def _registry(names: tuple[str, ...]):  # noqa: ANN202
    from app.config import Settings
    from app.models.registry import Registry
    from app.models.sessions import resolve_providers

    home = model_home()
    registry = Registry()
    registry.load(names, model_home=home, providers=resolve_providers("cpu"), optimised_home=Settings(model_home=home).optimised_dir)
    return registry


def backdrop_dir() -> Path:
    import skimage.data

    return Path(skimage.data.__file__).parent


def portraits() -> dict:
    from tests.support import corpus
    from tests.support.judge import corpus_portraits

    corpus.fetch(None)
    return {p.name: p.rgb for p in corpus_portraits(corpus.default_dir())}


def edge_colour_distance(made: list, mattes: dict) -> dict[str, float]:
    """Mean distance (RGB units) of the edge band colours of `mattes` (composite name -> Matte) from
    the busy photo behind them: the photo's own pixels, and the estimated foreground
    (tests/support/composites.py: edge_distances)."""
    pairs = [composites.edge_distances(c, mattes[c.name].alpha, mattes[c.name].foreground, backdrop_dir()) for c in made]
    photographed, estimated = (round(float(np.mean(side)), 2) for side in zip(*pairs, strict=True))
    return {"photographed": photographed, "estimated": estimated}


def quality_main(args: argparse.Namespace) -> None:
    from app.models.sessions import WIDE, lane

    registry = _registry(("modnet", "u2net", "centerface"))
    photos = portraits()
    made = composites.build(photos, backdrop_dir())
    results: dict[str, object] = {}
    with lane(WIDE):
        for name in MODELS:
            matter = registry.segmenter(name)
            started = time.perf_counter()
            mattes = {c.name: matter.matte(c.rgb, max_side=2048) for c in made}
            results[name] = composites.figures(made, {key: matte.alpha for key, matte in mattes.items()})
            results[name]["seconds"] = round(time.perf_counter() - started, 1)
            if name == "modnet":
                results["edge_colours"] = edge_colour_distance(made, mattes)
    out(f"## The matte against a known answer ({len(made)} composites: {len(composites.PLAIN)} portraits on a plain "
        f"backdrop x {len(composites.BACKDROPS)} busy photos; a band of {composites.BAND_PX} px either side of the outline left out)")
    out()
    out("| model | median IoU | worst IoU (composite) | mean abs. alpha error | seconds, all composites |")
    out("|---|---|---|---|---|")
    for name in MODELS:
        f = results[name]
        out(f"| {name} | {f['median_iou']:.4f} | {f['worst_iou']:.4f} ({f['worst']}) | {f['mean_mae']:.4f} | {f['seconds']} |")
    out()
    edges = results["edge_colours"]
    out(f"Colours under MODNet's soft edges (0.1 < alpha < 0.9), mean distance from the busy photo behind them: "
        f"as photographed {edges['photographed']}, after the foreground estimate {edges['estimated']} (RGB units; larger: "
        "less of the old background left)")
    if args.idphoto:
        from app.config import Settings
        from tests.support.judge import corpus_portraits, idphoto_outcomes

        everyone = corpus_portraits()
        with lane(WIDE):
            outcomes = {name: idphoto_outcomes(registry, everyone, ("icao",), settings=Settings(), matte=name) for name in MODELS}
        results["idphoto"] = {name: {f"{k[0]}/{k[1]}": v for k, v in o.items()} for name, o in outcomes.items()}
        out()
        out(f"## ICAO ID photos of the corpus ({len(everyone)} portraits) with each matte, judged by the inspector")
        out()
        for line in outcome_lines(outcomes, label="matte", before="u2net", after="modnet"):
            out(line)
    if args.json:
        write_json(args.json, results)


BARE_U2NET = """
import statistics, time, numpy as np, onnxruntime as ort
o = ort.SessionOptions(); o.intra_op_num_threads = 1; o.inter_op_num_threads = 1
s = ort.InferenceSession(%r, o, providers=["CPUExecutionProvider"])
x = np.random.default_rng(0).random((1, 3, 320, 320), dtype=np.float32)
s.run(None, {"input.1": x}); times = []
for _ in range(5):
    t = time.perf_counter(); s.run(None, {"input.1": x}); times.append(time.perf_counter() - t)
print(statistics.median(times))
"""


def bare_u2net_seconds() -> float:
    """The bare u2net forward pass, one thread, in a fresh interpreter: the median of five."""
    code = BARE_U2NET % str(model_home() / "u2net.onnx")
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT).stdout)


def servers_main(args: argparse.Namespace) -> None:
    from . import peer
    from tests.support.harness import closed_loop, must

    steady, loop = (4, 8) if args.quick else (9, 24)
    photos = portraits()
    calls = server_calls(photos)
    jpeg = calls["cut-out, model=modnet"].photo
    results: dict[str, object] = {"bare_u2net_s": bare_u2net_seconds()}
    rembg = peer.ensure_venv()
    ours: dict[str, object] = {}
    say("[matte] rembg s, idle beside pilotlight until the lone requests")
    with Server(peer.env(), WORK / "matte-servers" / "rembg.log", peer.command(rembg), "rembg-s", kind="rembg") as peer_server:
        peer_server.wait_started(ready_path=None)  # rembg s has no readiness endpoint: its port answering
        peer_call = peer.call(jpeg)
        must(peer_call.send(peer_server.url), "rembg s first")

        def lone_and_two_clients(server: Server) -> None:  # on the last start, after its cold figures
            # lone requests to both servers in turn, so that the machine's drift falls on every kind alike
            rounds = [{kind: must(call.send(server.url), kind).seconds for kind, call in calls.items()}
                      | {"rembg s": must(peer_call.send(peer_server.url), "rembg s").seconds} for _ in range(steady)]
            for kind in [*calls, "rembg s"]:
                ours[kind] = statistics.median(row[kind] for row in rounds)
            results["rembg s"] = {"steady_s": ours.pop("rembg s"),
                                  "two_clients": closed_loop(peer_server, peer_call, clients=2, total=loop, max_seconds=600)}
            ours["two_clients"] = closed_loop(server, calls["cut-out, model=modnet"], clients=2, total=loop, max_seconds=600)

        # each worker count; then the first with one memory keeper (the default until issue 35): the
        # second worker of a pair has given its buffers back and grows them again
        configs = {f"{workers} workers": {"WORKERS": str(workers)} for workers in args.workers}
        configs[f"{args.workers[0]} workers, KEEP_MEMORY_WORKERS=1"] = {"WORKERS": str(args.workers[0]), "KEEP_MEMORY_WORKERS": "1"}
        for index, (label, env) in enumerate(configs.items()):
            ours[label] = cold_starts(f"servers-{index}", calls, starts=args.starts, quick=args.quick, env=env,
                                      then=lone_and_two_clients if index == 0 else None)
    results["pilotlight"] = ours
    peer_ = results["rembg s"]
    modnet, u2net, idphoto = (ours[k] for k in calls)
    first = ours[f"{args.workers[0]} workers"]
    out(f"## MODNet against rembg s (u2net), one run: {PORTRAIT} ({photos[PORTRAIT].shape[1]}x{photos[PORTRAIT].shape[0]} JPEG), "
        f"{args.workers[0]} workers; cold figures over {args.starts} fresh starts each: median [lowest, highest]")
    out()
    out("| figure | value | target |")
    out("|---|---|---|")
    out(f"| lone cut-out, model=modnet / rembg s | {modnet / peer_['steady_s']:.2f}x "
        f"({modnet:.3f} s / {peer_['steady_s']:.3f} s) | at most 0.6x |")
    rate = ours["two_clients"]["throughput_rps"] / peer_["two_clients"]["throughput_rps"]
    out(f"| 2 clients, model=modnet / rembg s (req/s) | {rate:.2f}x | at least 2x |")
    out(f"| lone ID photo / lone u2net cut-out | {idphoto / u2net:.2f}x ({idphoto:.3f} s / {u2net:.3f} s) | at most 1.0x |")
    ready = [run["ready_s"] / results["bare_u2net_s"] for run in first["runs"]]
    out(f"| time to ready / bare u2net forward pass | {spread(ready, 1)} passes "
        f"({statistics.median(run['ready_s'] for run in first['runs']):.2f} s / {results['bare_u2net_s']:.3f} s) | at most 8 |")
    for label in configs:
        runs = ours[label]["runs"]
        for kind in calls:
            out(f"| cold penalty, {label}, {kind}: wide lane; narrow lanes | {lanes_cell(runs, kind)} | at most 1.05 |")
    if args.json:
        write_json(args.json, results)


def spread(values: list[float], digits: int = 2) -> str:
    """A figure over several fresh starts: "median [lowest, highest]"."""
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}, {max(values):.{digits}f}]"


def lanes_cell(runs: list[dict], kind: str) -> str:
    """One kind's cold penalty over fresh starts (`cold_starts`' runs): "wide; narrow", each a `spread`."""
    return "; ".join(spread([run["kinds"][kind][lane] for run in runs]) for lane in ("wide", "narrow"))


def pair(server: object, call: object) -> float:
    """Two requests of one kind sent together (two workers, each on its narrow lane): the slower's seconds."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.support.harness import must

    with ThreadPoolExecutor(2) as pool:
        replies = list(pool.map(lambda _: must(call.send(server.url), f"pair {call.label}"), range(2)))
    return max(reply.seconds for reply in replies)


def cold_penalties(server: object, calls: dict, steady: int) -> dict[str, dict[str, float]]:
    """Per kind, on a server that has served nothing of that kind yet: the first lone request (the
    wide lane) against the median of the `steady` lone ones after it, and the first pair sent
    together (the narrow lanes; the second worker of a pair has been idle since its warm-up or its
    last pair, as after any quiet spell) against the median of the pairs after it."""
    from tests.support.harness import must, sequential

    figures: dict[str, dict[str, float]] = {}
    for kind, call in calls.items():
        first = must(call.send(server.url), f"first {kind}").seconds
        lone = statistics.median(r.seconds for r in sequential(server, call, steady))
        first_pair = pair(server, call)
        pairs = statistics.median(pair(server, call) for _ in range(max(2, steady // 2)))
        figures[kind] = {"first_s": first, "steady_s": lone, "wide": first / lone,
                         "first_pair_s": first_pair, "pair_s": pairs, "narrow": first_pair / pairs}
    return figures


def cold_starts(label: str, calls: dict, *, starts: int, quick: bool, env: dict[str, str],
                then: Callable[[Server], None] | None = None) -> dict[str, object]:
    """`starts` fresh servers with the default models and `env`, one after the other: for each,
    time to ready, its warm-up steps (/readyz, one worker's) and every kind's cold penalty on each
    lane (`cold_penalties`). `then(server)` runs on the last one, after its cold figures."""
    import requests

    from .lanes import pilotlight

    runs = []
    for start in range(starts):
        say(f"[matte] {label}: start {start + 1} of {starts}")
        with pilotlight(f"{label}-{start}", WORK / "matte-cold", **{**DEFAULTS, **env}) as server:
            started = server.wait_started(ready_path="/readyz")
            steps = requests.get(server.url + "/readyz", timeout=10).json()["worker"]["warmup_steps"]
            runs.append({**started, "steps": steps, "kinds": cold_penalties(server, calls, 2 if quick else 3)})
            if then is not None and start == starts - 1:
                then(server)
    return {"env": env, "runs": runs}


def warmup_main(args: argparse.Namespace) -> None:
    """WARMUP_REQUESTS 0, 1 and 2, and the default with each step changed (WARMUP_SKIP), each on
    several fresh servers with the default models: time to ready, each warm-up step's cost (/readyz:
    worker.warmup_steps), and each kind's cold penalty per lane."""
    from app.config import Settings

    calls = server_calls(portraits())
    bare = bare_u2net_seconds()
    default, skipped = Settings().warmup_requests, Settings().warmup_skip
    settings = {f"WARMUP_REQUESTS={passes}": {"WARMUP_REQUESTS": str(passes)} for passes in args.passes}
    for step in args.skip:  # a step the default runs is left out; one it leaves out is put back
        changed = [name for name in skipped if name != step] if step in skipped else [*skipped, step]
        label = f"WARMUP_REQUESTS={default}, {'with' if step in skipped else 'without'} {step}"
        settings[label] = {"WARMUP_REQUESTS": str(default), "WARMUP_SKIP": ",".join(changed) or "none"}
    table = {label: cold_starts(label.replace("=", "").replace(", without ", "-no-").replace(", with ", "-with-"), calls, starts=args.starts,
                                quick=args.quick, env={**env, "WORKERS": str(args.workers[0])})
             for label, env in settings.items()}
    out(f"## Warm-up: each step's cost (one worker, /readyz) and the cold penalty without it ({args.workers[0]} workers, "
        f"{args.starts} fresh starts per setting: median [lowest, highest])")
    out()
    out(f"The steps of the default (WARMUP_REQUESTS={default}, WARMUP_SKIP={','.join(skipped) or 'none'}), "
        "as one worker ran them on its last start:")
    out()
    out("| lane | step | seconds |")
    out("|---|---|---|")
    for step in table.get(f"WARMUP_REQUESTS={default}", next(iter(table.values())))["runs"][-1]["steps"]:
        out(f"| {step['lane']} | {step['step']} | {step['seconds']:.3f} |")
    out()
    out("| setting | ready, in bare u2net passes | " + " | ".join(f"{kind}: wide; narrow" for kind in calls) + " |")
    out("|---|---|" + "---|" * len(calls))
    for label, setting in table.items():
        runs = setting["runs"]
        cells = [lanes_cell(runs, kind) for kind in calls]
        out(f"| {label} | {spread([r['ready_s'] / bare for r in runs], 1)} | " + " | ".join(cells) + " |")
    out()
    out(f"A bare u2net forward pass (one thread) took {bare:.3f} s in this run. Steps (WARMUP_SKIP): requests, the "
        "warm-up requests of each pass; shapes, each model's own warm-up for the input shapes no request ran; wide, "
        f"every model once on its wide lane. The default leaves out {', '.join(skipped) or 'none'} "
        "(app/config.py: WARMUP_SKIP_DEFAULT): a step stays only where leaving it out raises a first request above 1.10x "
        "its steady median, here or in the cold matrix (bench.cold).")
    if args.json:
        write_json(args.json, {"bare_u2net_s": bare, **table})


# app/native_threads.py before issue 35's allocator change: glibc reads these at start, and they win there
FORMER_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(4 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(128 * 2**10), "MALLOC_ARENA_MAX": "2"}


def allocator_main(args: argparse.Namespace) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from .lanes import pilotlight
    from tests.support.harness import minor_faults, must, private_kib, smaps_rollup

    calls = server_calls(portraits())
    results: dict[str, dict] = {}
    for label, env in (("former (4 MiB mmap threshold, 2 arenas)", FORMER_MALLOC), ("now (app/native_threads.py)", {})):
        say(f"[matte] allocator: {label}")
        with pilotlight("allocator", WORK / "matte-allocator", **{**DEFAULTS, "WORKERS": "2", "RELEASE_MEMORY": "off", **env}) as server:
            server.wait_started(ready_path="/readyz")
            workers = server.workers()

            def faults() -> int:
                return sum(minor_faults(pid) for pid in workers)

            kinds = {}
            for kind, call in calls.items():
                rows = []
                for _ in range(4):
                    before = faults()
                    seconds = must(call.send(server.url), kind).seconds
                    rows.append((seconds, faults() - before))
                kinds[kind] = {"first_faults": rows[0][1], "faults": statistics.median(f for _, f in rows[1:]),
                               "seconds": statistics.median(s for s, _ in rows[1:])}
            burst = list(calls.values()) * 6  # each kind six times, from six clients at once
            with ThreadPoolExecutor(6) as pool:
                list(pool.map(lambda call: must(call.send(server.url), "burst"), burst))
            results[label] = {"kinds": kinds, "private_mib": [round(private_kib(smaps_rollup(pid)) / 1024) for pid in workers]}
    out("## glibc's malloc settings: page faults, time and memory (2 workers, RELEASE_MEMORY=off, one run)")
    out()
    out("| setting | kind | page faults, a worker's first request | page faults, the next three (median) | seconds (median of those) |")
    out("|---|---|---|---|---|")
    for label, result in results.items():
        for kind, f in result["kinds"].items():
            out(f"| {label} | {kind} | {f['first_faults']:,} | {f['faults']:,.0f} | {f['seconds']:.3f} |")
    out()
    for label, result in results.items():
        out(f"- {label}: each worker's private memory after a burst of 18 requests from 6 clients: "
            f"{', '.join(str(m) for m in result['private_mib'])} MiB")
    if args.json:
        write_json(args.json, results)


def server_calls(photos: dict) -> dict:
    """The kinds of request the servers are timed on, all of one real portrait (PORTRAIT) as JPEG."""
    from tests.support.harness import Call

    buffer = io.BytesIO()
    Image.fromarray(photos[PORTRAIT]).save(buffer, "JPEG", quality=92)
    jpeg = buffer.getvalue()
    return {
        "cut-out, model=modnet": Call("remove-background", "/api/v1/remove-background", "image", jpeg, {"model": "modnet"}),
        "cut-out, model=u2net": Call("remove-background", "/api/v1/remove-background", "image", jpeg, {"model": "u2net"}),
        "ID photo (us-passport)": Call("idphoto", "/api/v1/idphoto", "image", jpeg, {"spec": "us-passport"}),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.matte", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    quality = sub.add_parser("quality")
    quality.add_argument("--idphoto", action="store_true")
    servers = sub.add_parser("servers")
    warm = sub.add_parser("warmup")
    allocator = sub.add_parser("allocator")
    warm.add_argument("--passes", type=int, action="append", help="WARMUP_REQUESTS values (default: 0, 1, 2)")
    warm.add_argument("--skip", action="append", help="steps to leave out of the default, one at a time (default: each)")
    for command in (servers, warm):
        command.add_argument("--quick", action="store_true")
        command.add_argument("--starts", type=int, default=5, help="fresh starts per setting (default 5)")
        command.add_argument("--workers", type=int, action="append",
                             help="WORKERS for the cold figures (servers default: 2 and 4; warmup: 2); the first gives the rest")
    for command in (quality, servers, warm, allocator):
        command.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.command == "warmup" and not args.passes:
        args.passes = [0, 1, 2]
    if args.command == "warmup" and args.skip is None:
        from app.config import WARMUP_STEPS

        args.skip = list(WARMUP_STEPS)
    if args.command in ("servers", "warmup") and not args.workers:
        args.workers = [2, 4] if args.command == "servers" else [2]
    {"quality": quality_main, "servers": servers_main, "warmup": warmup_main, "allocator": allocator_main}[args.command](args)
    save(args.command, quick=getattr(args, "quick", False))


if __name__ == "__main__":
    main()
