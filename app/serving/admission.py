"""Admission: one inference at a time per worker, a bounded queue, fast refusals; the start-up count.

`InferenceGate` is the worker's `Service.admission` (installed by the hooks after the fork). It
admits one inference at a time; at most QUEUE_DEPTH requests wait for it and the next one is
refused at once (`Busy`, answered `503` with `Retry-After`) instead of queueing without bound. It
gives the worker's working memory back after each inference when RELEASE_MEMORY=request. Which
worker a request reaches is nginx's choice (app/serving/front.py), not the gate's.

It also picks the lane of each inference (LONE_REQUEST_THREADS, app/models/sessions.py): the
worker's wide session when no other worker is inferring (`InferringWorkers`, shared across the
fork), its one-thread session otherwise. When two requests arrive together on two workers, the
first to reach its gate may take the wide lane while the second takes the narrow one: for the length
of that one inference the two use one thread more than there are cores, and every later inference
sees the other worker busy and runs narrow. A lane is never switched in the middle of a run.

`WarmWorkers` counts, in memory shared across the fork, the workers that finished their start-up
warm-up: readiness waits for all of them at start-up.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .. import observability
from ..errors import Busy
from ..models import sessions
from . import memory


class WarmWorkers:
    """Workers that finished their start-up warm-up, of `expected` (a counter shared across fork)."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self._warm = multiprocessing.get_context("fork").Value("i", 0)

    def worker_warm(self) -> None:
        with self._warm.get_lock():
            self._warm.value += 1

    @property
    def warm(self) -> int:
        return int(self._warm.value)


class InferringWorkers:
    """The pids of the workers running an inference right now, in memory shared across the fork.
    The master drops a dead worker's pid (`drop`), so a worker killed mid-inference is not counted
    as inferring for ever."""

    def __init__(self, slots: int) -> None:
        self._pids = multiprocessing.get_context("fork").Array("i", max(slots, 1))

    def enter(self, pid: int) -> int:
        """Count `pid` as inferring; returns how many workers are inferring now, `pid` included."""
        with self._pids.get_lock():
            slots = self._pids.get_obj()
            if pid not in slots:
                for index, value in enumerate(slots):
                    if value == 0:
                        slots[index] = pid
                        break
            return sum(1 for value in slots if value)

    def drop(self, pid: int) -> None:
        with self._pids.get_lock():
            slots = self._pids.get_obj()
            for index, value in enumerate(slots):
                if value == pid:
                    slots[index] = 0

    leave = drop

    @property
    def count(self) -> int:
        return sum(1 for value in self._pids[:] if value)


class OneSlot:
    """One slot, taken by one request at a time; at most `queue_depth` wait for it, each for at most
    `wait_timeout` seconds. A gate's own words go into its refusals (`busy`)."""

    def __init__(self, *, queue_depth: int, wait_timeout: float) -> None:
        self.queue_depth = queue_depth
        self.wait_timeout = wait_timeout
        self._cond = threading.Condition()
        self._busy = False
        self._waiting = 0
        self.rejected = 0

    def _take(self, *, full: tuple[str, str], timed_out: tuple[str, str]) -> None:
        """Take the slot, waiting in the queue, or refuse (`busy`: what, reason) when the queue is
        `full` or the wait `timed_out`. The caller holds `_cond`."""
        if self._busy and self._waiting >= self.queue_depth:
            self.rejected += 1
            raise busy(full[0], reason=full[1])
        self._waiting += 1
        try:
            if not self._cond.wait_for(lambda: not self._busy, timeout=self.wait_timeout):
                raise busy(timed_out[0], reason=timed_out[1])
        finally:
            self._waiting -= 1
        self._busy = True

    @property
    def waiting(self) -> int:
        return self._waiting


class InferenceGate(OneSlot):
    """One inference at a time per worker; at most `queue_depth` requests wait for it."""

    def __init__(
        self,
        *,
        queue_depth: int,
        wait_timeout: float,
        release_after_request: bool = False,
        keeps_memory: bool = False,
        inferring: InferringWorkers | None = None,
    ) -> None:
        super().__init__(queue_depth=queue_depth, wait_timeout=wait_timeout)
        self.release_after_request = release_after_request
        self.keeps_memory = keeps_memory  # KEEP_MEMORY_WORKERS: this worker keeps its buffers when idle
        self.inferring = inferring
        self.wide_threads = 0  # set when this worker's wide lanes are open (LONE_REQUEST_THREADS)
        self.lanes_taken = {sessions.WIDE: 0, sessions.NARROW: 0}
        self.busy_since: float | None = None  # monotonic time the running inference started
        self.released_at = time.monotonic()  # when the last inference ended
        self.released = True  # no inference since memory was last released

    @contextmanager
    def slot(self, *, request: bool = True) -> Iterator[None]:
        """Wait for (or be refused, `Busy`) this worker's one inference slot, then run on the lane a
        request takes (counted); `request` False: warm-up work, which forces its own lane."""
        with self._cond:
            self._take(full=("the server is at capacity", "queue_full"),
                       timed_out=("timed out waiting for a free inference slot", "wait_timeout"))
            self.busy_since = time.monotonic()
        pid = os.getpid()
        try:
            inferring = self.inferring.enter(pid) if self.inferring is not None else 1
            if not request:
                yield
                return
            lone = self.wide_threads > 1 and inferring == 1
            with sessions.lane(sessions.WIDE if lone else sessions.NARROW) as taken:
                self.lanes_taken[taken] += 1
                observability.count_lane(taken)
                yield
        finally:
            if self.inferring is not None:
                self.inferring.leave(pid)
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
        """Give this worker's free working memory back to the OS (app/serving/memory.py)."""
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

    def lanes_opened(self, threads: int) -> None:
        """The worker's wide lanes are open: a lone inference takes them from now on."""
        self.wide_threads = threads

    def describe(self) -> dict[str, object]:
        """This worker's admission and memory state, for /readyz."""
        return {
            "memory_released": self.released,
            "memory_keeper": self.keeps_memory,
            "lanes": {"wide_threads": self.wide_threads, "taken": dict(self.lanes_taken)},
        }


def busy(what: str, *, reason: str) -> Busy:
    """The refusal of a full gate; `reason` (queue_full, wait_timeout) labels the metric."""
    return Busy("busy", f"Busy: {what}; retry shortly.", details={"reason": reason})


class LiveGate(OneSlot):
    """The camera's live checks' own lane (issue 52): one check at a time per worker, at most
    `queue_depth` waiting for at most `wait_timeout` seconds, the next refused at once (`Busy`, 503
    with Retry-After; the page slows down and says so). Apart from `InferenceGate`: a live check
    never takes an ID photo's slot or queue place, nor counts as an inferring worker (the ID photo's
    lane choice), and an ID photo never holds a live check back for longer than its own cost; the
    worker's threads include this lane's (config.Settings.worker_threads)."""

    @contextmanager
    def slot(self, *, request: bool = True) -> Iterator[None]:
        with self._cond:
            self._take(full=("the live checks are at capacity", "live_full"),
                       timed_out=("timed out waiting for a live check", "live_wait"))
        try:
            with sessions.lane(sessions.NARROW):  # one thread: the ID photo's wide lane keeps its cores
                yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify()

    def describe(self) -> dict[str, object]:
        return {"live": {"waiting": self._waiting, "rejected": self.rejected}}

    def lanes_opened(self, threads: int) -> None:
        """The live lane is always narrow."""
