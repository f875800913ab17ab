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

Head starts are sleeps in the worker's main thread, which also reads requests (the intake): they
are capped at HEAD_START_BUDGET_S a second, so a flood of short connections cannot keep a worker
asleep between accepts while good clients' connections wait in the backlog behind it.
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING

from .hooks import gate_of
from .intake_worker import IntakeConn, IntakeThreadWorker

if TYPE_CHECKING:
    from .admission import InferenceGate

HEAD_START_S = 0.01  # per request running, waiting or on its way to this worker's inference slot
RELEASED_HEAD_START_S = 0.004  # idle, with its working memory given back: less than one request's head start
HEAD_START_BUDGET_S = 0.2  # most head-start sleep per second: under a flood of connections, accepts must not become sleeps
FRESH_S = 0.5  # a connection accepted this recently whose request has not arrived yet weighs as one on its way


class BalancedThreadWorker(IntakeThreadWorker):
    _budget_since = 0.0
    _slept = 0.0

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._fresh: dict[IntakeConn, float] = {}  # accepted, first request not arrived yet -> when

    def _gate(self) -> InferenceGate:
        return gate_of(self)

    def _fresh_load(self) -> int:
        """New connections of the last FRESH_S whose request is still arriving. Two clients that
        connect together are spread over two workers (counting only whole requests, one worker
        took both and served their kept-alive connections one after the other), while a slow
        client stops weighing after FRESH_S."""
        if not self._fresh:
            return 0
        since = time.monotonic() - FRESH_S
        return sum(1 for accepted in self._fresh.values() if accepted >= since)

    def accept(self, listener: socket.socket) -> None:
        gate = self._gate()
        load = gate.load + self._fresh_load()
        if load:
            self._head_start(HEAD_START_S * load)
        elif gate.released:
            self._head_start(RELEASED_HEAD_START_S)
        super().accept(listener)  # EAGAIN when another worker took it first: ignored

    def _head_start(self, seconds: float) -> None:
        """Sleep `seconds` in the main thread, within HEAD_START_BUDGET_S a second: a flood of short
        connections (hundreds a second) would otherwise keep the accept loop asleep while the backlog,
        good clients' connections included, waits behind it."""
        now = time.monotonic()
        if now - self._budget_since >= 1.0:
            self._budget_since, self._slept = now, 0.0
        if self._slept + seconds > HEAD_START_BUDGET_S:
            return
        self._slept += seconds
        time.sleep(seconds)

    def enqueue_req(self, conn: IntakeConn) -> None:
        if not getattr(conn, "_seen", False):  # a new connection, not a kept-alive one coming back
            conn._seen = True  # type: ignore[attr-defined]
            self._fresh[conn] = time.monotonic()
        super().enqueue_req(conn)

    def _closed(self, conn: IntakeConn) -> None:
        self._fresh.pop(conn, None)
        super()._closed(conn)

    def dispatch(self, conn: IntakeConn, *, probe: bool) -> None:
        self._fresh.pop(conn, None)
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
