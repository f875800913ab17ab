"""Giving freed heap memory back to the operating system (glibc's malloc_trim).

With onnxruntime's CPU arena off (ORT_CPU_ARENA=false), a run's activation buffers come from malloc
and go back to it; glibc keeps the freed pages mapped. malloc_trim(0) returns them, so an idle
worker holds only what it shares with the master. MALLOC_TRIM chooses when: after each request
(`request`; the next run faults its pages in again) or once a worker has been idle for
MALLOC_TRIM_IDLE_S (`idle`; back-to-back requests keep reusing the same pages).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


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
