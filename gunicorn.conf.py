"""gunicorn configuration for pilotlight: settings from the environment, thin hooks into app.lifecycle.

Run with: gunicorn -c gunicorn.conf.py "app:create_app()"   (start.sh does this)
"""

import os
import time

# app/native_threads.py pins native thread pools to one thread and picks numba's fork-safe layer.
_imports_started = time.perf_counter()
from app import lifecycle  # noqa: E402
from app.config import Settings  # noqa: E402

lifecycle.record_boot(started_at=_imports_started)
settings = Settings.from_env()

# -- Server socket -----------------------------------------------------------------------------
bind = [settings.bind]
backlog = 2048  # connections wait here while the workers warm up

# -- Worker processes --------------------------------------------------------------------------
workers = settings.workers
# gthread, balanced (app/worker.py): probes and cheap requests are answered by the worker's other
# threads while one thread runs an inference (app.runtime.InferenceGate admits one at a time per
# worker), and a busy worker leaves new connections to idle ones.
worker_class = "app.worker.BalancedThreadWorker"
threads = settings.worker_threads
worker_connections = settings.worker_connections  # open per worker, kept-alive and still-arriving included (app/serving/intake_worker.py)
timeout = settings.timeout
graceful_timeout = settings.graceful_timeout
keepalive = settings.keepalive
max_requests = settings.max_requests
max_requests_jitter = settings.max_requests_jitter

# -- Server mechanics --------------------------------------------------------------------------
preload_app = True  # the app is imported once in the master; models load in on_starting
wsgi_app = "app:create_app()"
control_socket_disable = True  # gunicorn 27's ~/.gunicorn control socket: shared path, writes outside /tmp
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
proc_name = "pilotlight"

# -- Logging -----------------------------------------------------------------------------------
loglevel = settings.log_level
accesslog = "-"
# the request id (X-Request-ID, echoed by the app on every response) ends each access line
access_log_format = '%(h)s "%(r)s" %(s)s %(B)s %(M)sms %({x-request-id}o)s'
_LEVEL = settings.log_level.upper()
# LOG_FORMAT=json: one JSON object per line, access lines as fields (app.observability.JsonFormatter)
_FORMATTER = (
    {"()": "app.observability.JsonFormatter"}
    if settings.log_format == "json"
    else {"format": "%(asctime)s [%(process)d] [%(levelname)s] %(name)s: %(message)s"}
)
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "generic": _FORMATTER,
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "generic", "stream": "ext://sys.stderr"},
        "access": {"class": "logging.StreamHandler", "formatter": "generic", "stream": "ext://sys.stdout"},
    },
    "root": {"level": _LEVEL, "handlers": ["console"]},
    "loggers": {
        "gunicorn.error": {"level": _LEVEL, "handlers": ["console"], "propagate": False, "qualname": "gunicorn.error"},
        "gunicorn.access": {"level": "INFO", "handlers": ["access"], "propagate": False, "qualname": "gunicorn.access"},
    },
}


# -- Server hooks (each calls app.lifecycle and nothing more) ------------------------------------
def on_starting(server):
    lifecycle.on_starting(server)


def when_ready(server):
    lifecycle.when_ready(server)


def pre_fork(server, worker):
    lifecycle.pre_fork(server, worker)


def post_fork(server, worker):
    lifecycle.post_fork(server, worker)


def post_worker_init(worker):
    lifecycle.post_worker_init(worker)


def worker_exit(server, worker):
    lifecycle.worker_exit(server, worker)


def child_exit(server, worker):
    lifecycle.child_exit(server, worker)
