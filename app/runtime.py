"""Per-process serving state, attached to the Flask app: models, warmth, readiness, backpressure.

The gunicorn hooks (through `app.lifecycle`) and the blueprints share one `Runtime`:
- `load_models()` fills the registry and records one timing per model (the start-up phases);
- `warm()` runs WARMUP_REQUESTS passes of every warm-up request through the Flask app itself, so a
  warm worker has run the exact code path of a real request;
- `readiness()` answers /readyz: this worker is warm, and, at start-up, every worker is warm
  (`StartupGate`, a counter in shared memory created in the master before the fork);
- `inference()` admits one inference at a time per worker and turns requests away with a fast 503
  once QUEUE_DEPTH are already waiting.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from . import memory, observability
from .config import Settings
from .errors import ApiError
from .models.registry import LoadedModel, Registry
from .models.sessions import Providers

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WarmupRequest:
    """One request that warm-up sends through the app: a multipart POST with a generated image."""

    path: str
    fields: dict[str, str]
    models: tuple[str, ...]  # the models this request exercises


@dataclass
class Phases:
    """Start-up phase durations in seconds, in the order they happened."""

    durations: dict[str, float] = field(default_factory=dict)

    def record(self, name: str, seconds: float) -> None:
        self.durations[name] = seconds
        log.info("startup phase %-24s %7.3f s  (pid %d)", name, seconds, os.getpid())

    def as_dict(self) -> dict[str, float]:
        return {name: round(seconds, 4) for name, seconds in self.durations.items()}


class StartupGate:
    """Counts workers that finished their start-up warm-up, in memory shared across the fork."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self._warm = multiprocessing.get_context("fork").Value("i", 0)

    def worker_warm(self) -> None:
        with self._warm.get_lock():
            self._warm.value += 1

    @property
    def warm(self) -> int:
        return int(self._warm.value)

    @property
    def open(self) -> bool:
        return self.warm >= self.expected


class MemoryKeepers:
    """The workers that keep their working memory when idle (KEEP_MEMORY_WORKERS): their pids, in
    memory shared across the fork.

    With RELEASE_MEMORY=idle a quiet worker gives its onnxruntime buffers back, and its next run
    pays for growing them again. A keeper holds on to its buffers instead, and an idle keeper wins
    the race to accept a new connection (app/worker.py), so the first request after a quiet spell
    runs at full speed while the other workers cost almost nothing at rest. A worker becomes a
    keeper when it goes idle and a slot is free; the master frees a dead worker's slot.
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self._pids = multiprocessing.get_context("fork").Array("i", max(count, 1))

    def claim(self, pid: int) -> bool:
        """True when `pid` is (now) a keeper."""
        if self.count == 0:
            return False
        with self._pids.get_lock():
            slots = self._pids.get_obj()
            if pid in slots[: self.count]:
                return True
            for index in range(self.count):
                if slots[index] == 0:
                    slots[index] = pid
                    return True
        return False

    def holds(self, pid: int) -> bool:
        return self.count > 0 and pid in self._pids[: self.count]

    def drop(self, pid: int) -> None:
        with self._pids.get_lock():
            slots = self._pids.get_obj()
            for index in range(self.count):
                if slots[index] == pid:
                    slots[index] = 0


class InferenceGate:
    """One inference at a time per worker; at most `queue_depth` requests wait for it, and the
    next one is turned away at once (503 busy, Retry-After) instead of queueing without bound."""

    def __init__(self, *, queue_depth: int, wait_timeout: float, release_after_request: bool = False) -> None:
        self.queue_depth = queue_depth
        self.wait_timeout = wait_timeout
        self.release_after_request = release_after_request
        self._cond = threading.Condition()
        self._busy = False
        self._waiting = 0
        self.busy_since: float | None = None  # monotonic time the running inference started
        self.released_at = time.monotonic()  # when the last inference ended
        self.released = True  # no inference since memory was last released
        self.rejected = 0
        self._arriving = 0  # requests accepted here that have not reached the gate yet (app/worker.py)
        self._request = threading.local()  # per pool thread: is this thread's request still counted as arriving?

    # -- arrivals: a request counts towards `load` from its accept, so a burst of connections
    #    spreads over the workers before any of its requests has reached a gate

    def arrived(self) -> None:
        """A connection was handed to this worker's thread pool (its main thread, on accept)."""
        with self._cond:
            self._arriving += 1

    def begin_request(self) -> None:
        """This pool thread starts handling the connection `arrived()` counted."""
        self._request.arriving = True

    def end_request(self) -> None:
        """This pool thread is done with the connection (with or without an inference)."""
        with self._cond:
            self._settle_arrival()

    def _settle_arrival(self) -> None:  # under self._cond
        if getattr(self._request, "arriving", False):
            self._request.arriving = False
            self._arriving -= 1

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._cond:
            self._settle_arrival()  # from here on it counts as waiting or busy
            if self._busy and self._waiting >= self.queue_depth:
                self.rejected += 1
                raise busy_error("the server is at capacity")
            self._waiting += 1
            try:
                if not self._cond.wait_for(lambda: not self._busy, timeout=self.wait_timeout):
                    raise busy_error("timed out waiting for a free inference slot")
            finally:
                self._waiting -= 1
            self._busy = True
            self.busy_since = time.monotonic()
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self.busy_since = None
                self.released_at = time.monotonic()
                self.released = False
                release_now = self.release_after_request and self._waiting == 0
                self._cond.notify()
            if release_now:
                self.release()

    def release(self) -> None:
        """Give this worker's free working memory back to the OS (see app/memory.py)."""
        self.released = True
        memory.release()

    def idle_for(self) -> float:
        """Seconds since the last inference ended (0 while one runs or waits)."""
        if self._busy or self._waiting:
            return 0.0
        return time.monotonic() - self.released_at

    def overdue(self, *, limit: float) -> float | None:
        """Seconds the running inference has taken, when that is more than `limit`."""
        started = self.busy_since
        if started is None:
            return None
        elapsed = time.monotonic() - started
        return elapsed if elapsed > limit else None

    @property
    def waiting(self) -> int:
        return self._waiting

    @property
    def load(self) -> int:
        """Requests running, waiting or on their way here: those that will use the inference slot
        before a new one could (read without the lock: a hint for accept balancing). A request
        past its inference (encoding, sending) no longer counts."""
        return self._arriving + self._waiting + (1 if self._busy else 0)


def busy_error(reason: str) -> ApiError:
    return ApiError(503, "busy", f"Busy: {reason}; retry shortly.", headers={"Retry-After": "1"})


WarmupSource = Callable[[Registry], list[WarmupRequest]]


class Runtime:
    def __init__(self, settings: Settings, registry: Registry) -> None:
        self.settings = settings
        self.registry = registry
        self.phases = Phases()
        self.gate: StartupGate | None = None
        self.keepers: MemoryKeepers | None = None  # created in the master before the fork (RELEASE_MEMORY=idle)
        self.inference_gate = InferenceGate(
            queue_depth=settings.queue_depth,
            wait_timeout=float(settings.timeout),
            release_after_request=settings.release_memory == "request",
        )
        self.warmup_sources: list[WarmupSource] = []
        self.warm = False
        self.warmup_seconds: float | None = None
        self.load_error: str | None = None
        self._providers: Providers | None = None
        self._lazy_lock = threading.Lock()
        self._lazy_thread: threading.Thread | None = None
        self._warm_app: Callable[[], None] | None = None

    # -- models ---------------------------------------------------------------------------------

    @property
    def providers(self) -> Providers:
        if self._providers is None:
            self._providers = self.settings.session_providers()
        return self._providers

    def load_models(self) -> list[LoadedModel]:
        """Load every model in MODELS (those not loaded yet), recording one phase per model."""

        def loaded(entry: LoadedModel) -> None:
            self.phases.record(f"load {entry.name} ({entry.provider})", entry.load_seconds)
            observability.model_loaded(entry.name, entry.load_seconds)

        return self.registry.load(
            self.settings.models,
            model_home=self.settings.model_home,
            providers=self.providers,
            on_loaded=loaded,
        )

    @property
    def models_loaded(self) -> bool:
        return all(name in self.registry for name in self.settings.models)

    # -- warm-up --------------------------------------------------------------------------------

    def warmup_requests(self) -> list[WarmupRequest]:
        return [request for source in self.warmup_sources for request in source(self.registry)]

    def bind_warmer(self, warm_app: Callable[[], None]) -> None:
        """`warm_app` runs one warm-up pass through the app (set by the app factory)."""
        self._warm_app = warm_app

    def run_warmup(
        self,
        *,
        passes: int,
        heartbeat: Callable[[], None] | None = None,
        keep_going: Callable[[], bool] | None = None,
    ) -> float:
        """Run `passes` warm-up passes; returns the seconds taken and marks this process warm.

        `keep_going` is asked between passes (a worker told to stop by SIGTERM stops warming)."""
        if self._warm_app is None:
            raise RuntimeError("no app bound to this runtime")
        started = time.perf_counter()
        for _ in range(passes):
            if keep_going is not None and not keep_going():
                break
            self._warm_app()
            if heartbeat is not None:
                heartbeat()
        seconds = time.perf_counter() - started
        self.warmup_seconds = seconds
        self.warm = True
        observability.worker_warm(seconds)
        return seconds

    # -- lazy mode ------------------------------------------------------------------------------

    def ensure_ready(self) -> None:
        """Load (if needed) and warm this worker, once, whichever thread asks first; others wait."""
        if self.warm:
            return
        with self._lazy_lock:
            if self.warm:
                return
            try:
                self.load_models()
                seconds = self.run_warmup(passes=max(1, self.settings.warmup_requests))
            except Exception as exc:
                self.load_error = f"{type(exc).__name__}: {exc}"
                log.exception("lazy model load failed in pid %d", os.getpid())
                raise
            self.load_error = None
            self.phases.record("warm-up (lazy)", seconds)

    def start_background_load(self) -> None:
        """Start `ensure_ready` in a thread (once), so a readiness probe never blocks on a load."""
        with self._lazy_lock:
            if self.warm or (self._lazy_thread is not None and self._lazy_thread.is_alive()):
                return
            self._lazy_thread = threading.Thread(target=self._background_load, name="lazy-load", daemon=True)
            self._lazy_thread.start()

    def _background_load(self) -> None:
        try:
            self.ensure_ready()
        except Exception:  # logged and reported by /readyz through load_error
            return

    def require_ready(self) -> None:
        """For request handlers: 503 until the models are loaded; in lazy mode, load on first use.

        Loaded is enough here: in preload mode a worker only accepts connections after its warm-up,
        and the warm-up's own requests pass through this check while it runs.
        """
        if self.warm or self.models_loaded:
            return
        if self.settings.preload_models:
            raise ApiError(503, "not_ready", "The models are still loading.", headers={"Retry-After": "5"})
        try:
            self.ensure_ready()
        except Exception:
            raise ApiError(503, "not_ready", "The models could not be loaded; see the server log.") from None

    # -- readiness ------------------------------------------------------------------------------

    def readiness(self) -> tuple[bool, dict[str, object]]:
        """(ready, the /readyz body)."""
        body: dict[str, object] = {
            "pid": os.getpid(),
            "mode": "preload" if self.settings.preload_models else "lazy",
            "models": {entry.name: entry.describe() for entry in self.registry.loaded()},
            "worker": {
                "warm": self.warm,
                "warmup_seconds": _rounded(self.warmup_seconds),
                "memory_released": self.inference_gate.released,
                "memory_keeper": self.keepers is not None and self.keepers.holds(os.getpid()),
            },
            "startup": self.phases.as_dict(),
        }
        if self.gate is not None:
            body["workers"] = {"warm": self.gate.warm, "expected": self.gate.expected}
        reason = self._not_ready_reason()
        body["status"] = "ready" if reason is None else "not_ready"
        if reason is not None:
            body["reason"] = reason
        return reason is None, body

    def _not_ready_reason(self) -> str | None:
        if self.load_error is not None:
            return f"model load failed: {self.load_error}"
        if not self.models_loaded:
            return "models not loaded yet"
        if not self.warm:
            return "this worker has not finished its warm-up"
        if self.gate is not None and not self.gate.open:
            return f"waiting for workers to warm up ({self.gate.warm} of {self.gate.expected} warm)"
        return None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
