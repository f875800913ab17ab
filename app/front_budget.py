"""What nginx in front may hold, as pure arithmetic over the settings (issue 49): memory for its
buffers (FRONT_MEMORY_MB) and disk for its temporary files (TEMP_BUDGET_MB). `Settings.validate`
refuses settings whose bound is past either budget, with a message naming what to change.

Memory, by phase. Every connection nginx holds takes at most `HEAD_BYTES` (37.5 KiB) whatever its
phase: its pool (connection_pool_size 512), its request's first pool block (request_pool_size 4k)
and the head's buffers (client_header_buffer_size 1k, then large_client_header_buffers 4 8k). One
that is idle holds less (nginx frees a kept-alive connection's head buffers between requests), and
HEADER_TIMEOUT ends one that is slow to send its head. A request in progress, from its head to its
answer's last byte on its way to a worker or back, takes at most `REQUEST_BYTES` (2,354 KiB) more:
the body buffer (client_body_buffer_size 256k: a larger body waits in a temporary file), its head
as re-sent to the worker (the client's 33 KiB at most and the few headers nginx sets, within 34
KiB) and the answer's buffers (proxy_buffer_size 16k, proxy_buffers 32 64k). So

    WORKER_CONNECTIONS x 37.5 KiB + MAX_REQUESTS_IN_PROGRESS x 2,354 KiB <= FRONT_MEMORY_MB,

and nginx refuses a request past MAX_REQUESTS_IN_PROGRESS (a limit_conn over every location that
proxies, front.py) before it holds any of the second term. Outside it: nginx's fixed memory (its
connection table, under 0.5 KiB a slot, and its shared zones), a request's pool past its first
block, the management port's probes (the kubelet's, never counted), and without MANAGEMENT_PORT the
public probes (never counted either: the kubelet asks them), each holding the 16 KiB first answer
buffer while a worker answers.

This module imports nothing of the app's: `config` imports it (a cycle otherwise).
"""

from __future__ import annotations

import math
from typing import Protocol

KIB, MIB = 1024, 2**20
CONNECTION_POOL_BYTES = 512  # connection_pool_size: every connection, from its accept
REQUEST_POOL_KIB = 4  # request_pool_size: a request's pool, from its first byte
HEADER_BUFFER_KIB = 1  # client_header_buffer_size: every request head starts in this
LARGE_HEADER_BUFFERS = (4, 8)  # then up to 4 buffers of 8 KiB: a request line or header field of at most 8 KiB
BODY_BUFFER_KIB = 256  # client_body_buffer_size: a body past it waits in a temporary file
UPSTREAM_HEAD_KIB = 34  # the head as re-sent to a worker: the client's (33 KiB at most) and nginx's few headers
ANSWER_BUFFERS = (16, 32, 64)  # proxy_buffer_size 16k, proxy_buffers 32 64k: an answer's first 2 MiB in memory
DEFAULT_MEMORY_MB = 1024  # FRONT_MEMORY_MB unless WORKER_CONNECTIONS and the workers need more
MOST_IN_PROGRESS = 65535  # nginx's limit_conn counts to this at most

HEAD_KIB = CONNECTION_POOL_BYTES / KIB + REQUEST_POOL_KIB + HEADER_BUFFER_KIB + LARGE_HEADER_BUFFERS[0] * LARGE_HEADER_BUFFERS[1]
HEAD_BYTES = int(HEAD_KIB * KIB)
"""The most one connection holds, whatever its phase."""
REQUEST_KIB = BODY_BUFFER_KIB + UPSTREAM_HEAD_KIB + ANSWER_BUFFERS[0] + ANSWER_BUFFERS[1] * ANSWER_BUFFERS[2]
REQUEST_BYTES = REQUEST_KIB * KIB
"""The most a request in progress holds beside its connection's `HEAD_BYTES`."""


class Front(Protocol):
    """The settings this module reads (app/config.py, Settings)."""

    worker_connections: int
    front_memory_mb: int | None
    max_requests_in_progress: int | None
    workers: int
    queue_depth: int
    temp_budget_mb: float

    @property
    def max_posts_in_progress(self) -> int | None: ...

    @property
    def request_disk_mb(self) -> float: ...


def admitted(settings: Front) -> int:
    """Requests the workers admit at once: one inferring and QUEUE_DEPTH waiting, per worker."""
    return settings.workers * (1 + settings.queue_depth)


def heads_bytes(settings: Front) -> int:
    """The most WORKER_CONNECTIONS connections hold, each in any phase (`HEAD_BYTES` each)."""
    return settings.worker_connections * HEAD_BYTES


def budget_bytes(settings: Front) -> int:
    """FRONT_MEMORY_MB; unset, 1024 MiB, or where that is less, what WORKER_CONNECTIONS' heads and two
    requests in progress per request the workers admit take (whole MiB): the defaults always start."""
    if settings.front_memory_mb is not None:
        return settings.front_memory_mb * MIB
    needed = heads_bytes(settings) + 2 * admitted(settings) * REQUEST_BYTES
    return max(DEFAULT_MEMORY_MB, math.ceil(needed / MIB)) * MIB


def requests_in_progress(settings: Front) -> int:
    """MAX_REQUESTS_IN_PROGRESS; unset, as many requests as FRONT_MEMORY_MB holds beside
    WORKER_CONNECTIONS' heads (at most 65535, nginx's most)."""
    if settings.max_requests_in_progress is not None:
        return settings.max_requests_in_progress
    left = budget_bytes(settings) - heads_bytes(settings)
    return max(0, min(MOST_IN_PROGRESS, left // REQUEST_BYTES))


def in_progress_bytes(settings: Front) -> int:
    """The most the requests in progress hold beside their connections' heads."""
    return requests_in_progress(settings) * REQUEST_BYTES


def buffer_bytes(settings: Front) -> int:
    """The most nginx's buffers take: every connection's head, and every request in progress."""
    return heads_bytes(settings) + in_progress_bytes(settings)


def connections_that_fit(settings: Front) -> int:
    """The most connections FRONT_MEMORY_MB holds beside MAX_REQUESTS_IN_PROGRESS requests."""
    return max(0, (budget_bytes(settings) - in_progress_bytes(settings)) // HEAD_BYTES)


def mib(value: int) -> str:
    return f"{value / MIB:,.0f} MiB"


def problem(settings: Front) -> str | None:
    """Why the settings cannot start (a bound past its budget, or fewer places than the workers
    admit), or None."""
    posts, taken = settings.max_posts_in_progress, admitted(settings)
    if posts is not None and posts < taken:
        return (f"TEMP_BUDGET_MB={settings.temp_budget_mb:g} holds {posts} requests of MAX_UPLOAD_MB + MAX_ANSWER_MB "
                f"({settings.request_disk_mb:g} MB) at once, fewer than the {taken} the workers admit "
                f"(WORKERS x (1 + QUEUE_DEPTH)); at least {taken * settings.request_disk_mb:g} (or 0: no cap)")
    budget, cap = budget_bytes(settings), requests_in_progress(settings)
    given = f"FRONT_MEMORY_MB={settings.front_memory_mb}" if settings.front_memory_mb is not None else f"FRONT_MEMORY_MB's {mib(budget)}"
    if buffer_bytes(settings) > budget:
        return (f"nginx's buffers could take {mib(buffer_bytes(settings))}, more than {given}: WORKER_CONNECTIONS="
                f"{settings.worker_connections} x {HEAD_KIB:g} KiB ({mib(heads_bytes(settings))}) + "
                f"MAX_REQUESTS_IN_PROGRESS={cap} x {REQUEST_KIB:,} KiB ({mib(in_progress_bytes(settings))}). "
                f"At most {connections_that_fit(settings)} connections fit beside {cap} requests in progress: lower "
                "WORKER_CONNECTIONS or MAX_REQUESTS_IN_PROGRESS, or raise FRONT_MEMORY_MB")
    if cap < taken:
        why = "" if settings.max_requests_in_progress is not None else f" (what {given} leaves beside WORKER_CONNECTIONS' heads)"
        least = math.ceil((heads_bytes(settings) + taken * REQUEST_BYTES) / MIB)
        return (f"MAX_REQUESTS_IN_PROGRESS={cap}{why} is fewer than the {taken} requests the workers admit "
                f"(WORKERS x (1 + QUEUE_DEPTH)): raise it, with FRONT_MEMORY_MB at least {least} at "
                f"WORKER_CONNECTIONS={settings.worker_connections}, or lower WORKER_CONNECTIONS")
    return None
