"""pilotlight: an always-warm portrait server (Flask app factory).

`create_app()` builds the app and its runtime state and loads nothing: models are loaded by the
gunicorn hooks in `app.lifecycle` (once in the master, shared copy-on-write with the workers), or
on first use in lazy mode.
"""

from __future__ import annotations

from . import native_threads  # noqa: F401  (first: sets thread environment before numpy et al.)

import functools
import io
from typing import TYPE_CHECKING

from .config import Settings

if TYPE_CHECKING:  # the heavy modules (onnxruntime, rembg, numba) load when an app is created,
    from flask import Flask  # so `python -m app.models fetch` starts in a blink

    from .models.registry import Registry
    from .runtime import Runtime

EXTENSION = "pilotlight"
WARMUP_HEADER = "X-Pilotlight-Warmup"


def create_app(settings: Settings | None = None, registry: Registry | None = None) -> Flask:
    from flask import Flask

    from . import auth, cors, errors, observability
    from .api import background, health, idphoto, metrics
    from .models.registry import REGISTRY
    from .runtime import Runtime

    settings = Settings.from_env() if settings is None else settings
    app = Flask(__name__)
    app.debug = False  # never debug mode, whatever FLASK_DEBUG says (tracebacks and the debugger stay off)
    app.config.update(
        PILOTLIGHT_SETTINGS=settings,
        MAX_CONTENT_LENGTH=settings.max_upload_bytes,
        MAX_FORM_MEMORY_SIZE=settings.max_upload_bytes,
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]  (stage timings and checks keep their order)
    runtime = Runtime(settings, REGISTRY if registry is None else registry)
    app.extensions[EXTENSION] = runtime
    observability.init_app(app)  # first: every response gets its X-Request-ID
    cors.init_app(app, settings.cors_origins)
    errors.init_app(app)
    auth.init_app(app, settings)  # API_KEYS: Bearer keys on /api/v1 (off when unset)
    app.register_blueprint(health.bp)
    app.register_blueprint(metrics.bp)
    app.register_blueprint(background.bp)
    app.register_blueprint(idphoto.bp)
    from .api import faces  # face analysis, comparison, swap

    app.register_blueprint(faces.bp)
    from .web import bp as web_page  # GET /: the browser upload page
    app.register_blueprint(web_page)
    runtime.warmup_sources.extend([background.warmup_requests, idphoto.warmup_requests, faces.warmup_requests])
    runtime.bind_warmer(lambda: _warm_once(app, runtime))
    return app


@functools.cache
def warmup_photo() -> bytes:
    """The warm-up portrait as a JPEG (512x512, one frontal face)."""
    from PIL import Image
    from skimage import data

    buffer = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buffer, "JPEG", quality=92)
    return buffer.getvalue()


def get_runtime(app: Flask) -> Runtime:
    return app.extensions[EXTENSION]


def _warm_once(app: Flask, runtime: Runtime) -> None:
    """One warm-up pass: every warm-up request through the app; models no request covers are
    warmed directly. The photo is scikit-image's astronaut (a real, public-domain portrait that
    ships inside a dependency), so the ID photo path runs end to end: detect, segment, place,
    composite, encode, check."""
    from . import observability

    photo = warmup_photo()
    covered: set[str] = set()
    client = app.test_client()
    for request in runtime.warmup_requests():
        response = client.post(
            request.path,
            data={**request.fields, "image": (io.BytesIO(photo), "warmup.jpg")},
            headers={WARMUP_HEADER: "1"},
            environ_base={observability.WARMUP_ENVIRON: "1"},  # left out of the metrics
        )
        if response.status_code >= 500:
            raise RuntimeError(f"warm-up request {request.path} failed with {response.status_code}: {response.get_data(as_text=True)[:200]}")
        covered.update(request.models)
    for entry in runtime.registry.loaded():
        if entry.name not in covered:
            entry.model.warmup()
