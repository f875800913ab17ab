"""Native thread pools at one thread per process, and numba's fork-safe threading layer.

Imported first by `app/__init__.py`, so it runs before numpy, scipy, onnxruntime or numba are
imported by any entry point (gunicorn, the CLI, tests, benchmarks). The service gets its
parallelism from gunicorn's worker processes; oversubscribed pools only slow it down.

numba's default OpenMP layer is not fork-safe: a worker forked from a master that imported
pymatting is killed (SIGTERM, "fork() called from a process already using GNU OpenMP") on its
first parallel kernel (alpha matting, foreground estimation). The workqueue layer survives fork;
it is not re-entrant, which is fine: each worker runs one inference at a time (InferenceGate).
Values already set in the environment win.

glibc gives every thread that allocates its own malloc arena (up to 8 per core), each keeping the
memory it freed: in a gthread worker each pool thread's first requests grow the process by tens of
MB. A worker's requests take turns at inference (InferenceGate), so its threads share one arena
(M_ARENA_MAX=1, as MALLOC_ARENA_MAX=1 would).

A request frees its large buffers (the decoded photo, the matte, float temporaries: tens of MB for
a 1 MP photo) and the next request of that size asks for them again. Above its mmap threshold
glibc maps each block afresh and unmaps it at free, so with the former fixed 4 MiB threshold every
request faulted all of them in again, thousands of page faults each. A fixed threshold at glibc's
64-bit ceiling (M_MMAP_THRESHOLD, 32 MiB) with a trim threshold twice that (M_TRIM_THRESHOLD,
glibc's own pairing) keeps them in the heap for the next request: next to no page faults after a
worker's first request of a size, faster requests, and a few % more private memory in a busy
worker (`python -m bench.matte allocator` measures all three against the former setting;
docs/BENCHMARKS.md). Blocks over 32 MiB (a 20 MP photo's RGB) are still returned at free, and an
idle worker still gives the rest back (app/serving/memory.py: malloc_trim returns free blocks
wherever they lie); a keeper keeps them, as it keeps its arena. MALLOC_ARENA_MAX,
MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ in the environment win.
"""

import ctypes
import ctypes.util
import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8  # glibc's mallopt parameter numbers
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024  # glibc's ceiling on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX)
MALLOPT = (
    ("MALLOC_ARENA_MAX", M_ARENA_MAX, 1),
    ("MALLOC_MMAP_THRESHOLD_", M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES),
    ("MALLOC_TRIM_THRESHOLD_", M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD_BYTES),
)
if _libc_name := ctypes.util.find_library("c"):
    try:
        _libc = ctypes.CDLL(_libc_name)
        for _variable, _parameter, _value in MALLOPT:
            if _variable not in os.environ:
                _libc.mallopt(_parameter, _value)
    except (OSError, AttributeError):  # not glibc
        pass
