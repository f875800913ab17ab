"""One request's pixel work stays inside its inference slot (issue 34): the answer's encoding, its
base64 and the print sheet are made while the slot is held (so under the watchdog, and never beside
another request's pixels on the same worker), and the two-photo endpoints hold one photo at a time.

In-process, through the Flask test client, on a real registry: a recording admission stands in for
the worker's gate, and spies on the endpoints' own seams (`forms.image_response`, `print_sheet`,
`decode`) say whether the slot was held, and which decoded photos were still alive, when they ran.
"""

from __future__ import annotations

import base64
import dataclasses
import gc
import io
import json
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from flask import Flask

from app import create_app
from app.api import faces as faces_api
from app.api import forms
from app.api import idphoto as idphoto_api
from app.config import Settings
from app.imageio import Decoded
from app.models.registry import Registry
from app.service import Service
from tests.conftest import jpeg_bytes, png_bytes
from tests.test_faces_pure import insightface_image
from tests.test_faces_server import SWAP_MODELS, face_home  # noqa: F401  (the fixture: generated insightface stand-ins)


class RecordingAdmission:
    """Admits everything, and knows whether a slot is held right now."""

    def __init__(self) -> None:
        self.held = 0

    @contextmanager
    def slot(self, *, request: bool = True) -> Iterator[None]:
        self.held += 1
        try:
            yield
        finally:
            self.held -= 1

    def describe(self) -> dict[str, object]:
        return {}

    def lanes_opened(self, threads: int) -> None:
        return None


def with_recording_admission(app: Flask) -> RecordingAdmission:
    admission = RecordingAdmission()
    Service.of(app).admission = admission
    return admission


def spy(target: Callable[..., object], seen: list[int], admission: RecordingAdmission) -> Callable[..., object]:
    def called(*args: object, **kwargs: object) -> object:
        seen.append(admission.held)
        return target(*args, **kwargs)

    return called


def test_json_with_base64_is_the_json_jsonify_would_write() -> None:
    data = bytes(range(256)) * 3
    fields = {"content_type": "image/png", "note": "Zürich \"quoted\" \u2713", "nested": {"a": [1, 2.5, None, True]}}
    body = forms.json_with_base64("image", data, fields)
    assert json.loads(body) == {"image": base64.b64encode(data).decode("ascii"), **fields}
    assert json.loads(forms.json_with_base64("image", b"", {})) == {"image": ""}


@pytest.mark.parametrize("accept", ["image/png", "application/json"])
def test_a_cut_outs_answer_is_made_inside_the_slot(
    app: Flask, astronaut_jpeg: bytes, monkeypatch: pytest.MonkeyPatch, accept: str
) -> None:
    admission = with_recording_admission(app)
    seen: list[int] = []
    monkeypatch.setattr(forms, "image_response", spy(forms.image_response, seen, admission))
    response = app.test_client().post(
        "/api/v1/remove-background", data={"image": (io.BytesIO(astronaut_jpeg), "me.jpg")}, headers={"Accept": accept}
    )
    assert response.status_code == 200, response.get_json()
    assert seen == [1], "the answer (and its base64) was made outside the inference slot"
    if accept == "application/json":
        assert response.get_json()["kind"] == "cutout" and response.get_json()["image"]


def test_an_id_photo_and_its_sheet_are_made_inside_the_slot(
    app: Flask, astronaut_jpeg: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    admission = with_recording_admission(app)
    answers: list[int] = []
    sheets: list[int] = []
    monkeypatch.setattr(forms, "image_response", spy(forms.image_response, answers, admission))
    monkeypatch.setattr(idphoto_api, "print_sheet", spy(idphoto_api.print_sheet, sheets, admission))
    client = app.test_client()
    photo = client.post("/api/v1/idphoto", data={"image": (io.BytesIO(astronaut_jpeg), "me.jpg"), "spec": "cn-1inch"})
    sheet = client.post(
        "/api/v1/idphoto/sheet",
        data={"image": (io.BytesIO(astronaut_jpeg), "me.jpg"), "spec": "cn-1inch", "sheet_dpi": "600"},
        headers={"Accept": "application/json"},
    )
    assert photo.status_code == 200 and sheet.status_code == 200, sheet.get_json()
    assert sheets == [1], "the print sheet was rendered outside the inference slot"
    assert answers == [1, 1], "an answer was encoded outside the inference slot"
    assert sheet.get_json()["dpi"] == 600 and sheet.get_json()["photo"]


@pytest.fixture(scope="module")
def face_app(face_home: Path, small_settings: Settings) -> Flask:  # noqa: F811
    settings = dataclasses.replace(small_settings, model_home=face_home, models=tuple(SWAP_MODELS.split(",")))
    app = create_app(settings, Registry())
    Service.of(app).load()
    return app


class LiveDecodes:
    """Wraps `decode`: at each call, how many photos decoded before are still alive."""

    def __init__(self) -> None:
        self.alive_at_call: list[int] = []
        self._decoded: list[weakref.ref[np.ndarray]] = []

    def __call__(self, data: bytes, **kwargs: object) -> Decoded:
        gc.collect()
        self.alive_at_call.append(sum(ref() is not None for ref in self._decoded))
        decoded = faces_api_decode(data, **kwargs)
        self._decoded.append(weakref.ref(decoded.rgb))
        return decoded


faces_api_decode = faces_api.decode


def test_a_comparison_holds_one_decoded_photo_at_a_time(
    face_app: Flask, astronaut_jpeg: bytes, astronaut: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    decodes = LiveDecodes()
    monkeypatch.setattr(faces_api, "decode", decodes)
    response = face_app.test_client().post(
        "/api/v1/faces/compare",
        data={"image1": (io.BytesIO(astronaut_jpeg), "a.jpg"), "image2": (io.BytesIO(png_bytes(astronaut)), "b.png")},
    )
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["same_person"] is True
    assert decodes.alive_at_call == [0, 0], "the first photo's pixels were still held when the second was decoded"


def test_a_swap_holds_one_decoded_photo_at_a_time_and_answers_inside_the_slot(
    face_app: Flask, astronaut_jpeg: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    admission = with_recording_admission(face_app)
    decodes = LiveDecodes()
    answers: list[int] = []
    monkeypatch.setattr(faces_api, "decode", decodes)
    monkeypatch.setattr(forms, "image_response", spy(forms.image_response, answers, admission))
    response = face_app.test_client().post(
        "/api/v1/swap",
        data={"source": (io.BytesIO(jpeg_bytes(insightface_image("t1.jpg"))), "s.jpg"),
              "target": (io.BytesIO(astronaut_jpeg), "t.jpg")},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["faces_swapped"] == [0] and response.get_json()["source_face"] is not None
    assert decodes.alive_at_call == [0, 0], "the source's pixels were still held when the target was decoded"
    assert answers == [1], "the swap's answer was encoded outside the inference slot"


def test_an_answer_over_max_answer_mb_is_refused_before_it_is_sent(
    small_settings: Settings, small_registry: Registry, big_photo: bytes
) -> None:
    """MAX_ANSWER_MB bounds the answer nginx must buffer: over it, 413 `answer_too_large` naming the
    size and the ways to a smaller one; base64 JSON counts at its own size (a third more)."""

    def cut_out(max_answer_mb: float, **fields: str) -> object:
        settings = dataclasses.replace(small_settings, max_answer_mb=max_answer_mb)
        client = create_app(settings, small_registry).test_client()
        headers = {"Accept": fields.pop("accept", "image/png")}
        return client.post("/api/v1/remove-background", data={"image": (io.BytesIO(big_photo), "me.jpg"), **fields}, headers=headers)

    png = cut_out(1024)
    assert png.status_code == 200
    size = len(png.data)
    fits_png_only = (size * 1.2) / 2**20  # the PNG fits, its base64 (4/3 of it) does not
    assert cut_out(fits_png_only).status_code == 200
    refused = cut_out(fits_png_only, accept="application/json")
    error = refused.get_json()["error"]
    assert refused.status_code == 413 and error["code"] == "answer_too_large", error
    assert error["answer_bytes"] == forms.base64_size(size) and "JPEG" in error["message"] and "JSON" in error["message"]
    small = cut_out(size / 2 / 2**20)
    assert small.status_code == 413 and small.get_json()["error"]["answer_bytes"] == size
    assert cut_out(size / 2 / 2**20, format="jpeg").status_code == 200  # the advice works
