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
  threads of their own, so probes are answered while every inference thread is taken;
- the answer comes back the same way: the pool thread writes it into memory (`ResponseSink`, in
  place of the socket, so gunicorn's response code is unchanged), and the event loop sends it
  without blocking (`PendingResponse`), then puts a kept-alive connection back on the poller or
  closes the connection (a graceful close lingers in the loop too, never in a blocking wait). A
  client that reads its answer slowly or never holds no thread: it must read at MIN_RESPONSE_RATE
  once it has let the socket's send buffer fill, or it is dropped (abortive close: the kernel
  frees the unsent bytes at once). A client that goes away mid-answer is dropped the same way.
  An application error after the headers leaves nothing half-written: the buffered answer is
  discarded and the connection closed. The cost: each answer stays in memory until its client
  has taken it (the application's own bytes object, no copy).

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
import struct
import time
from collections import Counter
from concurrent import futures
from functools import partial

from gunicorn import http
from gunicorn.workers.gthread import TConn, ThreadWorker

from .. import observability
from ..service import Service
from .intake import (
    CONTINUE,
    BufferedUnreader,
    IntakeLimits,
    PendingResponse,
    Rejected,
    RequestBuffer,
    ResponseSink,
    json_reply,
)

log = logging.getLogger(__name__)

PROBE_THREADS = 2
LINGER_S = 2.0  # after an error answer, read and drop what the client still sends (so it sees the answer)
STOP_LINGER_S = 2.0  # a stopping worker waits this long for a request on a connection that sent nothing
RECV_BYTES = 256 * 1024
LOG_EVERY_S = 60.0
SWEEP_EVERY_S = 0.25  # the clocks of connections still arriving (or answers still leaving) are checked this often
WRITES_PER_EVENT = 64  # sendmsg calls for one connection per wake-up: other connections get their turn
ABORT = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() resets and frees the unsent bytes


class IntakeConn(TConn):
    """A TConn that reports its close once (per-address connection counts)."""

    address = ""
    intake: RequestBuffer | None = None
    linger_until = 0.0
    counted = False  # in MAX_CONNECTIONS_PER_IP's count for its address
    sink: ResponseSink | None = None  # the answer being rendered by a pool thread
    out: PendingResponse | None = None  # the answer being sent by the event loop
    out_future: futures.Future | None = None  # the pool thread's result: keep the connection alive or not
    out_polled = False  # registered on the poller for EVENT_WRITE
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
        self.writing: set[IntakeConn] = set()  # connections whose answer is being sent here
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
            min_response_rate=settings.min_response_rate,
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
        conn.counted = True
        conn._on_close = self._closed
        self.enqueue_req(conn)
        return True

    def _closed(self, conn: IntakeConn) -> None:
        self.reading.discard(conn)
        self.writing.discard(conn)
        self._uncount(conn)

    def _uncount(self, conn: IntakeConn) -> None:
        """Take `conn` out of its address's MAX_CONNECTIONS_PER_IP count (once)."""
        if not conn.counted:
            return
        conn.counted = False
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
        self._linger(conn)

    def _linger(self, conn: IntakeConn) -> None:
        """Close gracefully without blocking: send FIN, then read and drop what the client still
        sends for LINGER_S (so that it sees the answer rather than a reset), then close. The client
        has its answer: the connection no longer counts against its address's cap (a client that
        keeps its socket open after `Connection: close` would otherwise be refused for LINGER_S)."""
        self._uncount(conn)
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

    def _drop(self, conn: IntakeConn, *, abort: bool = False) -> None:
        """Close now; `abort`: with a reset, so the kernel frees the unsent bytes at once instead of
        trying to deliver them to a client that does not read."""
        self.reading.discard(conn)
        self.writing.discard(conn)
        conn.out = conn.out_future = None
        conn.out_polled = False
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        if abort:
            try:
                conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, ABORT)
            except OSError:
                pass
        self.nr_conns -= 1
        conn.close()

    # -- the answer: rendered into memory by a pool thread, sent by the event loop -----------------

    def handle(self, conn: object) -> object:  # in a pool thread
        """gthread's handle, with the socket replaced by a `ResponseSink` for its whole length: the
        request comes from memory (BufferedUnreader), the answer goes to memory."""
        if not self.intake_enabled or not isinstance(conn, IntakeConn):
            return super().handle(conn)
        sock = conn.sock
        conn.sink = ResponseSink()
        conn.sock = conn.sink
        try:
            return super().handle(conn)
        finally:
            conn.sock = sock

    def finish_request(self, conn: object, fs: futures.Future) -> None:
        """On the main thread, once a pool thread is done: send its answer, then go on as gthread
        does (keep the connection alive, or close it)."""
        sink = conn.sink if isinstance(conn, IntakeConn) else None
        if sink is None:
            super().finish_request(conn, fs)
            return
        conn.sink = None
        try:
            keep = fs.result() if not fs.cancelled() else False
        except Exception:  # gthread closes on any failure of its handle(): so do we
            keep = False
        if sink.aborted or not sink.size:
            # an application error past the headers (nothing half-written: the client sees a closed
            # connection), or nothing to say (the client went away, or sent no request)
            if keep and not sink.aborted:
                super().finish_request(conn, fs)
            else:
                self._drop(conn)
            return
        unreader = conn.parser.unreader if conn.parser is not None else None
        if isinstance(unreader, BufferedUnreader):
            unreader.unread(b"")  # let the request go while the answer waits on its client: only pipelined bytes stay
        conn.out = PendingResponse(sink.parts, min_rate=self.limits.min_response_rate,
                                   grace_s=self.limits.response_grace_s)
        conn.out_future = fs if keep else None
        conn.sock.setblocking(False)
        self.writing.add(conn)
        self._writable(conn, conn.sock)  # most answers fit in the socket's buffer at once

    def _writable(self, conn: IntakeConn, _sock: object) -> None:
        out = conn.out
        if conn not in self.writing or out is None:
            return
        for _ in range(WRITES_PER_EVENT):
            try:
                sent = conn.sock.sendmsg(out.next_buffers())
            except (BlockingIOError, InterruptedError):
                out.stalled(time.monotonic())
                break
            except OSError:  # the client went away mid-answer
                self._drop(conn, abort=True)
                return
            out.advance(sent)
            if out.done:
                self._written(conn)
                return
        if not conn.out_polled:
            conn.out_polled = True
            self.poller.register(conn.sock, selectors.EVENT_WRITE, partial(self._writable, conn))

    def _written(self, conn: IntakeConn) -> None:
        fs = conn.out_future
        self.writing.discard(conn)
        conn.out = conn.out_future = None
        if conn.out_polled:
            conn.out_polled = False
            self.poller.unregister(conn.sock)
        if fs is not None:
            super().finish_request(conn, fs)  # kept alive: back on the poller for the next request
        else:
            self._linger(conn)

    def murder_pending(self) -> None:
        """Called by gthread's loop about once a second (and while stopping): enforce the clocks."""
        super().murder_pending()
        now = time.monotonic()
        if now - self._swept_at < SWEEP_EVERY_S:  # busy loops call this after every event
            return
        self._swept_at = now
        for conn in list(self.writing):
            out = conn.out
            if out is not None and out.too_slow(now):
                self.limit_log.record(
                    "response_too_slow", conn.address,
                    f"read its answer slower than MIN_RESPONSE_RATE={out.min_rate} bytes/s "
                    f"({out.sent} of {out.size} bytes taken); dropped", now=now)
                self._drop(conn, abort=True)
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
