"""Native thread pools at one thread per process, and numba's fork-safe threading layer.

Imported first by `app/__init__.py`, so it runs before numpy, scipy, onnxruntime or numba are
imported by any entry point (gunicorn, the CLI, tests, benchmarks). The service gets its
parallelism from gunicorn's worker processes; oversubscribed pools only slow it down.

numba's default OpenMP layer is not fork-safe: a worker forked from a master that imported
pymatting is killed (SIGTERM, "fork() called from a process already using GNU OpenMP") on its
first parallel kernel (alpha matting, foreground estimation). The workqueue layer survives fork;
it is not re-entrant, which is fine: each worker runs one inference at a time (InferenceGate).
Values already set in the environment win.
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
