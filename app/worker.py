"""The gunicorn worker class: gthread that leaves new connections to the least busy worker.

Every worker polls the shared listening socket and all of them wake for a new connection. A stock
gthread worker accepts it even while its one inference slot is taken (its main thread is free),
so a request can queue behind a busy worker while another sits idle, which costs latency and
throughput and, if the busy worker dies, takes the queued request down with it. Here a worker
with requests in flight gives the others a head start proportional to them before it accepts: an
idle worker always wins, and when every worker is busy the least loaded one takes the connection
(and may answer it with a fast 503 when its queue is full). A request counts from the moment its
connection is accepted, so a burst of connections spreads over the workers instead of all going
to the first one awake.

An idle worker that gave its working memory back (RELEASE_MEMORY=idle) waits a shorter head start
than one request's, so an idle worker that kept its buffers takes a lone request before it (the
request would pay for growing them again), and a busy one does not.
"""

from __future__ import annotations

import socket
import threading
import time

from gunicorn.workers.gthread import ThreadWorker

HEAD_START_S = 0.01  # per request in flight in this worker
RELEASED_HEAD_START_S = 0.004  # idle, with its working memory given back: less than one request's head start


class BalancedThreadWorker(ThreadWorker):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._in_flight = 0  # connections handed to the thread pool and not handled yet
        self._in_flight_lock = threading.Lock()

    def accept(self, listener: socket.socket) -> None:
        from . import get_runtime

        gate = get_runtime(self.wsgi).inference_gate
        load = max(self._in_flight, gate.load)
        if load:
            time.sleep(HEAD_START_S * load)
        elif gate.released:
            time.sleep(RELEASED_HEAD_START_S)
        super().accept(listener)  # EAGAIN when another worker took it first: gthread ignores that

    def enqueue_req(self, conn: object) -> None:
        with self._in_flight_lock:
            self._in_flight += 1
        super().enqueue_req(conn)

    def handle(self, conn: object) -> object:  # in a pool thread
        try:
            return super().handle(conn)
        finally:
            with self._in_flight_lock:
                self._in_flight -= 1
