"""docs/BENCHMARKS.md and docs/benchmarks.png from the suite's results: every number is read from
bench/results/cpu.json (and bench/results/gpu.json when a GPU run exists). Never edit the
Markdown by hand: change this file or re-run the suite.

    .venv/bin/python -m bench.report [--results bench/results/cpu.json] [--out docs]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Iterable
from pathlib import Path

from .chart import Panel, render
from .common import DOCS, RESULTS, SECTIONS

COLD_TARGET = 1.15
MEMORY_TARGET = 1.5
LATENCY_SLACK = 0.05
READY_SLACK_S = 1.0
SCALING_TARGET = 1.8
OVERHEAD_TARGET = 0.10
BUSY_SHARE = 0.10  # CPUs busy with other work just before a section, above which the section is flagged


# -- small helpers ---------------------------------------------------------------------------------


def get(data: object, *path: object, default: object = None) -> object:
    for key in path:
        if isinstance(data, dict) and key in data:
            data = data[key]
        elif isinstance(data, list) and isinstance(key, int) and -len(data) <= key < len(data):
            data = data[key]
        else:
            return default
    return data


def num(value: object) -> float | None:
    if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        return float(value)
    return None


def fmt(value: object, digits: int = 3, unit: str = "") -> str:
    value = num(value)
    if value is None:
        return "–"
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.{digits}f}"
    return text + unit


def ratio(a: object, b: object) -> float | None:
    a, b = num(a), num(b)
    if a is None or b is None or b == 0:
        return None
    return a / b


def fx(value: object) -> str:
    value = num(value)
    return "–" if value is None else f"{value:.2f}x"


def pct(value: object) -> str:
    value = num(value)
    return "–" if value is None else f"{value * 100:.1f}%"


def med(values: Iterable[object]) -> float | None:
    clean = [num(v) for v in values]
    clean = [v for v in clean if v is not None]
    return statistics.median(clean) if clean else None


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("**met**" if ok else "**missed**")


def section_error(results: dict, name: str) -> str | None:
    run = get(results, "sections", name, "_run")
    if run is None:
        return f"_Section `{name}` was not run._\n"
    if run.get("error"):
        return f"_Section `{name}` failed: `{run['error']}`._\n"
    return None


# -- figures derived from the results --------------------------------------------------------------


class Figures:
    """The headline numbers, each computed once from the results, for the tables and the targets."""

    def __init__(self, results: dict) -> None:
        self.r = results
        s = results.get("sections", {})
        compare = s.get("compare", {})
        self.preload = compare.get("preload", []) or []
        self.lazy = compare.get("lazy", []) or []
        self.rembg = compare.get("rembg", []) or []
        self.pipeline = s.get("pipeline", {})
        self.throughput = get(s, "throughput", "runs", default={}) or {}
        self.memory_rows = get(s, "memory", "rows", default=[]) or []
        self.variant_rows = get(s, "variants", "rows", default=[]) or []
        self.recycle = s.get("recycle", {})

    @staticmethod
    def agg(starts: list[dict], *path: str) -> float | None:
        return med(get(start, *path) for start in starts)

    def mode(self, name: str) -> list[dict]:
        return {"preload": self.preload, "lazy": self.lazy, "rembg": self.rembg}[name]

    # start-up --------------------------------------------------------------------------------------
    def phases(self, starts: list[dict]) -> dict[str, float]:
        names: list[str] = []
        for start in starts:
            for name in get(start, "readyz", "startup", default={}) or {}:
                if name not in names:
                    names.append(name)
        phases = {name: med(get(start, "readyz", "startup", name) for start in starts) for name in names}
        warm = med(max((get(start, "warm_lines", default={}) or {}).values(), default=None) for start in starts)
        if warm is not None:
            phases["warm-up (slowest worker)"] = warm
        return {name: value for name, value in phases.items() if value is not None}

    def ready_gap(self) -> tuple[float | None, float | None, float | None]:
        """(ready, imports + loads + warm-up, the gap), medians over the preload starts."""
        gaps, ready, work = [], [], []
        for start in self.preload:
            phases = get(start, "readyz", "startup", default={}) or {}
            warm = max((get(start, "warm_lines", default={}) or {}).values(), default=None)
            if not phases or warm is None or num(start.get("ready_s")) is None:
                continue
            sum_work = sum(v for k, v in phases.items() if k == "imports" or k.startswith("load ")) + warm
            ready.append(start["ready_s"])
            work.append(sum_work)
            gaps.append(start["ready_s"] - sum_work)
        return med(ready), med(work), med(gaps)

    # latency ---------------------------------------------------------------------------------------
    def cold(self, name: str) -> float | None:
        return self.agg(self.mode(name), "cold_penalty")

    def steady(self, name: str, key: str = "p50") -> float | None:
        return self.agg(self.mode(name), "steady", key)

    def overhead(self, kind: str) -> dict[str, float | None]:
        http = self.agg(self.preload, "steady", "p50") if kind == "remove_background" else self.agg(self.preload, "idphoto", "steady", "p50")
        app = num(get(self.pipeline, kind, "app", "p50"))
        ort = num(get(self.pipeline, kind, "ort_run", "p50"))
        return {
            "http": http,
            "app": app,
            "ort": ort,
            "server": None if http is None or app is None else (http - app) / http,
            "not_model": None if http is None or ort is None else (http - ort) / http,
        }

    # throughput ------------------------------------------------------------------------------------
    def rps(self, label: str) -> float | None:
        return num(get(self.throughput, label, "load", "throughput_rps"))

    def scaling(self) -> float | None:
        return ratio(self.rps("pilotlight 2 workers"), self.rps("pilotlight 1 worker"))

    # memory ----------------------------------------------------------------------------------------
    def memory(self, preload: bool, workers: int) -> dict | None:
        for row in self.memory_rows:
            if row.get("preload") == preload and row.get("workers") == workers:
                return row
        return None

    def memory_configs(self) -> list[dict]:
        """Each configuration with memory at 1 and at 4 workers (or the largest measured) and its
        steady latency with one worker: the default (from the memory section), then the variants."""
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
            if row.get("workers") == 1:
                entry["one"] = row
            else:
                entry["many"] = row
                entry["workers"] = row.get("workers")
        configs += list(by_label.values())
        for config in configs:
            one_pss = num(get(config, "one", "memory", "tree_pss_mib"))
            many_pss = num(get(config, "many", "memory", "tree_pss_mib"))
            config["ratio"] = ratio(many_pss, one_pss)
            config["p50"] = num(get(config, "one", "steady", "p50"))
        best = min((c["p50"] for c in configs if c.get("p50") is not None), default=None)
        for config in configs:
            config["vs_best"] = ratio(config.get("p50"), best)
        return configs


# -- the report ------------------------------------------------------------------------------------


def targets(f: Figures) -> tuple[str, list[str]]:
    rows: list[list[str]] = []
    notes: list[str] = []

    cold = f.cold("preload")
    rows.append(["Cold penalty (first request after ready ÷ median of the next), u2net cut-out",
                 f"≤ {COLD_TARGET}", f"pilotlight {fx(cold)}; lazy {fx(f.cold('lazy'))}; rembg s {fx(f.cold('rembg'))}",
                 verdict(None if cold is None else cold <= COLD_TARGET)])
    if cold is not None and cold > COLD_TARGET:
        first = f.agg(f.preload, "first_s")
        notes.append(
            f"**Cold penalty.** The first request after `/readyz` took {fmt(first)} s against a steady median of "
            f"{fmt(f.steady('preload'))} s. Every worker has run the same request path during its warm-up before it "
            "accepts, so what remains is what the warm-up does not touch: the client's first connection, and, with more "
            "workers than the warm-up's allocations reached, first-touch page faults in the worker that answers. "
            "See the per-start values in the side-by-side table."
        )

    configs = f.memory_configs()
    measured = [c for c in configs if c.get("ratio") is not None]
    good = [c for c in measured if c["ratio"] <= MEMORY_TARGET and (c.get("vs_best") or math.inf) <= 1 + LATENCY_SLACK]
    cells = "; ".join(f"{c['label']}: {fx(c['ratio'])} at {fmt(c.get('p50'))} s ({pct((c.get('vs_best') or math.nan) - 1)} vs best)" for c in measured)
    rows.append([f"Memory: {measured[0]['workers'] if measured else 4} workers' summed PSS ÷ 1 worker's, after traffic, "
                 f"with steady latency within {LATENCY_SLACK:.0%} of the best configuration",
                 f"≤ {MEMORY_TARGET}x and ≤ +{LATENCY_SLACK:.0%}", cells or "–",
                 verdict(None if not measured else bool(good)) if not measured or measured[0]["workers"] == 4
                 else f"not judged at {measured[0]['workers']} workers"])
    if measured and not good:
        default = measured[0]
        one, many = default.get("one", {}), default.get("many", {})
        notes.append(
            f"**Memory.** With the default configuration one worker's tree is {fmt(get(one, 'memory', 'tree_pss_mib'))} MiB "
            f"and {default['workers']} workers' {fmt(get(many, 'memory', 'tree_pss_mib'))} MiB: each worker keeps "
            f"{fmt(get(many, 'memory', 'worker_private_mib'))} MiB private after traffic. For {default['workers']} workers to "
            f"stay under {MEMORY_TARGET}x, each extra worker may add only "
            f"{fmt((MEMORY_TARGET - 1) * (num(get(one, 'memory', 'tree_pss_mib')) or math.nan) / (default['workers'] - 1))} MiB."
        )
    if good and measured[0] in good:
        default = measured[0]
        one, many = default.get("one", {}), default.get("many", {})
        notes.append(
            f"**Memory.** With the default configuration one worker's tree is {fmt(get(one, 'memory', 'tree_pss_mib'))} MiB after "
            f"traffic and {default['workers']} workers' {fmt(get(many, 'memory', 'tree_pss_mib'))} MiB ({fx(default.get('ratio'))}); "
            f"right after the traffic, before any worker has gone idle, {fmt(get(many, 'memory_busy', 'tree_pss_mib'))} MiB "
            f"({fx(ratio(get(many, 'memory_busy', 'tree_pss_mib'), get(one, 'memory_busy', 'tree_pss_mib')))}). "
            "Every session allocates from one process-wide onnxruntime arena that grows by what is asked (`ORT_CPU_ARENA=shared`, "
            "memory pattern off); a worker idle for `RELEASE_MEMORY_IDLE_S` shrinks it and trims the heap, except one "
            "(`KEEP_MEMORY_WORKERS=1`) that keeps its buffers and, while idle, wins the race to accept the next connection. "
            "Back-to-back requests never give anything back, so steady latency is that of a never-released arena. "
        )

    ready, work, gap = f.ready_gap()
    rows.append([f"Time to ready within {READY_SLACK_S:.0f} s of imports + model loads + warm-up (2 workers)",
                 f"≤ +{READY_SLACK_S:.1f} s", f"ready {fmt(ready)} s, sum {fmt(work)} s, gap {fmt(gap, 2)} s",
                 verdict(None if gap is None else gap <= READY_SLACK_S)])
    if gap is not None and gap > READY_SLACK_S:
        notes.append(
            f"**Time to ready.** {fmt(gap, 2)} s pass beyond imports, loads and the slowest worker's warm-up: the "
            "interpreter's launch before the first import, gunicorn binding and forking, and the readiness gate "
            "waiting for every worker (the phases table lists each)."
        )

    scaling = f.scaling()
    rows.append(["Throughput, 2 workers ÷ 1 worker", f"≥ {SCALING_TARGET}x",
                 f"{fmt(f.rps('pilotlight 2 workers'))} ÷ {fmt(f.rps('pilotlight 1 worker'))} req/s = {fx(scaling)}",
                 verdict(None if scaling is None else scaling >= SCALING_TARGET)])
    if scaling is not None and scaling < SCALING_TARGET:
        notes.append(
            f"**Scaling.** {fx(scaling)} with 2 workers on {get(f.r, 'meta', 'machine', 'cpus')} CPUs: the load-generating "
            "client runs on the same two cores (uploading the photo and reading each PNG), and whatever else ran on the "
            "machine took its share (load averages below)."
        )

    over = f.overhead("remove_background")
    rows.append(["Server overhead: HTTP latency − the same request handled in-process, ÷ HTTP latency (cut-out)",
                 f"≤ {OVERHEAD_TARGET:.0%}", f"{pct(over['server'])} (HTTP {fmt(over['http'])} s, in-process {fmt(over['app'])} s); "
                 f"everything but the forward pass: {pct(over['not_model'])}",
                 verdict(None if over["server"] is None else over["server"] <= OVERHEAD_TARGET)])
    if over["not_model"] is not None and over["not_model"] > OVERHEAD_TARGET:
        stages = get(f.pipeline, "remove_background", "stages", default={}) or {}
        notes.append(
            f"**Forward pass versus request.** onnxruntime's `run` is {fmt(over['ort'])} s of a {fmt(over['http'])} s request. "
            "The rest is the work the request asks for, measured in-process too (Server-Timing stages: "
            + ", ".join(f"{name} {fmt(value)} s" for name, value in stages.items())
            + "): decoding the JPEG, rembg's resize to 320x320 and of the matte back to the photo's size, and encoding the "
            f"{get(f.r, 'meta', 'photos', 'cutout_size', default='')} cut-out as an RGBA PNG. Only the difference between HTTP and "
            "in-process is the server's."
        )
    return table(["target", "goal", "measured", "verdict"], rows), notes


def side_by_side(f: Figures) -> str:
    modes = ["preload", "lazy", "rembg"]
    rows = []

    def line(label: str, values: list[float | None], digits: int = 3, unit: str = "") -> None:
        rows.append([label, *[fmt(v, digits, unit) for v in values], fx(ratio(values[1], values[0])), fx(ratio(values[2], values[0]))])

    line("port answering (s)", [f.agg(f.mode(m), "port_s") for m in modes])
    line("ready (s): /readyz 200; rembg s: port", [f.agg(f.mode(m), "ready_s") for m in modes])
    line("first request after ready (s)", [f.agg(f.mode(m), "first_s") for m in modes])
    for key in ("p50", "p90", "p99"):
        line(f"steady {key} (s)", [f.steady(m, key) for m in modes])
    line("cold penalty", [f.cold(m) for m in modes], 2)
    line("summed PSS after traffic (MiB)", [f.agg(f.mode(m), "memory", "tree_pss_mib") for m in modes])
    line("SIGTERM to all gone (s)", [f.agg(f.mode(m), "shutdown_s") for m in modes], 2)
    tp = [f.rps("pilotlight 2 workers"), None, f.rps("rembg s")]
    line("throughput, 4 clients (req/s)", tp)
    respawn = [med(get(x, "kill_to_served_s") for x in get(f.throughput, "pilotlight 1 worker", "respawn", default=[]) or []),
               med(get(x, "kill_to_served_s") for x in get(f.throughput, "pilotlight lazy 1 worker", "respawn", default=[]) or []), None]
    line("worker SIGKILL → replacement answers (s, 1 worker)", respawn)
    return table(["u2net, cut-out of the same photo", "pilotlight (preload)", "pilotlight (lazy)", "rembg s",
                  "lazy ÷ preload", "rembg s ÷ pilotlight"], rows)


def render_markdown(results: dict, gpu: dict | None, chart_name: str, browser: dict | None = None) -> str:
    f = Figures(results)
    meta = results.get("meta", {})
    machine = meta.get("machine", {})
    plan = meta.get("plan", {})
    out: list[str] = []
    w = out.append
    w("# Benchmarks\n")
    w("<!-- Generated by `.venv/bin/python -m bench.suite` from bench/results/cpu.json: do not edit by hand. -->\n")
    if meta.get("quick"):
        w("> **Quick smoke run** (`--quick`): few requests and starts; the figures only show that the suite works.\n")
    w(f"Measured by `.venv/bin/python -m bench.suite` (finished {meta.get('finished') or 'unfinished'}, "
      f"{fmt((meta.get('seconds') or 0) / 60, 1)} min) on {machine.get('cpus')} CPUs ({machine.get('cpu_model')}), "
      f"{machine.get('memory_gib')} GiB, Python {machine.get('python')}, "
      + ", ".join(f"{k} {v}" for k, v in (machine.get("versions") or {}).items()) + ".\n")
    w(f"Model: {meta.get('model')}. Background removal: {get(meta, 'photos', 'cutout')}. "
      f"ID photo (`us-passport`): {get(meta, 'photos', 'portrait')}. "
      f"pilotlight runs as `PILOTLIGHT_NO_SETUP=1 ./start.sh` (gunicorn, gunicorn.conf.py), 2 workers unless said, "
      f"`ORT_PROVIDERS=cpu`; the peer is `{get(meta, 'peer', 'command', default='rembg s (not run)')}` "
      "(rembg 2.0.86's own server, one process, its defaults) on the same model file. Every server runs on a free "
      "loopback port and is stopped with SIGTERM.\n")
    busy = [name for name, data in (results.get("sections") or {}).items()
            if name in SECTIONS and (num(get(data, "_run", "background_busy")) or 0) > BUSY_SHARE]
    if busy:
        w(f"> **Other work shared the CPUs** before the section(s) {', '.join(busy)} (see the last table): their times are "
          "pessimistic. Re-run them on a quiet machine with `--sections " + ",".join(busy) + "`.\n")
    w(f"![benchmarks]({chart_name})\n")

    target_table, notes = targets(f)
    w("## Targets\n")
    w(target_table)
    for note in notes:
        w(note + "\n")

    w("## Side by side\n")
    err = section_error(results, "compare")
    w(err or (f"Median over {plan.get('starts')} fresh start(s) of each, interleaved; {plan.get('steady')} sequential requests "
              "after the first. rembg s has no readiness endpoint, so its ready is its port answering, and its first request "
              "loads the model. Memory: after every worker has answered requests.\n\n" + side_by_side(f)))
    cold_rows = []
    for mode in ("preload", "lazy", "rembg"):
        for index, start in enumerate(f.mode(mode)):
            cold_rows.append([mode, str(index + 1), fmt(start.get("ready_s")), fmt(start.get("first_s")), fmt(get(start, "steady", "p50")),
                              fx(start.get("cold_penalty")), fmt(start.get("shutdown_s"), 2)])
    if cold_rows:
        w("\nEach start:\n\n" + table(["server", "start", "ready (s)", "first (s)", "steady p50 (s)", "cold penalty", "shutdown (s)"], cold_rows))

    w("\n## Start-up phases\n")
    if not err:
        rows = []
        for mode in ("preload", "lazy"):
            starts = f.mode(mode)
            ready = f.agg(starts, "ready_s")
            phases = f.phases(starts)
            accounted = sum(phases.values())
            for name, seconds in phases.items():
                rows.append([mode, name, fmt(seconds), pct(ratio(seconds, ready))])
            if ready is not None:
                rows.append([mode, "other (binding, forking, readiness polling)", fmt(ready - accounted), pct(ratio(ready - accounted, ready))])
                rows.append([mode, "**ready**", fmt(ready), "100%"])
        w("From `/readyz` (`startup`) and the workers' `worker PID warm after ...` log lines, medians over the starts; "
          "the workers warm in parallel, so the slowest one counts. In lazy mode the phases are those of the worker "
          "whose `/readyz` turned 200 first (its load was started by the readiness probe).\n\n")
        w(table(["mode", "phase", "seconds", "share of ready"], rows))

    w("\n## Steady latency and server overhead\n")
    err_p = section_error(results, "pipeline")
    rows = []
    for kind, label in (("remove_background", "cut-out (remove-background)"), ("idphoto", "ID photo (us-passport)")):
        over = f.overhead(kind)
        steady = get(f.preload, 0, "steady") if kind == "remove_background" else get(f.preload, 0, "idphoto", "steady")
        p90 = f.agg(f.preload, "steady", "p90") if kind == "remove_background" else f.agg(f.preload, "idphoto", "steady", "p90")
        p99 = f.agg(f.preload, "steady", "p99") if kind == "remove_background" else f.agg(f.preload, "idphoto", "steady", "p99")
        rows.append([label, fmt(over["http"]), fmt(p90), fmt(p99), fmt(over["app"]), fmt(over["ort"]), pct(over["server"]), pct(over["not_model"])])
        del steady
    w("HTTP: sequential requests to pilotlight (preload, 2 workers). In-process: the same request through the Flask app's "
      "test client (no socket, no gunicorn) in one process with the same sessions (`bench/inproc.py pipeline`); "
      "`InferenceSession.run`: the time inside onnxruntime during those requests. The ID photo is taken on one start only.\n\n")
    w(err_p or "")
    w(table(["request", "HTTP p50 (s)", "p90", "p99", "in-process p50 (s)", "onnxruntime run (s)", "server overhead", "all but the forward pass"], rows))
    stage_rows = []
    for kind, key in (("remove_background", "steady_stages"), ("idphoto", None)):
        http_stages = (f.preload[0].get(key) if key else get(f.preload, 0, "idphoto", "stages")) if f.preload else {}
        inproc_stages = get(f.pipeline, kind, "stages", default={}) or {}
        for name in dict.fromkeys([*(http_stages or {}), *inproc_stages]):
            stage_rows.append([kind.replace("_", "-"), name, fmt(get(http_stages, name)), fmt(inproc_stages.get(name))])
    if stage_rows:
        w("\nServer-Timing stages (medians, seconds):\n\n" + table(["request", "stage", "over HTTP", "in-process"], stage_rows))
    bare = get(f.pipeline, "forward_u2net")
    if bare:
        w(f"\nThe bare u2net forward pass on this photo's 1x3x320x320 tensor, one thread: p50 {fmt(bare.get('p50'))} s, "
          f"p90 {fmt(bare.get('p90'))} s ({bare.get('n')} runs).\n")

    w("\n## Throughput and latency under load\n")
    err_t = section_error(results, "throughput")
    w(err_t or "")
    rows = []
    for label, row in f.throughput.items():
        load = row.get("load")
        if not load:
            continue
        lat = load.get("latency", {})
        rows.append([label, str(load.get("clients")), str(load.get("ok")), fmt(load.get("wall_s"), 1), fmt(load.get("throughput_rps")),
                     fmt(lat.get("p50")), fmt(lat.get("p90")), fmt(lat.get("p99")), ", ".join(f"{k}: {v}" for k, v in load.get("statuses", {}).items())])
    if rows:
        w("Closed loop: each client sends its next cut-out request as soon as the last is answered (2 clients per worker, "
          "so no worker waits for work; 4 for rembg s). The client runs on the same machine.\n\n")
        w(table(["server", "clients", "answered", "wall (s)", "req/s", "p50 (s)", "p90", "p99", "statuses"], rows))
        w(f"\nScaling, 2 workers ÷ 1: {fx(f.scaling())}.\n")

    w("\n## Respawn, recycling, shutdown\n")
    rows = []
    for label in ("pilotlight 1 worker", "pilotlight lazy 1 worker"):
        for index, item in enumerate(get(f.throughput, label, "respawn", default=[]) or []):
            rows.append([label, str(index + 1), fmt(item.get("kill_to_served_s")), fmt(item.get("replacement_warmup_s"))])
    if rows:
        w("One worker is killed with SIGKILL and a request is sent at once: it waits in the listen backlog until the "
          "replacement, forked from the master, has warmed (preload) or loaded and warmed in that request (lazy), and answers.\n\n")
        w(table(["server", "kill", "SIGKILL → answered (s)", "replacement's warm-up (s)"], rows))
    err_r = section_error(results, "recycle")
    if err_r:
        w(err_r)
    elif f.recycle:
        rows = []
        for label, row in f.recycle.items():
            if not isinstance(row, dict) or "latency" not in row:
                continue
            rows.append([label, str(row.get("max_requests") or "–"), str(row.get("requests")), str(row.get("recycles")),
                         fmt(med(row.get("replacement_warmups_s") or [])), fmt(get(row, "latency", "p50")), fmt(get(row, "latency", "max")),
                         fmt(row.get("total_s"), 1), fmt(row.get("shutdown_s"), 2)])
        on, off = f.recycle.get("recycling", {}), f.recycle.get("no recycling", {})
        w("\nRecycling: 2 workers with `MAX_REQUESTS` (no jitter), sequential cut-out requests; the replacement warms while "
          "the other worker serves.\n\n")
        w(table(["run", "MAX_REQUESTS", "requests", "recycles", "replacement warm-up (s)", "p50 (s)", "max (s)", "total (s)", "shutdown (s)"], rows))
        w(f"\nCost of recycling: total time {fx(ratio(on.get('total_s'), off.get('total_s')))} of the run without it.\n")

    w("\n## Memory by worker count\n")
    err_m = section_error(results, "memory")
    w(err_m or "")
    rows = []
    for row in f.memory_rows:
        memory = row.get("memory", {})
        base = f.memory(row["preload"], 1)
        rows.append(["preload" if row["preload"] else "lazy", str(row["workers"]), fmt(row.get("ready_s")), fmt(memory.get("tree_pss_mib")),
                     fx(ratio(memory.get("tree_pss_mib"), get(base, "memory", "tree_pss_mib"))), fmt(memory.get("master_pss_mib")),
                     fmt(memory.get("worker_pss_mib")), fmt(memory.get("worker_private_mib")), fmt(memory.get("worker_private_max_mib")),
                     fmt(memory.get("worker_shared_mib")), fmt(get(row, "memory_busy", "tree_pss_mib")),
                     f"{get(row, 'served', 'served')}/{get(row, 'served', 'workers')}", fmt(get(row, "steady", "p50"))])
    if rows:
        w(f"Summed PSS of the process tree (`/proc/PID/smaps_rollup`) after every worker has answered at least "
          f"{get(results, 'sections', 'memory', 'per_worker')} cut-out request(s) (waves of one concurrent request per worker, "
          "counted per worker pid in the access log), once the workers have been idle long enough to give memory back "
          "(`RELEASE_MEMORY_IDLE_S` + 2 s); per worker: the mean over the workers, and the largest private figure (the keeper's). "
          "Busy: the summed PSS right after the last request.\n\n")
        w(table(["mode", "workers", "ready (s)", "summed PSS (MiB)", "÷ 1 worker", "master PSS", "worker PSS", "worker private",
                 "largest worker private", "worker shared", "busy: summed PSS", "workers served", "steady p50 (s)"], rows))

    w("\n## Memory variants\n")
    err_v = section_error(results, "variants")
    w(err_v or "")
    rows = []
    for config in f.memory_configs():
        error = get(config, "one", "error") or get(config, "many", "error")
        rows.append([config["label"], " ".join(f"{k}={v}" for k, v in config.get("env", {}).items()) or "–",
                     fmt(get(config, "one", "memory", "tree_pss_mib")), fmt(get(config, "many", "memory", "tree_pss_mib")),
                     fx(config.get("ratio")), fmt(get(config, "many", "memory", "worker_private_mib")),
                     fx(ratio(get(config, "many", "memory_busy", "tree_pss_mib"), get(config, "one", "memory_busy", "tree_pss_mib"))),
                     fmt(config.get("p50")),
                     pct((config.get("vs_best") or math.nan) - 1), fmt(get(config, "one", "cpu_per_request_s")),
                     fx(get(config, "one", "cold_penalty")) + (f" (failed: {error})" if error else "")])
    if rows:
        w("Each variant is a fresh server at 1 and at 4 workers (pilotlight preload): with 1 worker the first request after "
          "ready, then steady latency and the workers' CPU time per request; memory after every worker has served and the "
          "server has been idle for a few seconds (so variants that give memory back when idle have done so). "
          "`no gc.freeze()` runs `bench/gunicorn_variant.conf.py`: the real gunicorn.conf.py with only the freeze made a "
          "no-op. Environment variables other than the app's settings are glibc's, read when the master starts and "
          "inherited by the workers.\n\n")
        w(table(["variant", "environment", "1 worker PSS (MiB)", "N workers PSS", "ratio", "worker private", "busy ratio", "steady p50 (s)", "vs best",
                 "worker CPU per request (s)", "cold penalty"], rows))

    w("\n## In process: pre-optimised models\n")
    err_o = section_error(results, "preopt")
    w(err_o or "")
    rows = []
    for name, row in (get(results, "sections", "preopt", "variants", default={}) or {}).items():
        rows.append([name, row.get("description", ""), fmt(row.get("file_mib")), fmt(get(row, "load", "p50")),
                     fmt(get(row, "preload", "tree_pss_mib")), fmt(get(row, "preload", "child_private_mib")),
                     fmt(get(row, "lazy", "tree_pss_mib")), fmt(get(row, "lazy", "child_private_mib")), fmt(get(row, "lazy", "child_shared_mib")),
                     fmt(get(row, "preload", "latency", "p50"))])
    if rows:
        w("Load: building the session (median of the loads). Then two forked children run the model, one after the other, "
          "and stay alive while their memory is read: **preload**, the session is built in the parent before the fork (as "
          "pilotlight does on CPU); **lazy**, each child builds its own after the fork (as `PRELOAD_MODELS=false` and every "
          "GPU worker do). The saved graphs are written once under $BENCH_WORK/optimised (onnxruntime's optimised graphs "
          "may be specific to this CPU's instruction set).\n\n")
        w(table(["model file", "what", "on disk (MiB)", "load (s)", "preload: tree PSS", "preload: child private",
                 "lazy: tree PSS", "lazy: child private", "lazy: child shared", "run p50 (s)"], rows))

    w("\n## GPU\n")
    w(render_gpu(gpu))

    w("\n## In the browser: on-device cut-out\n")
    w(render_browser(browser))

    w("\n## How each figure is measured\n")
    w("- **Start-up**: from `Popen` to the first accepted TCP connection (port) and to the first `/readyz` 200 (ready), "
      "polled every 10-20 ms. gunicorn binds its port only after the master has loaded the models, and `/readyz` is 200 "
      "only once every worker is warm.\n"
      "- **Cold penalty**: the first request after ready ÷ the median of the next ones, one client, on a fresh start.\n"
      "- **Memory**: PSS summed over the master and its workers; private = Private_Clean + Private_Dirty, shared = Shared_*.\n"
      "- **Throughput**: answered requests ÷ wall time of the closed loop; latency under load is each request's time in it.\n"
      "- **Respawn**: SIGKILL to the answer of a request sent at the same moment (1 worker, so the replacement answers it).\n"
      "- **Shutdown**: SIGTERM to the master until no process of the tree is left.\n"
      "- The machine may be shared: before each section, with none of the suite's servers running, the suite measures "
      f"for 2 s how busy the CPUs are; above {BUSY_SHARE:.0%} the section is flagged below, and its times include "
      "other people's work.\n")
    rows = []
    for name, data in (results.get("sections") or {}).items():
        if name not in SECTIONS:  # measured by an earlier version of the suite
            continue
        run = data.get("_run", {})
        busy = num(run.get("background_busy"))
        rows.append([name, fmt(run.get("seconds"), 1), pct(busy), fmt((run.get("loadavg_before") or [None])[0], 2),
                     "**busy**" if (busy or 0) > BUSY_SHARE else "", run.get("error") or ""])
    w("\n" + table(["section", "seconds", "CPUs busy before (others)", "load average before", "flag", "error"], rows))
    return "\n".join(out)


def render_browser(browser: dict | None) -> str:
    """The upload page's on-device cut-out (u2netp on onnxruntime-web), from bench/results/browser.json."""
    if not browser:
        return ("Still to be measured: `.venv/bin/python -m bench.browser` runs the browser test "
                "(tests/test_browser_ondevice.py) and adds the figures here.\n")
    meta = browser.get("meta", {})
    files = browser.get("files_bytes") or {}
    def mb(value: object) -> str:
        number = num(value)
        return "–" if number is None else f"{number / 1e6:.2f} MB"

    def ms(value: object) -> str:  # milliseconds recorded, seconds shown
        number = num(value)
        return "–" if number is None else f"{number / 1000:.3f}"

    out = [f"Measured by `.venv/bin/python -m bench.browser` (finished {meta.get('finished')}, {fmt(meta.get('seconds'), 1)} s) "
           f"in {meta.get('browser')}, headless, on the same {meta.get('cpus')} CPUs (load average before: "
           f"{fmt(get(meta, 'loadavg_before', 0), 2)}), against the real gunicorn with `MODELS=u2netp,centerface`, over loopback. "
           f"Runtime: {browser.get('runtime')} (WebAssembly, SIMD, {browser.get('threads')} threads: the page is cross-origin "
           "isolated). The page's own timings table records each figure (performance.now()).\n"]
    out.append(table(["file the browser downloads (once, then Cache Storage / HTTP cache)", "bytes"], [
        ["runtime ES module (`ort.wasm.bundle.min.mjs`)", f"{files.get('runtime', 0):,}"],
        ["WebAssembly (`ort-wasm-simd-threaded.wasm`)", f"{files.get('wasm', 0):,}"],
        ["model (`u2netp.onnx`)", f"{files.get('model', 0):,}"],
        ["**total**", f"**{sum(files.values()):,}**" if files else "–"],
    ]))
    busy = get(browser, "busy_503") or {}
    portrait = busy.get("portrait") or {}
    crowd = busy.get("crowd") or {}
    cached = get(browser, "cached_visit", "timings_ms") or {}
    server = browser.get("server_u2netp_cutout_portrait") or {}
    out.append("\n" + table(["astronaut 512x512 JPEG, u2netp", "seconds"], [
        ["fetch and check (sha256) runtime + model, first visit", ms(browser.get("load_ms"))],
        ["the same from the browser's cache, next visit", ms(cached.get("load_ms"))],
        ["start the model (InferenceSession.create)", ms(browser.get("session_ms"))],
        ["first cut-out in the browser (decode, pre, model, post)", ms(browser.get("portrait_first_run_ms"))],
        ["warm cut-out in the browser", ms(browser.get("portrait_warm_run_ms"))],
        ["of which the model itself (warm)", ms(browser.get("portrait_warm_infer_ms"))],
        ["server, same photo: first u2netp cut-out over HTTP (warm server)", fmt(server.get("first_s"))],
        ["server, same photo: median of the next u2netp cut-outs", fmt(server.get("median_s"))],
    ]))
    rows = []
    for name, label in (("portrait", "astronaut 512x512"), ("crowd", "insightface t1.jpg 1280x886, six people")):
        item = busy.get(name) or {}
        warm = get(item, "timings_ms", "warm_run_ms")
        run = f"{ms(warm)} (warm)" if warm is not None else f"{ms(get(item, 'timings_ms', 'first_run_ms'))} (first)"
        rows.append([label, fmt(item.get("iou"), 4), fmt(item.get("alpha_mean_abs_diff"), 3),
                     str(item.get("alpha_max_abs_diff", "–")), run])
    out.append("\nThe browser's alpha against the server's `only_mask=true` output (`model=u2netp`) of the same file "
               "(IoU of alpha >= 128; the test requires >= 0.9):\n")
    out.append(table(["photo", "IoU", "mean abs alpha diff (0-255)", "max abs alpha diff", "that browser cut-out (s)"], rows))
    out.append(f"\nMeasured download: {mb(browser.get('download_bytes'))} on a first visit, 0 bytes over the network on "
               f"the next (`network_bytes` {cached.get('network_bytes', '–')}). The first cut-out includes the "
               "WebAssembly's first use of each kernel; the u2net figures above are the server's default model, "
               "u2netp's are in the last two rows of the second table. Browser and server ran on the same CPUs, "
               "one after the other; on a shared machine (see the load average) the times are indicative.\n" if portrait or crowd else "")
    return "\n".join(out)


def render_gpu(gpu: dict | None) -> str:
    if not gpu:
        return ("Still to be measured: no NVIDIA GPU was at hand for this run. `bench/gpu.py` runs the same start-up, "
                "latency, throughput and per-worker VRAM measurements with `onnxruntime-gpu` (`ORT_PROVIDERS=cuda`, each "
                "worker creating its CUDA sessions after the fork) and adds them here:\n\n"
                "    .venv/bin/pip install onnxruntime-gpu==<the onnxruntime version in requirements.txt>   # in place of onnxruntime\n"
                "    .venv/bin/python -m bench.gpu\n")
    meta = gpu.get("meta", {})
    out = [f"Measured by `python -m bench.gpu` (finished {meta.get('finished')}) on {meta.get('gpu')}, driver {meta.get('driver')}, "
           f"onnxruntime-gpu {get(meta, 'machine', 'versions', 'onnxruntime-gpu')}.\n"]
    rows = []
    for row in gpu.get("servers", []):
        rows.append([str(row.get("workers")), fmt(row.get("port_s")), fmt(row.get("ready_s")), fmt(row.get("first_s")),
                     fmt(get(row, "steady", "p50")), fmt(get(row, "steady", "p99")), fx(row.get("cold_penalty")),
                     fmt(get(row, "idphoto", "p50")), fmt(get(row, "load", "throughput_rps")), fmt(get(row, "load", "latency", "p99")),
                     fmt(row.get("vram_per_worker_mib")), fmt(get(row, "memory", "tree_pss_mib")), fmt(row.get("shutdown_s"), 2)])
    out.append(table(["workers", "port (s)", "ready (s)", "first (s)", "steady p50 (s)", "p99", "cold penalty", "ID photo p50 (s)",
                      "req/s (2 clients/worker)", "p99 under load", "VRAM per worker (MiB)", "host PSS (MiB)", "shutdown (s)"], rows))
    servers = gpu.get("servers") or []
    one = next((row for row in servers if row.get("workers") == 1), None)
    two = next((row for row in servers if row.get("workers") == 2), None)
    if one and two:
        out.append(f"\nScaling, 2 workers ÷ 1: {fx(ratio(get(two, 'load', 'throughput_rps'), get(one, 'load', 'throughput_rps')))} "
                   "(one GPU shared by both workers).\n")
    app = num(get(gpu, "pipeline", "remove_background", "app", "p50"))
    ort = num(get(gpu, "pipeline", "remove_background", "ort_run", "p50"))
    http = num(get(one, "steady", "p50")) if one else None
    if app is not None and http is not None:
        out.append(f"Server overhead on the GPU (cut-out, 1 worker): HTTP p50 {fmt(http)} s, in-process {fmt(app)} s, "
                   f"onnxruntime run {fmt(ort)} s: {pct((http - app) / http)} of the request is the server's.\n")
    elif get(gpu, "pipeline", "error"):
        out.append(f"In-process floor on the GPU failed: `{get(gpu, 'pipeline', 'error')}`.\n")
    return "\n".join(out)


def chart_panels(results: dict) -> list[Panel]:
    f = Figures(results)
    panels = []
    # start-up
    modes = [("preload", "pilotlight"), ("lazy", "lazy"), ("rembg", "rembg s")]
    phase_names: list[str] = []
    phase_values: dict[str, dict[str, float]] = {}
    for mode, _ in modes:
        starts = f.mode(mode)
        phases = f.phases(starts) if mode != "rembg" else {}
        ready = f.agg(starts, "ready_s") if mode != "rembg" else f.agg(starts, "port_s")
        grouped: dict[str, float] = {}
        for name, value in phases.items():
            key = "imports" if name.startswith("launch") or name == "imports" else ("model loads" if name.startswith("load") else "warm-up")
            grouped[key] = grouped.get(key, 0.0) + value
        if ready is not None:
            grouped["other"] = max(0.0, ready - sum(grouped.values()))
        if mode == "rembg":
            first = f.agg(starts, "first_s")
            grouped = {"to the port": ready or 0.0, "first request (loads the model)": first or 0.0}
        phase_values[mode] = grouped
        for key in grouped:
            if key not in phase_names:
                phase_names.append(key)
    panels.append(Panel("Start-up to ready (s)", "seconds", "stacked", [label for _, label in modes],
                        {name: [phase_values[m].get(name) for m, _ in modes] for name in phase_names}))
    panels.append(Panel("Cut-out latency, one client (s)", "seconds", "bars", [label for _, label in modes], {
        "first after ready": [f.agg(f.mode(m), "first_s") for m, _ in modes],
        "steady p50": [f.steady(m) for m, _ in modes],
        "steady p99": [f.steady(m, "p99") for m, _ in modes],
    }))
    counts = sorted({row["workers"] for row in f.memory_rows})
    panels.append(Panel("Summed PSS: right after traffic (busy) and once idle (MiB)", "MiB", "lines",
                        [f"{n} worker{'s' if n > 1 else ''}" for n in counts], {
        "preload, busy": [num(get(f.memory(True, n), "memory_busy", "tree_pss_mib")) for n in counts],
        "preload, idle": [num(get(f.memory(True, n), "memory", "tree_pss_mib")) for n in counts],
        "lazy, busy": [num(get(f.memory(False, n), "memory_busy", "tree_pss_mib")) for n in counts],
        "lazy, idle": [num(get(f.memory(False, n), "memory", "tree_pss_mib")) for n in counts],
    }))
    labels = [label for label in ("pilotlight 1 worker", "pilotlight 2 workers", "rembg s") if f.rps(label) is not None]
    panels.append(Panel("Throughput, closed loop (req/s)", "req/s", "bars", [label.replace("pilotlight ", "") for label in labels],
                        {"requests per second": [f.rps(label) for label in labels]}))
    return panels


def render_clients_and_soak(folder: Path) -> str:
    """The slow-client and soak sections, from bench/results/slowloris.json (`bench.slowloris
    --json`) and bench/results/soak.json (`bench.load --soak --json`) when they exist."""
    out: list[str] = []
    w = out.append
    slow_path, soak_path = folder / "slowloris.json", folder / "soak.json"
    if slow_path.is_file():
        data = json.loads(slow_path.read_text())
        labels = [label for label in data if any(key != "memory" for key in data[label])]
        scenarios = list(dict.fromkeys(key for label in labels for key in data[label] if key != "memory"))
        w("## Slow and hostile clients\n")
        w("Written by `.venv/bin/python -m bench.slowloris --json bench/results/slowloris.json` (2 workers, u2netp; "
          "\"without\": the same script with `--root` on main's code before the request intake). Hostile connections "
          "come from 127.0.0.2 (slow headers and a slow 5 MB multipart body at 4 bytes/s, connections that send nothing, "
          "kept-alive connections left open, a flood of short connections; all from a child process); a good client on 127.0.0.1 "
          "sends /healthz, /readyz and a cut-out in turn, each with a 10 s timeout. Cells: good requests answered / sent, "
          "and their p99 in seconds (a cut-out's own time is most of it). Each row is a fresh server on a machine shared with "
          "other work: compare within a column with care (row \"none\", the good client alone, moved between 0.6 and 2 s "
          "from one run to the next).\n")
        w("| scenario | " + " | ".join(labels) + " |")
        w("| --- | " + " | ".join("---" for _ in labels) + " |")
        for scenario in scenarios:
            cells = []
            for label in labels:
                row = data[label].get(scenario)
                if row is None:
                    cells.append("-")
                    continue
                cap = "" if (row.get("env") or {}).get("MAX_CONNECTIONS_PER_IP") is None else \
                    f" (MAX_CONNECTIONS_PER_IP={row['env']['MAX_CONNECTIONS_PER_IP']})"
                cells.append(f"{row['ok']}/{row['sent']}, p99 {fmt(row['p99_s'], 2)} s{cap}")
            w(f"| {scenario} | " + " | ".join(cells) + " |")
        for label in data:
            memory = data[label].get("memory")
            if memory:
                w(f"\nMemory ({label}): summed PSS {fmt(memory['pss_before_mib'], 1)} MiB, with {memory['connections']} "
                  f"connections that sent half a request line {fmt(memory['pss_after_mib'], 1)} MiB: "
                  f"{fmt(memory['kib_per_connection'], 1)} KiB per connection.")
        w("\nThe cost of the intake: no extra process and no image dependency (the image is unchanged); a request "
          "is copied once more in memory before gunicorn parses it, and the worker's main thread reads it (about 53 us of "
          "main-thread CPU per connection, measured under a flood of 14,000 connections).\n")
    if soak_path.is_file():
        soak = json.loads(soak_path.read_text())
        w("## Soak\n")
        w(f"Written by `.venv/bin/python -m bench.load --soak --model {soak['model']} --requests {soak['requests']} --every {soak['every']} "
          f"--json bench/results/soak.json`: model {soak['model']}, {soak['workers']} workers, {soak['clients']} clients, "
          "photos from 256 px to 20 MP (JPEG, PNG, WebP, six faces) over cut-outs, ID photos and print sheets. PSS at "
          "rest is read after `RELEASE_MEMORY_IDLE_S` + 2 s without requests; under load, the largest half-second "
          f"sample. At rest before the first request: {fmt(soak['pss_start_mib'], 0)} MiB.\n")
        w("| requests | PSS at rest (MiB) | PSS under load, max (MiB) | statuses | p50 (s) | p99 (s) |")
        w("| ---: | ---: | ---: | --- | ---: | ---: |")
        for row in soak["rows"]:
            statuses = ", ".join(f"{k}: {v}" for k, v in sorted(row["statuses"].items()))
            w(f"| {row['requests']} | {fmt(row['pss_rest_mib'], 0)} | {fmt(row['pss_load_max_mib'], 0)} | {statuses} | "
              f"{fmt(row['p50_s'], 2)} | {fmt(row['p99_s'], 2)} |")
        first = soak["rows"][0]["requests"] if soak["rows"] else 0
        w(f"\nGrowth at rest from request {first} to the end: {soak['rest_growth'] * 100:+.1f} % (target: under 10 %); "
          f"5xx or failed requests: {soak['server_errors']}.\n")
    return "\n".join(out) + ("\n" if out else "")


def render_lanes(folder: Path) -> str:
    """The lanes section, from bench/results/lanes.json (python -m bench.lanes), when it is there."""
    path = folder / "lanes.json"
    if not path.is_file():
        return ""
    from .lanes import section

    return "\n" + section(json.loads(path.read_text()))


def write(results_path: Path, *, out_dir: Path = DOCS, gpu_path: Path | None = None) -> str:
    results = json.loads(results_path.read_text())
    gpu_path = gpu_path or results_path.with_name("gpu.json")
    gpu = json.loads(gpu_path.read_text()) if gpu_path.is_file() else None
    browser_path = results_path.with_name("browser.json")
    browser = json.loads(browser_path.read_text()) if browser_path.is_file() else None
    out_dir.mkdir(parents=True, exist_ok=True)
    chart = out_dir / "benchmarks.png"
    render(chart_panels(results), chart, title="pilotlight vs rembg s: u2net on a 2-core machine")
    markdown = (render_markdown(results, gpu, chart.name, browser) + render_clients_and_soak(results_path.parent)
                + render_lanes(results_path.parent))
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
