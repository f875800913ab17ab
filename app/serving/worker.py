"""The gunicorn worker class: gthread that leaves new connections to the least busy worker.

Every worker polls the shared listening socket and all of them wake for a new connection. A stock
gthread worker accepts it even while its one inference slot is taken (its main thread is free),
so a request can queue behind a busy worker while another sits idle, which costs latency and
throughput and, if the busy worker dies, takes the queued request down with it. Here a worker
gives the others a head start proportional to the requests that will use its inference slot
before a new one could (running, waiting, or accepted and on their way: InferenceGate.load)
before it accepts: an idle worker always wins, and when every worker is busy the least loaded
one takes the connection (and may answer it with a fast 503 when its queue is full). Counting a
request from its accept spreads a burst of connections over the workers instead of sending it
all to the first one awake; a request past its inference (encoding, sending) no longer counts.

An idle worker that gave its working memory back (RELEASE_MEMORY=idle) waits a shorter head start
than one request's, so an idle worker that kept its buffers takes a lone request before it (the
request would pay for growing them again), and a busy one does not.
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING

from gunicorn.workers.gthread import ThreadWorker

from .hooks import gate_of

if TYPE_CHECKING:
    from .admission import InferenceGate

HEAD_START_S = 0.01  # per request running, waiting or on its way to this worker's inference slot
RELEASED_HEAD_START_S = 0.004  # idle, with its working memory given back: less than one request's head start


class BalancedThreadWorker(ThreadWorker):
    _queueing_accepted = False  # inside super().accept(): the connection being queued is a new one

    def _gate(self) -> InferenceGate:
        return gate_of(self)

    def accept(self, listener: socket.socket) -> None:
        gate = self._gate()
        load = gate.load
        if load:
            time.sleep(HEAD_START_S * load)
        elif gate.released:
            time.sleep(RELEASED_HEAD_START_S)
        self._queueing_accepted = True
        try:
            super().accept(listener)  # EAGAIN when another worker took it first: gthread ignores that
        finally:
            self._queueing_accepted = False

    def enqueue_req(self, conn: object) -> None:
        # only new connections count as arriving: a kept-alive one is queued again when its client
        # sends the next request or closes it, and a close must not look like work
        if self._queueing_accepted:
            conn._arriving = True  # type: ignore[attr-defined]
            self._gate().arrived()
        super().enqueue_req(conn)

    def handle(self, conn: object) -> object:  # in a pool thread
        gate = self._gate()
        counted = getattr(conn, "_arriving", False)
        if counted:
            conn._arriving = False  # type: ignore[attr-defined]
            gate.begin_request()
        try:
            return super().handle(conn)
        finally:
            if counted:
                gate.end_request()
