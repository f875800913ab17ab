"""gthread that reads each request whole in its event loop before a pool thread sees it.

Stock gthread hands a connection to a pool thread as soon as it is accepted (or, kept alive,
as soon as it is readable), and the thread reads the request with blocking calls: 24 clients
sending headers at 4 bytes a second hold every thread of two workers, and probes and good
requests time out (issue 16). Here the worker's main thread, which already polls the listening
socket and kept-alive connections with a selector, also reads requests:

- on accept, and whenever gthread would queue a connection (kept-alive and readable, or a
  pipelined request already buffered), the socket goes on the poller, non-blocking, with a
  `RequestBuffer` (app/serving/intake.py) that collects its bytes;
- the intake limits are enforced there: HEADER_TIMEOUT for the request headers (and for a
  client that connects and sends nothing), 64 KiB of headers, MAX_UPLOAD_MB (a larger declared
  body is answered 413 before it is read), MIN_BODY_RATE for bodies, and at accept
  MAX_CONNECTIONS_PER_IP (answered 429 and closed without touching a thread);
- only a whole request is dispatched to a pool thread, with gunicorn's own parser reading from
  the buffer (`BufferedUnreader`): gunicorn's request handling, keep-alive, `max_requests` and
  graceful shutdown are unchanged. `GET /healthz`, `/readyz` and `/metrics` go to two probe
  threads of their own, so probes are answered while every inference thread is taken.

Each broken limit is counted in `pilotlight_client_limits_total{reason}` and logged once per
client address and reason a minute. TLS and HTTP/2 are not used by this service; with either
configured the worker behaves as stock gthread.
"""

from __future__ import annotations

import errno
import logging
import resource
import selectors
import socket
import time
from collections import Counter
from concurrent import futures
from functools import partial

from gunicorn import http
from gunicorn.workers.gthread import TConn, ThreadWorker

from .. import observability
from ..service import Service
from .intake import CONTINUE, BufferedUnreader, IntakeLimits, Rejected, RequestBuffer, json_reply

log = logging.getLogger(__name__)

PROBE_THREADS = 2
LINGER_S = 2.0  # after an error answer, read and drop what the client still sends (so it sees the answer)
STOP_LINGER_S = 2.0  # a stopping worker waits this long for a request on a connection that sent nothing
RECV_BYTES = 256 * 1024
LOG_EVERY_S = 60.0
SWEEP_EVERY_S = 0.25  # the clocks of connections still arriving are checked this often


class IntakeConn(TConn):
    """A TConn that reports its close once (per-address connection counts)."""

    address = ""
    intake: RequestBuffer | None = None
    linger_until = 0.0
    _on_close = None

    def close(self, graceful: bool = False) -> None:
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close(self)
        super().close(graceful=graceful)


class LimitLog:
    """Logs each (reason, address) at most once a minute; the metric counts every event."""

    def __init__(self, every: float = LOG_EVERY_S) -> None:
        self.every = every
        self._last: dict[tuple[str, str], float] = {}
        self._suppressed: Counter[tuple[str, str]] = Counter()

    def record(self, reason: str, address: str, detail: str, *, now: float) -> None:
        observability.client_limit(reason)
        key = (reason, address)
        last = self._last.get(key)
        if last is not None and now - last < self.every:
            self._suppressed[key] += 1
            return
        if len(self._last) > 4096:  # forget addresses not seen for a minute
            self._last = {k: t for k, t in self._last.items() if now - t < self.every}
            self._suppressed = Counter({k: n for k, n in self._suppressed.items() if k in self._last})
        self._last[key] = now
        more = self._suppressed.pop(key, 0)
        note = f" ({more} more since the last line)" if more else ""
        log.warning("client %s: %s: %s%s; logged once a minute per client", address or "-", reason, detail, note)


class IntakeThreadWorker(ThreadWorker):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        # TLS and h2c prior knowledge read the socket in TConn.init(): stock gthread handles them
        self.intake_enabled = not self.cfg.is_ssl and getattr(self.cfg, "http2_cleartext", "off") in ("off", "upgrade", None)
        self.limits = IntakeLimits(header_timeout=10.0, min_body_rate=1024, max_body_bytes=20 * 1024 * 1024)
        self.per_ip_limit = 0
        self.per_ip: Counter[str] = Counter()
        self.reading: set[IntakeConn] = set()  # connections whose request is being read here
        self.limit_log = LimitLog()
        self.probe_pool: futures.ThreadPoolExecutor | None = None
        self._swept_at = 0.0

    def load_wsgi(self) -> None:
        super().load_wsgi()
        settings = Service.of(self.wsgi).settings
        self.limits = IntakeLimits(
            header_timeout=settings.header_timeout,
            min_body_rate=settings.min_body_rate,
            max_body_bytes=settings.max_upload_bytes,
        )
        self.per_ip_limit = settings.max_connections_per_ip

    def init_process(self) -> None:
        self.probe_pool = futures.ThreadPoolExecutor(max_workers=PROBE_THREADS, thread_name_prefix="probe")
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = self.cfg.worker_connections + 256
        if soft != resource.RLIM_INFINITY and soft < wanted:
            limit = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
            except (ValueError, OSError):
                pass
        super().init_process()

    def handle_quit(self, sig: int, frame: object) -> None:
        if self.probe_pool is not None:
            self.probe_pool.shutdown(wait=False)
        super().handle_quit(sig, frame)

    # -- accept: the per-address cap -------------------------------------------------------------

    def accept(self, listener: socket.socket) -> None:
        """One connection per wake-up, as gthread does: the balanced worker decides per connection."""
        self._accept_one(listener)

    def _accept_one(self, listener: socket.socket) -> bool:
        try:
            client_sock, client_addr = listener.accept()
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return False
        address = client_addr[0] if isinstance(client_addr, tuple) else ""
        if self.per_ip_limit and address and self.per_ip[address] >= self.per_ip_limit:
            self._refuse(client_sock, address)
            return True
        self.nr_conns += 1
        conn = IntakeConn(self.cfg, client_sock, client_addr, listener.getsockname())
        conn.address = address
        self.per_ip[address] += 1
        conn._on_close = self._closed
        self.enqueue_req(conn)
        return True

    def _closed(self, conn: IntakeConn) -> None:
        self.reading.discard(conn)
        left = self.per_ip[conn.address] - 1
        if left > 0:
            self.per_ip[conn.address] = left
        else:
            self.per_ip.pop(conn.address, None)

    def _refuse(self, client_sock: socket.socket, address: str) -> None:
        """429 without a thread: drop what the client sent so far, answer, close."""
        self.limit_log.record("too_many_connections", address,
                              f"more than MAX_CONNECTIONS_PER_IP={self.per_ip_limit} open connections; answered 429",
                              now=time.monotonic())
        try:
            client_sock.setblocking(False)
            try:
                client_sock.recv(RECV_BYTES)
            except OSError:
                pass
            client_sock.send(json_reply(429, "too_many_connections",
                                        "Too many open connections from your address; close some and retry.",
                                        headers=(("Retry-After", "1"),)))
            client_sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        finally:
            client_sock.close()

    # -- the intake ----------------------------------------------------------------------------

    def enqueue_req(self, conn: IntakeConn) -> None:
        """gthread calls this when a connection may carry a request: read it here first."""
        if not self.intake_enabled or not isinstance(conn, IntakeConn):
            super().enqueue_req(conn)
            return
        pending = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        conn.linger_until = 0.0
        conn.sock.setblocking(False)
        self.reading.add(conn)
        conn.intake = RequestBuffer(self.limits, now=time.monotonic())
        try:
            conn.intake.feed(pending, now=time.monotonic())
        except Rejected as rejected:
            self._reject(conn, rejected)
            return
        if conn.intake.complete:
            self._dispatch_whole(conn)
            return
        if conn.intake.send_continue:  # a pipelined request's headers were buffered already
            conn.intake.send_continue = False
            self._send(conn, CONTINUE)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))
        self._readable(conn, conn.sock)  # on loopback the request is usually there already

    def _readable(self, conn: IntakeConn, _sock: object) -> None:
        if conn not in self.reading:
            return
        buffer = conn.intake
        for _ in range(64):  # bounded: other connections get their turn
            try:
                data = conn.sock.recv(RECV_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._drop(conn)
                return
            if not data:
                self._drop(conn)  # closed by the client: no thread needed to see that
                return
            if conn.linger_until:  # answered already: drop what still comes
                continue
            try:
                buffer.feed(data, now=time.monotonic())
            except Rejected as rejected:
                self._reject(conn, rejected)
                return
            if buffer.complete:
                self.poller.unregister(conn.sock)
                self._dispatch_whole(conn)
                return
            if buffer.send_continue:
                buffer.send_continue = False
                self._send(conn, CONTINUE)
            if len(data) < RECV_BYTES:
                return

    def _dispatch_whole(self, conn: IntakeConn) -> None:
        buffer = conn.intake
        self.reading.discard(conn)
        conn.intake = None
        data = bytes(buffer.data)
        if conn.parser is None:
            conn.parser = http.get_parser(self.cfg, conn.sock, conn.client)
        conn.parser.unreader = BufferedUnreader(conn.sock, data)
        conn.data_ready = True  # gthread's handle() must not wait for the socket
        self.dispatch(conn, probe=buffer.is_probe)

    def dispatch(self, conn: IntakeConn, *, probe: bool) -> None:
        """Hand a connection whose request is buffered whole to a pool thread (probes: their own)."""
        pool = self.probe_pool if probe and self.probe_pool is not None else self.tpool
        future = pool.submit(self.handle, conn)
        future.add_done_callback(lambda fut: self.method_queue.defer(self.finish_request, conn, fut))

    def _send(self, conn: IntakeConn, payload: bytes) -> None:
        try:
            conn.sock.send(payload)  # small, on an idle socket: one non-blocking send
        except OSError:
            pass

    def _reject(self, conn: IntakeConn, rejected: Rejected) -> None:
        """Answer a broken limit (nothing for a connection that never sent a byte), then linger
        briefly reading and dropping what the client still sends, so that it sees the answer."""
        self.limit_log.record(rejected.reason, conn.address, f"{rejected.message} (answered {rejected.status})",
                              now=time.monotonic())
        if rejected.reason == "idle_timeout":
            self._drop(conn)
            return
        self._send(conn, json_reply(rejected.status, rejected.code, rejected.message))
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        conn.linger_until = time.monotonic() + LINGER_S
        self.reading.add(conn)
        try:
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))
        except KeyError:
            pass  # on the poller already

    def _drop(self, conn: IntakeConn) -> None:
        self.reading.discard(conn)
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        self.nr_conns -= 1
        conn.close()

    def murder_pending(self) -> None:
        """Called by gthread's loop about once a second (and while stopping): enforce the clocks."""
        super().murder_pending()
        now = time.monotonic()
        if now - self._swept_at < SWEEP_EVERY_S:  # busy loops call this after every event
            return
        self._swept_at = now
        for conn in list(self.reading):
            if conn.linger_until:
                if now >= conn.linger_until:
                    self._drop(conn)
                continue
            buffer = conn.intake
            if not self.alive and not buffer.received and now - buffer.started > STOP_LINGER_S:
                self._drop(conn)  # stopping: a connection that sent nothing is not waited for
                continue
            try:
                buffer.check_time(now)
            except Rejected as rejected:
                self._reject(conn, rejected)
