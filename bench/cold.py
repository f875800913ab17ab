"""The cold matrix: is the first request after ready the hundredth, for every photo a user may send?

    .venv/bin/python -m bench.cold matrix [--starts N] [--workers W ...] [--kind K ...] [--shape S ...]
                                          [--format F ...] [--env NAME=VALUE ...] [--label L] [--quick] [--json OUT]
    .venv/bin/python -m bench.cold memory [--quick]

Every cell is one kind of request (a u2net cut-out, a MODNet cut-out, an ID photo, a print sheet,
face analysis) of one photo (square, portrait, landscape, small, a 12 MP phone photo: real corpus
portraits, tests/support/corpus.py) in one format (JPEG, PNG, HEIC), and every cell gets fresh
servers of its own: pilotlight started as a user starts it (./start.sh, the default models and
warm-up, --workers workers), and the first request sent the moment /readyz turns 200.

- Wide lane (a lone request): that first request against the median of the lone ones after it.
- Narrow lanes (2 clients): then the first pair sent together (the second worker of the pair has
  served nothing since its warm-up) against the median of the pairs after it.

Each figure is the median over --starts fresh starts, with the lowest and highest beside it; the
table ends with the worst cell and what was in it. Time to ready is given in bare u2net forward
passes (one thread, measured in this run, before and after the matrix).

A full matrix (5 kinds x 5 shapes x 3 formats, 2 and 4 workers, 3 starts) is 450 fresh starts:
about two hours on 2 cores. --kind/--shape/--format take a part of it.

memory: what the copy-on-write sharing and the memory keepers cost, with the default models. The
summed PSS of the server (master, workers, nginx) at rest, after every worker has served requests
of each kind and the idle release has run (RELEASE_MEMORY_IDLE_S + 2 s), at 1 and at 4 workers:
with no memory keeper (KEEP_MEMORY_WORKERS=0: the sharing itself) and with the default (one keeper
per usable core).

Figures depend on the machine: compare the ratios printed in one run.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from .common import RESULTS, ROOT, WORK, say, write_json
from .lanes import pilotlight
from .matte import DEFAULTS, bare_u2net_seconds, pair, portraits, spread
from tests.support.harness import Call, must

# kind: (path, form fields)
KINDS: dict[str, tuple[str, dict[str, str]]] = {
    "u2net cut-out": ("/api/v1/remove-background", {"model": "u2net"}),
    "modnet cut-out": ("/api/v1/remove-background", {"model": "modnet"}),
    "ID photo": ("/api/v1/idphoto", {"spec": "us-passport"}),
    "print sheet": ("/api/v1/idphoto/sheet", {"spec": "us-passport", "paper": "4x6"}),
    "face analysis": ("/api/v1/faces", {}),
}


def _as_phone(rgb: np.ndarray) -> np.ndarray:  # a 3:4 crop from the top, at a phone's 12 MP (3024 x 4032)
    height = min(rgb.shape[0], rgb.shape[1] * 4 // 3)
    crop = Image.fromarray(rgb[:height, : height * 3 // 4])
    return np.asarray(crop.resize((3024, 4032), Image.Resampling.LANCZOS))


# shape: (corpus portrait, what is done to it)
SHAPES: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
    "square": ("feat-happy", lambda rgb: rgb),  # 512 x 512
    "portrait": ("obama", lambda rgb: rgb),  # 910 x 1137
    "landscape": ("franck-neutral", lambda rgb: rgb),  # 720 x 576
    "small": ("connery", lambda rgb: rgb),  # 350 x 466
    "12 MP": ("obama-standing", _as_phone),  # 3024 x 4032
}

# format: (encode, file name, content type)
FORMATS: dict[str, tuple[Callable[[Image.Image, io.BytesIO], None], str, str]] = {
    "JPEG": (lambda image, out: image.save(out, "JPEG", quality=92), "photo.jpg", "image/jpeg"),
    "PNG": (lambda image, out: image.save(out, "PNG"), "photo.png", "image/png"),
    "HEIC": (lambda image, out: _heif().from_pillow(image).save(out, quality=90), "IMG_0001.HEIC", "image/heic"),
}


def _heif():  # noqa: ANN202  (pillow-heif's encoder, a dev dependency; the app decodes with pi-heif)
    import pillow_heif

    return pillow_heif


@dataclass(frozen=True)
class Cell:
    kind: str
    shape: str
    format: str

    def label(self) -> str:
        return f"{self.kind}, {self.shape} {self.format}"


def calls(cells: list[Cell]) -> dict[Cell, Call]:
    """Each cell's request, its photo encoded once."""
    rgb = portraits()
    photos: dict[tuple[str, str], bytes] = {}
    made: dict[Cell, Call] = {}
    for cell in cells:
        key = (cell.shape, cell.format)
        encode, filename, content_type = FORMATS[cell.format]
        if key not in photos:
            name, shaped = SHAPES[cell.shape]
            buffer = io.BytesIO()
            encode(Image.fromarray(shaped(rgb[name])), buffer)
            photos[key] = buffer.getvalue()
        path, fields = KINDS[cell.kind]
        made[cell] = Call(cell.kind, path, "image", photos[key], fields, filename, content_type)
    return made




def one_start(cell: Cell, call: Call, *, workers: int, env: dict[str, str], steady: int) -> dict[str, float]:
    """A fresh server for one cell: its first lone request and first pair, each against the median after it."""
    name = f"cold-{workers}-{cell.kind}-{cell.shape}-{cell.format}".replace(" ", "_")
    with pilotlight(name, WORK / "cold", **{**DEFAULTS, "WORKERS": str(workers), **env}) as server:
        started = server.wait_started(ready_path="/readyz")
        first = must(call.send(server.url), f"first {cell.label()}")
        lone = statistics.median(must(call.send(server.url), cell.label()).seconds for _ in range(steady))
        first_pair = pair(server, call)
        pairs = statistics.median(pair(server, call) for _ in range(max(2, steady // 2)))
        stages = {stage: round(seconds, 4) for stage, seconds in first.server_timing.items()}
    return {"ready_s": started["ready_s"], "first_s": first.seconds, "steady_s": lone, "wide": first.seconds / lone,
            "first_pair_s": first_pair, "pair_s": pairs, "narrow": first_pair / pairs, "first_stages": stages}




def table(results: dict[str, dict], workers: int, cells: list[Cell]) -> list[str]:
    """One worker count's matrix: a row per kind and shape, a column per format, "wide; narrow" in each."""
    formats = list(dict.fromkeys(cell.format for cell in cells))
    rows = list(dict.fromkeys((cell.kind, cell.shape) for cell in cells))
    lines = [f"| {workers} workers: kind, photo | " + " | ".join(f"{fmt}: wide; narrow" for fmt in formats) + " |",
             "|---|" + "---|" * len(formats)]
    for kind, shape in rows:
        row = []
        for fmt in formats:
            runs = results.get(Cell(kind, shape, fmt).label(), {}).get(str(workers))
            row.append("; ".join(spread([run[lane] for run in runs]) for lane in ("wide", "narrow")) if runs else "-")
        lines.append(f"| {kind}, {shape} | " + " | ".join(row) + " |")
    return lines


RATIO_BOUND = 1.10
FLOOR_S = 0.020
"""A cell holds when its first request takes at most the larger of RATIO_BOUND x the steady median
and the steady median + FLOOR_S, as the median over its fresh starts (issue 53): where a request
takes 50-80 ms, 1.10x is 5-8 ms, inside this machine's run-to-run spread."""

LANE_TIMES = {"wide": ("first_s", "steady_s"), "narrow": ("first_pair_s", "pair_s")}


def over_bound(run: dict[str, float], lane: str) -> float:
    """The first request against its bound (1.0: on it; above 1.0: over it)."""
    first, steady = (run[key] for key in LANE_TIMES[lane])
    return first / max(RATIO_BOUND * steady, steady + FLOOR_S)


def cells_over(results: dict[str, dict]) -> list[str]:
    """The cells (with worker count and lane) whose median over starts is over the bound."""
    return [f"{label}, {workers} workers, {lane} lane" for label, by_workers in results.items()
            for workers, runs in by_workers.items() for lane in LANE_TIMES
            if statistics.median(over_bound(run, lane) for run in runs) > 1.0]


def worst(results: dict[str, dict]) -> tuple[float, str]:
    """The highest median figure in the matrix and where it was."""
    found = (0.0, "none")
    for label, by_workers in results.items():
        for workers, runs in by_workers.items():
            for lane in LANE_TIMES:
                figure = statistics.median(run[lane] for run in runs)
                if figure > found[0]:
                    slowest = max(runs, key=lambda run: run[lane])
                    stages = ", ".join(f"{k} {v:.3f} s" for k, v in slowest["first_stages"].items())
                    found = (figure, f"{label}, {workers} workers, {lane} lane: {spread([r[lane] for r in runs])} "
                                     f"(first {slowest['first_s' if lane == 'wide' else 'first_pair_s']:.3f} s against "
                                     f"{slowest['steady_s' if lane == 'wide' else 'pair_s']:.3f} s; its first request's stages: {stages})")
    return found


def main(argv: list[str] | None = None) -> None:
    top = argparse.ArgumentParser(prog="python -m bench.cold", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = top.add_subparsers(dest="command", required=True)
    parser = commands.add_parser("matrix")
    memory = commands.add_parser("memory")
    memory.add_argument("--quick", action="store_true", help="results stay in $BENCH_WORK")
    parser.add_argument("--starts", type=int, default=3, help="fresh starts per cell (default 3)")
    parser.add_argument("--workers", type=int, action="append", help="WORKERS (default: 2 and 4)")
    parser.add_argument("--kind", action="append", choices=list(KINDS))
    parser.add_argument("--shape", action="append", choices=list(SHAPES))
    parser.add_argument("--format", action="append", choices=list(FORMATS))
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for every server (a setting under test)")
    parser.add_argument("--label", default="", help="what this run measures (its results file: cold-<label>.md)")
    parser.add_argument("--quick", action="store_true", help="fewer steady requests; results stay in $BENCH_WORK")
    parser.add_argument("--json", help="write every run here")
    args = top.parse_args(argv)
    if args.command == "memory":
        return memory_main(args)
    workers = args.workers or [2, 4]
    env = dict(item.split("=", 1) for item in args.env)
    cells = [Cell(kind, shape, fmt) for kind in args.kind or KINDS for shape in args.shape or SHAPES
             for fmt in args.format or FORMATS]
    made = calls(cells)
    steady = 2 if args.quick else 4
    bare = [bare_u2net_seconds()]
    results: dict[str, dict] = {}
    began = time.monotonic()
    for number, cell in enumerate(cells, 1):
        for count in workers:
            for start in range(args.starts):
                say(f"[cold] {number}/{len(cells)} {cell.label()}, {count} workers, start {start + 1} of {args.starts} "
                    f"({time.monotonic() - began:.0f} s)")
                run = one_start(cell, made[cell], workers=count, env=env, steady=steady)
                results.setdefault(cell.label(), {}).setdefault(str(count), []).append(run)
                if args.json:  # every run as it comes: a long matrix stopped half-way keeps its half
                    write_json(Path(args.json), {"env": env, "bare_u2net_s": bare, "results": results})
    bare.append(bare_u2net_seconds())
    lines = report(results, cells, workers, bare, args, env, time.monotonic() - began)
    if args.json:
        write_json(Path(args.json), {"env": env, "bare_u2net_s": bare, "results": results})
    publish(f"cold-{args.label or 'matrix'}", lines, quick=args.quick)
    if not (args.quick or args.label or env):  # the whole promise, on the defaults: the README says its worst figure
        promise(results, workers, args.starts)


README_MARK = ("<!-- bench.cold: the promise -->", "<!-- /bench.cold -->")


def promise(results: dict[str, dict], workers: list[int], starts: int) -> None:
    """The README's promise, in its first paragraph, with the matrix's worst cell (between README_MARK)."""
    figure, where = worst(results)
    readme = ROOT / "README.md"
    text = readme.read_text()
    start, end = text.index(README_MARK[0]) + len(README_MARK[0]), text.index(README_MARK[1])
    kinds = len({label.split(",")[0] for label in results})
    sentence = (f" Measured over {len(results)} photos and requests ({kinds} kinds, JPEG, PNG and HEIC, square to 12 MP), "
                f"alone and two at once, at {' and '.join(map(str, workers))} workers, the slowest first request after ready "
                f"took **{figure:.2f}x** the steady median ({where.split(':')[0]}; median of {starts} fresh starts), and "
                f"{len(cells_over(results))} of {sum(len(by) for by in results.values()) * 2} cells took more than the larger "
                f"of {RATIO_BOUND:.2f}x and the steady median + {FLOOR_S * 1000:.0f} ms "
                f"([the cold matrix](docs/BENCHMARKS.md#the-first-request-after-ready-for-every-photo-benchcold)). ")
    readme.write_text(text[:start] + sentence + text[end:])


def publish(name: str, lines: list[str], *, quick: bool) -> None:
    """Print `lines`, save them as bench/results/<name>.md and re-render docs/BENCHMARKS.md (a --quick
    run's figures stay in $BENCH_WORK)."""
    text = "\n".join(lines) + "\n"
    print(text, flush=True)  # noqa: T201
    target = WORK if quick else RESULTS
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{name}.md").write_text(text)
    if not quick:
        from .report import write

        write(RESULTS / "cpu.json")


def memory_main(args: argparse.Namespace) -> None:
    """Summed PSS at rest at 1 and 4 workers, without memory keepers and with the default."""
    from tests.support.harness import serve_every_worker

    made = calls([Cell(kind, "portrait", "JPEG") for kind in KINDS])
    rest_s = 2.0 + 2.0  # RELEASE_MEMORY_IDLE_S's default, and the watchdog's period that acts on it
    rows: dict[str, dict[int, dict]] = {}
    for label, env in (("no memory keeper (KEEP_MEMORY_WORKERS=0)", {"KEEP_MEMORY_WORKERS": "0"}),
                       ("the default (KEEP_MEMORY_WORKERS=auto: one per usable core)", {})):
        for workers in (1, 4):
            say(f"[cold] memory: {label}, {workers} worker(s)")
            with pilotlight(f"memory-{workers}-{len(rows)}", WORK / "cold", **{**DEFAULTS, "WORKERS": str(workers), **env}) as server:
                server.wait_started(ready_path="/readyz")
                at_ready = server.memory()
                for call in made.values():
                    serve_every_worker(server, call, workers=workers, per_worker=1, max_waves=8)
                time.sleep(rest_s)
                rows.setdefault(label, {})[workers] = {"ready": at_ready, "rest": server.memory()}
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [f"<!-- python -m bench.cold memory, {when} -->",
             "## Memory at rest with the default models: summed PSS of the server after every worker served each kind "
             "(portrait JPEG) and then rested", "",
             "| setting | 1 worker (MiB) | 4 workers (MiB) | 4 workers / 1 | at ready: 1 worker; 4 workers (MiB) |", "|---|---|---|---|---|"]
    for label, by in rows.items():
        one, four = (by[w]["rest"]["tree_pss_mib"] for w in (1, 4))
        lines.append(f"| {label} | {one:,.0f} | {four:,.0f} | {four / one:.2f}x | "
                     f"{by[1]['ready']['tree_pss_mib']:,.0f}; {by[4]['ready']['tree_pss_mib']:,.0f} |")
    lines.append("")
    publish("cold-memory", lines, quick=args.quick)


def report(results: dict[str, dict], cells: list[Cell], workers: list[int], bare: list[float],
           args: argparse.Namespace, env: dict[str, str], seconds: float) -> list[str]:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    setting = ", ".join(f"{k}={v}" for k, v in env.items()) or "the defaults"
    pass_s = statistics.median(bare)
    command = " ".join(sys.argv[1:])
    lines = [f"<!-- python -m bench.cold {command}, {when}, {seconds / 60:.0f} min -->",
             f"## The cold matrix{f' ({args.label})' if args.label else ''}: first request after ready / steady median, "
             f"{setting}, {args.starts} fresh start(s) per cell: median [lowest, highest]", ""]
    for count in workers:
        lines += [*table(results, count, cells), ""]
        ready = [run["ready_s"] / pass_s for by in results.values() for run in by.get(str(count), [])]
        if ready:
            lines.append(f"- {count} workers: ready in {spread(ready)} bare u2net forward passes over all {len(ready)} starts "
                         f"(a pass: {pass_s:.3f} s, one thread, the median of {len(bare)} measured in this run).")
    figure, where = worst(results)
    over = cells_over(results)
    lines += [f"- Worst cell: **{figure:.2f}**, {where}.",
              f"- Cells over the bound (the first request at most the larger of {RATIO_BOUND:.2f}x and the steady median "
              f"+ {FLOOR_S * 1000:.0f} ms, median over starts): {len(over)} of {sum(len(by) for by in results.values()) * 2}"
              + (f": {'; '.join(over)}." if over else "."), ""]
    return lines


if __name__ == "__main__":
    main()
