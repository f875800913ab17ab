"""What the gunicorn hooks do: load once in the master, freeze, per-worker set-up, warm, exit.

Order under `preload_app` (gunicorn 27): the config file is imported (`record_boot`), the app is
imported by `create_app()` (loads nothing), `on_starting` loads the models in the master, the
socket is bound, `when_ready`, then per worker `pre_fork` (master) -> fork -> `post_fork` (child)
-> `post_worker_init` (child: warm-up) -> the worker accepts its first connection. So a worker that
answers is a warm worker, and a worker that gunicorn replaces is forked from the master that still
holds the loaded models: it warms again but never reads a model from disk.
"""

from __future__ import annotations

import gc
import logging
import os
import random
import sys
import threading
import time
from typing import TYPE_CHECKING

from . import observability
from .models.registry import ModelFileError
from .models.sessions import ProviderError
from .runtime import MemoryKeepers, Runtime, StartupGate

if TYPE_CHECKING:
    from gunicorn.arbiter import Arbiter
    from gunicorn.workers.base import Worker

log = logging.getLogger(__name__)

_BOOT_PHASES: dict[str, float] = {}
WATCHDOG_PERIOD_S = 0.5
EXIT_OVERDUE = 70


def process_age() -> float:
    """Seconds since this process started (Linux /proc; 0.0 where unavailable)."""
    try:
        with open(f"/proc/{os.getpid()}/stat", encoding="ascii") as handle:
            start_ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as handle:
            uptime = float(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))


def record_boot(*, started_at: float) -> None:
    """Called by gunicorn.conf.py once the application modules are imported.

    `started_at` is `time.perf_counter()` taken before those imports.
    """
    imports = time.perf_counter() - started_at
    _BOOT_PHASES["launch (before imports)"] = max(0.0, process_age() - imports)
    _BOOT_PHASES["imports"] = imports


def _runtime_of(wsgi: object) -> Runtime:
    from . import get_runtime

    return get_runtime(wsgi)  # type: ignore[arg-type]


def on_starting(server: Arbiter) -> None:
    """Master, before the socket is bound: load every model in MODELS once (CPU providers)."""
    runtime = _runtime_of(server.app.wsgi())
    observability.start_master(runtime.settings)  # before any metric: multiprocess mode for all
    for name, seconds in _BOOT_PHASES.items():
        runtime.phases.record(name, seconds)
    settings = runtime.settings
    if settings.release_memory == "idle":
        runtime.keepers = MemoryKeepers(settings.keep_memory_workers)
    if not settings.preload_models:
        server.log.info("PRELOAD_MODELS=false: each worker loads its models on first use")
        return
    runtime.gate = StartupGate(expected=server.cfg.workers)
    try:
        providers = runtime.providers
        if providers.accelerated:
            server.log.info("providers %s: sessions are created in each worker after fork", ",".join(providers.names))
            return
        runtime.load_models()
    except (ModelFileError, ProviderError, KeyError) as exc:
        message = exc.args[0] if exc.args else str(exc)
        server.log.error("cannot start: %s", message)
        raise SystemExit(1) from None
    gc.collect()


def when_ready(server: Arbiter) -> None:
    runtime = _runtime_of(server.app.wsgi())
    total = process_age()
    server.log.info(
        "master ready after %.3f s: models %s loaded, forking %d workers (preload=%s)",
        total,
        ",".join(runtime.registry.names()) or "none",
        server.cfg.workers,
        runtime.settings.preload_models,
    )


def pre_fork(server: Arbiter, worker: Worker) -> None:
    """Master, right before each fork: move every live object to the permanent generation so the
    child's garbage collector never writes to (and so never un-shares) the inherited pages."""
    gc.freeze()


def post_fork(server: Arbiter, worker: Worker) -> None:
    """Child, right after the fork: fresh random state; GPU sessions (CUDA cannot cross a fork)."""
    random.seed()
    runtime = _runtime_of(server.app.wsgi())
    if runtime.settings.preload_models and runtime.providers.accelerated:
        try:
            runtime.load_models()
        except ModelFileError as exc:
            worker.log.error("cannot start worker: %s", exc)
            raise SystemExit(1) from None


def post_worker_init(worker: Worker) -> None:
    """Child, the last step before it accepts: run the warm-up passes (heartbeat between passes),
    then start the request watchdog."""
    runtime = _runtime_of(worker.wsgi)
    if runtime.settings.preload_models:
        passes = runtime.settings.warmup_requests
        seconds = runtime.run_warmup(passes=passes, heartbeat=worker.notify, keep_going=lambda: worker.alive)
        if runtime.gate is not None:
            runtime.gate.worker_warm()
        worker.log.info(
            "worker %d warm after %d warm-up pass(es) in %.3f s; accepting connections", os.getpid(), passes, seconds
        )
    start_watchdog(runtime, limit=float(runtime.settings.timeout))


def start_watchdog(runtime: Runtime, *, limit: float) -> threading.Thread:
    """Replace this worker when one request's inference runs past TIMEOUT (and, with
    RELEASE_MEMORY=idle, give the working memory back once the worker has been idle for
    RELEASE_MEMORY_IDLE_S).

    gthread workers keep beating gunicorn's heartbeat from their main thread while a request
    thread is stuck, so gunicorn's own timeout never fires for a slow request. The watchdog ends
    the worker instead (its client gets a dropped connection); the master forks a warm
    replacement and the other workers go on.
    """

    gate = runtime.inference_gate
    keepers = runtime.keepers
    pid = os.getpid()
    release_when_idle = runtime.settings.release_memory == "idle"
    idle_after = runtime.settings.release_memory_idle_s

    def watch() -> None:
        keeping = False
        while True:
            time.sleep(WATCHDOG_PERIOD_S)
            if release_when_idle and not gate.released and gate.idle_for() >= idle_after:
                # RELEASE_MEMORY=idle: a quiet worker gives its working memory back, unless it is
                # (or now becomes) one of the KEEP_MEMORY_WORKERS
                if keepers is not None and keepers.claim(pid):
                    if not keeping:
                        keeping = True
                        log.info("worker %d keeps its working memory when idle (one of KEEP_MEMORY_WORKERS)", pid)
                else:
                    gate.release()
                    log.info("worker %d idle for %.1f s: working memory given back", pid, gate.idle_for())
            elapsed = gate.overdue(limit=limit)
            if elapsed is not None:
                log.error(
                    "worker %d: a request has been running for %.1f s, past TIMEOUT=%.0f s; replacing this worker",
                    os.getpid(), elapsed, limit,
                )
                logging.shutdown()
                os._exit(EXIT_OVERDUE)

    thread = threading.Thread(target=watch, name="request-watchdog", daemon=True)
    thread.start()
    return thread


def worker_exit(server: Arbiter, worker: Worker) -> None:
    """Child, after its last request: exit now.

    onnxruntime 1.29-1.32 hangs at exit in a static destructor in a forked child (FACTS.md), which
    turns every graceful stop and every `max_requests` recycle into a SIGKILL after the graceful
    timeout. Requests are finished by the time this hook runs, so skip the interpreter teardown.
    gunicorn also calls this hook in the master for a worker that is already gone: only the
    worker itself may exit.
    """
    if os.getpid() != worker.pid:
        return
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def child_exit(server: Arbiter, worker: Worker) -> None:
    """Master, after a worker exited (crash, SIGKILL, recycling, shutdown): drop its live metrics
    (workers_ready) so /metrics counts only live workers; its counters stay in the totals. Free its
    memory keeper slot for a live worker."""
    observability.worker_gone(worker.pid)
    keepers = _runtime_of(server.app.wsgi()).keepers
    if keepers is not None:
        keepers.drop(worker.pid)
