"""The Flask app on a real registry of small models (u2netp, centerface), through the test client."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
from flask.testing import FlaskClient
from PIL import Image

from app import create_app
from app.config import Settings
from app.models.registry import Registry
from app.service import Service
from app.serving.admission import InferenceGate
from tests.conftest import WARM, jpeg_bytes


def remove(client: FlaskClient, data: bytes, **fields: str) -> object:
    return client.post("/api/v1/remove-background", data={**fields, "image": (io.BytesIO(data), "photo.jpg")})


def test_readyz_is_503_until_warm_then_200(app: object, client: FlaskClient) -> None:
    first = client.get("/readyz")
    assert first.status_code == 503 and "warm-up" in first.get_json()["reason"]
    warm = client.post("/warmup", headers=WARM)
    assert warm.status_code == 200 and warm.get_json()["warmup_seconds"] > 0
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.get_json()["worker"]["warm"] is True


def test_requests_get_503_before_models_load(small_settings: Settings, astronaut_jpeg: bytes) -> None:
    client = create_app(small_settings, Registry()).test_client()
    response = remove(client, astronaut_jpeg)
    assert response.status_code == 503 and response.get_json()["error"]["code"] == "not_ready"
    assert response.headers["Retry-After"]
    assert client.get("/healthz").status_code == 200


def test_only_mask(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    response = remove(client, astronaut_jpeg, only_mask="true")
    assert response.status_code == 200
    mask = Image.open(io.BytesIO(response.data))
    assert mask.mode == "L" and mask.size == (512, 512)
    assert np.asarray(mask)[60:170, 180:280].mean() > 200


def test_alpha_matting_keeps_size_and_person(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    response = remove(client, astronaut_jpeg, alpha_matting="on", alpha_matting_erode_size="5")
    assert response.status_code == 200, response.get_json()
    alpha = np.asarray(Image.open(io.BytesIO(response.data)))[:, :, 3]
    assert alpha.shape == (512, 512) and alpha[60:170, 180:280].mean() > 200 and alpha[:100, 420:].mean() < 20


def test_large_inputs_are_segmented_at_the_working_size(client: FlaskClient, astronaut: np.ndarray) -> None:
    big = np.asarray(Image.fromarray(astronaut).resize((1536, 1536)))  # working_max_side is 1024 here
    response = remove(client, jpeg_bytes(big), format="webp")
    assert response.status_code == 200 and response.mimetype == "image/webp"
    image = Image.open(io.BytesIO(response.data))
    assert image.size == (1536, 1536)
    alpha = np.asarray(image.convert("RGBA"))[:, :, 3]
    assert alpha[180:510, 540:840].mean() > 200 and alpha[:380, 1150:].mean() < 20


def test_exif_rotated_upload_comes_back_upright(client: FlaskClient, astronaut: np.ndarray) -> None:
    sideways = np.rot90(astronaut[:, :400], k=1)  # stored rotated 90 degrees counter-clockwise
    exif = Image.Exif()
    exif[0x0112] = 6  # display: rotate 90 degrees clockwise
    response = remove(client, jpeg_bytes(np.ascontiguousarray(sideways), exif=exif.tobytes()))
    assert Image.open(io.BytesIO(response.data)).size == (400, 512)


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"model": "u2net"}, "unknown_model"),  # known to the manifest, not loaded here
        ({"model": "../../etc/passwd"}, "unknown_model"),
        ({"only_mask": "perhaps"}, "invalid_field"),
        ({"alpha_matting": "1", "alpha_matting_erode_size": "-3"}, "invalid_field"),
        ({"background": "#12345"}, "invalid_background"),
    ],
)
def test_bad_fields(client: FlaskClient, astronaut_jpeg: bytes, fields: dict[str, str], code: str) -> None:
    response = remove(client, astronaut_jpeg, **fields)
    assert response.status_code == 400 and response.get_json()["error"]["code"] == code


def test_two_images_and_unknown_routes(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    response = client.post(
        "/api/v1/remove-background",
        data={"image": [(io.BytesIO(astronaut_jpeg), "a.jpg"), (io.BytesIO(astronaut_jpeg), "b.jpg")]},
    )
    assert response.status_code == 400 and response.get_json()["error"]["code"] == "too_many_images"
    missing = client.get("/nope")
    assert missing.status_code == 404 and missing.get_json()["error"]["code"] == "not_found"
    wrong_method = client.get("/api/v1/remove-background")
    assert wrong_method.status_code == 405 and wrong_method.get_json()["error"]["code"] == "method_not_allowed"


def test_upload_limit_is_413_json(small_settings: Settings, small_registry: Registry) -> None:
    # kept under werkzeug's 500 KB in-memory limit: a bigger test body is spooled to a file the
    # test client never closes (the real server test sends 5 MB)
    client = create_app(small_settings.with_overrides(max_upload_mb=0.1), small_registry).test_client()
    response = client.post("/api/v1/remove-background", data={"image": (io.BytesIO(b"\0" * 200_000), "x.jpg")})
    assert response.status_code == 413 and response.get_json()["error"]["code"] == "payload_too_large"


def test_busy_worker_answers_a_fast_503(app: object, small_settings: Settings, small_registry: Registry, astronaut_jpeg: bytes) -> None:
    app = create_app(small_settings.with_overrides(queue_depth=0), small_registry)
    gate = InferenceGate(queue_depth=0, wait_timeout=1.0)
    Service.of(app).admission = gate  # as post_fork installs it in a worker
    with gate.slot():  # another request holds the only inference slot and nobody may queue
        response = remove(app.test_client(), astronaut_jpeg)
    assert response.status_code == 503 and response.get_json()["error"]["code"] == "busy"
    assert response.headers["Retry-After"] == "1"


def test_alpha_matting_solves_on_the_band_box_as_it_would_on_the_whole_image(astronaut: np.ndarray) -> None:
    """The closed-form Laplacian's windows reach one pixel, so solving on the unknown band's box (with
    MATTING_CONTEXT px of sure pixels around it) gives the whole image's alpha."""
    from pymatting import estimate_alpha_cf

    from app.imaging.matte_edges import UNKNOWN
    from app.models.segmentation import band_box

    image = astronaut[100:260, 150:310] / 255.0  # the face and hair, 160 px
    trimap = np.zeros(image.shape[:2])
    trimap[40:140, 40:120] = 1.0
    trimap[30:60, 30:130] = UNKNOWN / 255.0  # the band: the hairline
    assert band_box((trimap * 255).round().astype(np.uint8)) == (26, 26, 134, 64)
    whole = estimate_alpha_cf(image, trimap)
    x0, y0, x1, y1 = band_box((trimap * 255).round().astype(np.uint8))
    cropped = estimate_alpha_cf(image[y0:y1, x0:x1], trimap[y0:y1, x0:x1])
    assert np.abs(whole[y0:y1, x0:x1] - cropped).max() < 0.02
    assert band_box(np.zeros((10, 10), np.uint8)) is None


def test_a_cut_out_larger_than_max_cutout_pixels_is_scaled_down_before_any_work(
    small_settings: Settings, small_registry: Registry, astronaut_jpeg: bytes
) -> None:
    app = create_app(dataclasses.replace(small_settings, max_cutout_pixels=100_000), small_registry)
    client = app.test_client()
    response = client.post("/api/v1/remove-background", data={"image": (io.BytesIO(astronaut_jpeg), "a.jpg")})
    assert response.status_code == 200
    out = Image.open(io.BytesIO(response.data))
    assert out.size[0] * out.size[1] <= 100_000 and out.size == (316, 316)  # 512x512, aspect kept
    assert response.headers["X-Scaled-From"] == "512x512"
    alpha = np.asarray(out)[..., 3]
    assert alpha.max() == 255 and alpha[:20, :20].mean() < 5  # a real cut-out of it: the corner is background
    described = client.post("/api/v1/remove-background", data={"image": (io.BytesIO(astronaut_jpeg), "a.jpg")},
                            headers={"Accept": "application/json"}).get_json()
    assert described["scaled_from"] == [512, 512] and (described["width"], described["height"]) == (316, 316)
    plain = create_app(small_settings, small_registry).test_client().post(
        "/api/v1/remove-background", data={"image": (io.BytesIO(astronaut_jpeg), "a.jpg")})
    assert "X-Scaled-From" not in plain.headers and Image.open(io.BytesIO(plain.data)).size == (512, 512)


@pytest.mark.parametrize("host", [None, "evil.example", "127.0.0.1:8000"])
def test_a_redirect_names_the_path_alone_whatever_the_host(client: FlaskClient, host: str | None) -> None:
    """Flask's merge-slashes redirect: its Location is the path (and query), never a host the client
    sent, nor an empty one (HTTP/1.0 without Host used to get `http:///...`)."""
    headers = {} if host is None else {"Host": host}
    environ = {"HTTP_HOST": ""} if host is None else {}
    answer = client.get("/api//v1/specs?x=1", headers=headers, environ_overrides=environ)
    assert answer.status_code == 308 and answer.headers["Location"] == "/api/v1/specs?x=1"
    # issue 49: nor in its body (Werkzeug's HTML named the absolute URL), for a POST of the drop-in API too
    moved = client.post("/api//remove", headers=headers, environ_overrides=environ)
    assert moved.status_code == 308 and moved.headers["Location"] == "/api/remove", moved.headers
    assert moved.get_json()["redirect"]["location"] == "/api/remove" and b"evil" not in moved.data and b"http" not in moved.data


def test_relative_location_is_never_protocol_relative() -> None:
    from app.errors import relative_location

    assert relative_location("http://h//evil.example/x?q") == "/evil.example/x?q"
    assert relative_location("http:///api/v1/specs") == "/api/v1/specs" and relative_location("/a") == "/a"
