"""gunicorn configuration for pilotlight: settings from the environment, hooks into app.serving.

start.sh runs `python -m app.serving.launch`, which starts nginx in front of this (the app is
"app:create_app()"). Behind nginx (WORKER_SOCKETS set), gunicorn binds nothing itself: each warm
worker listens on its own unix socket (app/serving/hooks.py) and nginx picks the worker. Alone
(`gunicorn -c gunicorn.conf.py`, or FRONT=none), it listens on HOST:PORT.
"""

import os
import time

# app/native_threads.py (imported with the app package) pins native thread pools to one thread.
_imports_started = time.perf_counter()
from app.config import Settings  # noqa: E402
from app.observability import ACCESS_LOG_FORMAT, logging_config  # noqa: E402
from app.serving import hooks  # noqa: E402

hooks.record_boot(started_at=_imports_started)
settings = Settings.from_env()

# -- Server socket -----------------------------------------------------------------------------
bind = [] if settings.behind_front else [settings.bind]
backlog = 2048  # alone: connections wait here while the workers warm up

# -- Worker processes --------------------------------------------------------------------------
workers = settings.workers
# gthread: one thread runs the worker's inference (app/serving/admission.py), QUEUE_DEPTH wait for
# it, one more answers probes and turns the next request away with a fast 503. nginx hands over
# whole requests only, so no thread ever waits on a slow client. The subclass retires a stopping
# worker's own socket without losing what nginx already sent it (app/serving/worker.py).
worker_class = "app.serving.worker.Worker"
threads = settings.worker_threads
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
access_log_format = ACCESS_LOG_FORMAT
logconfig_dict = logging_config(level=settings.log_level, json_lines=settings.log_format == "json")

# -- Server hooks (app/serving/hooks.py) ----------------------------------------------------------
on_starting = hooks.on_starting
when_ready = hooks.when_ready
pre_fork = hooks.pre_fork
post_fork = hooks.post_fork
post_worker_init = hooks.post_worker_init
worker_exit = hooks.worker_exit
child_exit = hooks.child_exit
