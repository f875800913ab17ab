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
"""

import ctypes
import ctypes.util
import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

M_ARENA_MAX = -8  # glibc's mallopt parameter number
if "MALLOC_ARENA_MAX" not in os.environ and (_libc_name := ctypes.util.find_library("c")):
    try:
        ctypes.CDLL(_libc_name).mallopt(M_ARENA_MAX, 2)
    except (OSError, AttributeError):  # not glibc
        pass
