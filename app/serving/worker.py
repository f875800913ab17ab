"""gunicorn's gthread worker: one recycled at a time, and its own socket retired without loss.

Recycling (MAX_REQUESTS). Behind nginx a request finds no worker while none is warm, so two
workers must never recycle at once (with jitter they often reach MAX_REQUESTS together): a worker
past its MAX_REQUESTS retires only when it holds the one recycling turn (`RecyclingTurn`, shared
memory) and every other worker is warm; otherwise it serves on and asks again after its next
request. The turn goes back when its replacement is warm (hooks.post_worker_init).

Behind nginx each warm worker listens on a unix socket of its own (hooks.post_worker_init). A
worker that stops (MAX_REQUESTS recycling, SIGTERM) stops polling that socket, but the kernel
still completes connections into its backlog until the socket is closed, and a request nginx has
sent into it would be lost when it is (nginx does not send a POST it has written to another
worker). So when accepting ends for good, this worker first removes the socket's name (nginx's
next connect fails at once and goes to another worker), then accepts and serves every connection
already in the backlog, then closes the socket. Everything else is stock gthread.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import sys
from pathlib import Path

from gunicorn.workers.gthread import TConn, ThreadWorker


class RecyclingTurn:
    """Which slot is being recycled (its number + 1; 0: none), in memory shared across the fork."""

    def __init__(self) -> None:
        self._slot = multiprocessing.get_context("fork").Value("i", 0)

    def take(self, slot: int) -> bool:
        with self._slot.get_lock():
            if self._slot.value not in (0, slot + 1):
                return False
            self._slot.value = slot + 1
            return True

    def done(self, slot: int) -> None:
        """The worker now in `slot` is warm: if its slot held the turn, the turn is free."""
        with self._slot.get_lock():
            if self._slot.value == slot + 1:
                self._slot.value = 0


class Worker(ThreadWorker):
    turn: RecyclingTurn | None = None  # set by the hooks (on_starting) when MAX_REQUESTS is set
    slot = 0  # set by the hooks (pre_fork)
    sockets_dir: Path | None = None  # WORKER_SOCKETS behind nginx
    expected_workers = 1
    _max_requests = sys.maxsize

    @property
    def max_requests(self) -> int:
        """gthread retires the worker once its request count reaches this: the configured number
        only while this worker may retire now, else one more than it has served."""
        if self.nr < self._max_requests or self._may_retire():
            return self._max_requests
        return self.nr + 1

    @max_requests.setter
    def max_requests(self, value: int) -> None:
        self._max_requests = value

    def _may_retire(self) -> bool:
        if self.turn is None:
            return True
        if self.sockets_dir is not None:
            warm = sum(1 for path in self.sockets_dir.glob("worker-*.sock"))
            if warm < self.expected_workers:
                return False  # another worker is not warm yet: this one serves on
        return self.turn.take(self.slot)

    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled)
        if not enabled and not self.alive:
            for listener in self.sockets:
                if listener.family == socket.AF_UNIX:
                    self._retire(listener)

    def _retire(self, listener: socket.socket) -> None:
        name = listener.getsockname()
        if isinstance(name, str) and name:
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass
        for _ in range(10_000):  # the backlog is 128 at most (hooks.LISTEN_BACKLOG): a bound, not a wait
            try:
                client, address = listener.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            self.nr_conns += 1
            client.setblocking(True)
            self.enqueue_req(TConn(self.cfg, client, address, name))
        listener.close()
