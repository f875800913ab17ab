"""Hostile input beyond HTTP framing: requests whose parameters or pixels would cost a worker its
memory or its life. Each gets a clear JSON error (or is served within bounds), and nothing else
breaks. The Flask client on the small real registry, then the real server for decode memory."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from flask.testing import FlaskClient
from PIL import Image

from app import create_app
from app.config import Settings
from app.models.registry import Registry
from tests.conftest import RunningServer, png_bytes
from tests.support.harness import multipart, post_from

pytestmark = pytest.mark.heavy  # a minute or more of servers under load: collected first (conftest.py)

CUTOUT = "/api/v1/remove-background"
POD_MEMORY_LIMIT_MIB = 3584  # deploy/k8s/base/deployment.yaml


def error_of(response: object) -> dict[str, object]:
    body = json.loads(response.get_data())  # type: ignore[attr-defined]
    return body["error"]


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400"])
def test_a_custom_size_must_be_finite(client: FlaskClient, astronaut_jpeg: bytes, value: str) -> None:
    response = client.post("/api/v1/idphoto", data={"image": (io.BytesIO(astronaut_jpeg), "a.jpg"), "width_px": value, "height_px": "600"})
    assert response.status_code == 400 and error_of(response)["code"] == "invalid_field"


@pytest.fixture()
def short_timeout_client(small_settings: Settings, small_registry: Registry) -> FlaskClient:
    """TIMEOUT=10: alpha matting may take on 41,666 unknown pixels (half of it at the slowest rate measured)."""
    app = create_app(small_settings.with_overrides(timeout=10), small_registry)
    return app.test_client()


def test_alpha_matting_refuses_a_band_it_could_not_solve_in_time(short_timeout_client: FlaskClient, astronaut_jpeg: bytes) -> None:
    def cutout(**fields: str) -> object:
        return short_timeout_client.post(CUTOUT, data={"image": (io.BytesIO(astronaut_jpeg), "a.jpg"), "alpha_matting": "true", **fields})

    fine = cutout()  # the defaults: about 26,000 unknown pixels on the astronaut
    assert fine.status_code == 200 and fine.mimetype == "image/png"
    wide = cutout(alpha_matting_erode_size="100", alpha_matting_foreground_threshold="200", alpha_matting_background_threshold="50")
    assert wide.status_code == 422
    error = error_of(wide)
    assert error["code"] == "alpha_matting_too_costly" and error["unknown_px"] > error["max_unknown_px"] == 41_666
    assert "alpha_matting_erode_size" in str(error["message"])


def test_the_trimap_is_rembgs(astronaut: np.ndarray) -> None:
    """OpenCV's erosion gives rembg's trimap (scipy's binary_erosion), pixel for pixel."""
    from scipy.ndimage import binary_erosion

    from app.imaging.matte_edges import UNKNOWN, matting_trimap

    mask = np.zeros((200, 200), np.uint8)
    mask[40:160, 50:150] = 255
    mask[30:40, 50:150] = 120  # a soft edge
    for erode in (0, 1, 9, 10, 25):
        ours = matting_trimap(mask, foreground_threshold=240, background_threshold=10, erode_size=erode)
        structure = np.ones((erode, erode)) if erode else None
        fg = binary_erosion(mask > 240, structure=structure)
        bg = binary_erosion(mask < 10, structure=structure, border_value=1)
        theirs = np.full(mask.shape, UNKNOWN, np.uint8)
        theirs[fg], theirs[bg] = 255, 0
        assert np.array_equal(ours, theirs), erode


def test_readyz_names_no_file_path(client: FlaskClient, small_settings: Settings) -> None:
    text = client.get("/readyz").get_data(as_text=True)
    assert str(small_settings.model_home) not in text and ".onnx" not in text and "/root" not in text


def test_only_the_accepted_decoders_see_the_bytes(client: FlaskClient) -> None:
    for fmt in ("GIF", "ICO", "TGA", "PCX"):
        buffer = io.BytesIO()
        Image.new("RGB", (32, 32), (10, 20, 30)).save(buffer, fmt)
        response = client.post(CUTOUT, data={"image": (io.BytesIO(buffer.getvalue()), "a.bin")})
        assert response.status_code == 415 and error_of(response)["code"] == "unsupported_media_type", fmt


def test_a_torn_preoptimised_file_of_the_right_size_is_written_again(tmp_path: Path) -> None:
    from app.models import optimised
    from app.models.manifest import ModelSpec, Role
    from tests.test_sessions import _tiny_model

    spec = ModelSpec(name="tiny", role=Role.SEGMENTATION, family="rembg", filename="tiny.onnx", size=None,
                     sha256=None, licence="test", sources=(), description="test")
    _tiny_model(tmp_path / "tiny.onnx")
    home = tmp_path / "optimised"
    graph = optimised.ensure(spec, tmp_path, home)
    data = optimised.files_for(spec, home).data
    weights = bytearray(data.read_bytes())
    weights[len(weights) // 2] ^= 0xFF  # one byte changed, the size the record says
    data.write_bytes(bytes(weights))
    assert optimised.usable(spec, tmp_path, home) is None
    assert optimised.ensure(spec, tmp_path, home) == graph and optimised.verify(spec, tmp_path, home)


# -- the real server: decode memory -----------------------------------------------------------------


@pytest.mark.server
def test_eight_huge_uploads_at_once_stay_within_the_pods_memory(running_server: RunningServer) -> None:
    """Eight concurrent cut-outs of a 160 KB PNG that decodes to 7000 x 7000 px (49 MP, under the
    50 MP cap): each worker decodes one photo at a time inside its inference slot, so the summed PSS
    of the whole tree (nginx included) stays under the Deployment's memory limit, with its models
    (u2net, centerface) and 2 workers. Each upload gets an answer: 200, or a fast 503."""
    photo = png_bytes(Image.new("RGB", (7000, 7000), (120, 160, 200)))
    assert len(photo) < 400_000
    with running_server(WORKERS="2", MODELS="u2net,centerface", SEGMENTATION_MODEL="u2net", WARMUP_REQUESTS="1") as server:
        peak = 0.0
        statuses: list[int | str] = []
        done = threading.Event()

        body, content_type = multipart({"image": ("big.png", photo, "image/png")}, {})

        def upload(index: int) -> None:  # each from an address of its own: eight clients, each within its share
            try:
                statuses.append(post_from(server, f"127.0.0.{2 + index}", CUTOUT, body, content_type, timeout=300)[0])
            except Exception as exc:  # noqa: BLE001  (recorded, then asserted)
                statuses.append(type(exc).__name__)

        threads = [threading.Thread(target=upload, args=(index,)) for index in range(8)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 300
        while any(thread.is_alive() for thread in threads) and time.monotonic() < deadline:
            peak = max(peak, server.tree_pss_kib() / 1024)
            time.sleep(0.2)
        done.set()
        for thread in threads:
            thread.join(timeout=10)
        assert len(statuses) == 8 and set(statuses) <= {200, 503}, statuses
        assert 200 in statuses
        assert peak < POD_MEMORY_LIMIT_MIB, f"summed PSS reached {peak:.0f} MiB"
        assert server.get("/readyz").status_code == 200
