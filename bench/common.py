"""What every benchmark module shares: the photos, statistics, memory of a process tree, paths.

Nothing here imports the app: the suite's own process stays small and leaves the thread settings
of the servers it starts alone (app/native_threads.py sets OMP_NUM_THREADS & co. on import).
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
import os
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DOCS = ROOT / "docs"
WORK = Path(os.environ.get("BENCH_WORK", "/tmp/pilotlight-bench"))  # logs, optimised models, scratch
BENCH_VENV = Path(os.environ.get("BENCH_VENV", "/tmp/pilotlight-bench-venv"))  # rembg's CLI server lives here
MODEL = "u2net"
# the suite's sections, in the order it runs them (bench/suite.py) and the report lists them
SECTIONS = ("pipeline", "preopt", "compare", "throughput", "memory", "variants", "recycle")


def model_home() -> Path:
    """MODEL_HOME as the app reads it (app/config.py: default_model_home), without importing the app."""
    if os.environ.get("MODEL_HOME"):
        return Path(os.environ["MODEL_HOME"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path(os.environ.get("HOME", "~")) / ".cache")
    return Path(cache).expanduser() / "pilotlight" / "models"


# -- photos -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Photo:
    name: str
    description: str
    jpeg: bytes
    width: int
    height: int


def _insightface_t1() -> Path:
    """insightface's t1.jpg (1280x886, a real group photo): found in this interpreter's packages, or
    in the bench venv (requirements-nodeps.txt installs insightface there with --no-deps). Only
    its data file is read."""
    candidates: list[Path] = []
    spec = importlib.util.find_spec("insightface")
    if spec is not None and spec.submodule_search_locations:
        candidates.append(Path(list(spec.submodule_search_locations)[0]) / "data" / "images" / "t1.jpg")
    candidates += sorted(BENCH_VENV.glob("lib/python3*/site-packages/insightface/data/images/t1.jpg"))
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(
        "insightface's t1.jpg was not found; run the suite once without --no-setup (it installs "
        "requirements-nodeps.txt into BENCH_VENV) or pip install --no-deps -r requirements-nodeps.txt"
    )


def cutout_photo() -> Photo:
    """The background-removal photo: insightface's t1.jpg as shipped (1280x886 JPEG, six people)."""
    path = _insightface_t1()
    data = path.read_bytes()
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
    return Photo("t1.jpg", f"insightface's t1.jpg, a real photo, {width}x{height} JPEG as shipped ({len(data) // 1024} KiB)", data, width, height)


def portrait_photo() -> Photo:
    """The ID-photo portrait: scikit-image's astronaut (512x512, one frontal face), JPEG quality 92."""
    from PIL import Image
    from skimage import data

    buffer = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buffer, "JPEG", quality=92)
    raw = buffer.getvalue()
    return Photo("astronaut.jpg", f"scikit-image's astronaut, a real portrait, 512x512 JPEG q92 ({len(raw) // 1024} KiB)", raw, 512, 512)


# -- statistics ---------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), without numpy."""
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = math.ceil(position)
    if low == high:
        return ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values: Sequence[float]) -> dict[str, float]:
    values = list(values)
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": statistics.median(values),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "mean": statistics.fmean(values),
        "min": min(values),
        "max": max(values),
    }


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
