"""docs/BENCHMARKS.md and docs/benchmarks.png from the results: every number is read from
bench/results/cpu.json, and from gpu.json, browser.json, slowloris.json, soak.json and lanes.json
beside it when they exist. Never edit the Markdown by hand: change this file or re-run the suite.

    .venv/bin/python -m bench.report [--results bench/results/cpu.json] [--out docs]

Each section is a prose template (TEXT) filled with figures, and tables built from rows of data
(`grid`: one column = a header and how to read its cell from a row).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from .chart import Panel, render
from .common import DOCS, RESULTS, SECTIONS

COLD_TARGET = 1.15
MEMORY_TARGET = 1.5
LATENCY_SLACK = 0.05
READY_SLACK_S = 1.0
SCALING_TARGET = 1.8
OVERHEAD_TARGET = 0.10
BUSY_SHARE = 0.10  # CPUs busy with other work just before a section, above which the section is flagged
SUITE = "`.venv/bin/python -m bench.suite`"

# -- formatting -----------------------------------------------------------------------------------


def get(data: object, *path: object, default: object = None) -> Any:
    for key in path:
        if isinstance(data, dict) and key in data:
            data = data[key]
        elif isinstance(data, list) and isinstance(key, int) and -len(data) <= key < len(data):
            data = data[key]
        else:
            return default
    return data


def num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)) else None


def fmt(value: object, digits: int = 3, unit: str = "") -> str:
    value = num(value)
    if value is None:
        return "–"
    text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.{digits}f}"
    return text + unit


def ratio(a: object, b: object) -> float | None:
    a, b = num(a), num(b)
    return None if a is None or b is None or b == 0 else a / b


def fx(value: object) -> str:
    value = num(value)
    return "–" if value is None else f"{value:.2f}x"


def pct(value: object) -> str:
    value = num(value)
    return "–" if value is None else f"{value * 100:.1f}%"


def ms(value: object) -> str:
    """Milliseconds recorded, seconds shown."""
    value = num(value)
    return "–" if value is None else f"{value / 1000:.3f}"


def med(values: Iterable[object]) -> float | None:
    clean = [v for v in (num(v) for v in values) if v is not None]
    return statistics.median(clean) if clean else None


def env_text(env: dict | None) -> str:
    return " ".join(f"{k}={v}" for k, v in (env or {}).items()) or "–"


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows]) + "\n"


Column = tuple[str, Callable[[Any], str]]


def grid(columns: Sequence[Column], items: Iterable[Any]) -> str:
    """A table with one row per item: each column is (header, item -> cell)."""
    items = list(items)
    return table([header for header, _ in columns], [[cell(item) for _, cell in columns] for item in items]) if items else ""


def col(header: str, *path: object, digits: int = 3, show: Callable[..., str] = fmt) -> Column:
    """A column that reads `path` from the row and formats it (fmt with `digits`, or `show`)."""
    return header, (lambda row: show(get(row, *path), digits) if show is fmt else show(get(row, *path)))


def verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("**met**" if ok else "**missed**")


def section_error(results: dict, name: str) -> str:
    run = get(results, "sections", name, "_run")
    if run is None:
        return f"_Section `{name}` was not run._\n"
    return f"_Section `{name}` failed: `{run['error']}`._\n" if run.get("error") else ""


def blocks(*parts: str | None) -> str:
    return "\n".join(part for part in parts if part)


# -- the prose --------------------------------------------------------------------------------------

TEXT = {
    "head": "Measured by " + SUITE + " (finished {finished}, {minutes} min) on {cpus} CPUs ({cpu_model}), {memory_gib} GiB, "
            "Python {python}, {versions}.\n\nModel: {model}. Background removal: {cutout}. ID photo (`us-passport`): {portrait}. "
            "pilotlight runs as `PILOTLIGHT_NO_SETUP=1 ./start.sh` (gunicorn, gunicorn.conf.py), 2 workers unless said, "
            "`ORT_PROVIDERS=cpu`; the peer is `{peer}` (rembg 2.0.86's own server, one process, its defaults) on the same "
            "model file. Every server runs on a free loopback port and is stopped with SIGTERM.\n",
    "busy": "> **Other work shared the CPUs** before the section(s) {names} (see the last table): their times are pessimistic. "
            "Re-run them on a quiet machine with `--sections {names_csv}`.\n",
    "cold": "**Cold penalty.** The first request after `/readyz` took {first} s against a steady median of {steady} s. Every "
            "worker has run the same request path during its warm-up before it accepts, so what remains is what the warm-up "
            "does not touch: the client's first connection, and, with more workers than the warm-up's allocations reached, "
            "first-touch page faults in the worker that answers. See the per-start values in the side-by-side table.\n",
    "memory_missed": "**Memory.** With the default configuration one worker's tree is {one} MiB and {workers} workers' {many} MiB: "
                     "each worker keeps {private} MiB private after traffic. For {workers} workers to stay under {target}x, "
                     "each extra worker may add only {budget} MiB.\n",
    "memory_met": "**Memory.** With the default configuration one worker's tree is {one} MiB after traffic and {workers} workers' "
                  "{many} MiB ({ratio}); right after the traffic, before any worker has gone idle, {busy} MiB ({busy_ratio}). "
                  "Every session allocates from one process-wide onnxruntime arena that grows by what is asked "
                  "(`ORT_CPU_ARENA=shared`, memory pattern off); a worker idle for `RELEASE_MEMORY_IDLE_S` shrinks it and trims "
                  "the heap, except one (`KEEP_MEMORY_WORKERS=1`) that keeps its buffers and, while idle, wins the race to "
                  "accept the next connection. Back-to-back requests never give anything back, so steady latency is that of a "
                  "never-released arena.\n",
    "ready": "**Time to ready.** {gap} s pass beyond imports, loads and the slowest worker's warm-up: the interpreter's launch "
             "before the first import, gunicorn binding and forking, and the readiness gate waiting for every worker (the "
             "phases table lists each).\n",
    "scaling": "**Scaling.** {scaling} with 2 workers on {cpus} CPUs: the load-generating client runs on the same two cores "
               "(uploading the photo and reading each PNG), and whatever else ran on the machine took its share (load "
               "averages below).\n",
    "forward": "**Forward pass versus request.** onnxruntime's `run` is {ort} s of a {http} s request. The rest is the work the "
               "request asks for, measured in-process too (Server-Timing stages: {stages}): decoding the JPEG, rembg's resize "
               "to 320x320 and of the matte back to the photo's size, and encoding the {size} cut-out as an RGBA PNG. Only "
               "the difference between HTTP and in-process is the server's.\n",
    "side_by_side": "Median over {starts} fresh start(s) of each, interleaved; {steady} sequential requests after the first. "
                    "rembg s has no readiness endpoint, so its ready is its port answering, and its first request loads the "
                    "model. Memory: after every worker has answered requests.\n",
    "phases": "From `/readyz` (`startup`) and the workers' `worker PID warm after ...` log lines, medians over the starts; the "
              "workers warm in parallel, so the slowest one counts. In lazy mode the phases are those of the worker whose "
              "`/readyz` turned 200 first (its load was started by the readiness probe).\n",
    "steady": "HTTP: sequential requests to pilotlight (preload, 2 workers). In-process: the same request through the Flask "
              "app's test client (no socket, no gunicorn) in one process with the same sessions (`bench/inproc.py pipeline`); "
              "`InferenceSession.run`: the time inside onnxruntime during those requests. The ID photo is taken on one start "
              "only.\n",
    "bare": "The bare u2net forward pass on this photo's 1x3x320x320 tensor, one thread: p50 {p50} s, p90 {p90} s ({n} runs).\n",
    "throughput": "Closed loop: each client sends its next cut-out request as soon as the last is answered (2 clients per "
                  "worker, so no worker waits for work; 4 for rembg s). The client runs on the same machine.\n",
    "respawn": "One worker is killed with SIGKILL and a request is sent at once: it waits in the listen backlog until the "
               "replacement, forked from the master, has warmed (preload) or loaded and warmed in that request (lazy), and "
               "answers.\n",
    "recycle": "Recycling: 2 workers with `MAX_REQUESTS` (no jitter), sequential cut-out requests; the replacement warms while "
               "the other worker serves.\n",
    "memory": "Summed PSS of the process tree (`/proc/PID/smaps_rollup`) after every worker has answered at least {per_worker} "
              "cut-out request(s) (waves of one concurrent request per worker, counted per worker pid in the access log), "
              "once the workers have been idle long enough to give memory back (`RELEASE_MEMORY_IDLE_S` + 2 s); per worker: "
              "the mean over the workers, and the largest private figure (the keeper's). Busy: the summed PSS right after "
              "the last request.\n",
    "variants": "Each variant is a fresh server at 1 and at 4 workers (pilotlight preload): with 1 worker the first request "
                "after ready, then steady latency and the workers' CPU time per request; memory after every worker has served "
                "and the server has been idle for a few seconds (so variants that give memory back when idle have done so). "
                "`no gc.freeze()` runs `bench/gunicorn_variant.conf.py`: the real gunicorn.conf.py with only the freeze made a "
                "no-op. Environment variables other than the app's settings are glibc's, read when the master starts and "
                "inherited by the workers.\n",
    "preopt": "Load: building the session (median of the loads). Then two forked children run the model, one after the other, "
              "and stay alive while their memory is read: **preload**, the session is built in the parent before the fork (as "
              "pilotlight does on CPU); **lazy**, each child builds its own after the fork (as `PRELOAD_MODELS=false` and every "
              "GPU worker do). The saved graphs are written once under $BENCH_WORK/optimised (onnxruntime's optimised graphs "
              "may be specific to this CPU's instruction set).\n",
    "no_gpu": "Still to be measured: no NVIDIA GPU was at hand for this run. `bench/gpu.py` runs the same start-up, latency, "
              "throughput and per-worker VRAM measurements with `onnxruntime-gpu` (`ORT_PROVIDERS=cuda`, each worker creating "
              "its CUDA sessions after the fork) and adds them here:\n\n"
              "    .venv/bin/pip install onnxruntime-gpu==<the onnxruntime version in requirements.txt>   # in place of onnxruntime\n"
              "    .venv/bin/python -m bench.gpu\n",
    "gpu": "Measured by `python -m bench.gpu` (finished {finished}) on {gpu}, driver {driver}, onnxruntime-gpu {version}.\n",
    "no_browser": "Still to be measured: `.venv/bin/python -m bench.browser` runs the browser test "
                  "(tests/test_browser_ondevice.py) and adds the figures here.\n",
    "browser": "Measured by `.venv/bin/python -m bench.browser` (finished {finished}, {seconds} s) in {browser}, headless, on "
               "the same {cpus} CPUs (load average before: {load}), against the real gunicorn with `MODELS=u2netp,centerface`, "
               "over loopback. Runtime: {runtime} (WebAssembly, SIMD, {threads} threads: the page is cross-origin isolated). "
               "The page's own timings table records each figure (performance.now()).\n",
    "browser_alpha": "The browser's alpha against the server's `only_mask=true` output (`model=u2netp`) of the same file (IoU "
                     "of alpha >= 128; the test requires >= 0.9):\n",
    "browser_end": "Measured download: {download} on a first visit, 0 bytes over the network on the next (`network_bytes` "
                   "{network}). The first cut-out includes the WebAssembly's first use of each kernel; the u2net figures above "
                   "are the server's default model, u2netp's are in the last two rows of the second table. Browser and server "
                   "ran on the same CPUs, one after the other; on a shared machine (see the load average) the times are "
                   "indicative.\n",
    "how": "- **Start-up**: from `Popen` to the first accepted TCP connection (port) and to the first `/readyz` 200 (ready), "
           "polled every 10-20 ms. gunicorn binds its port only after the master has loaded the models, and `/readyz` is 200 "
           "only once every worker is warm.\n"
           "- **Cold penalty**: the first request after ready ÷ the median of the next ones, one client, on a fresh start.\n"
           "- **Memory**: PSS summed over the master and its workers; private = Private_Clean + Private_Dirty, shared = Shared_*.\n"
           "- **Throughput**: answered requests ÷ wall time of the closed loop; latency under load is each request's time in it.\n"
           "- **Respawn**: SIGKILL to the answer of a request sent at the same moment (1 worker, so the replacement answers it).\n"
           "- **Shutdown**: SIGTERM to the master until no process of the tree is left.\n"
           "- The machine may be shared: before each section, with none of the suite's servers running, the suite measures "
           "for 2 s how busy the CPUs are; above {busy} the section is flagged below, and its times include other people's work.\n",
    "slow": "Written by `.venv/bin/python -m bench.slowloris --json bench/results/slowloris.json` (2 workers, u2netp; "
            "\"without\": the same script with `--root` on main's code before the request intake). Hostile connections come "
            "from 127.0.0.2 (slow headers and a slow 5 MB multipart body at 4 bytes/s, connections that send nothing, "
            "kept-alive connections left open, a flood of short connections; all from a child process); a good client on "
            "127.0.0.1 sends /healthz, /readyz and a cut-out in turn, each with a 10 s timeout. Cells: good requests answered "
            "/ sent, and their p99 in seconds (a cut-out's own time is most of it). Each row is a fresh server on a machine "
            "shared with other work: compare within a column with care (row \"none\", the good client alone, moved between "
            "0.6 and 2 s from one run to the next).\n",
    "slow_memory": "Memory ({label}): summed PSS {pss_before_mib} MiB, with {connections} connections that sent half a request "
                   "line {pss_after_mib} MiB: {kib_per_connection} KiB per connection.\n",
    "slow_cost": "The cost of the intake: no extra process and no image dependency (the image is unchanged); a request is copied "
                 "once more in memory before gunicorn parses it, and the worker's main thread reads it (about 53 us of "
                 "main-thread CPU per connection, measured under a flood of 14,000 connections).\n",
    "soak": "Written by `.venv/bin/python -m bench.load --soak --model {model} --requests {requests} --every {every} --json "
            "bench/results/soak.json`: model {model}, {workers} workers, {clients} clients, photos from 256 px to 20 MP (JPEG, "
            "PNG, WebP, six faces) over cut-outs, ID photos and print sheets. PSS at rest is read after `RELEASE_MEMORY_IDLE_S` "
            "+ 2 s without requests; under load, the largest half-second sample. At rest before the first request: {start} MiB.\n",
    "soak_end": "Growth at rest from request {first} to the end: {growth:+.1f} % (target: under 10 %); 5xx or failed requests: "
                "{errors}.\n",
}


# -- figures derived from the results -------------------------------------------------------------


class Figures:
    """The headline numbers, each computed once from the results, for the tables and the targets."""

    def __init__(self, results: dict) -> None:
        self.r = results
        s = results.get("sections", {})
        self.modes = {mode: get(s, "compare", mode, default=[]) or [] for mode in ("preload", "lazy", "rembg")}
        self.preload = self.modes["preload"]
        self.pipeline = s.get("pipeline", {})
        self.throughput = get(s, "throughput", "runs", default={}) or {}
        self.memory_rows = get(s, "memory", "rows", default=[]) or []
        self.variant_rows = get(s, "variants", "rows", default=[]) or []
        self.recycle = s.get("recycle", {})

    def agg(self, mode: str, *path: str) -> float | None:
        return med(get(start, *path) for start in self.modes[mode])

    def phases(self, mode: str) -> dict[str, float]:
        starts = self.modes[mode]
        names = list(dict.fromkeys(name for start in starts for name in get(start, "readyz", "startup", default={}) or {}))
        phases = {name: med(get(start, "readyz", "startup", name) for start in starts) for name in names}
        phases["warm-up (slowest worker)"] = med(max((start.get("warm_lines") or {}).values(), default=None) for start in starts)
        return {name: value for name, value in phases.items() if value is not None}

    def ready_gap(self) -> tuple[float | None, float | None, float | None]:
        """(ready, imports + model loads + warm-up, the gap), medians over the preload starts."""
        ready, work = [], []
        for start in self.preload:
            phases = get(start, "readyz", "startup", default={}) or {}
            warm = max((start.get("warm_lines") or {}).values(), default=None)
            if phases and warm is not None and num(start.get("ready_s")) is not None:
                ready.append(start["ready_s"])
                work.append(sum(v for k, v in phases.items() if k == "imports" or k.startswith("load ")) + warm)
        return med(ready), med(work), med(r - w for r, w in zip(ready, work, strict=True))

    def overhead(self, kind: str) -> dict[str, float | None]:
        base = ("steady",) if kind == "remove_background" else ("idphoto", "steady")
        http, app, ort = self.agg("preload", *base, "p50"), num(get(self.pipeline, kind, "app", "p50")), num(get(self.pipeline, kind, "ort_run", "p50"))
        return {"http": http, "p90": self.agg("preload", *base, "p90"), "p99": self.agg("preload", *base, "p99"), "app": app, "ort": ort,
                "server": None if http is None or app is None else (http - app) / http,
                "not_model": None if http is None or ort is None else (http - ort) / http}

    def rps(self, label: str) -> float | None:
        return num(get(self.throughput, label, "load", "throughput_rps"))

    def scaling(self) -> float | None:
        return ratio(self.rps("pilotlight 2 workers"), self.rps("pilotlight 1 worker"))

    def memory(self, preload: bool, workers: int) -> dict | None:
        return next((row for row in self.memory_rows if row.get("preload") == preload and row.get("workers") == workers), None)

    def memory_configs(self) -> list[dict]:
        """Each configuration with memory at 1 and at 4 workers (or the largest measured) and its steady
        latency with one worker: the default (from the memory section), then the variants."""
        configs = []
        counts = sorted({row["workers"] for row in self.memory_rows if row.get("preload")})
        high = 4 if 4 in counts else (max(counts) if counts else None)
        one, many = self.memory(True, 1), (self.memory(True, high) if high else None)
        if one and many and high and high > 1:
            configs.append({"label": "default (shared arena, memory pattern off, idle workers release it, one keeps it; gc.freeze)",
                            "one": one, "many": many, "workers": high})
        by_label: dict[str, dict] = {}
        for row in self.variant_rows:
            entry = by_label.setdefault(row["label"], {"label": row["label"], "env": row.get("env", {})})
            entry.update({"one": row} if row.get("workers") == 1 else {"many": row, "workers": row.get("workers")})
        configs += by_label.values()
        for config in configs:
            config["ratio"] = ratio(get(config, "many", "memory", "tree_pss_mib"), get(config, "one", "memory", "tree_pss_mib"))
            config["busy_ratio"] = ratio(get(config, "many", "memory_busy", "tree_pss_mib"), get(config, "one", "memory_busy", "tree_pss_mib"))
            config["p50"] = num(get(config, "one", "steady", "p50"))
        best = min((c["p50"] for c in configs if c["p50"] is not None), default=None)
        for config in configs:
            config["vs_best"] = ratio(config["p50"], best)
        return configs


# -- sections -------------------------------------------------------------------------------------


def targets(f: Figures) -> str:
    rows, notes = [], []
    cold = f.agg("preload", "cold_penalty")
    rows.append(["Cold penalty (first request after ready ÷ median of the next), u2net cut-out", f"≤ {COLD_TARGET}",
                 f"pilotlight {fx(cold)}; lazy {fx(f.agg('lazy', 'cold_penalty'))}; rembg s {fx(f.agg('rembg', 'cold_penalty'))}",
                 verdict(None if cold is None else cold <= COLD_TARGET)])
    if cold is not None and cold > COLD_TARGET:
        notes.append(TEXT["cold"].format(first=fmt(f.agg("preload", "first_s")), steady=fmt(f.agg("preload", "steady", "p50"))))

    measured = [c for c in f.memory_configs() if c["ratio"] is not None]
    good = [c for c in measured if c["ratio"] <= MEMORY_TARGET and (c["vs_best"] or math.inf) <= 1 + LATENCY_SLACK]
    workers = measured[0]["workers"] if measured else 4
    rows.append([f"Memory: {workers} workers' summed PSS ÷ 1 worker's, after traffic, with steady latency within "
                 f"{LATENCY_SLACK:.0%} of the best configuration", f"≤ {MEMORY_TARGET}x and ≤ +{LATENCY_SLACK:.0%}",
                 "; ".join(f"{c['label']}: {fx(c['ratio'])} at {fmt(c['p50'])} s ({pct((c['vs_best'] or math.nan) - 1)} vs best)"
                           for c in measured) or "–",
                 verdict(bool(good) if measured else None) if workers == 4 else f"not judged at {workers} workers"])
    if measured:
        default = measured[0]
        one_pss = get(default, "one", "memory", "tree_pss_mib")
        figures = {"one": fmt(one_pss), "many": fmt(get(default, "many", "memory", "tree_pss_mib")), "workers": default["workers"]}
        if not good:
            notes.append(TEXT["memory_missed"].format(**figures, target=MEMORY_TARGET, private=fmt(get(default, "many", "memory", "worker_private_mib")),
                                                      budget=fmt((MEMORY_TARGET - 1) * (num(one_pss) or math.nan) / (default["workers"] - 1))))
        elif default in good:
            notes.append(TEXT["memory_met"].format(**figures, ratio=fx(default["ratio"]), busy=fmt(get(default, "many", "memory_busy", "tree_pss_mib")),
                                                   busy_ratio=fx(default["busy_ratio"])))

    ready, work, gap = f.ready_gap()
    rows.append([f"Time to ready within {READY_SLACK_S:.0f} s of imports + model loads + warm-up (2 workers)", f"≤ +{READY_SLACK_S:.1f} s",
                 f"ready {fmt(ready)} s, sum {fmt(work)} s, gap {fmt(gap, 2)} s", verdict(None if gap is None else gap <= READY_SLACK_S)])
    if gap is not None and gap > READY_SLACK_S:
        notes.append(TEXT["ready"].format(gap=fmt(gap, 2)))

    scaling = f.scaling()
    rows.append(["Throughput, 2 workers ÷ 1 worker", f"≥ {SCALING_TARGET}x",
                 f"{fmt(f.rps('pilotlight 2 workers'))} ÷ {fmt(f.rps('pilotlight 1 worker'))} req/s = {fx(scaling)}",
                 verdict(None if scaling is None else scaling >= SCALING_TARGET)])
    if scaling is not None and scaling < SCALING_TARGET:
        notes.append(TEXT["scaling"].format(scaling=fx(scaling), cpus=get(f.r, "meta", "machine", "cpus")))

    over = f.overhead("remove_background")
    rows.append(["Server overhead: HTTP latency − the same request handled in-process, ÷ HTTP latency (cut-out)", f"≤ {OVERHEAD_TARGET:.0%}",
                 f"{pct(over['server'])} (HTTP {fmt(over['http'])} s, in-process {fmt(over['app'])} s); "
                 f"everything but the forward pass: {pct(over['not_model'])}",
                 verdict(None if over["server"] is None else over["server"] <= OVERHEAD_TARGET)])
    if over["not_model"] is not None and over["not_model"] > OVERHEAD_TARGET:
        stages = get(f.pipeline, "remove_background", "stages", default={}) or {}
        notes.append(TEXT["forward"].format(ort=fmt(over["ort"]), http=fmt(over["http"]), size=get(f.r, "meta", "photos", "cutout_size", default=""),
                                            stages=", ".join(f"{name} {fmt(value)} s" for name, value in stages.items())))
    return blocks("## Targets\n", table(["target", "goal", "measured", "verdict"], rows), *notes)


def side_by_side(f: Figures, results: dict) -> str:
    error = section_error(results, "compare")
    if error:
        return blocks("## Side by side\n", error)
    respawn = {mode: med(get(x, "kill_to_served_s") for x in get(f.throughput, label, "respawn", default=[]) or [])
               for mode, label in (("preload", "pilotlight 1 worker"), ("lazy", "pilotlight lazy 1 worker"))}
    lines: list[tuple[str, Callable[[str], float | None], int]] = [
        ("port answering (s)", lambda m: f.agg(m, "port_s"), 3),
        ("ready (s): /readyz 200; rembg s: port", lambda m: f.agg(m, "ready_s"), 3),
        ("first request after ready (s)", lambda m: f.agg(m, "first_s"), 3),
        *[(f"steady {key} (s)", lambda m, key=key: f.agg(m, "steady", key), 3) for key in ("p50", "p90", "p99")],
        ("cold penalty", lambda m: f.agg(m, "cold_penalty"), 2),
        ("summed PSS after traffic (MiB)", lambda m: f.agg(m, "memory", "tree_pss_mib"), 3),
        ("SIGTERM to all gone (s)", lambda m: f.agg(m, "shutdown_s"), 2),
        ("throughput, 4 clients (req/s)", lambda m: {"preload": f.rps("pilotlight 2 workers"), "rembg": f.rps("rembg s")}.get(m), 3),
        ("worker SIGKILL → replacement answers (s, 1 worker)", respawn.get, 3),
    ]
    rows = []
    for label, value, digits in lines:
        ours, lazy, peer = (value(mode) for mode in ("preload", "lazy", "rembg"))
        rows.append([label, fmt(ours, digits), fmt(lazy, digits), fmt(peer, digits), fx(ratio(lazy, ours)), fx(ratio(peer, ours))])
    starts = [{"mode": mode, "index": str(i + 1), **start} for mode, runs in f.modes.items() for i, start in enumerate(runs)]
    plan = get(results, "meta", "plan", default={})
    return blocks(
        "## Side by side\n", TEXT["side_by_side"].format(starts=plan.get("starts"), steady=plan.get("steady")),
        table(["u2net, cut-out of the same photo", "pilotlight (preload)", "pilotlight (lazy)", "rembg s", "lazy ÷ preload",
               "rembg s ÷ pilotlight"], rows),
        "Each start:\n" if starts else "",
        grid([("server", lambda s: s["mode"]), ("start", lambda s: s["index"]), col("ready (s)", "ready_s"), col("first (s)", "first_s"),
              col("steady p50 (s)", "steady", "p50"), col("cold penalty", "cold_penalty", show=fx), col("shutdown (s)", "shutdown_s", digits=2)],
             starts),
    )


def startup_phases(f: Figures, results: dict) -> str:
    rows = []
    for mode in ("preload", "lazy"):
        ready, phases = f.agg(mode, "ready_s"), f.phases(mode)
        rows += [[mode, name, fmt(seconds), pct(ratio(seconds, ready))] for name, seconds in phases.items()]
        if ready is not None:
            other = ready - sum(phases.values())
            rows += [[mode, "other (binding, forking, readiness polling)", fmt(other), pct(ratio(other, ready))], [mode, "**ready**", fmt(ready), "100%"]]
    body = "" if section_error(results, "compare") else blocks(TEXT["phases"], table(["mode", "phase", "seconds", "share of ready"], rows))
    return blocks("## Start-up phases\n", body)


def steady_latency(f: Figures, results: dict) -> str:
    kinds = (("remove_background", "cut-out (remove-background)"), ("idphoto", "ID photo (us-passport)"))
    over = [{"label": label, **f.overhead(kind)} for kind, label in kinds]
    stages = []
    for kind, http in (("remove_background", get(f.preload, 0, "steady_stages")), ("idphoto", get(f.preload, 0, "idphoto", "stages"))):
        inproc = get(f.pipeline, kind, "stages", default={}) or {}
        stages += [[kind.replace("_", "-"), name, fmt(get(http, name)), fmt(inproc.get(name))] for name in dict.fromkeys([*(http or {}), *inproc])]
    bare = get(f.pipeline, "forward_u2net")
    return blocks(
        "## Steady latency and server overhead\n", TEXT["steady"], section_error(results, "pipeline"),
        grid([("request", lambda r: r["label"]), col("HTTP p50 (s)", "http"), col("p90", "p90"), col("p99", "p99"),
              col("in-process p50 (s)", "app"), col("onnxruntime run (s)", "ort"), col("server overhead", "server", show=pct),
              col("all but the forward pass", "not_model", show=pct)], over),
        "Server-Timing stages (medians, seconds):\n\n" + table(["request", "stage", "over HTTP", "in-process"], stages) if stages else "",
        TEXT["bare"].format(p50=fmt(bare.get("p50")), p90=fmt(bare.get("p90")), n=bare.get("n")) if bare else "",
    )


def throughput(f: Figures, results: dict) -> str:
    runs = [{"label": label, **row["load"]} for label, row in f.throughput.items() if row.get("load")]
    return blocks(
        "## Throughput and latency under load\n", section_error(results, "throughput"), TEXT["throughput"] if runs else "",
        grid([("server", lambda r: r["label"]), ("clients", lambda r: str(r.get("clients"))), ("answered", lambda r: str(r.get("ok"))),
              col("wall (s)", "wall_s", digits=1), col("req/s", "throughput_rps"), col("p50 (s)", "latency", "p50"),
              col("p90", "latency", "p90"), col("p99", "latency", "p99"),
              ("statuses", lambda r: ", ".join(f"{k}: {v}" for k, v in r.get("statuses", {}).items()))], runs),
        f"Scaling, 2 workers ÷ 1: {fx(f.scaling())}.\n" if runs else "",
    )


def respawn_and_recycling(f: Figures, results: dict) -> str:
    kills = [{"label": label, "index": str(i + 1), **item} for label in ("pilotlight 1 worker", "pilotlight lazy 1 worker")
             for i, item in enumerate(get(f.throughput, label, "respawn", default=[]) or [])]
    recycled = [{"label": label, **row} for label, row in f.recycle.items() if isinstance(row, dict) and "latency" in row]
    on, off = f.recycle.get("recycling", {}), f.recycle.get("no recycling", {})
    return blocks(
        "## Respawn, recycling, shutdown\n", TEXT["respawn"] if kills else "",
        grid([("server", lambda r: r["label"]), ("kill", lambda r: r["index"]), col("SIGKILL → answered (s)", "kill_to_served_s"),
              col("replacement's warm-up (s)", "replacement_warmup_s")], kills),
        section_error(results, "recycle") or (TEXT["recycle"] if recycled else ""),
        grid([("run", lambda r: r["label"]), ("MAX_REQUESTS", lambda r: str(r.get("max_requests") or "–")), ("requests", lambda r: str(r.get("requests"))),
              ("recycles", lambda r: str(r.get("recycles"))), ("replacement warm-up (s)", lambda r: fmt(med(r.get("replacement_warmups_s") or []))),
              col("p50 (s)", "latency", "p50"), col("max (s)", "latency", "max"), col("total (s)", "total_s", digits=1),
              col("shutdown (s)", "shutdown_s", digits=2)], recycled),
        f"Cost of recycling: total time {fx(ratio(on.get('total_s'), off.get('total_s')))} of the run without it.\n" if recycled else "",
    )


def memory_by_workers(f: Figures, results: dict) -> str:
    def vs_one(row: dict) -> str:
        return fx(ratio(get(row, "memory", "tree_pss_mib"), get(f.memory(row["preload"], 1), "memory", "tree_pss_mib")))

    return blocks(
        "## Memory by worker count\n", section_error(results, "memory"),
        TEXT["memory"].format(per_worker=get(results, "sections", "memory", "per_worker")) if f.memory_rows else "",
        grid([("mode", lambda r: "preload" if r["preload"] else "lazy"), ("workers", lambda r: str(r["workers"])), col("ready (s)", "ready_s"),
              col("summed PSS (MiB)", "memory", "tree_pss_mib"), ("÷ 1 worker", vs_one), col("master PSS", "memory", "master_pss_mib"),
              col("worker PSS", "memory", "worker_pss_mib"), col("worker private", "memory", "worker_private_mib"),
              col("largest worker private", "memory", "worker_private_max_mib"), col("worker shared", "memory", "worker_shared_mib"),
              col("busy: summed PSS", "memory_busy", "tree_pss_mib"),
              ("workers served", lambda r: f"{get(r, 'served', 'served')}/{get(r, 'served', 'workers')}"), col("steady p50 (s)", "steady", "p50")],
             f.memory_rows),
    )


def memory_variants(f: Figures, results: dict) -> str:
    def cold(config: dict) -> str:
        error = get(config, "one", "error") or get(config, "many", "error")
        return fx(get(config, "one", "cold_penalty")) + (f" (failed: {error})" if error else "")

    configs = f.memory_configs()
    return blocks(
        "## Memory variants\n", section_error(results, "variants"), TEXT["variants"] if configs else "",
        grid([("variant", lambda c: c["label"]), ("environment", lambda c: env_text(c.get("env"))), col("1 worker PSS (MiB)", "one", "memory", "tree_pss_mib"),
              col("N workers PSS", "many", "memory", "tree_pss_mib"), col("ratio", "ratio", show=fx), col("worker private", "many", "memory", "worker_private_mib"),
              col("busy ratio", "busy_ratio", show=fx), col("steady p50 (s)", "p50"), ("vs best", lambda c: pct((c["vs_best"] or math.nan) - 1)),
              col("worker CPU per request (s)", "one", "cpu_per_request_s"), ("cold penalty", cold)], configs),
    )


def preoptimised(results: dict) -> str:
    variants = [{"name": name, **row} for name, row in (get(results, "sections", "preopt", "variants", default={}) or {}).items()]
    return blocks(
        "## In process: pre-optimised models\n", section_error(results, "preopt"), TEXT["preopt"] if variants else "",
        grid([("model file", lambda r: r["name"]), ("what", lambda r: r.get("description", "")), col("on disk (MiB)", "file_mib"),
              col("load (s)", "load", "p50"), col("preload: tree PSS", "preload", "tree_pss_mib"), col("preload: child private", "preload", "child_private_mib"),
              col("lazy: tree PSS", "lazy", "tree_pss_mib"), col("lazy: child private", "lazy", "child_private_mib"),
              col("lazy: child shared", "lazy", "child_shared_mib"), col("run p50 (s)", "preload", "latency", "p50")], variants),
    )


def render_gpu(gpu: dict | None) -> str:
    if not gpu:
        return TEXT["no_gpu"]
    meta, servers = gpu.get("meta", {}), gpu.get("servers") or []
    one = next((row for row in servers if row.get("workers") == 1), None)
    two = next((row for row in servers if row.get("workers") == 2), None)
    app, ort = num(get(gpu, "pipeline", "remove_background", "app", "p50")), num(get(gpu, "pipeline", "remove_background", "ort_run", "p50"))
    http = num(get(one, "steady", "p50"))
    floor = ""
    if app is not None and http is not None:
        floor = (f"Server overhead on the GPU (cut-out, 1 worker): HTTP p50 {fmt(http)} s, in-process {fmt(app)} s, onnxruntime run "
                 f"{fmt(ort)} s: {pct((http - app) / http)} of the request is the server's.\n")
    elif get(gpu, "pipeline", "error"):
        floor = f"In-process floor on the GPU failed: `{get(gpu, 'pipeline', 'error')}`.\n"
    return blocks(
        TEXT["gpu"].format(finished=meta.get("finished"), gpu=meta.get("gpu"), driver=meta.get("driver"),
                           version=get(meta, "machine", "versions", "onnxruntime-gpu")),
        grid([("workers", lambda r: str(r.get("workers"))), col("port (s)", "port_s"), col("ready (s)", "ready_s"), col("first (s)", "first_s"),
              col("steady p50 (s)", "steady", "p50"), col("p99", "steady", "p99"), col("cold penalty", "cold_penalty", show=fx),
              col("ID photo p50 (s)", "idphoto", "p50"), col("req/s (2 clients/worker)", "load", "throughput_rps"),
              col("p99 under load", "load", "latency", "p99"), col("VRAM per worker (MiB)", "vram_per_worker_mib"),
              col("host PSS (MiB)", "memory", "tree_pss_mib"), col("shutdown (s)", "shutdown_s", digits=2)], servers),
        f"Scaling, 2 workers ÷ 1: {fx(ratio(get(two, 'load', 'throughput_rps'), get(one, 'load', 'throughput_rps')))} (one GPU shared by both workers).\n"
        if one and two else "",
        floor,
    )


def render_browser(browser: dict | None) -> str:
    """The upload page's on-device cut-out (u2netp on onnxruntime-web), from bench/results/browser.json."""
    if not browser:
        return TEXT["no_browser"]
    meta, files = browser.get("meta", {}), browser.get("files_bytes") or {}
    busy, cached = get(browser, "busy_503") or {}, get(browser, "cached_visit", "timings_ms") or {}
    server = browser.get("server_u2netp_cutout_portrait") or {}
    downloads = [["runtime ES module (`ort.wasm.bundle.min.mjs`)", f"{files.get('runtime', 0):,}"],
                 ["WebAssembly (`ort-wasm-simd-threaded.wasm`)", f"{files.get('wasm', 0):,}"],
                 ["model (`u2netp.onnx`)", f"{files.get('model', 0):,}"],
                 ["**total**", f"**{sum(files.values()):,}**" if files else "–"]]
    timings = [["fetch and check (sha256) runtime + model, first visit", ms(browser.get("load_ms"))],
               ["the same from the browser's cache, next visit", ms(cached.get("load_ms"))],
               ["start the model (InferenceSession.create)", ms(browser.get("session_ms"))],
               ["first cut-out in the browser (decode, pre, model, post)", ms(browser.get("portrait_first_run_ms"))],
               ["warm cut-out in the browser", ms(browser.get("portrait_warm_run_ms"))],
               ["of which the model itself (warm)", ms(browser.get("portrait_warm_infer_ms"))],
               ["server, same photo: first u2netp cut-out over HTTP (warm server)", fmt(server.get("first_s"))],
               ["server, same photo: median of the next u2netp cut-outs", fmt(server.get("median_s"))]]
    photos = [{"label": label, **(busy.get(name) or {})} for name, label in (("portrait", "astronaut 512x512"), ("crowd", "insightface t1.jpg 1280x886, six people"))]

    def run(item: dict) -> str:
        warm = get(item, "timings_ms", "warm_run_ms")
        return f"{ms(warm)} (warm)" if warm is not None else f"{ms(get(item, 'timings_ms', 'first_run_ms'))} (first)"

    download = num(browser.get("download_bytes"))
    return blocks(
        TEXT["browser"].format(finished=meta.get("finished"), seconds=fmt(meta.get("seconds"), 1), browser=meta.get("browser"), cpus=meta.get("cpus"),
                               load=fmt(get(meta, "loadavg_before", 0), 2), runtime=browser.get("runtime"), threads=browser.get("threads")),
        table(["file the browser downloads (once, then Cache Storage / HTTP cache)", "bytes"], downloads),
        table(["astronaut 512x512 JPEG, u2netp", "seconds"], timings),
        TEXT["browser_alpha"],
        grid([("photo", lambda r: r["label"]), col("IoU", "iou", digits=4), col("mean abs alpha diff (0-255)", "alpha_mean_abs_diff"),
              ("max abs alpha diff", lambda r: str(r.get("alpha_max_abs_diff", "–"))), ("that browser cut-out (s)", run)], photos),
        TEXT["browser_end"].format(download="–" if download is None else f"{download / 1e6:.2f} MB", network=cached.get("network_bytes", "–"))
        if busy.get("portrait") or busy.get("crowd") else "",
    )


def how_measured(results: dict) -> str:
    runs = [{"name": name, **data.get("_run", {})} for name, data in (results.get("sections") or {}).items() if name in SECTIONS]
    return blocks(
        "## How each figure is measured\n", TEXT["how"].format(busy=f"{BUSY_SHARE:.0%}"),
        grid([("section", lambda r: r["name"]), col("seconds", "seconds", digits=1), col("CPUs busy before (others)", "background_busy", show=pct),
              ("load average before", lambda r: fmt((r.get("loadavg_before") or [None])[0], 2)),
              ("flag", lambda r: "**busy**" if (num(r.get("background_busy")) or 0) > BUSY_SHARE else ""), ("error", lambda r: r.get("error") or "")],
             runs),
    )


def slow_clients(data: dict) -> str:
    labels = [label for label in data if any(key != "memory" for key in data[label])]
    scenarios = list(dict.fromkeys(key for label in labels for key in data[label] if key != "memory"))

    def cell(row: dict | None) -> str:
        if row is None:
            return "-"
        cap = (row.get("env") or {}).get("MAX_CONNECTIONS_PER_IP")
        return f"{row['ok']}/{row['sent']}, p99 {fmt(row['p99_s'], 2)} s" + ("" if cap is None else f" (MAX_CONNECTIONS_PER_IP={cap})")

    memory = [TEXT["slow_memory"].format(label=label, connections=m["connections"], **{k: fmt(m[k], 1) for k in ("pss_before_mib", "pss_after_mib", "kib_per_connection")})
              for label in data if (m := data[label].get("memory"))]
    return blocks("## Slow and hostile clients\n", TEXT["slow"],
                  table(["scenario", *labels], [[scenario, *(cell(data[label].get(scenario)) for label in labels)] for scenario in scenarios]),
                  *memory, TEXT["slow_cost"])


def soak(data: dict) -> str:
    rows = data["rows"]
    return blocks(
        "## Soak\n", TEXT["soak"].format(**{k: data[k] for k in ("model", "requests", "every", "workers", "clients")}, start=fmt(data["pss_start_mib"], 0)),
        grid([("requests", lambda r: str(r["requests"])), col("PSS at rest (MiB)", "pss_rest_mib", digits=0),
              col("PSS under load, max (MiB)", "pss_load_max_mib", digits=0),
              ("statuses", lambda r: ", ".join(f"{k}: {v}" for k, v in sorted(r["statuses"].items()))),
              col("p50 (s)", "p50_s", digits=2), col("p99 (s)", "p99_s", digits=2)], rows),
        TEXT["soak_end"].format(first=rows[0]["requests"] if rows else 0, growth=data["rest_growth"] * 100, errors=data["server_errors"]),
    )


def render_markdown(results: dict, gpu: dict | None, chart_name: str, browser: dict | None = None, folder: Path | None = None) -> str:
    f = Figures(results)
    meta = results.get("meta", {})
    machine = meta.get("machine", {})
    busy = [name for name, data in (results.get("sections") or {}).items()
            if name in SECTIONS and (num(get(data, "_run", "background_busy")) or 0) > BUSY_SHARE]
    extra = {name: json.loads(path.read_text()) for name in ("slowloris", "soak", "lanes")
             if folder is not None and (path := folder / f"{name}.json").is_file()}
    lanes = ""
    if "lanes" in extra:
        from .lanes import section

        lanes = section(extra["lanes"])
    return blocks(
        "# Benchmarks\n", "<!-- Generated by " + SUITE + " from bench/results/cpu.json: do not edit by hand. -->\n",
        "> **Quick smoke run** (`--quick`): few requests and starts; the figures only show that the suite works.\n" if meta.get("quick") else "",
        TEXT["head"].format(finished=meta.get("finished") or "unfinished", minutes=fmt((meta.get("seconds") or 0) / 60, 1),
                            **{key: machine.get(key) for key in ("cpus", "cpu_model", "memory_gib", "python")},
                            versions=", ".join(f"{k} {v}" for k, v in (machine.get("versions") or {}).items()), model=meta.get("model"),
                            cutout=get(meta, "photos", "cutout"), portrait=get(meta, "photos", "portrait"),
                            peer=get(meta, "peer", "command", default="rembg s (not run)")),
        TEXT["busy"].format(names=", ".join(busy), names_csv=",".join(busy)) if busy else "",
        f"![benchmarks]({chart_name})\n",
        targets(f), side_by_side(f, results), startup_phases(f, results), steady_latency(f, results), throughput(f, results),
        respawn_and_recycling(f, results), memory_by_workers(f, results), memory_variants(f, results), preoptimised(results),
        "## GPU\n", render_gpu(gpu), "## In the browser: on-device cut-out\n", render_browser(browser), how_measured(results),
        slow_clients(extra["slowloris"]) if "slowloris" in extra else "", soak(extra["soak"]) if "soak" in extra else "", lanes,
    )


def chart_panels(results: dict) -> list[Panel]:
    f = Figures(results)
    modes = [("preload", "pilotlight"), ("lazy", "lazy"), ("rembg", "rembg s")]
    values: dict[str, dict[str, float]] = {}
    for mode, _ in modes:
        if mode == "rembg":
            values[mode] = {"to the port": f.agg(mode, "port_s") or 0.0, "first request (loads the model)": f.agg(mode, "first_s") or 0.0}
            continue
        grouped: dict[str, float] = {}
        for name, value in f.phases(mode).items():
            key = "imports" if name.startswith("launch") or name == "imports" else ("model loads" if name.startswith("load") else "warm-up")
            grouped[key] = grouped.get(key, 0.0) + value
        ready = f.agg(mode, "ready_s")
        if ready is not None:
            grouped["other"] = max(0.0, ready - sum(grouped.values()))
        values[mode] = grouped
    names = list(dict.fromkeys(name for grouped in values.values() for name in grouped))
    labels = [label for _, label in modes]
    counts = sorted({row["workers"] for row in f.memory_rows})
    lines = {f"{'preload' if preload else 'lazy'}, {state}": [num(get(f.memory(preload, n), key, "tree_pss_mib")) for n in counts]
             for preload in (True, False) for state, key in (("busy", "memory_busy"), ("idle", "memory"))}
    servers = [label for label in ("pilotlight 1 worker", "pilotlight 2 workers", "rembg s") if f.rps(label) is not None]
    return [
        Panel("Start-up to ready (s)", "seconds", "stacked", labels, {name: [values[m].get(name) for m, _ in modes] for name in names}),
        Panel("Cut-out latency, one client (s)", "seconds", "bars", labels, {
            "first after ready": [f.agg(m, "first_s") for m, _ in modes],
            "steady p50": [f.agg(m, "steady", "p50") for m, _ in modes],
            "steady p99": [f.agg(m, "steady", "p99") for m, _ in modes]}),
        Panel("Summed PSS: right after traffic (busy) and once idle (MiB)", "MiB", "lines", [f"{n} worker{'s' if n > 1 else ''}" for n in counts], lines),
        Panel("Throughput, closed loop (req/s)", "req/s", "bars", [label.replace("pilotlight ", "") for label in servers],
              {"requests per second": [f.rps(label) for label in servers]}),
    ]


def write(results_path: Path, *, out_dir: Path = DOCS, gpu_path: Path | None = None) -> str:
    def load(path: Path) -> dict | None:
        return json.loads(path.read_text()) if path.is_file() else None

    results = json.loads(results_path.read_text())
    out_dir.mkdir(parents=True, exist_ok=True)
    chart = out_dir / "benchmarks.png"
    render(chart_panels(results), chart, title="pilotlight vs rembg s: u2net on a 2-core machine")
    markdown = render_markdown(results, load(gpu_path or results_path.with_name("gpu.json")), chart.name,
                               load(results_path.with_name("browser.json")), results_path.parent)
    (out_dir / "BENCHMARKS.md").write_text(markdown)
    return markdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS / "cpu.json")
    parser.add_argument("--out", type=Path, default=DOCS)
    args = parser.parse_args()
    print(write(args.results, out_dir=args.out))  # noqa: T201


if __name__ == "__main__":
    main()
