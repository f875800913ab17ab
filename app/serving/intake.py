"""Reading a request whole before any thread sees it: the pure part (no sockets, no gunicorn state).

A gthread worker hands each connection to a pool thread that reads the request with blocking
calls, so a client that sends its headers or body a few bytes a second holds a thread for as long
as it likes, and QUEUE_DEPTH + 2 such clients stop a worker (issue 16). The worker class in
`app/serving/intake_worker.py` instead reads every request in its event loop, without blocking,
into a `RequestBuffer`; only a request that has arrived whole (headers and body) goes to a thread,
whose reads then come from memory (`BufferedUnreader`) and never from the socket.

`RequestBuffer` finds just enough of HTTP/1.1 to know where a request ends: the blank line after
the headers, then `Content-Length` bytes or a chunked body up to its last chunk and trailers. It
enforces the intake limits: a deadline for the headers, a largest header block, a largest body
(answered 413 before the body is read) and a least average body rate. Anything it cannot make
sense of is passed on as it is, for gunicorn's own parser to reject with its usual 400.

The answer goes the same way in reverse: the pool thread writes it into a `ResponseSink` (memory)
instead of the socket, and the event loop sends it without blocking (`PendingResponse`), so a
client that reads its answer slowly, or never, holds no thread either. MIN_RESPONSE_RATE is its
limit: once the client has let its socket's send buffer fill, it must take the rest at that
average rate (after RESPONSE_GRACE_S), or the connection is dropped.
"""

from __future__ import annotations

import errno
import io
import json
import uuid
from collections import deque
from dataclasses import dataclass
from typing import BinaryIO

from gunicorn.http.unreader import SocketUnreader

MAX_HEADER_BYTES = 64 * 1024  # request line + header fields; larger is answered 431
BODY_GRACE_S = 5.0  # MIN_BODY_RATE is checked once a body has had this long
RESPONSE_GRACE_S = 5.0  # MIN_RESPONSE_RATE is checked once an answer has waited on its client this long
SEND_PARTS = 16  # buffers handed to one sendmsg (headers and body go out in one call)
MAX_CHUNK_LINE = 4096  # a chunk-size line (hex digits and extensions) or one trailer line
PROBE_PATHS = frozenset((b"/healthz", b"/readyz", b"/metrics"))

_REASONS = {
    400: "Bad Request",
    408: "Request Timeout",
    413: "Content Too Large",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
}


class Rejected(Exception):
    """The request breaks an intake limit: answer `status` with the JSON error and close.

    `reason` is the label of `pilotlight_client_limits_total` (and of the log line)."""

    def __init__(self, status: int, code: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class IntakeLimits:
    header_timeout: float  # seconds from the start of a request's wait to the end of its headers
    min_body_rate: int  # bytes/s a body must average after `body_grace_s` (0: no floor)
    max_body_bytes: int  # MAX_UPLOAD_MB: a larger declared body is answered 413 unread
    max_header_bytes: int = MAX_HEADER_BYTES
    body_grace_s: float = BODY_GRACE_S
    min_response_rate: int = 1024  # bytes/s a client must read its answer at once it stalls (0: no floor)
    response_grace_s: float = RESPONSE_GRACE_S


def json_reply(status: int, code: str, message: str, *, headers: tuple[tuple[str, str], ...] = ()) -> bytes:
    """A complete HTTP/1.1 response in the API's one error shape, closing the connection."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
        f"X-Request-ID: {uuid.uuid4().hex}",
        "X-Content-Type-Options: nosniff",
        *(f"{name}: {value}" for name, value in headers),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class RequestBuffer:
    """The bytes of one HTTP/1.x request as they arrive, and whether it is whole yet.

    `feed()` and `check_time()` raise `Rejected` when a limit is broken. Once `complete`,
    `data` holds the request (and anything the client pipelined behind it), with an
    `Expect: 100-continue` line taken out when `send_continue` was asked for (the intake
    answers it; gunicorn must not answer it a second time)."""

    def __init__(self, limits: IntakeLimits, *, now: float, data: bytes = b"") -> None:
        self.limits = limits
        self.started = now
        self.data = bytearray()
        self.header_end: int | None = None  # index just past the blank line
        self.body_started: float | None = None
        self.method = b""
        self.path = b""
        self.complete = False
        self.send_continue = False  # the client waits for "100 Continue" before its body
        self._end: int | None = None  # index just past the request (Content-Length bodies)
        self._chunked = False
        self._chunk_pos = 0
        self._chunk_left = -1  # -1: at a chunk-size line; -2: in the trailers; >= 0: data (+ CRLF) to skip
        self._body_bytes = 0  # decoded (chunked) body bytes declared so far
        if data:
            self.feed(data, now=now)

    @property
    def received(self) -> int:
        return len(self.data)

    @property
    def is_probe(self) -> bool:
        """GET/HEAD of /healthz, /readyz or /metrics: served by the worker's probe threads."""
        return self.method in (b"GET", b"HEAD") and self.path in PROBE_PATHS

    def feed(self, chunk: bytes, *, now: float) -> None:
        if self.complete:
            self.data += chunk
            return
        scan_from = max(0, len(self.data) - 3)
        self.data += chunk
        if self.header_end is None:
            end = self.data.find(b"\r\n\r\n", scan_from)
            if end < 0:
                if len(self.data) > self.limits.max_header_bytes:
                    raise Rejected(431, "headers_too_large", "headers_too_large",
                                   f"The request headers are larger than {self.limits.max_header_bytes // 1024} KiB.")
                if b"\n\n" in self.data:  # bare LF line ends: gunicorn's parser answers 400
                    self.complete = True
                return
            if end + 4 > self.limits.max_header_bytes:
                raise Rejected(431, "headers_too_large", "headers_too_large",
                               f"The request headers are larger than {self.limits.max_header_bytes // 1024} KiB.")
            self.body_started = now
            self._parse_headers(end)
            if self.complete:
                return
        self._advance_body()

    def check_time(self, now: float) -> None:
        """Raise `Rejected` when the header deadline has passed or the body arrives too slowly."""
        if self.complete:
            return
        if self.header_end is None:
            if now - self.started > self.limits.header_timeout:
                reason = "idle_timeout" if not self.data else "header_timeout"
                raise Rejected(408, "request_timeout", reason,
                               f"The request headers did not arrive within {self.limits.header_timeout:g} s.")
            return
        elapsed = now - (now if self.body_started is None else self.body_started)
        rate = self.limits.min_body_rate
        if rate and elapsed > self.limits.body_grace_s and self.received - self.header_end < rate * elapsed:
            raise Rejected(408, "request_timeout", "body_too_slow",
                           f"The request body arrived slower than {rate} bytes/s.")

    # -- headers ------------------------------------------------------------------------------

    def _parse_headers(self, end: int) -> None:
        block = bytes(self.data[:end])
        lines = block.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3:
            self.complete = True  # gunicorn answers the malformed request line
            return
        self.method = parts[0]
        self.path = parts[1].split(b"?", 1)[0]
        lengths: list[bytes] = []
        codings: list[bytes] = []
        expect_at: int | None = None
        for index, line in enumerate(lines[1:], 1):
            name, colon, value = line.partition(b":")
            if not colon:
                self.complete = True
                return
            lowered = name.lower()
            if lowered == b"content-length":
                lengths.append(value.strip())
            elif lowered == b"transfer-encoding":
                codings.extend(coding.strip().lower() for coding in value.split(b","))
            elif lowered == b"expect" and value.strip().lower() == b"100-continue":
                expect_at = index
        self.header_end = end + 4
        if codings:
            if lengths or codings[-1] != b"chunked":
                self.complete = True  # both, or not chunked last: gunicorn answers 400
                return
            self._chunked = True
            self._chunk_pos = self.header_end
        elif lengths:
            if len(set(lengths)) != 1 or not lengths[0].isdigit():
                self.complete = True
                return
            length = int(lengths[0])
            if length > self.limits.max_body_bytes:
                raise Rejected(413, "payload_too_large", "body_too_large",
                               f"The upload is larger than the {self.limits.max_body_bytes / (1024 * 1024):g} MB limit.")
            self._end = self.header_end + length
        else:
            self._end = self.header_end
        if expect_at is not None:
            # answered here once the headers are in; gunicorn must not send a second 100 Continue
            kept = [line for i, line in enumerate(lines) if i != expect_at]
            head = b"\r\n".join(kept) + b"\r\n\r\n"
            shift = self.header_end - len(head)
            self.data[: self.header_end] = head
            self.header_end -= shift
            if self._end is not None:
                self._end -= shift
            self._chunk_pos -= shift if self._chunked else 0
            self.send_continue = True

    # -- body ---------------------------------------------------------------------------------

    def _advance_body(self) -> None:
        if self._end is not None:
            if len(self.data) >= self._end:
                self.complete = True
                self.send_continue = False
            return
        data = self.data
        pos = self._chunk_pos
        while True:
            if self._chunk_left >= 0:  # chunk data and its CRLF
                if len(data) - pos < self._chunk_left + 2:
                    break
                pos += self._chunk_left + 2
                self._chunk_left = -1
                continue
            line_end = data.find(b"\r\n", pos, pos + MAX_CHUNK_LINE + 2)
            if line_end < 0:
                if len(data) - pos > MAX_CHUNK_LINE:
                    self.complete = True  # gunicorn answers the oversized line
                break
            line = bytes(data[pos:line_end])
            pos = line_end + 2
            if self._chunk_left == -2:  # trailers: an empty line ends the request
                if not line:
                    self.complete = True
                    break
                continue
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                self.complete = True  # gunicorn answers the bad chunk size
                break
            if size == 0:
                self._chunk_left = -2
                continue
            self._body_bytes += size
            if self._body_bytes > self.limits.max_body_bytes:
                raise Rejected(413, "payload_too_large", "body_too_large",
                               f"The upload is larger than the {self.limits.max_body_bytes / (1024 * 1024):g} MB limit.")
            self._chunk_left = size
        self._chunk_pos = pos
        if self.complete:
            self.send_continue = False


class BufferedUnreader(SocketUnreader):
    """gunicorn's request source for a request the intake read whole: reads come from memory.

    It never touches the socket: once the buffered bytes are used up it answers end of data, so
    a pool thread can never block reading (a request the intake passed on unparsed ends in
    gunicorn's usual 400 or a closed connection). Reads slice the buffer without copying the
    rest (the stock unreader copies what is left on every read: quadratic for a 20 MB body).
    """

    def __init__(self, sock: object, data: bytes) -> None:
        super().__init__(sock)
        self._data = data
        self._pos = 0

    @property
    def buf(self) -> io.BytesIO:  # gthread's finish_request asks whether a pipelined request is buffered
        return io.BytesIO(self._data[self._pos:])

    @buf.setter
    def buf(self, _value: io.BytesIO) -> None:  # Unreader.__init__ sets an empty one
        return

    def chunk(self, size_hint: int | None = None) -> bytes:
        size = max(self.mxchunk, min(size_hint or 0, self.max_body_chunk))
        return self._take(size)

    def _take(self, size: int) -> bytes:
        piece = self._data[self._pos : self._pos + size]
        self._pos += len(piece)
        return piece

    def read(self, size: int | None = None, read_ahead: int | None = None) -> bytes:
        if size is not None and not isinstance(size, int):
            raise TypeError("size parameter must be an int or long.")
        if size == 0:
            return b""
        if size is None or size < 0:
            return self.chunk(read_ahead)
        return self._take(size)

    def unread(self, data: bytes) -> None:
        self._data = bytes(data) + self._data[self._pos :]
        self._pos = 0

    def take_buffered(self) -> bytes:
        rest = self._data[self._pos :]
        self._data, self._pos = b"", 0
        return rest


class ResponseSink:
    """What a pool thread's response is written to instead of the socket: memory.

    gunicorn's `Response` (and its error answers) call `sendall`, `send` and `sendfile` on the
    socket it was given; with this in its place the thread never waits on the client, whatever
    its reading speed, and the event loop sends `parts` afterwards. The bytes objects the
    application returned are kept as they are (no copy). `shutdown` (gunicorn's graceful close
    after an application error past the headers) marks the answer `aborted`: it is then dropped
    whole, and the client sees a closed connection rather than half an answer."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.aborted = False

    def sendall(self, data: bytes) -> None:
        if self.aborted:
            raise BrokenPipeError(errno.EPIPE, "the answer was abandoned")
        if data:
            self.parts.append(data if isinstance(data, bytes) else bytes(data))
            self.size += len(data)

    def send(self, data: bytes) -> int:
        self.sendall(data)
        return len(data)

    def sendfile(self, file: BinaryIO, offset: int = 0, count: int | None = None) -> int:
        file.seek(offset)
        total = 0
        while count is None or total < count:
            piece = file.read(1 << 20 if count is None else min(1 << 20, count - total))
            if not piece:
                break
            self.sendall(piece)
            total += len(piece)
        return total

    def shutdown(self, _how: int) -> None:
        self.aborted = True

    def recv(self, _size: int) -> bytes:  # gunicorn's close_graceful drains the client: nothing here
        return b""

    def close(self) -> None:
        return

    def setblocking(self, _flag: bool) -> None:  # the real socket stays non-blocking
        return

    def settimeout(self, _value: float | None) -> None:
        return

    def gettimeout(self) -> float | None:
        return None


class PendingResponse:
    """An answer the event loop is sending: what is left, and whether its client reads fast enough.

    The clock starts when the client first lets the socket's send buffer fill (`stalled`): until
    then it takes everything as fast as it comes. From then on it must average `min_rate` bytes/s,
    checked once `grace_s` have passed."""

    def __init__(self, parts: list[bytes], *, min_rate: int, grace_s: float) -> None:
        self._views: deque[memoryview] = deque(memoryview(part) for part in parts if part)
        self.size = sum(len(view) for view in self._views)
        self.sent = 0
        self.min_rate = min_rate
        self.grace_s = grace_s
        self.stalled_at: float | None = None
        self._sent_at_stall = 0

    @property
    def done(self) -> bool:
        return not self._views

    def next_buffers(self) -> list[memoryview]:
        return [self._views[i] for i in range(min(SEND_PARTS, len(self._views)))]

    def advance(self, sent: int) -> None:
        self.sent += sent
        while sent and self._views:
            head = self._views[0]
            if sent >= len(head):
                sent -= len(head)
                self._views.popleft()
            else:
                self._views[0] = head[sent:]
                sent = 0

    def stalled(self, now: float) -> None:
        if self.stalled_at is None:
            self.stalled_at, self._sent_at_stall = now, self.sent

    def too_slow(self, now: float) -> bool:
        if not self.min_rate or self.stalled_at is None or self.done:
            return False
        elapsed = now - self.stalled_at
        return elapsed > self.grace_s and self.sent - self._sent_at_stall < self.min_rate * elapsed
