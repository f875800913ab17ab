"""Shared fixtures: the model directory, real photos, a Flask app on a real small registry."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient
from PIL import Image

from app import create_app
from app.config import Settings
from app.models.fetch import fetch, inspect
from app.models.manifest import get_spec
from app.models.registry import Registry
from app.service import Service
from tests.support.harness import Server

# What a server test starts unless it says otherwise: one worker, the small models, one warm-up pass.
WARMUP_KEY = "test-warmup-key-0123456789"  # POST /warmup always needs a key (app/auth.py)
WARM = {"Authorization": f"Bearer {WARMUP_KEY}"}
SMALL_SERVER = {"WORKERS": "1", "MODELS": "u2netp,centerface", "SEGMENTATION_MODEL": "u2netp", "WARMUP_REQUESTS": "1",
                "WARMUP_KEY": WARMUP_KEY}
RunningServer = Callable[..., AbstractContextManager[Server]]


@pytest.fixture(scope="session")
def model_home() -> Path:
    """MODEL_HOME with the models the tests use, fetched (and verified) if missing."""
    home = Settings.from_env().model_home
    for name in ("u2net", "u2netp", "centerface"):
        spec = get_spec(name)
        if not inspect(spec, home, verify_hash=False).ok:
            fetch(spec, home, progress=False)
    return home


@pytest.fixture(scope="session")
def astronaut() -> np.ndarray:
    """scikit-image's astronaut: (512, 512, 3) uint8 RGB, one frontal face, public domain."""
    from skimage import data

    return data.astronaut()


def jpeg_bytes(rgb: np.ndarray, *, quality: int = 92, **options: object) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, "JPEG", quality=quality, **options)
    return buffer.getvalue()


def png_bytes(pixels: np.ndarray | Image.Image) -> bytes:
    image = pixels if isinstance(pixels, Image.Image) else Image.fromarray(pixels)
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture(scope="session")
def astronaut_jpeg(astronaut: np.ndarray) -> bytes:
    return jpeg_bytes(astronaut)


@pytest.fixture(scope="session")
def big_photo(astronaut: np.ndarray) -> bytes:
    """The astronaut at 1600 x 1600 px as JPEG: alpha matting on it keeps a worker busy for seconds."""
    return jpeg_bytes(np.asarray(Image.fromarray(astronaut).resize((1600, 1600))))


@pytest.fixture(scope="session")
def small_settings(model_home: Path) -> Settings:
    return Settings(
        model_home=model_home,
        models=("u2netp", "centerface"),
        segmentation_model="u2netp",
        warmup_requests=1,
        ort_providers="cpu",
        max_upload_mb=2,
        max_image_pixels=4_000_000,
        working_max_side=1024,
        workers=1,
        warmup_key=WARMUP_KEY,
    )


@pytest.fixture(scope="session")
def small_registry(small_settings: Settings) -> Registry:
    """A real registry with the small models, loaded once for the whole session."""
    service = Service.of(create_app(small_settings, Registry()))
    service.load()
    return service.registry


@pytest.fixture()
def app(small_settings: Settings, small_registry: Registry) -> Iterator[Flask]:
    app = create_app(small_settings, small_registry)
    app.config["TESTING"] = True
    yield app


@pytest.fixture()
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture(scope="session")
def portrait_app(model_home: Path) -> Iterator[Flask]:
    """An app with the portrait matte (MODNet) loaded beside u2netp and CenterFace, loaded once:
    the portrait matte's tests and the drop-in routes that run it share it."""
    settings = Settings(model_home=model_home, models=("u2netp", "modnet", "centerface"), segmentation_model="u2netp",
                        warmup_requests=1, ort_providers="cpu", max_upload_mb=4, working_max_side=1024, workers=1)
    app = create_app(settings, Registry())
    Service.of(app).load()
    app.config["TESTING"] = True
    yield app


@pytest.fixture(scope="session")
def running_server(model_home: Path, tmp_path_factory: pytest.TempPathFactory) -> RunningServer:
    """`with running_server(WORKERS="2") as server:` starts the real server as start.sh does (nginx
    in front of gunicorn with the real gunicorn.conf.py, app/serving/launch.py) on a free loopback port (SMALL_SERVER settings and MODEL_HOME unless given),
    waits until /readyz answers 200 (`ready=False`: returns as soon as it is started), and stops
    the whole process tree at the end. Every wait is bounded."""

    @contextmanager
    def start(*, ready: bool = True, ready_timeout: float = 240.0, **env: str) -> Iterator[Server]:
        settings = {**SMALL_SERVER, "MODEL_HOME": str(model_home), **env}
        server = Server(env=settings, log_path=tmp_path_factory.mktemp("server") / "server.log").start()
        try:
            if ready:
                server.wait_ready(timeout=ready_timeout)
            yield server
        finally:
            server.stop()

    return start



@contextmanager
def reachable_folder() -> Iterator[Path]:
    """A folder (for FRONT_TEMP_DIR) that nginx's unprivileged workers can reach when the tests run
    as root (pytest's own folders are private to their owner), removed afterwards."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="pilotlight-test-front-"))
    folder.chmod(0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def front_temp_dir() -> Iterator[Path]:
    with reachable_folder() as folder:
        yield folder


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long files first: test.sh runs the suite in a process per core, each taking whole files
    in the order collected (--dist loadfile), so the files marked `heavy` (a minute or more: the
    corpus through the models, load and soak runs) go out first, then those that start a server
    (`server`), and the many quick ones fill in around them. A long file left for last would run
    alone while the other processes sit idle. Each file keeps its own order."""
    def rank(item: pytest.Item) -> int:
        return 0 if item.get_closest_marker("heavy") else 1 if item.get_closest_marker("server") else 2

    files: dict[str, int] = {}
    for item in items:
        files[item.nodeid.split("::")[0]] = min(files.get(item.nodeid.split("::")[0], 2), rank(item))
    order = {item.nodeid: index for index, item in enumerate(items)}
    items.sort(key=lambda item: (files[item.nodeid.split("::")[0]], order[item.nodeid]))
