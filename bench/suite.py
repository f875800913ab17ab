"""The benchmark suite: every figure in docs/BENCHMARKS.md, measured in one run.

    .venv/bin/python -m bench.suite            # everything (under 15 min on a quiet 2-core machine; the
                                               # report's header gives each run's own wall time); writes
                                               # bench/results/cpu.json, docs/BENCHMARKS.md, docs/benchmarks.png
    .venv/bin/python -m bench.suite --quick    # a smoke run (under 3 min): every section once, one server
                                               # of each kind; writes under $BENCH_WORK/quick/, never docs/
    .venv/bin/python -m bench.suite --sections memory,variants   # re-measure some sections; the others
                                               # are kept from the results file

Each server is started as a user starts it, on a free loopback port: pilotlight with
`PILOTLIGHT_NO_SETUP=1 ./start.sh` (the container image's entry point: gunicorn with
gunicorn.conf.py), rembg's own server with `rembg s --no-ui` from its own virtual environment
(bench/peer.py), both on the same u2net.onnx and the same photos (tests/support/photos.py). Start a run on a
quiet machine: every figure is wall-clock time on two shared cores; the report records the load
average around each section.

Sections, in order: pipeline (the in-process floor), preopt (load time and memory of the
pre-optimised models), compare (pilotlight preload, pilotlight lazy and rembg s side by side: start-up, cold
penalty, steady latency, memory, shutdown), throughput (1 and 2 workers, latency under load,
respawn), memory (1/2/4/8 workers, preload and lazy), variants (arena, memory release
at 1 and 4 workers), recycle (max_requests).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from app.config import Settings

from . import peer
from tests.support.harness import Call, Server, closed_loop, must, sequential, serve_every_worker, summary, wait_for
from tests.support.photos import cutout_photo, portrait_photo

from .common import DOCS, MODEL, RESULTS, ROOT, SECTIONS, WORK, median, model_home, say, write_json

@dataclass(frozen=True)
class Plan:
    """How much of everything: the full run and the --quick smoke run differ only here."""

    quick: bool
    starts: int  # fresh starts per server in `compare` (medians across them)
    steady: int  # sequential requests after the first, per start
    inproc_runs: int
    preopt_runs: int
    preopt_warmup: int
    preopt_loads: int
    throughput_requests: int  # per worker count, after a warm-in
    respawns: int
    worker_counts: tuple[int, ...]  # preload
    lazy_worker_counts: tuple[int, ...]  # lazy mode: enough to show what it does not share
    per_worker: int  # requests each worker must have answered before memory is read
    variant_workers: tuple[int, ...]
    recycle_after: int
    recycle_requests: int
    lazy: bool  # lazy mode beside preload in `compare` and `throughput`
    baselines: bool  # `recycle` also runs without recycling, for the cost of it

    @classmethod
    def make(cls, quick: bool) -> Plan:
        if quick:  # every code path once, in 3 minutes: one server of each kind that matters
            return cls(quick=True, starts=1, steady=3, inproc_runs=2, preopt_runs=1, preopt_warmup=1, preopt_loads=1,
                       throughput_requests=6, respawns=1, worker_counts=(1,), lazy_worker_counts=(), per_worker=1,
                       variant_workers=(), recycle_after=3, recycle_requests=6, lazy=False, baselines=False)
        # Repeats sized by the spread of the last full run (2026-12-01): steady latency p50 to p99
        # within 1 %, ready within 3 % across starts, so 10 steady requests and 3 starts are enough
        return cls(quick=False, starts=3, steady=10, inproc_runs=10, preopt_runs=3, preopt_warmup=2, preopt_loads=2,
                   throughput_requests=24, respawns=2, worker_counts=(1, 2, 4, 8), lazy_worker_counts=(1, 4), per_worker=2,
                   variant_workers=(1, 4), recycle_after=6, recycle_requests=24, lazy=True, baselines=True)


# -- the servers ----------------------------------------------------------------------------------


def pilotlight(name: str, *, workers: int, log_dir: Path, preload: bool = True, extra_env: dict[str, str] | None = None) -> Server:
    env = {
        "PILOTLIGHT_NO_SETUP": "1",
        "WORKERS": str(workers),
        "MODELS": f"{MODEL},centerface",
        "SEGMENTATION_MODEL": MODEL,
        "PRELOAD_MODELS": "true" if preload else "false",
        "LOG_LEVEL": "info",
        "ORT_PROVIDERS": os.environ.get("BENCH_ORT_PROVIDERS", "cpu"),
        # every bench client is one loopback address, and the respawn poll asks 20 times a second:
        # the per-client limits are a policy towards clients, not what these figures measure
        "RATE_LIMIT": "0",
        "GET_RATE_LIMIT": "0",
        "MAX_POSTS_PER_CLIENT": "0",
        **(extra_env or {}),
    }
    return Server(env, log_dir / f"{name}.log", [str(ROOT / "start.sh")], name)


def rembg_server(name: str, rembg: Path, log_dir: Path) -> Server:
    return Server(peer.env(), log_dir / f"{name}.log", peer.command(rembg), name, kind="rembg")


def calls() -> dict[str, Call]:
    cut, portrait = cutout_photo(), portrait_photo()
    return {
        "cutout": Call("remove-background", "/api/v1/remove-background", "image", cut.jpeg),
        "idphoto": Call("idphoto", "/api/v1/idphoto", "image", portrait.jpeg, {"spec": "us-passport"}),
        "peer": peer.call(cut.jpeg),
    }


# -- sections -------------------------------------------------------------------------------------


def run_inproc(args: list[str], env: dict[str, str] | None = None, timeout: float = 1200) -> dict:
    """python -m bench.inproc ARGS in a fresh interpreter; its one line of JSON."""
    full_env = {**os.environ, **(env or {})}
    completed = subprocess.run(  # noqa: S603
        [sys.executable, "-m", "bench.inproc", *args], cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=timeout,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"bench.inproc {' '.join(args)} failed ({completed.returncode}): {completed.stderr[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def section_pipeline(plan: Plan, ctx: Context) -> dict:
    return run_inproc(["pipeline", "--runs", str(plan.inproc_runs)])


def section_preopt(plan: Plan, ctx: Context) -> dict:
    return run_inproc(["preopt", "--runs", str(plan.preopt_runs), "--warmup", str(plan.preopt_warmup),
                       "--loads", str(plan.preopt_loads)])


def start_and_measure(server: Server, *, ready_path: str | None, first_call: Call, steady: int,
                      extra: Callable[[Server], dict] | None = None) -> dict:
    """One fresh start: time to the port and to ready, the first request, `steady` more, then
    `extra(server)` (memory...), then SIGTERM and the time the tree takes to go."""
    with server:
        times = server.wait_started(ready_path=ready_path)
        first = must(first_call.send(server.url), f"{server.name} first request")
        rest = sequential(server, first_call, steady)
        result: dict = {
            **times,
            "first_s": first.seconds,
            "first_stages": first.server_timing,
            "steady": summary([reply.seconds for reply in rest]),
            "steady_stages": {name: median(reply.server_timing.get(name, 0.0) for reply in rest) for name in (rest[0].server_timing if rest else {})},
            "readyz": server.readyz,
            "warm_lines": server.warm_lines(),
        }
        result["cold_penalty"] = result["first_s"] / result["steady"]["p50"] if rest else None
        if extra is not None:
            result.update(extra(server))
        result["shutdown_s"] = server.stop()
    return result


def section_compare(plan: Plan, ctx: Context) -> dict:
    """pilotlight preload, pilotlight lazy and rembg s, `plan.starts` fresh starts each, interleaved."""
    workers = 2
    c = ctx.calls
    out: dict = {"workers": workers, "starts": plan.starts, "steady": plan.steady, "preload": [], "lazy": [], "rembg": []}

    def ours_extra(server: Server) -> dict:
        extra = {}
        if server.env.get("PRELOAD_MODELS") == "true":
            first = must(c["idphoto"].send(server.url), "first ID photo")
            rest = sequential(server, c["idphoto"], plan.steady)
            extra["idphoto"] = {"first_s": first.seconds, "steady": summary([r.seconds for r in rest]),
                                "stages": {n: median(r.server_timing.get(n, 0.0) for r in rest) for n in (rest[0].server_timing if rest else {})}}
        extra["served"] = serve_every_worker(server, c["cutout"], workers=workers, per_worker=plan.per_worker, max_waves=4 * plan.per_worker + 4)
        extra["memory_busy"] = server.memory()
        time.sleep(IDLE_WAIT_S)
        extra["memory"] = server.memory()
        return extra

    def peer_extra(server: Server) -> dict:
        busy = server.memory()
        time.sleep(IDLE_WAIT_S)
        return {"memory_busy": busy, "memory": server.memory()}

    for index in range(plan.starts):
        say(f"[compare] start {index + 1}/{plan.starts}: pilotlight preload")
        out["preload"].append(start_and_measure(
            pilotlight(f"compare-preload-{index}", workers=workers, log_dir=ctx.logs), ready_path="/readyz",
            first_call=c["cutout"], steady=plan.steady, extra=ours_extra))
        if plan.lazy:
            say(f"[compare] start {index + 1}/{plan.starts}: pilotlight lazy")
            out["lazy"].append(start_and_measure(
                pilotlight(f"compare-lazy-{index}", workers=workers, preload=False, log_dir=ctx.logs), ready_path="/readyz",
                first_call=c["cutout"], steady=plan.steady, extra=ours_extra))
        if ctx.rembg is not None:
            say(f"[compare] start {index + 1}/{plan.starts}: rembg s")
            out["rembg"].append(start_and_measure(
                rembg_server(f"compare-rembg-{index}", ctx.rembg, ctx.logs), ready_path=None,
                first_call=c["peer"], steady=plan.steady, extra=peer_extra))
    return out


RESPAWN_POLL_S = 0.05  # while no worker is warm, nginx answers 503 unavailable at once: ask again this often


def respawn_once(server: Server, call: Call) -> dict:
    """SIGKILL the (only) worker and ask again every RESPAWN_POLL_S until a request is answered
    (nginx answers `503 unavailable` at once while no worker is warm): kill -> the first answer,
    the requests refused meanwhile, and the replacement's own warm-up."""
    victims = server.workers()
    if len(victims) != 1:
        raise RuntimeError(f"respawn needs exactly one worker, found {victims}")
    before = set(server.warm_lines())
    killed_at = time.perf_counter()
    os.kill(victims[0], signal.SIGKILL)
    refused = 0
    reply = call.send(server.url, timeout=300)
    while reply.status == 503 and time.perf_counter() - killed_at < 300:
        refused += 1
        time.sleep(RESPAWN_POLL_S)
        reply = call.send(server.url, timeout=300)
    must(reply, f"{server.name} request after SIGKILL")
    served = time.perf_counter() - killed_at
    warm = wait_for(lambda: {pid: s for pid, s in server.warm_lines().items() if pid not in before}, timeout=5.0) \
        if server.env.get("PRELOAD_MODELS") == "true" else {}
    return {"kill_to_served_s": served, "request_s": reply.seconds, "refused_meanwhile": refused,
            "replacement_warmup_s": next(iter(warm.values()), None) if warm else None}


def section_throughput(plan: Plan, ctx: Context) -> dict:
    """Closed-loop clients (2 per worker, so a worker never idles between requests) for 1 and 2
    workers, and rembg s with 4; the 1-worker servers then lose their worker to SIGKILL."""
    c = ctx.calls
    out: dict = {"requests": plan.throughput_requests, "runs": {}}
    runs = [("pilotlight 1 worker", 1, True), ("pilotlight 2 workers", 2, True)] + ([("pilotlight lazy 1 worker", 1, False)] if plan.lazy else [])
    for label, workers, preload in runs:
        say(f"[throughput] {label}")
        server = pilotlight(f"throughput-{'preload' if preload else 'lazy'}-{workers}", workers=workers, preload=preload, log_dir=ctx.logs)
        with server:
            server.wait_started()
            row: dict = {"workers": workers, "preload": preload}
            if preload:
                serve_every_worker(server, c["cutout"], workers=workers, per_worker=1, max_waves=6)  # warm-in
                row["load"] = closed_loop(server, c["cutout"], clients=2 * workers, total=plan.throughput_requests, max_seconds=900)
            else:
                must(c["cutout"].send(server.url), "lazy warm-in")
            if workers == 1:
                row["respawn"] = [respawn_once(server, c["cutout"]) for _ in range(plan.respawns)]
            row["shutdown_s"] = server.stop()
        out["runs"][label] = row
    if ctx.rembg is not None:
        say("[throughput] rembg s, 4 clients")
        server = rembg_server("throughput-rembg", ctx.rembg, ctx.logs)
        with server:
            server.wait_started(ready_path=None)
            sequential(server, c["peer"], 2)  # its first request loads the model
            row = {"workers": 1, "load": closed_loop(server, c["peer"], clients=4, total=plan.throughput_requests, max_seconds=900)}
            row["shutdown_s"] = server.stop()
        out["runs"]["rembg s"] = row
    return out


def memory_run(name: str, *, workers: int, preload: bool, plan: Plan, ctx: Context, steady: int = 0,
               extra_env: dict[str, str] | None = None) -> dict:
    c = ctx.calls
    server = pilotlight(name, workers=workers, preload=preload, log_dir=ctx.logs, extra_env=extra_env)
    with server:
        times = server.wait_started()
        row: dict = {"workers": workers, "preload": preload, **times}
        if steady:
            row["first_s"] = must(c["cutout"].send(server.url), f"{name} first request").seconds
            sequential(server, c["cutout"], 1)
            cpu_before = server.cpu()
            row["steady"] = summary([reply.seconds for reply in sequential(server, c["cutout"], steady)])
            cpu_after = server.cpu()
            # the workers' CPU time per request: less disturbed than wall time by other load on the machine
            row["cpu_per_request_s"] = sum(cpu_after.get(pid, 0.0) - cpu_before.get(pid, 0.0) for pid in cpu_before) / steady
            row["cold_penalty"] = row["first_s"] / row["steady"]["p50"]
        row["served"] = serve_every_worker(server, c["cutout"], workers=workers, per_worker=plan.per_worker, max_waves=4 * plan.per_worker + 4)
        row["memory_busy"] = server.memory()
        time.sleep(IDLE_WAIT_S)
        row["memory"] = server.memory()
        row["warm_lines"] = server.warm_lines()
        row["shutdown_s"] = server.stop()
    return row


def section_memory(plan: Plan, ctx: Context) -> dict:
    rows = []
    for preload in (True, False):
        for workers in plan.worker_counts if preload else plan.lazy_worker_counts:
            say(f"[memory] {'preload' if preload else 'lazy'}, {workers} worker(s)")
            rows.append(memory_run(f"memory-{'preload' if preload else 'lazy'}-{workers}", workers=workers, preload=preload, plan=plan,
                                   ctx=ctx, steady=plan.steady if workers == 1 else 0))
    return {"rows": rows, "per_worker": plan.per_worker}


UPSTREAM = {"ORT_CPU_ARENA": "session", "ORT_MEM_PATTERN": "true", "RELEASE_MEMORY": "off"}
# label, environment (each runs start.sh). "Arena per session, memory pattern off, nothing released"
# is gone: it measured what "shared arena, never released" measures (2.34x against 2.37x on 2026-12-01).
VARIANTS: tuple[tuple[str, dict[str, str]], ...] = (
    ("onnxruntime's defaults (arena per session, memory pattern on), nothing released", UPSTREAM),
    ("shared arena, never released", {"RELEASE_MEMORY": "off"}),
    ("one worker keeps its memory when idle (the default until issue 35)", {"KEEP_MEMORY_WORKERS": "1"}),
    ("no worker keeps its memory when idle", {"KEEP_MEMORY_WORKERS": "0"}),
    ("arena off, nothing released", {"ORT_CPU_ARENA": "off", "RELEASE_MEMORY": "off"}),
    ("arena off + malloc_trim after each request (the prototype)", {"ORT_CPU_ARENA": "off", "ORT_MEM_PATTERN": "true", "RELEASE_MEMORY": "request"}),
)
# memory is read twice: right after the last request, and once an idle worker has given its memory back
IDLE_WAIT_S = Settings.release_memory_idle_s + 2.0


def section_variants(plan: Plan, ctx: Context) -> dict:
    """Each variant at `plan.variant_workers` workers: steady latency (1 worker), memory after traffic."""
    rows = []
    for label, env in VARIANTS:
        if plan.quick and label != VARIANTS[0][0]:
            continue
        for workers in plan.variant_workers:
            say(f"[variants] {label}, {workers} worker(s)")
            try:
                row = memory_run(f"variant-{len(rows)}-{workers}", workers=workers, preload=True, plan=plan, ctx=ctx,
                                 steady=plan.steady if workers == 1 else 0, extra_env=env)
            except Exception as exc:  # noqa: BLE001  (one variant failing must not lose the others)
                say(f"[variants] {label} FAILED: {exc}")
                row = {"workers": workers, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            rows.append({"label": label, "env": env, **row})
    return {"rows": rows}


RECYCLED = "Autorestarting worker"


def section_recycle(plan: Plan, ctx: Context) -> dict:
    """2 workers recycled every `recycle_after` requests (MAX_REQUESTS, no jitter), sequential requests."""
    c = ctx.calls
    out: dict = {}
    runs: list[tuple[str, dict[str, str]]] = [("recycling", {"MAX_REQUESTS": str(plan.recycle_after)})]
    for label, env in runs + ([("no recycling", {})] if plan.baselines else []):
        say(f"[recycle] {label}")
        server = pilotlight(f"recycle-{'on' if env else 'off'}", workers=2, log_dir=ctx.logs, extra_env=env)
        with server:
            server.wait_started()
            before = set(server.warm_lines())
            replies = sequential(server, c["cutout"], plan.recycle_requests)
            # let the last replacements finish warming, so the shutdown below is not a shutdown
            # during a warm-up (a worker finishes its warm-up before it acts on SIGTERM)
            try:
                wait_for(lambda: all(pid in server.warm_lines() for pid in server.workers()), timeout=180, interval=0.2)
            except TimeoutError:
                pass
            log = server.log_text()
            replacements = {pid: s for pid, s in server.warm_lines().items() if pid not in before}
            out[label] = {
                "max_requests": int(env.get("MAX_REQUESTS", 0)),
                "requests": len(replies),
                "latency": summary([reply.seconds for reply in replies]),
                "total_s": sum(reply.seconds for reply in replies),
                "recycles": log.count(RECYCLED),
                "replacement_warmups_s": sorted(replacements.values()),
                "shutdown_s": server.stop(),
            }
    return out


# -- the run --------------------------------------------------------------------------------------


@dataclass
class Context:
    calls: dict[str, Call]
    logs: Path
    rembg: Path | None


RUNNERS: dict[str, Callable[[Plan, Context], dict]] = {
    "pipeline": section_pipeline,
    "preopt": section_preopt,
    "compare": section_compare,
    "throughput": section_throughput,
    "memory": section_memory,
    "variants": section_variants,
    "recycle": section_recycle,
}


def loadavg() -> list[float]:
    return [float(value) for value in Path("/proc/loadavg").read_text().split()[:3]]


def background_busy(seconds: float = 2.0) -> float:
    """Share of all CPUs busy over `seconds` while the suite itself runs nothing (between sections):
    other people's work on the machine, which the figures of the next section will share it with."""

    def sample() -> tuple[int, int]:
        fields = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields[:8]), idle

    total_a, idle_a = sample()
    time.sleep(seconds)
    total_b, idle_b = sample()
    total = total_b - total_a
    return 0.0 if total <= 0 else 1.0 - (idle_b - idle_a) / total


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), platform.processor())
    mem_kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal:"))
    versions = {}
    for package in ("onnxruntime", "onnxruntime-gpu", "rembg", "gunicorn", "flask", "numpy", "pillow"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return {
        "cpus": len(os.sched_getaffinity(0)),
        "cpu_model": cpu,
        "memory_gib": round(mem_kib / 2**20, 1),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "versions": versions,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a short smoke run; results and report under $BENCH_WORK/quick/")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated subset of: {', '.join(SECTIONS)}")
    parser.add_argument("--no-peer", action="store_true", help="leave rembg s out (no bench venv needed)")
    parser.add_argument("--results", type=Path, default=None, help="results JSON (default bench/results/cpu.json; quick: $BENCH_WORK/quick/cpu.json)")
    parser.add_argument("--no-report", action="store_true", help="measure only; do not (re)write the report")
    args = parser.parse_args(argv)
    sections = [name.strip() for name in args.sections.split(",") if name.strip()]
    unknown = [name for name in sections if name not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s): {', '.join(unknown)}")
    plan = Plan.make(args.quick)
    out_dir = WORK / "quick" if args.quick else DOCS
    results_path = args.results or (WORK / "quick" / "cpu.json" if args.quick else RESULTS / "cpu.json")

    model = model_home() / f"{MODEL}.onnx"
    if not model.is_file():
        raise SystemExit(f"{model} is missing: run ./start.sh once (or .venv/bin/python -m app.models fetch)")
    rembg = None if args.no_peer else peer.ensure_venv()
    ctx = Context(calls=calls(), logs=WORK / ("quick-logs" if args.quick else "logs"), rembg=rembg)
    ctx.logs.mkdir(parents=True, exist_ok=True)

    results: dict = {}
    if set(sections) != set(SECTIONS) and results_path.is_file():
        results = json.loads(results_path.read_text())  # re-measure some sections, keep the rest
    results.setdefault("sections", {})
    results["meta"] = {
        **results.get("meta", {}),
        "quick": plan.quick,
        "plan": plan.__dict__,
        "machine": machine(),
        "photos": {"cutout": cutout_photo().description, "cutout_size": f"{cutout_photo().width}x{cutout_photo().height}",
                   "portrait": portrait_photo().description},
        "model": f"{MODEL} ({model.stat().st_size:,} bytes)",
        "peer": None if rembg is None else {"command": " ".join(peer.command(rembg)), "venv": str(rembg.parent.parent)},
        "finished": None,
    }
    started = time.time()
    failures = 0
    for name in sections:
        say(f"== {name}")
        busy = background_busy()
        section_started = time.time()
        load_before = loadavg()
        try:
            data = RUNNERS[name](plan, ctx)
            error = None
        except Exception as exc:  # noqa: BLE001  (one failed section must not lose the others)
            failures += 1
            data = {}
            error = f"{type(exc).__name__}: {exc}"
            say(f"[{name}] FAILED: {error}\n{traceback.format_exc()}")
        results["sections"][name] = {
            **data,
            "_run": {"seconds": time.time() - section_started, "background_busy": busy, "loadavg_before": load_before,
                     "loadavg_after": loadavg(), "error": error,
                     "at": time.strftime("%Y-%m-%d %H:%M:%S %Z")},
        }
        write_json(results_path, results)
    results["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    results["meta"]["seconds"] = time.time() - started
    write_json(results_path, results)
    say(f"results: {results_path} ({time.time() - started:.0f} s)")
    if not args.no_report:
        from . import report

        markdown = report.write(results_path, out_dir=out_dir)
        sys.stdout.write(markdown)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
