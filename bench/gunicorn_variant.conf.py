"""gunicorn.conf.py unchanged except for what bench/suite.py's variants switch off, nothing else.

    gunicorn --config bench/gunicorn_variant.conf.py      (cwd: the repository root)

The project's gunicorn.conf.py is loaded as a module (its settings and hooks copied here, so every
other setting and hook is the real one). Then, only when asked through the environment:

    BENCH_GC_FREEZE=0   app.serving.hooks.pre_fork runs with gc.freeze() made a no-op, to measure what
                        freezing the master's objects before the fork saves in the workers' memory.
"""

import gc
import importlib.util
import os
import pathlib

_path = pathlib.Path(__file__).resolve().parent.parent / "gunicorn.conf.py"
_spec = importlib.util.spec_from_file_location("pilotlight_gunicorn_conf", _path)
_conf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conf)
globals().update({name: value for name, value in vars(_conf).items() if not name.startswith("__")})

if os.environ.get("BENCH_GC_FREEZE", "1") == "0":
    _real_pre_fork = _conf.pre_fork

    def pre_fork(server, worker):
        """The real hook, with gc.freeze() a no-op while it runs."""
        freeze = gc.freeze
        gc.freeze = lambda: None
        try:
            _real_pre_fork(server, worker)
        finally:
            gc.freeze = freeze
        server.log.info("bench variant: gc.freeze() skipped before forking worker")
