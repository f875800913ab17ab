"""The gunicorn worker class: gthread that leaves new connections to the least busy worker.

Every worker polls the shared listening socket and all of them wake for a new connection. A stock
gthread worker accepts it even while its one inference slot is taken (its main thread is free),
so a request can queue behind a busy worker while another sits idle, which costs latency and
throughput and, if the busy worker dies, takes the queued request down with it. Here a worker
that has inference work pending gives the others a head start proportional to that work before it
accepts: an idle worker always wins, and when every worker is busy the least loaded one takes the
connection (and may answer it with a fast 503 when its queue is full). An idle worker that gave
its working memory back (RELEASE_MEMORY=idle) waits a shorter head start, so an idle worker that
kept its buffers takes a request before it (that request would pay for growing them again).
"""

from __future__ import annotations

import socket
import time

from gunicorn.workers.gthread import ThreadWorker

HEAD_START_S = 0.01  # per request running or queued in this worker
RELEASED_HEAD_START_S = 0.004  # idle, with its working memory given back: less than one request's head start


class BalancedThreadWorker(ThreadWorker):
    def accept(self, listener: socket.socket) -> None:
        from . import get_runtime

        gate = get_runtime(self.wsgi).inference_gate
        load = gate.load
        if load:
            time.sleep(HEAD_START_S * load)
        elif gate.released:
            time.sleep(RELEASED_HEAD_START_S)
        super().accept(listener)  # EAGAIN when another worker took it first: gthread ignores that
