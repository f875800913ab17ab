"""docs/BENCHMARKS.md and docs/benchmarks.png from the results: every number is read from
bench/results/cpu.json, and from gpu.json, browser.json, slowloris.json, soak.json and lanes.json
beside it when they exist. Never edit the Markdown by hand: change bench/templates/benchmarks.md.j2
(the prose and the tables) or this file (the figures derived from the results), or re-run the suite.

    .venv/bin/python -m bench.report [--results bench/results/cpu.json] [--out docs]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jinja2

from .chart import Panel, render
from .common import DOCS, RESULTS, SECTIONS

COLD_TARGET = 1.15
MEMORY_TARGET = 1.5
LATENCY_SLACK = 0.05
READY_SLACK_S = 1.0
# throughput under load against rembg s (closed loop); 2 workers against 1 is no target since the
# lanes: one worker alone runs every inference on all cores (its wide lane)
UNDER_LOAD_TARGET = 1.3
OVERHEAD_TARGET = 0.10
BUSY_SHARE = 0.10  # CPUs busy with other work just before a section, above which the section is flagged
TEMPLATES = Path(__file__).resolve().parent / "templates"

# -- formatting (the template's filters) ------------------------------------------------------------


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

    def under_load(self) -> float | None:
        return ratio(self.rps("pilotlight 2 workers"), self.rps("rembg s"))

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
            configs.append({"label": "default (shared arena, memory pattern off, idle workers release it, one per core keeps it; gc.freeze)",
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


    def targets(self) -> dict[str, Any]:
        """The targets table's inputs: each figure and whether it meets its goal (None: not measured)."""
        cold = self.agg("preload", "cold_penalty")
        measured = [c for c in self.memory_configs() if c["ratio"] is not None]
        good = [c for c in measured if c["ratio"] <= MEMORY_TARGET and (c["vs_best"] or math.inf) <= 1 + LATENCY_SLACK]
        ready, work, gap = self.ready_gap()
        under_load, over = self.under_load(), self.overhead("remove_background")
        return {
            "cold": cold, "cold_ok": None if cold is None else cold <= COLD_TARGET,
            "memory": measured, "memory_ok": bool(good) if measured else None, "memory_workers": measured[0]["workers"] if measured else 4,
            "memory_default_ok": bool(measured) and measured[0] in good,
            "ready": ready, "work": work, "gap": gap, "ready_ok": None if gap is None else gap <= READY_SLACK_S,
            "under_load": under_load, "under_load_ok": None if under_load is None else under_load >= UNDER_LOAD_TARGET,
            "over": over, "over_ok": None if over["server"] is None else over["server"] <= OVERHEAD_TARGET,
        }

    def respawn(self, mode: str) -> float | None:
        label = {"preload": "pilotlight 1 worker", "lazy": "pilotlight lazy 1 worker"}.get(mode)
        return med(get(x, "kill_to_served_s") for x in get(self.throughput, label, "respawn", default=[]) or []) if label else None

    def busy_sections(self) -> list[str]:
        return [name for name, data in (self.r.get("sections") or {}).items()
                if name in SECTIONS and (num(get(data, "_run", "background_busy")) or 0) > BUSY_SHARE]


# -- rendering --------------------------------------------------------------------------------------

ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True, lstrip_blocks=True,
                         keep_trailing_newline=True, extensions=["jinja2.ext.do"], autoescape=False)  # noqa: S701 (Markdown)
ENV.filters.update(fmt=fmt, fx=fx, pct=pct, ms=ms, env_text=env_text)
ENV.globals.update(get=get, num=num, ratio=ratio, med=med, math=math, SECTIONS=SECTIONS, BUSY_SHARE=BUSY_SHARE,
                   COLD_TARGET=COLD_TARGET, MEMORY_TARGET=MEMORY_TARGET, LATENCY_SLACK=LATENCY_SLACK, READY_SLACK_S=READY_SLACK_S,
                   UNDER_LOAD_TARGET=UNDER_LOAD_TARGET, OVERHEAD_TARGET=OVERHEAD_TARGET)


def tidy(text: str) -> str:
    """One blank line between blocks, whatever the template's conditionals left."""
    lines, blank = [], False
    for line in text.strip().splitlines():
        if line.strip() or not blank:
            lines.append(line.rstrip() if line.strip() else "")
        blank = not line.strip()
    return "\n".join(lines) + "\n"


def render_markdown(results: dict, gpu: dict | None, chart_name: str, browser: dict | None = None, folder: Path | None = None) -> str:
    extra = {name: json.loads(path.read_text()) for name in ("slowloris", "soak", "lanes")
             if folder is not None and (path := folder / f"{name}.json").is_file()}
    # bench.matte's sections, as it printed them (quality, servers, warmup, allocator)
    matte = [(folder / f"matte-{name}.md").read_text() for name in ("quality", "servers", "warmup", "allocator")
             if folder is not None and (folder / f"matte-{name}.md").is_file()]
    # the front's sections, as their benches printed them (bench.lockout)
    front = [path.read_text() for path in sorted(folder.glob("front-*.md"))] if folder is not None else []
    # the cold matrix, as bench.cold printed it (each run's label: cold-<label>.md)
    cold = [path.read_text() for path in sorted(folder.glob("cold-*.md"))] if folder is not None else []
    return tidy(ENV.get_template("benchmarks.md.j2").render(f=Figures(results), results=results, gpu=gpu, browser=browser,
                                                             chart=chart_name, matte=matte, front=front, cold=cold, **extra))


def render_gpu(gpu: dict | None) -> str:
    return tidy(ENV.get_template("sections.md.j2").module.gpu_section(gpu))


def render_lanes(saved: dict) -> str:
    """The lanes table and ratios of one run (bench.lanes prints it)."""
    return tidy(ENV.get_template("sections.md.j2").module.lanes_table(saved["results"]))


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
