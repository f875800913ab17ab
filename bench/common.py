"""What every benchmark module shares: paths, the model, results files, progress lines (the photos,
the harness and its statistics are test support: tests/support/).

Nothing here imports the app: the suite's own process stays small and leaves the thread settings
of the servers it starts alone (app/native_threads.py sets OMP_NUM_THREADS & co. on import).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path

from tests.support.harness import ROOT

RESULTS = ROOT / "bench" / "results"
DOCS = ROOT / "docs"
WORK = Path(os.environ.get("BENCH_WORK", "/tmp/pilotlight-bench"))  # logs, optimised models, scratch
MODEL = "u2net"
# the suite's sections, in the order it runs them (bench/suite.py) and the report lists them
SECTIONS = ("pipeline", "preopt", "compare", "throughput", "memory", "variants", "recycle")


def model_home() -> Path:
    """MODEL_HOME as the app reads it (app/config.py: default_model_home), without importing the app."""
    if os.environ.get("MODEL_HOME"):
        return Path(os.environ["MODEL_HOME"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path(os.environ.get("HOME", "~")) / ".cache")
    return Path(cache).expanduser() / "pilotlight" / "models"


# -- statistics ---------------------------------------------------------------------------------


def median(values: Iterable[float]) -> float:
    values = [value for value in values if value is not None and not math.isnan(value)]
    return statistics.median(values) if values else math.nan


# -- results ------------------------------------------------------------------------------------


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False, default=_json_default) + "\n")
    tmp.replace(path)


def _json_default(value: object) -> object:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def say(message: str) -> None:
    """Progress on stderr (stdout carries the tables)."""
    print(message, file=sys.stderr, flush=True)  # noqa: T201


# -- ID photo outcomes ---------------------------------------------------------------------------


def outcome_lines(results: dict[str, dict], *, label: str, before: str, after: str) -> list[str]:
    """A Markdown table of ID photo outcomes (tests/support/judge.py: idphoto_outcomes) per variant
    (`results`: variant -> {(portrait, spec): outcome}), then every outcome that differs between
    the variants `before` and `after`."""
    lines = [f"| {label} | compliant | rule broken | refused |", "|---|---|---|---|"]
    for variant, outcomes in results.items():
        values = list(outcomes.values())
        lines.append(f"| {variant} | {values.count('compliant')} | {sum(v.startswith('broken') for v in values)} | "
                     f"{sum(v.startswith('refused') for v in values)} |")
    first, second = results[before], results[after]
    changed = [(key, first[key], second[key]) for key in first if first[key] != second[key]]
    lines += ["", f"{len(changed)} of {len(first)} outcomes differ" + (":" if changed else "")]
    lines += [f"- {name} {spec_id}: {before} {was}; {after} {now}" for (name, spec_id), was, now in changed]
    return lines
