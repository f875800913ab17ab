"""The gunicorn worker class: gthread that leaves new connections to the least busy worker.

Every worker polls the shared listening socket and all of them wake for a new connection. A stock
gthread worker accepts it even while its one inference slot is taken (its main thread is free),
so a request can queue behind a busy worker while another sits idle, which costs latency and
throughput and, if the busy worker dies, takes the queued request down with it. Here a worker
gives the others a head start proportional to the requests that will use its inference slot
before a new one could (running, waiting, or accepted and on their way: InferenceGate.load)
before it accepts: an idle worker always wins, and when every worker is busy the least loaded
one takes the connection (and may answer it with a fast 503 when its queue is full). Counting a
request from the moment it has arrived whole (app/serving/intake_worker.py reads it first, in the
event loop) spreads a burst over the workers instead of sending it all to the first one awake,
and a slow client still sending its request weighs nothing; a request past its inference
(encoding, sending) no longer counts.

An idle worker that gave its working memory back (RELEASE_MEMORY=idle) waits a shorter head start
than one request's, so an idle worker that kept its buffers takes a lone request before it (the
request would pay for growing them again), and a busy one does not.
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING

from .serving.intake_worker import IntakeConn, IntakeThreadWorker

if TYPE_CHECKING:
    from .runtime import InferenceGate

HEAD_START_S = 0.01  # per request running, waiting or on its way to this worker's inference slot
RELEASED_HEAD_START_S = 0.004  # idle, with its working memory given back: less than one request's head start


class BalancedThreadWorker(IntakeThreadWorker):
    def _gate(self) -> InferenceGate:
        from . import get_runtime

        return get_runtime(self.wsgi).inference_gate

    def accept(self, listener: socket.socket) -> None:
        gate = self._gate()
        load = gate.load
        if load:
            time.sleep(HEAD_START_S * load)
        elif gate.released:
            time.sleep(RELEASED_HEAD_START_S)
        super().accept(listener)  # EAGAIN when another worker took it first: ignored

    def dispatch(self, conn: IntakeConn, *, probe: bool) -> None:
        # a whole request on its way to a pool thread (probes never use the inference slot)
        if not probe:
            conn._arriving = True  # type: ignore[attr-defined]
            self._gate().arrived()
        super().dispatch(conn, probe=probe)

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
