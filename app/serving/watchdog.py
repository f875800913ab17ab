"""The per-worker watchdog thread: ends a worker whose inference runs past TIMEOUT, and applies
RELEASE_MEMORY=idle (a quiet worker gives its working memory back unless it is a keeper).

gthread workers keep beating gunicorn's heartbeat from their main thread while a request thread is
stuck, so gunicorn's own timeout never fires for a slow request. The watchdog ends the worker
instead (its client gets a dropped connection); the master forks a warm replacement (no model is
read from disk) and the other workers go on.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from .admission import InferenceGate

log = logging.getLogger(__name__)

PERIOD_S = 0.5
EXIT_OVERDUE = 70


def start(
    gate: InferenceGate,
    *,
    limit: float,
    release_idle_after: float | None,
) -> threading.Thread:
    """Start the watchdog of this worker. `release_idle_after`: seconds of idleness after which
    the working memory is given back (None: never, RELEASE_MEMORY is not `idle`)."""
    pid = os.getpid()

    def watch() -> None:
        keeping = False
        while True:
            time.sleep(PERIOD_S)
            if release_idle_after is not None and not gate.released and gate.idle_for() >= release_idle_after:
                if gate.keeps_memory:
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
                    pid, elapsed, limit,
                )
                logging.shutdown()
                os._exit(EXIT_OVERDUE)

    thread = threading.Thread(target=watch, name="request-watchdog", daemon=True)
    thread.start()
    return thread
