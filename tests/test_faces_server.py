"""/api/v1/faces, /faces/compare and /swap through the real gunicorn, on generated insightface models.

MODEL_HOME is a temporary directory with the real CenterFace and u2netp (symlinks) and the
generated stand-ins of tests/onnx_fakes.py, installed with the real `python -m app.models add`
code against their own checksums. Detection and alignment are the real CenterFace on real
photos; only the insightface networks are stand-ins. A second deployment loads SCRFD and ArcFace
but no swapper, and a third lists a model whose file is missing.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.models import __main__ as models_cli
from tests import onnx_fakes
from tests.conftest import RunningServer, jpeg_bytes, png_bytes
from tests.support.harness import Server
from tests.test_faces_pure import ASTRONAUT_BOX, ASTRONAUT_LANDMARKS, FAKES, insightface_image

pytestmark = pytest.mark.server

SWAP_MODELS = "u2netp,centerface,arcface,genderage,landmark_2d_106,inswapper"
NO_SWAP_MODELS = "u2netp,centerface,scrfd,arcface"  # centerface first: the ID photo endpoints use it


@pytest.fixture(scope="module")
def face_home(model_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("face-models")
    for name in ("centerface.onnx", "u2netp.onnx"):
        (home / name).symlink_to(model_home / name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MODEL_HOME", str(home))
        for name, build in FAKES.items():
            path, digest = onnx_fakes.write(home / "incoming", f"{name}.onnx", build())
            assert models_cli.main(["add", name, str(path), "--sha256", digest]) == 0
    return home


@pytest.fixture(scope="module")
def server(running_server: RunningServer, face_home: Path) -> Iterator[Server]:
    with running_server(MODEL_HOME=str(face_home), MODELS=SWAP_MODELS, ORT_PROVIDERS="cpu") as srv:
        yield srv


@pytest.fixture(scope="module")
def no_swap_server(running_server: RunningServer, face_home: Path) -> Iterator[Server]:
    with running_server(MODEL_HOME=str(face_home), MODELS=NO_SWAP_MODELS, ORT_PROVIDERS="cpu") as srv:
        yield srv


def photo(name: str, data: bytes) -> tuple[str, bytes, str]:
    return (name, data, "image/jpeg" if name.endswith(".jpg") else "image/png")


def decoded(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def test_ready_with_every_face_model_loaded_and_warm(server: Server) -> None:
    body = server.get("/readyz").json()
    assert body["status"] == "ready" and body["worker"]["warm"] is True
    assert set(body["models"]) == set(SWAP_MODELS.split(","))
    for name, role in (("arcface", "face_recognition"), ("genderage", "face_attributes"), ("landmark_2d_106", "face_landmarks_106"), ("inswapper", "face_swap")):
        assert body["models"][name]["role"] == role and body["models"][name]["load_seconds"] >= 0
    assert "startup phase load inswapper" in server.log_text()


def test_faces_answers_every_field(server: Server, astronaut_jpeg: bytes) -> None:
    response = server.post("/api/v1/faces", files={"image": photo("me.jpg", astronaut_jpeg)}, data={"crops": "true"})
    assert response.status_code == 200, response.text
    assert "Server-Timing" in response.headers
    body = response.json()
    assert body["detector"] == "centerface" and body["image"] == {"width": 512, "height": 512}
    assert len(body["faces"]) == 1
    face = body["faces"][0]
    np.testing.assert_allclose(face["box"], ASTRONAUT_BOX, atol=5)  # CenterFace on the JPEG, not the raw pixels
    np.testing.assert_allclose(face["landmarks"], ASTRONAUT_LANDMARKS, atol=3)
    assert 0.5 < face["score"] <= 1
    assert len(face["landmarks_106"]) == 106 and all(len(point) == 2 for point in face["landmarks_106"])
    x1, y1, x2, y2 = face["box"]
    points = np.array(face["landmarks_106"])
    assert np.all((points[:, 0] >= x1 - 1) & (points[:, 0] <= x2 + 1) & (points[:, 1] >= y1 - 1) & (points[:, 1] <= y2 + 1))
    assert face["age"] == 42 and isinstance(face["age"], int) and face["gender"] == "male"
    embedding = np.array(face["embedding"])
    assert embedding.shape == (512,) and abs(float(np.linalg.norm(embedding)) - 1.0) < 1e-4
    assert face["embedding_norm"] > 1
    crop = Image.open(io.BytesIO(base64.b64decode(face["crop"])))
    assert crop.format == "PNG" and crop.size == (112, 112)
    assert {"decode", "detect", "embed", "genderage", "landmarks_106", "crop"} <= set(body["timings"])


def test_faces_on_a_group_photo_lists_the_largest_first(server: Server) -> None:
    group = jpeg_bytes(insightface_image("t1.jpg"))
    body = server.post("/api/v1/faces", files={"image": photo("t1.jpg", group)}).json()
    faces = body["faces"]
    assert len(faces) == 6
    areas = [(f["box"][2] - f["box"][0]) * (f["box"][3] - f["box"][1]) for f in faces]
    assert areas == sorted(areas, reverse=True)
    vectors = np.array([f["embedding"] for f in faces])
    similarity = vectors @ vectors.T
    assert np.all(similarity[~np.eye(6, dtype=bool)] < 0.9999), "different faces, different embeddings"
    limited = server.post("/api/v1/faces", files={"image": photo("t1.jpg", group)}, data={"max_faces": "2"}).json()
    assert [f["box"] for f in limited["faces"]] == [f["box"] for f in faces[:2]]


def test_compare(server: Server, astronaut_jpeg: bytes, astronaut: np.ndarray) -> None:
    same = server.post(
        "/api/v1/faces/compare",
        files={"image1": photo("a.jpg", astronaut_jpeg), "image2": photo("b.png", png_bytes(astronaut))},
    )
    assert same.status_code == 200, same.text
    body = same.json()
    assert body["similarity"] > 0.98 and body["same_person"] is True and body["threshold"] == 0.4
    assert [face["faces_found"] for face in body["faces"]] == [1, 1]
    other = server.post(
        "/api/v1/faces/compare",
        files={"image1": photo("a.jpg", astronaut_jpeg), "image2": photo("t1.jpg", jpeg_bytes(insightface_image("t1.jpg")))},
        data={"threshold": "0.999"},
    ).json()
    assert -1.0 <= other["similarity"] <= 1.0 and other["threshold"] == 0.999
    assert other["same_person"] is (other["similarity"] >= 0.999)
    blank = jpeg_bytes(np.full((200, 200, 3), 128, dtype=np.uint8))
    missing = server.post("/api/v1/faces/compare", files={"image1": photo("a.jpg", astronaut_jpeg), "image2": photo("b.jpg", blank)})
    assert missing.status_code == 422 and missing.json()["error"]["code"] == "no_face" and missing.json()["error"]["field"] == "image2"
    bad = server.post("/api/v1/faces/compare", files={"image1": photo("a.jpg", astronaut_jpeg)})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "missing_image"


def test_swap_lands_on_the_target_face(server: Server, astronaut_jpeg: bytes) -> None:
    source = jpeg_bytes(insightface_image("t1.jpg"))
    response = server.post(
        "/api/v1/swap",
        files={"source": photo("s.jpg", source), "target": photo("t.jpg", astronaut_jpeg)},
        data={"format": "png"},
    )
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "image/png" and "swap-512x512.png" in response.headers["Content-Disposition"]
    out = decoded(response.content)
    original = decoded(astronaut_jpeg)
    assert out.shape == original.shape
    changed = np.any(out != original, axis=2)
    ys, xs = np.nonzero(changed)
    x1, y1, x2, y2 = ASTRONAUT_BOX
    width, height = x2 - x1, y2 - y1
    # The swapped region is centred on the face CenterFace found and no wider than the aligned crop.
    assert abs(xs.mean() - (x1 + x2) / 2) < 0.1 * width and abs(ys.mean() - (y1 + y2) / 2) < 0.1 * height
    assert xs.min() > x1 - 0.5 * width and xs.max() < x2 + 0.5 * width
    assert ys.min() > y1 - 0.4 * height and ys.max() < y2 + 0.4 * height
    # The face itself now has the swapper's colour (the stand-in paints its crop pure green).
    for x, y in ASTRONAUT_LANDMARKS:
        assert tuple(out[int(y), int(x)]) == (0, 255, 0)
    # Nothing else moved: the photo's corners and the rest of the body are untouched.
    far = np.ones_like(changed)
    far[max(0, int(y1 - 0.5 * height)) : int(y2 + 0.5 * height), max(0, int(x1 - 0.6 * width)) : int(x2 + 0.6 * width)] = False
    assert not changed[far].any()


def test_swap_json_and_source_embedding(server: Server, astronaut_jpeg: bytes) -> None:
    faces = server.post("/api/v1/faces", files={"image": photo("t1.jpg", jpeg_bytes(insightface_image("t1.jpg")))}).json()["faces"]
    response = server.post(
        "/api/v1/swap",
        files={"image": photo("t.jpg", astronaut_jpeg)},  # `image` is accepted for the target
        data={"source_embedding": json.dumps(faces[0]["embedding"])},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["content_type"] == "image/jpeg" and body["width"] == 512 and body["faces_swapped"] == [0]
    assert len(body["target_faces"]) == 1 and body["source_face"] is None
    assert Image.open(io.BytesIO(base64.b64decode(body["image"]))).size == (512, 512)


def test_swap_errors(server: Server, astronaut_jpeg: bytes) -> None:
    files = {"source": photo("s.jpg", astronaut_jpeg), "target": photo("t.jpg", astronaut_jpeg)}
    out_of_range = server.post("/api/v1/swap", files=files, data={"face_index": "3"})
    assert out_of_range.status_code == 422 and out_of_range.json()["error"]["code"] == "face_index_out_of_range"
    no_source = server.post("/api/v1/swap", files={"target": photo("t.jpg", astronaut_jpeg)})
    assert no_source.status_code == 400 and no_source.json()["error"]["code"] == "missing_source"
    bad_embedding = server.post("/api/v1/swap", files={"target": photo("t.jpg", astronaut_jpeg)}, data={"source_embedding": "[1, 2]"})
    assert bad_embedding.status_code == 400 and "512" in bad_embedding.json()["error"]["message"]
    blank = jpeg_bytes(np.full((200, 200, 3), 128, dtype=np.uint8))
    no_face = server.post("/api/v1/swap", files={"source": photo("s.jpg", astronaut_jpeg), "target": photo("t.jpg", blank)})
    assert no_face.status_code == 422 and no_face.json()["error"]["field"] == "target"
    nested = "[" * 100_000 + "]" * 100_000  # json.loads raises RecursionError, not ValueError
    deep = server.post("/api/v1/swap", files={"target": photo("t.jpg", astronaut_jpeg)}, data={"source_embedding": nested})
    assert deep.status_code == 400 and deep.json()["error"]["code"] == "invalid_field"
    assert server.get("/healthz").status_code == 200


@pytest.mark.parametrize(("fmt", "answer"), [("TIFF", "image/png"), ("BMP", "image/png"), ("PPM", "image/png"),
                                             ("HEIF", "image/jpeg"), ("AVIF", "image/jpeg")])
def test_swap_answers_formats_it_cannot_write_in_one_it_can(server: Server, astronaut: np.ndarray, fmt: str, answer: str) -> None:
    """No `format` asked: the answer is in the target's own format where that is a format of
    answers (JPEG, PNG, WebP), else JPEG for photo formats and PNG for lossless ones."""
    from tests.test_imageio import save

    data = save(Image.fromarray(astronaut), fmt)
    faces = server.post("/api/v1/faces", files={"image": photo("t1.jpg", jpeg_bytes(insightface_image("t1.jpg")))}).json()["faces"]
    response = server.post("/api/v1/swap", files={"target": ("t.bin", data, "application/octet-stream")},
                           data={"source_embedding": json.dumps(faces[0]["embedding"])})
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == answer
    assert Image.open(io.BytesIO(response.content)).size == (512, 512)


def test_scrfd_deployment_without_swapper(no_swap_server: Server, astronaut_jpeg: bytes) -> None:
    """SCRFD is preferred when loaded; fields of models not loaded are left out; /swap is a 503
    that names the command installing the swap model."""
    body = no_swap_server.post("/api/v1/faces", files={"image": photo("me.jpg", astronaut_jpeg)}).json()
    assert body["detector"] == "scrfd" and len(body["faces"]) == 1, body
    face = body["faces"][0]
    np.testing.assert_allclose(face["box"], ASTRONAUT_BOX, atol=0.11)  # where the stand-in puts its face
    assert face["score"] == 0.95 and len(face["embedding"]) == 512
    assert not {"age", "gender", "landmarks_106", "crop"} & set(face)
    response = no_swap_server.post(
        "/api/v1/swap", files={"source": photo("s.jpg", astronaut_jpeg), "target": photo("t.jpg", astronaut_jpeg)}
    )
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "model_unavailable" and error["models"] == ["inswapper"]
    assert "python -m app.models fetch inswapper" in error["message"] and "MODELS" in error["message"]
    compare = no_swap_server.post(
        "/api/v1/faces/compare", files={"image1": photo("a.jpg", astronaut_jpeg), "image2": photo("b.jpg", astronaut_jpeg)}
    )
    assert compare.status_code == 200 and compare.json()["same_person"] is True
    ready = no_swap_server.get("/readyz").json()
    assert set(ready["models"]) == set(NO_SWAP_MODELS.split(","))


def test_a_listed_model_without_its_file_stops_start_up(running_server: RunningServer, model_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for name in ("centerface.onnx", "u2netp.onnx"):
        (home / name).symlink_to(model_home / name)
    with running_server(ready=False, MODEL_HOME=str(home), MODELS="u2netp,centerface,inswapper") as srv:
        assert srv.process is not None
        code = srv.process.wait(timeout=60)
    assert code != 0
    assert "inswapper_128.onnx is missing; run: python -m app.models fetch inswapper" in srv.log_text()
