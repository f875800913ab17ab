"""pilotlight: an always-warm portrait server (Flask app factory).

`create_app()` builds the app and its `Service` (app/service.py) and loads nothing: models are
loaded by the serving layer (app/serving/, the gunicorn hooks: once in the master, shared
copy-on-write with the workers), or on first use in lazy mode. docs/architecture.md maps the layers.
"""

from __future__ import annotations

from . import native_threads  # noqa: F401  (first: sets thread environment before numpy et al.)

import io
from typing import TYPE_CHECKING

from .config import Settings

if TYPE_CHECKING:  # the heavy modules (onnxruntime, rembg, numba) load when an app is created,
    from flask import Flask  # so `python -m app.models fetch` starts in a blink

    from .models.registry import Registry


def create_app(settings: Settings | None = None, registry: Registry | None = None) -> Flask:
    from flask import Flask

    from . import auth, cors, errors, observability
    from .api import background, faces, health, hivision, idphoto, live, metrics, rembg_server
    from .models.registry import REGISTRY
    from .service import Service
    from .web import bp as web_page

    settings = Settings.from_env() if settings is None else settings
    app = Flask(__name__)
    app.request_class = _in_memory_request()  # an upload's file parts never touch TMPDIR
    app.debug = False  # never debug mode, whatever FLASK_DEBUG says (tracebacks and the debugger stay off)
    app.config.update(
        PILOTLIGHT_SETTINGS=settings,
        MAX_CONTENT_LENGTH=settings.max_upload_bytes,
        MAX_FORM_MEMORY_SIZE=settings.max_upload_bytes,
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]  (stage timings and checks keep their order)
    if settings.behind_front:
        # nginx sets X-Forwarded-For to the client's address (one hop; app/serving/front.py); alone,
        # no such header is believed
        from werkzeug.middleware.proxy_fix import ProxyFix

        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1, x_proto=1)  # type: ignore[method-assign]
    service = Service(settings, REGISTRY if registry is None else registry)
    service.attach(app)
    observability.init_app(app)  # first: every response gets its X-Request-ID
    # the drop-in APIs (`rembg s`, HivisionIDPhotos) live outside /api/v1: the same keys and CORS by blueprint
    drop_in = (rembg_server.bp.name, hivision.bp.name)
    cors.init_app(app, settings.cors_origins, blueprints=drop_in)
    errors.init_app(app)
    auth.init_app(app, settings, blueprints=drop_in)  # API_KEYS: Bearer keys on /api/v1 and the drop-in routes (off when unset)
    for module in (health, metrics, background, idphoto, live, faces, rembg_server, hivision):
        app.register_blueprint(module.bp)
    app.register_blueprint(web_page)  # GET /: the browser upload page
    # the ID photo first: it runs the portrait matte, so the matte's own cut-out request adds nothing
    # (app/warmup.py); the matte's warmup() runs the cut-out's whole matte at the other shapes
    service.warmup_sources.extend([idphoto.warmup_requests, background.warmup_requests, faces.warmup_requests,
                                    live.warmup_requests])
    return app


def _in_memory_request() -> type:
    from flask import Request

    class InMemoryUploads(Request):
        """An upload's file parts in memory, never in a file under TMPDIR: Werkzeug spools every
        part past 500 KiB to disk before any admission, outside nginx's TEMP_BUDGET_MB. nginx has
        already cut the whole body to MAX_UPLOAD_MB, so a request holds at most that much here, and
        the workers at most WORKERS x THREADS x MAX_UPLOAD_MB (`upload_memory_bytes`; the launcher
        states it at start)."""

        def _get_file_stream(self, total_content_length: int | None, content_type: str | None,
                             filename: str | None = None, content_length: int | None = None) -> io.BytesIO:
            return io.BytesIO()

    return InMemoryUploads
