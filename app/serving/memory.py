"""Giving an idle worker's working memory back to the operating system.

A run's activation buffers come from onnxruntime's shared CPU arena (ORT_CPU_ARENA=shared, the
default) or straight from malloc (ORT_CPU_ARENA=off). `release()` shrinks the shared arena (its free
regions go back to malloc), then malloc_trim(0) returns glibc's free pages, so an idle worker holds
little more than what it shares with the master. RELEASE_MEMORY chooses when: once a worker has been
idle for RELEASE_MEMORY_IDLE_S (`idle`, the default: back-to-back requests keep reusing the same
buffers and only the first request after a quiet spell grows them again), after every request
(`request`), or never (`off`).

The workers in the first KEEP_MEMORY_WORKERS slots keep their buffers when idle, and nginx gives
them a lone request first (app/serving/front.py), so the first request after a quiet spell runs at
full speed; the watchdog (watchdog.py) applies the idle policy.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

from ..models.sessions import shrink_shared_arena


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim  # noqa: B018  (probe: not glibc without it)
    except (OSError, AttributeError):
        return None
    return libc


def malloc_trim() -> bool:
    """Return free heap memory to the OS; False where the C library has no malloc_trim."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def release() -> None:
    """Shrink the shared onnxruntime arena, then trim the heap."""
    shrink_shared_arena()
    malloc_trim()
