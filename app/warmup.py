"""Warm-up: the photo, the requests, and the passes that run them through the app.

A warm worker is one that has already run the exact code path of a real request: decoding,
detection, segmentation, placement, compositing, encoding. So warm-up sends real requests through
the Flask app itself (its test client, in process), on scikit-image's astronaut (a real,
public-domain portrait that ships inside a dependency). Each blueprint exports the requests that
cover its endpoints as data (`Source`: the loaded service in, `WarmupRequest`s out); models that no
request covers get their own `warmup()`. Each (model, input shape, lane) is warmed once: the
warm-up photo gives every model one shape, so a request whose endpoint and models earlier requests of
the pass already ran is left out, and a model's `warmup()` runs only the shapes not yet run.

WARMUP_REQUESTS is read here only: the number of passes. 0 turns warm-up off everywhere: no pass
runs at start-up, in lazy mode or on `POST /warmup`, and a worker counts as warm without one.
"""

from __future__ import annotations

import functools
import io
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ContextManager, Protocol

from . import observability
from .errors import Busy

if TYPE_CHECKING:
    from flask.testing import FlaskClient

    from .config import Settings
    from .models.registry import LoadedModel, Registry


@dataclass(frozen=True)
class WarmupRequest:
    """One multipart POST that warm-up sends through the app with the warm-up photo as `image`."""

    path: str
    fields: dict[str, str]
    models: tuple[str, ...]  # the models this request exercises


Source = Callable[["_Warmable"], list[WarmupRequest]]
"""What a blueprint warms: the loaded service (its registry and settings) in, its requests out."""


@functools.cache
def photo() -> bytes:
    """The warm-up portrait as a JPEG (512x512, one frontal face)."""
    from PIL import Image
    from skimage import data

    buffer = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buffer, "JPEG", quality=92)
    return buffer.getvalue()


HEIC_SAMPLE = "warmup.heic"
"""Beside this file: the astronaut at 128 x 128 px as HEIC (5.8 KB), made once with pillow-heif (which
encodes; the app's pi-heif only decodes), public domain as the astronaut is."""


@functools.cache
def heic_sample() -> bytes:
    return (Path(__file__).parent / HEIC_SAMPLE).read_bytes()


def decode_heic_sample(steps: Steps | None = None) -> None:
    """Decode the HEIC sample as a request's upload is decoded (app.imageio.decode). A worker's first
    HEIF decode took 25-29 ms against 13 ms in a warm process (bench.cold), which put every short
    HEIC request over the cold bound: libheif and libde265 set up their decoder in each process."""
    from .imageio import decode

    with timed(steps, f"decode {HEIC_SAMPLE}"):
        decode(heic_sample(), max_pixels=1_000_000)


@functools.cache
def prime_process() -> None:
    """First-call costs that belong to the process, not to a model or a lane, paid once (fork passes
    them on to the workers): OpenCV's CIELAB tables, which the kept-background ID photo's measures
    build on their first colour conversion (0.15 s; the warm-up's sheet replaces its background and
    never converts), and pymatting's compiled foreground estimate (numba loads it on first call)."""
    import numpy as np
    from pymatting import estimate_foreground_ml

    from .imaging.opencv import cv2

    cv2.cvtColor(np.zeros((1, 1, 3), np.uint8), cv2.COLOR_RGB2Lab)
    estimate_foreground_ml(np.zeros((4, 4, 3)), np.full((4, 4), 0.5))


def requests_for(service: _Warmable, sources: Sequence[Source]) -> list[WarmupRequest]:
    """The pass's requests, in order, less those that would only repeat earlier ones: same endpoint,
    no model that an earlier request has not run."""
    chosen: list[WarmupRequest] = []
    paths: set[str] = set()
    models: set[str] = set()
    for request in (request for source in sources for request in source(service)):
        if request.path in paths and models.issuperset(request.models):
            continue
        chosen.append(request)
        paths.add(request.path)
        models.update(request.models)
    return chosen


Steps = list[tuple[str, float]]
"""(what ran, seconds): each warm-up request and each model warm-up, in order (/readyz shows them)."""


def run_pass(client: FlaskClient, service: _Warmable, sources: Sequence[Source], steps: Steps | None = None) -> None:
    """One pass: every warm-up request through the app, then `warmup()` of each loaded model that
    no request covered (appending each to `steps`), less the steps WARMUP_SKIP names ("requests",
    "shapes": app/config.py, WARMUP_STEPS). RuntimeError when a request answers 5xx."""
    covered: set[str] = set()
    skip = service.settings.warmup_skip
    if "requests" not in skip:
        decode_heic_sample(steps)
    for request in [] if "requests" in skip else requests_for(service, sources):
        started = time.perf_counter()
        response = client.post(
            request.path,
            data={**request.fields, "image": (io.BytesIO(photo()), "warmup.jpg")},
            environ_base={observability.WARMUP_ENVIRON: "1"},  # left out of the metrics
        )
        if response.status_code == 503 and _error_code(response) == "busy":  # POST /warmup on a full worker
            raise Busy("busy", "Busy: this worker's queue is full, so the warm-up did not run; retry shortly.")
        if response.status_code >= 500:
            raise RuntimeError(
                f"warm-up request {request.path} failed with {response.status_code}: {response.get_data(as_text=True)[:200]}"
            )
        covered.update(request.models)
        if steps is not None:
            steps.append((f"POST {request.path} {' '.join(f'{k}={v}' for k, v in request.fields.items())}".strip(),
                          time.perf_counter() - started))
    for entry in [] if "shapes" in skip else service.registry.loaded():
        if entry.name not in covered or len(getattr(entry.model, "SHAPES", ())) > 1:
            with service.admission.slot(request=False):  # model work, so it holds the slot like a request
                warm_model(entry, steps)  # a model of several input shapes runs those this lane has not run yet


def _error_code(response: object) -> str | None:
    body = response.get_json(silent=True)  # type: ignore[attr-defined]
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("code") if isinstance(error, dict) else None


@contextmanager
def timed(steps: Steps | None, what: str) -> Iterator[None]:
    """Time the body into `steps` as (what, seconds) when it ends without an error."""
    started = time.perf_counter()
    yield
    if steps is not None:
        steps.append((what, time.perf_counter() - started))


def warm_model(entry: LoadedModel, steps: Steps | None) -> None:
    """`warmup()` of one loaded model, timed into `steps`."""
    with timed(steps, f"{entry.name}.warmup()"):
        entry.model.warmup()


def run(
    service: _Warmable,
    *,
    passes: int,
    heartbeat: Callable[[], None] | None = None,
    keep_going: Callable[[], bool] | None = None,
    steps: Steps | None = None,
) -> int:
    """Run up to `passes` passes; returns how many ran (`keep_going` is asked before each)."""
    client = service.test_client()
    done = 0
    for _ in range(passes):
        if keep_going is not None and not keep_going():
            break
        run_pass(client, service, service.warmup_sources, steps)
        done += 1
        if heartbeat is not None:
            heartbeat()
    return done


class _Slot(Protocol):  # the service's admission: the inference slot that model work holds
    def slot(self, *, request: bool = True) -> ContextManager[None]: ...


class _Warmable(Protocol):  # what `run` and the sources need of the service (app/service.py passes itself)
    settings: Settings
    registry: Registry
    admission: _Slot
    warmup_sources: list[Source]

    def test_client(self) -> FlaskClient: ...
