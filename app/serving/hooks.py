"""The bodies of the gunicorn hooks: load once in the master, freeze, per-worker set-up, warm, exit.

Order under `preload_app` (gunicorn 27): the config file is imported (`record_boot`), the app is
imported by `create_app()` (loads nothing), `on_starting` loads the models in the master, the
socket is bound, `when_ready`, then per worker `pre_fork` (master) -> fork -> `post_fork` (child)
-> `post_worker_init` (child: warm-up) -> the worker accepts its first connection. So a worker that
answers is a warm worker, and a worker that gunicorn replaces is forked from the master that still
holds the loaded models: it warms again but never reads a model from disk.

Everything here talks to the app through `Service` only.
"""

from __future__ import annotations

import gc
import grp
import logging
import os
import random
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .. import observability
from ..config import ReleaseMemory
from ..models.registry import ModelFileError
from ..models.sessions import ProviderError
from ..service import Service
from . import probes, watchdog
from .admission import InferenceGate, InferringWorkers, LiveGate, WarmWorkers
from .front import worker_socket
from .worker import RecyclingTurn

if TYPE_CHECKING:
    from gunicorn.arbiter import Arbiter
    from gunicorn.workers.base import Worker

log = logging.getLogger(__name__)

_BOOT_PHASES: dict[str, float] = {}
LISTEN_BACKLOG = 128  # a worker's own socket: nginx sends it only what it will take in turn
# Shared across the fork: created in the master by on_starting, read by every worker.
_recycling: RecyclingTurn | None = None
_warm_workers: WarmWorkers | None = None
_inferring: InferringWorkers | None = None


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


def on_starting(server: Arbiter) -> None:
    """Master, before the socket is bound: load every model in MODELS once (CPU providers)."""
    global _warm_workers, _inferring, _recycling
    service = Service.of(server.app.wsgi())
    settings = service.settings
    observability.start_master(settings)  # before any metric: multiprocess mode for all
    _inferring = InferringWorkers(slots=2 * server.cfg.workers + 8)  # recycled workers free theirs
    if server.cfg.max_requests > 0 and server.cfg.workers > 1:
        _recycling = RecyclingTurn()
    for name, seconds in _BOOT_PHASES.items():
        service.phases.record(name, seconds)
    if not settings.preload_models:
        server.log.info("PRELOAD_MODELS=false: each worker loads its models on first use")
        return
    _warm_workers = WarmWorkers(expected=server.cfg.workers)
    service.startup = _warm_workers
    try:
        providers = service.providers
        if providers.accelerated:
            server.log.info("providers %s: sessions are created in each worker after fork", ",".join(providers.names))
            return
        service.load()
    except (ModelFileError, ProviderError, KeyError) as exc:
        message = exc.args[0] if exc.args else str(exc)
        server.log.error("cannot start: %s", message)
        raise SystemExit(1) from None
    gc.collect()


def when_ready(server: Arbiter) -> None:
    service = Service.of(server.app.wsgi())
    server.log.info(
        "master ready after %.3f s: models %s loaded, forking %d workers (preload=%s)",
        process_age(),
        ",".join(service.registry.names()) or "none",
        server.cfg.workers,
        service.settings.preload_models,
    )


def pre_fork(server: Arbiter, worker: Worker) -> None:
    """Master, right before each fork: give the worker the lowest free slot (0 .. WORKERS-1: its
    socket behind nginx, and whether it keeps its memory when idle; a replacement takes the slot of
    the worker it replaces), then move every live object to the permanent generation so the child's
    garbage collector never writes to (and so never un-shares) the inherited pages."""
    taken = {getattr(other, "slot", None) for other in server.WORKERS.values()}
    worker.slot = next(slot for slot in range(len(taken) + 1) if slot not in taken)  # type: ignore[attr-defined]
    worker.turn = _recycling  # type: ignore[attr-defined]
    worker.expected_workers = server.cfg.workers  # type: ignore[attr-defined]
    gc.freeze()


def post_fork(server: Arbiter, worker: Worker) -> None:
    """Child, right after the fork: fresh random state, this worker's admission gate, and GPU
    sessions (CUDA cannot cross a fork)."""
    random.seed()
    service = Service.of(server.app.wsgi())
    settings = service.settings
    service.admission = InferenceGate(
        queue_depth=settings.queue_depth,
        wait_timeout=float(settings.timeout),
        release_after_request=settings.release_memory is ReleaseMemory.REQUEST,
        keeps_memory=slot_of(worker) < settings.memory_keepers,
        inferring=_inferring,
    )
    service.live_admission = LiveGate(queue_depth=settings.live_queue_depth, wait_timeout=LIVE_WAIT_S)
    if settings.preload_models and service.providers.accelerated:
        try:
            service.load()
        except ModelFileError as exc:
            worker.log.error("cannot start worker: %s", exc)
            raise SystemExit(1) from None
    # the wide lanes' thread pools cannot cross a fork: each worker opens its own (now for the
    # models the master loaded, in lazy mode when its models load)
    service.wide_threads = settings.lone_request_threads
    service.open_wide_lanes()  # tells the worker's gate (lanes_opened) when it opens any


def post_worker_init(worker: Worker) -> None:
    """Child, the last step before it accepts: run the warm-up passes (heartbeat between passes),
    start the watchdog, and behind nginx open this worker's own socket: nginx sends it requests only
    from now on."""
    service = Service.of(worker.wsgi)
    settings = service.settings
    if settings.preload_models:
        seconds = service.warm(heartbeat=worker.notify, keep_going=lambda: worker.alive)
        if _warm_workers is not None:
            _warm_workers.worker_warm()
        worker.log.info(
            "worker %d warm after %d warm-up pass(es) in %.3f s; accepting connections",
            os.getpid(), settings.warmup_requests, seconds,
        )
    gate = gate_of(worker)
    watchdog.start(
        gate,
        limit=float(settings.timeout),
        release_idle_after=settings.release_memory_idle_s if settings.release_memory is ReleaseMemory.IDLE else None,
    )
    if settings.worker_sockets is not None:
        if settings.management_port:  # MANAGEMENT_PORT's answers: a thread of their own, never the pool's
            probes.start(worker.wsgi, listen_unix(probes.probe_socket(settings.worker_sockets, slot_of(worker)),
                                                   settings.worker_socket_group))
        worker.sockets = [listen_unix(worker_socket(settings.worker_sockets, slot_of(worker)), settings.worker_socket_group)]
        worker.sockets_dir = settings.worker_sockets  # type: ignore[attr-defined]
    if _recycling is not None:
        _recycling.done(slot_of(worker))  # a recycled worker's replacement is warm: the next may go


def slot_of(worker: Worker) -> int:
    """The slot `pre_fork` gave this worker."""
    return int(getattr(worker, "slot", 0))


def listen_unix(path: Path, group: str | None = None) -> socket.socket:
    """A listening unix socket at `path` (a stale one from a killed worker is replaced) that only its
    owner and `group` (nginx's workers' group, when nginx starts as root and runs them as another
    user) may connect to: the workers believe X-Forwarded-For, so no other local user may reach them
    past nginx. Nobody can connect before `listen`, so the mode is set in time."""
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    if group is not None:
        os.chown(path, -1, grp.getgrnam(group).gr_gid)
    path.chmod(0o660)
    listener.listen(LISTEN_BACKLOG)
    listener.setblocking(False)
    return listener


LIVE_WAIT_S = 1.0  # a live check waits at most this long for the live lane: a stale frame is worth nothing


def gate_of(worker: Worker) -> InferenceGate:
    """The admission gate `post_fork` installed in this worker."""
    admission = Service.of(worker.wsgi).admission
    if not isinstance(admission, InferenceGate):
        raise RuntimeError("post_fork did not install this worker's InferenceGate")
    return admission


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
    settings = Service.of(worker.wsgi).settings
    if settings.worker_sockets is not None:  # nginx moves on to the other workers at once
        worker_socket(settings.worker_sockets, slot_of(worker)).unlink(missing_ok=True)
        probes.probe_socket(settings.worker_sockets, slot_of(worker)).unlink(missing_ok=True)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def child_exit(server: Arbiter, worker: Worker) -> None:
    """Master, after a worker exited (crash, SIGKILL, recycling, shutdown): drop its live metrics
    (workers_ready) so /metrics counts only live workers; its counters stay in the totals; it no
    longer counts as inferring."""
    observability.worker_gone(worker.pid)
    if _inferring is not None:
        _inferring.drop(worker.pid)
