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
MB that are never returned. Two arenas per process (M_ARENA_MAX, as MALLOC_ARENA_MAX=2 would) keep
a worker's memory flat under load (bench/load.py measures it); MALLOC_ARENA_MAX in the environment
wins here too.

glibc also raises its mmap threshold each time it frees a large mmapped block (up to 32 MiB): after
one 20-megapixel photo, the multi-MB buffers of every later photo come from the heap and stay there,
and the worker that keeps its memory when idle (KEEP_MEMORY_WORKERS) drifts upwards. A fixed
threshold (M_MMAP_THRESHOLD, 4 MiB) keeps large buffers mmapped and returned at free: measured in
one process over 42 varied soak requests (bench.load's photos), private memory 461-470 MiB
instead of 463-520 MiB. MALLOC_MMAP_THRESHOLD_ in the environment wins.
"""

import ctypes
import ctypes.util
import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

M_ARENA_MAX = -8  # glibc's mallopt parameter numbers
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 4 * 1024 * 1024
if _libc_name := ctypes.util.find_library("c"):
    try:
        _libc = ctypes.CDLL(_libc_name)
        if "MALLOC_ARENA_MAX" not in os.environ:
            _libc.mallopt(M_ARENA_MAX, 2)
        if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
            _libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    except (OSError, AttributeError):  # not glibc
        pass
