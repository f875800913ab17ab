"""The service: what the app owns. Settings, the model registry, loading, warming, readiness.

`Service.of(app)` (or `current_service()` inside a request) returns the app's one service, the way
flaskr's `get_db` returns its database. Blueprints ask it for models and run their inference inside
`service.inference()`. The serving layer (`app/serving/`, gunicorn's side) calls only this class:
it loads the models in the master (`load()`), warms each worker before it accepts (`warm()`), and
installs the per-worker admission gate and the start-up counter through the two small seams below
(`Admission`, `StartupCount`), so nothing here knows about gunicorn.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ContextManager, Protocol

from flask import Flask, current_app

from . import observability, warmup
from .config import Settings
from .errors import Busy, NotReady
from .models import sessions
from .models.registry import LoadedModel, Registry
from .models.sessions import Providers, resolve_providers

if TYPE_CHECKING:
    from flask.testing import FlaskClient

    from .timings import Timings

log = logging.getLogger(__name__)

EXTENSION = "pilotlight"


class Admission(Protocol):
    """Decides when a request may run its inference (the serving layer's gate in a worker)."""

    def slot(self, *, request: bool = True) -> ContextManager[None]:
        """Hold this worker's inference slot; `request` False: warm-up work, which picks no lane and
        is not counted as a request's."""
        ...

    def describe(self) -> dict[str, object]: ...

    def lanes_opened(self, threads: int) -> None:
        """This worker's wide lanes are open (`threads` intra-op threads): a lone inference may take them."""


class Unlimited:
    """Admission outside gunicorn (the CLI, the Flask test client): every request runs at once."""

    @contextmanager
    def slot(self, *, request: bool = True) -> Iterator[None]:
        yield

    def describe(self) -> dict[str, object]:
        return {}

    def lanes_opened(self, threads: int) -> None:
        return None


class StartupCount(Protocol):
    """How many workers have finished their start-up warm-up, of how many expected."""

    @property
    def warm(self) -> int: ...

    @property
    def expected(self) -> int: ...


@dataclass
class Phases:
    """Start-up phase durations in seconds, in the order they happened."""

    durations: dict[str, float] = field(default_factory=dict)

    def record(self, name: str, seconds: float) -> None:
        self.durations[name] = seconds
        log.info("startup phase %-24s %7.3f s  (pid %d)", name, seconds, os.getpid())

    def as_dict(self) -> dict[str, float]:
        return {name: round(seconds, 4) for name, seconds in self.durations.items()}


class Service:
    def __init__(self, settings: Settings, registry: Registry) -> None:
        self.settings = settings
        self.registry = registry
        self.phases = Phases()
        self.admission: Admission = Unlimited()
        self.live_admission: Admission = Unlimited()  # the camera's live checks' own lane (LiveGate)
        self.startup: StartupCount | None = None  # set by the serving layer when workers are counted
        self.warmup_sources: list[warmup.Source] = []
        self.warm_seconds: float | None = None
        self.warmup_steps: list[dict[str, object]] = []  # each warm-up request and model warm-up, timed
        self.warmed = False
        self.load_error: str | None = None
        self._providers: Providers | None = None
        self._app: Flask | None = None
        self._lazy_lock = threading.Lock()
        self._warming = threading.Lock()  # POST /warmup: one at a time per worker
        self._lazy_thread: threading.Thread | None = None
        self.wide_threads = 0  # set after the fork by the serving layer (LONE_REQUEST_THREADS); 0: none

    # -- wiring -----------------------------------------------------------------------------------

    @staticmethod
    def of(app: Flask) -> Service:
        return app.extensions[EXTENSION]

    def attach(self, app: Flask) -> None:
        """Make this the app's service (the app factory calls this once)."""
        app.extensions[EXTENSION] = self
        self._app = app

    def test_client(self) -> FlaskClient:
        if self._app is None:
            raise RuntimeError("this service is not attached to an app")
        return self._app.test_client()

    # -- models -----------------------------------------------------------------------------------

    @property
    def providers(self) -> Providers:
        """Execution providers and CPU memory options for every session, from the ORT_* settings."""
        if self._providers is None:
            settings = self.settings
            self._providers = resolve_providers(
                settings.ort_providers, cpu_arena=settings.ort_cpu_arena, mem_pattern=settings.ort_mem_pattern
            )
        return self._providers

    def load(self) -> list[LoadedModel]:
        """Load every model in MODELS not loaded yet, recording one start-up phase per model; then
        (unless WARMUP_REQUESTS=0) pay the process-wide first calls (`warmup.prime_process`) here,
        in the master when it loads: the workers it forks inherit them."""

        def loaded(entry: LoadedModel) -> None:
            self.phases.record(f"load {entry.name} ({entry.provider})", entry.load_seconds)
            observability.model_loaded(entry.name, entry.load_seconds, variant=entry.variant)

        entries = self.registry.load(
            self.settings.models,
            model_home=self.settings.model_home,
            providers=self.providers,
            optimised_home=self.settings.optimised_dir,
            on_loaded=loaded,
            model_precision=self.settings.model_precision,
        )
        if self.settings.warmup_requests:
            started = time.perf_counter()
            warmup.prime_process()
            self.phases.record("prime process-wide first calls", time.perf_counter() - started)
        return entries

    def open_wide_lanes(self) -> list[str]:
        """In a worker (never the master: thread pools do not survive a fork), open the wide lane of
        every loaded CPU model that has one (app/models/sessions.py); returns their names."""
        if self.wide_threads < 2:
            return []
        opened = sessions.open_wide_lanes(self.wide_threads)
        if opened:
            log.info("worker %d: wide lanes of %d threads for %s", os.getpid(), self.wide_threads, ",".join(opened))
            self.admission.lanes_opened(self.wide_threads)  # in lazy mode too, where they open with the models
        return opened

    @property
    def models_loaded(self) -> bool:
        return all(name in self.registry for name in self.settings.models)

    @contextmanager
    def inference(self, timings: Timings | None = None) -> Iterator[None]:
        """Run a request's model work inside this (it waits for, or is refused, a slot: `Busy`);
        `timings` is told which lane ran it (Server-Timing: lane;desc="wide")."""
        with self.admission.slot():
            if timings is not None:
                timings.notes["lane"] = sessions.current_lane()
            yield

    @contextmanager
    def live_inference(self, timings: Timings | None = None) -> Iterator[None]:
        """Run a live check's model work inside this: the live lane's slot (`Busy` when it is full),
        never the ID photos' (`inference`)."""
        with self.live_admission.slot():
            if timings is not None:
                timings.notes["lane"] = "live"
            yield

    # -- warm-up ----------------------------------------------------------------------------------

    def warm(
        self,
        *,
        heartbeat: Callable[[], None] | None = None,
        keep_going: Callable[[], bool] | None = None,
    ) -> float:
        """Run WARMUP_REQUESTS passes of every warm-up request through the app (app/warmup.py);
        returns the seconds taken and marks this process warm. `keep_going` is asked between passes
        (a worker told to stop stops warming); `heartbeat` runs after each pass."""
        started = time.perf_counter()
        passes = self.settings.warmup_requests
        narrow: warmup.Steps = []
        with sessions.forced_lane(sessions.NARROW):
            warmup.run(self, passes=passes, heartbeat=heartbeat, keep_going=keep_going, steps=narrow)
        wide: warmup.Steps = []
        if passes and sessions.wide_lanes_open() and "wide" not in self.settings.warmup_skip:
            # left out by default (config.WARMUP_SKIP_DEFAULT: the wide sessions draw on the arena the
            # narrow ones grew, and their first run measured no slower); WARMUP_SKIP=none runs every
            # model once more on its wide lane (not whole requests: at start-up every worker warms at
            # once, and whole wide requests on all of them oversubscribe the cores).
            # All-core work, so it takes an inference slot like any request: a POST /warmup on a busy
            # worker waits its turn (or gets the fast 503), never runs beside the slots' inferences
            with self.admission.slot(request=False), sessions.forced_lane(sessions.WIDE):
                for entry in self.registry.loaded():
                    warmup.warm_model(entry, wide)
        seconds = time.perf_counter() - started
        self.warmup_steps = [{"lane": lane, "step": step, "seconds": round(took, 4)}
                             for lane, done in ((sessions.NARROW, narrow), (sessions.WIDE, wide)) for step, took in done]
        self.warm_seconds = seconds
        self.warmed = True
        observability.worker_warm(seconds)
        return seconds

    def warm_on_demand(self) -> float:
        """POST /warmup: `warm()` again in this worker, one at a time (a second one meanwhile, and a
        full queue, get `Busy`: a fast 503). Each step holds the inference slot like a request."""
        if not self._warming.acquire(blocking=False):
            raise Busy("busy", "Busy: a warm-up is already running on this worker; retry shortly.",
                       details={"reason": "warming"})
        try:
            return self.warm()
        finally:
            self._warming.release()

    # -- lazy mode --------------------------------------------------------------------------------

    def ensure_ready(self) -> None:
        """Load (if needed) and warm this worker, once, whichever thread asks first; others wait."""
        if self.warmed:
            return
        with self._lazy_lock:
            if self.warmed:
                return
            try:
                self.load()
                self.open_wide_lanes()
                seconds = self.warm()
            except Exception as exc:
                self.load_error = type(exc).__name__  # /readyz says what failed, the log says where (no paths)
                log.exception("lazy model load failed in pid %d", os.getpid())
                raise
            self.load_error = None
            self.phases.record("warm-up (lazy)", seconds)

    def start_background_load(self) -> None:
        """Start `ensure_ready` in a thread (once), so a readiness probe never blocks on a load."""
        with self._lazy_lock:
            if self.warmed or (self._lazy_thread is not None and self._lazy_thread.is_alive()):
                return
            self._lazy_thread = threading.Thread(target=self._background_load, name="lazy-load", daemon=True)
            self._lazy_thread.start()

    def _background_load(self) -> None:
        try:
            self.ensure_ready()
        except Exception:  # logged and reported by /readyz through load_error
            return

    def require_ready(self) -> None:
        """For request handlers: `NotReady` until the models are loaded; in lazy mode, load on first use.

        Loaded is enough here: in preload mode a worker only accepts connections after its warm-up,
        and the warm-up's own requests pass through this check while it runs.
        """
        if self.warmed or self.models_loaded:
            return
        if self.settings.preload_models:
            raise NotReady("not_ready", "The models are still loading.")
        try:
            self.ensure_ready()
        except Exception:
            raise NotReady("not_ready", "The models could not be loaded; see the server log.") from None

    # -- readiness --------------------------------------------------------------------------------

    def readiness(self) -> tuple[bool, dict[str, object]]:
        """(ready, the /readyz body)."""
        body: dict[str, object] = {
            "pid": os.getpid(),
            "mode": "preload" if self.settings.preload_models else "lazy",
            "models": {entry.name: entry.describe() for entry in self.registry.loaded()},
            "worker": {
                "warm": self.warmed,
                "warmup_seconds": None if self.warm_seconds is None else round(self.warm_seconds, 4),
                "warmup_steps": self.warmup_steps,
                **self.admission.describe(),
            },
            "startup": self.phases.as_dict(),
        }
        if self.startup is not None:
            body["workers"] = {"warm": self.startup.warm, "expected": self.startup.expected}
        reason = self._not_ready_reason()
        body["status"] = "ready" if reason is None else "not_ready"
        if reason is not None:
            body["reason"] = reason
        return reason is None, body

    def _not_ready_reason(self) -> str | None:
        if self.load_error is not None:
            return f"model load failed ({self.load_error}); see the server log"
        if not self.models_loaded:
            return "models not loaded yet"
        if not self.warmed:
            return "this worker has not finished its warm-up"
        if self.startup is not None and self.startup.warm < self.startup.expected:
            return f"waiting for workers to warm up ({self.startup.warm} of {self.startup.expected} warm)"
        return None


def current_service() -> Service:
    """The service of the app handling the current request."""
    return Service.of(current_app)
