"""Warm-up: the photo, the requests, and the passes that run them through the app.

A warm worker is one that has already run the exact code path of a real request: decoding,
detection, segmentation, placement, compositing, encoding. So warm-up sends real requests through
the Flask app itself (its test client, in process), on scikit-image's astronaut (a real,
public-domain portrait that ships inside a dependency). Each blueprint exports the requests that
cover its endpoints as data (`Source`: the loaded registry in, `WarmupRequest`s out); models that no
request covers get their own `warmup()`.

WARMUP_REQUESTS is read here only: the number of passes. 0 turns warm-up off everywhere: no pass
runs at start-up, in lazy mode or on `POST /warmup`, and a worker counts as warm without one.
"""

from __future__ import annotations

import functools
import io
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from . import observability

if TYPE_CHECKING:
    from flask.testing import FlaskClient

    from .models.registry import LoadedModel, Registry


@dataclass(frozen=True)
class WarmupRequest:
    """One multipart POST that warm-up sends through the app with the warm-up photo as `image`."""

    path: str
    fields: dict[str, str]
    models: tuple[str, ...]  # the models this request exercises


Source = Callable[["Registry"], list[WarmupRequest]]


@functools.cache
def photo() -> bytes:
    """The warm-up portrait as a JPEG (512x512, one frontal face)."""
    from PIL import Image
    from skimage import data

    buffer = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buffer, "JPEG", quality=92)
    return buffer.getvalue()


def requests_for(registry: Registry, sources: Sequence[Source]) -> list[WarmupRequest]:
    return [request for source in sources for request in source(registry)]


Steps = list[tuple[str, float]]
"""(what ran, seconds): each warm-up request and each model warm-up, in order (/readyz shows them)."""


def run_pass(client: FlaskClient, registry: Registry, sources: Sequence[Source], steps: Steps | None = None) -> None:
    """One pass: every warm-up request through the app, then `warmup()` of each loaded model that
    no request covered (appending each to `steps`). RuntimeError when a request answers 5xx."""
    covered: set[str] = set()
    for request in requests_for(registry, sources):
        started = time.perf_counter()
        response = client.post(
            request.path,
            data={**request.fields, "image": (io.BytesIO(photo()), "warmup.jpg")},
            environ_base={observability.WARMUP_ENVIRON: "1"},  # left out of the metrics
        )
        if response.status_code >= 500:
            raise RuntimeError(
                f"warm-up request {request.path} failed with {response.status_code}: {response.get_data(as_text=True)[:200]}"
            )
        covered.update(request.models)
        if steps is not None:
            steps.append((f"POST {request.path} {' '.join(f'{k}={v}' for k, v in request.fields.items())}".strip(),
                          time.perf_counter() - started))
    for entry in registry.loaded():
        if entry.name not in covered or len(getattr(entry.model, "SHAPES", ())) > 1:
            warm_model(entry, steps)  # a model of several input shapes runs those this lane has not run yet


def warm_model(entry: LoadedModel, steps: Steps | None) -> None:
    """`warmup()` of one loaded model, timed into `steps`."""
    started = time.perf_counter()
    entry.model.warmup()
    if steps is not None:
        steps.append((f"{entry.name}.warmup()", time.perf_counter() - started))


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
        run_pass(client, service.registry, service.warmup_sources, steps)
        done += 1
        if heartbeat is not None:
            heartbeat()
    return done


class _Warmable(Protocol):  # what `run` needs of the service (app/service.py passes itself)
    registry: Registry
    warmup_sources: list[Source]

    def test_client(self) -> FlaskClient: ...
