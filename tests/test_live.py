"""The camera's live check (issue 52, items 2-4): POST /api/v1/idphoto/check on a small frame, the
report's lines a person can still change, in the report's words, most important first; its own
lane (LiveGate), which never takes an ID photo's slot; clear JSON errors."""

from __future__ import annotations

import io
import threading

import numpy as np
import pytest
from flask.testing import FlaskClient
from PIL import Image

from app.api import live as live_api
from app.errors import Busy
from app.imaging import live
from app.imaging.wording import LINE_TITLES
from app.serving.admission import InferenceGate, LiveGate

SPEC_ASPECT = 35 / 45  # icao


def jpeg(rgb: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, "JPEG", quality=85)
    return buffer.getvalue()


def framed(astronaut: np.ndarray, *, rotate: float = 0.0, shrink: float = 1.0) -> np.ndarray:
    """The astronaut in an icao-shaped frame 320 px high, rotated (degrees) or shrunk about the middle."""
    image = Image.fromarray(astronaut).crop((70, 0, 70 + round(512 * SPEC_ASPECT), 512))
    if rotate:
        image = image.rotate(rotate, resample=Image.BILINEAR, fillcolor=(150, 150, 150))
    if shrink != 1.0:
        small = image.resize((round(image.width * shrink), round(image.height * shrink)))
        canvas = Image.new("RGB", image.size, (150, 150, 150))
        canvas.paste(small, ((image.width - small.width) // 2, (image.height - small.height) // 2))
        image = canvas
    return np.asarray(image.resize((round(320 * SPEC_ASPECT), 320)))


def check(client: FlaskClient, frame: bytes, **fields: str) -> tuple[int, dict]:
    with client.post("/api/v1/idphoto/check", data={"image": (io.BytesIO(frame), "frame.jpg"), **fields}) as answer:
        return answer.status_code, answer.get_json()


def named(body: dict) -> dict[str, dict]:
    return {line["name"]: line for line in body["lines"]}


def test_lines_in_the_reports_words_most_important_first(client: FlaskClient, astronaut: np.ndarray) -> None:
    status, body = check(client, jpeg(framed(astronaut)), spec="icao")
    assert status == 200, body
    names = [line["name"] for line in body["lines"]]
    assert names == sorted(names, key=live.ORDER.index), "most important first"
    assert {"face_count", "distance", "centre_x", "yaw_degrees", "roll_degrees", "capture_lighting",
            "background_uniformity", "eyes_open"} <= set(names)
    for line in body["lines"]:
        titles = LINE_TITLES[line["name"]]
        assert line["title"] in titles.values(), line  # the report's words, from the one place they are written
        assert (line["advice"] is None) == (line["pass"] is True or (line["name"] == "mouth_closed" and line["pass"] is None))
    assert named(body)["face_count"]["pass"] is True
    # the astronaut's busy background (a flag, a shuttle model) is no plain wall: not ready, and said
    assert named(body)["background_uniformity"]["pass"] is False and body["ready"] is False and body["advice"]
    assert "matte" not in body["timings"] and "segment" not in body["timings"], "no matte runs"


def test_a_tilted_head_and_a_far_one_get_their_own_lines(client: FlaskClient, astronaut: np.ndarray) -> None:
    _, level = check(client, jpeg(framed(astronaut)))
    _, tilted = check(client, jpeg(framed(astronaut, rotate=20)))
    assert named(level)["roll_degrees"]["pass"] is True
    assert named(tilted)["roll_degrees"]["pass"] is False and named(tilted)["roll_degrees"]["title"] == "Head tilted"
    assert named(tilted)["roll_degrees"]["advice"].startswith("Keep your head level")
    _, far = check(client, jpeg(framed(astronaut, shrink=0.35)))
    assert named(far)["distance"]["pass"] is False and named(far)["distance"]["title"] == "Too far from the camera"
    assert far["advice"] == named(far)["distance"]["advice"], "the most important failing line is said first"


def test_no_face_is_a_line_not_an_error(client: FlaskClient) -> None:
    status, body = check(client, jpeg(np.full((320, 249, 3), 200, np.uint8)))
    assert status == 200 and body["ready"] is False
    assert [line["name"] for line in body["lines"]] == ["face_count"] and body["lines"][0]["pass"] is False


@pytest.mark.parametrize(("fields", "frame", "status", "code"), [
    ({}, b"not an image", 400, None),
    ({"spec": "nowhere"}, None, 400, "unknown_spec"),
    ({}, b"\xff\xd8" + b"0" * (120 * 1024), 413, "frame_too_large"),
])
def test_errors_are_clear_json(client: FlaskClient, astronaut: np.ndarray, fields: dict, frame: bytes | None,
                               status: int, code: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live_api, "MAX_FRAME_BYTES", 100 * 1024)  # the test client spools bodies over 500 KB to a file
    got, body = check(client, jpeg(framed(astronaut)) if frame is None else frame, **fields)
    assert got == status or (code is None and got in (400, 415)), body
    assert body["error"]["message"]
    if code is not None:
        assert body["error"]["code"] == code
    answer = client.post("/api/v1/idphoto/check", data={"spec": "icao"})
    assert answer.status_code in (400, 415) and answer.get_json()["error"]["message"]


def test_the_live_lane_is_its_own() -> None:
    """A full live lane refuses at once, and never holds the ID photo's slot; a busy ID photo slot
    never holds a live check."""
    live_gate = LiveGate(queue_depth=0, wait_timeout=0.5)
    photos = InferenceGate(queue_depth=0, wait_timeout=0.5)
    inside, release = threading.Event(), threading.Event()

    def hold_live() -> None:
        with live_gate.slot():
            inside.set()
            release.wait(5)

    holder = threading.Thread(target=hold_live)
    holder.start()
    try:
        assert inside.wait(5)
        with pytest.raises(Busy):
            with live_gate.slot():
                pass
        with photos.slot():  # the ID photo's slot is free while the live lane is full
            with pytest.raises(Busy):
                with photos.slot():
                    pass
    finally:
        release.set()
        holder.join(5)
    with photos.slot():
        with live_gate.slot():  # and a live check runs while an ID photo holds its slot
            pass
    assert live_gate.rejected == 1


def test_the_wall_is_judged_only_where_the_photo_keeps_it(client: FlaskClient, astronaut: np.ndarray) -> None:
    """The final report judges the photographed wall only where it is kept: so does the live check."""
    frame = jpeg(framed(astronaut))
    _, default = check(client, frame, spec="icao")  # icao keeps the wall by default
    _, kept = check(client, frame, spec="cn-1inch", background="keep")
    _, replaced = check(client, frame, spec="cn-1inch")  # cn-1inch replaces it (white) by default
    _, new = check(client, frame, spec="icao", background="new")
    for body in (default, kept):
        assert named(body)["background_uniformity"]["pass"] is False, body  # the flag and the shuttle model
    for body in (replaced, new):
        assert not [line for line in body["lines"] if line["name"].startswith("background")], body


def test_below_the_nose_the_body_is_not_read_as_wall() -> None:
    """The silhouette takes the frame's whole width below the nose: a dark suit's ring beside the jaw
    is no wall. Above it the wall is judged: a scene beside the head still fails."""
    five = np.array([[100.0, 100.0], [160.0, 100.0], [130.0, 130.0], [108.0, 160.0], [152.0, 160.0]])
    alpha = live.silhouette((320, 260), five, chin_y=200.0)
    assert (alpha[131:] == 255).all(), "below the nose: the person"
    assert alpha[100, 130] == 255 and alpha[20, 5] == 0 and alpha[100, 5] == 0, "the head, and the wall beside and above it"
