"""POST /warmup through the Flask app on the small real registry: it always needs a key (API_KEYS or
WARMUP_KEY), from loopback too; one runs at a time per worker; every step of it holds the
inference slot; a full queue answers 503 busy, never 500."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from flask import Flask

from app import create_app
from app.config import Settings
from app.errors import Busy
from app.models.registry import Registry
from app.service import Service

KEY = "warm-key-abcdefghijklmnop"
API_KEY = "api-key-abcdefghijklmnopq"
AFAR = {"REMOTE_ADDR": "203.0.113.7"}


class RecordingSlot:
    """An admission that records every slot taken; `hold` makes the next request-slot wait for
    `release`; `full` refuses every slot as a full queue would."""

    def __init__(self, *, full: bool = False) -> None:
        self.full = full
        self.taken: list[bool] = []  # `request` of each slot taken
        self.hold = threading.Event()
        self.entered = threading.Event()
        self.release = threading.Event()

    @contextmanager
    def slot(self, *, request: bool = True) -> Iterator[None]:
        if self.full:
            raise Busy("busy", "Busy: the server is at capacity; retry shortly.", details={"reason": "queue_full"})
        self.taken.append(request)
        if request and self.hold.is_set():
            self.hold.clear()
            self.entered.set()
            assert self.release.wait(30), "the test never released the slot"
        yield

    def describe(self) -> dict[str, object]:
        return {}

    def lanes_opened(self, threads: int) -> None:
        pass


WARM = {"Authorization": f"Bearer {KEY}"}


def make(small_settings: Settings, small_registry: Registry, admission: RecordingSlot | None = None, **changes: object) -> Flask:
    app = create_app(dataclasses.replace(small_settings, **{"warmup_key": KEY, **changes}), small_registry)
    if admission is not None:
        Service.of(app).admission = admission
    return app


def test_without_any_key_no_address_may_warm(small_settings: Settings, small_registry: Registry) -> None:
    """Issue 49: no address stands in for a key, loopback (a sidecar's 127.0.0.6) included."""
    client = make(small_settings, small_registry, warmup_key=None).test_client()
    for environ in (AFAR, {"REMOTE_ADDR": "::1"}, {"REMOTE_ADDR": "127.0.0.6"}, {"REMOTE_ADDR": "127.0.0.1"}):
        refused = client.post("/warmup", environ_base=environ)
        assert refused.status_code == 403 and refused.get_json()["error"]["code"] == "forbidden", environ
        assert "WARMUP_KEY" in refused.get_json()["error"]["message"]


def test_a_warmup_key_or_an_api_key_is_needed_from_anywhere(small_settings: Settings, small_registry: Registry) -> None:
    client = make(small_settings, small_registry, warmup_key=KEY, api_keys=(API_KEY,)).test_client()
    for environ in (AFAR, {"REMOTE_ADDR": "127.0.0.1"}):  # a key set: loopback needs it too
        assert client.post("/warmup", environ_base=environ).status_code == 401
        assert client.post("/warmup", environ_base=environ, headers={"Authorization": "Bearer wrong-key-0123456789"}).status_code == 401
    assert client.post("/warmup", environ_base=AFAR, headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    assert client.post("/warmup", environ_base=AFAR, headers={"Authorization": f"Bearer {API_KEY}"}).status_code == 200
    # the warm-up key opens /warmup only
    assert client.get("/api/v1/specs", headers={"Authorization": f"Bearer {KEY}"}).status_code == 401
    assert Settings.from_env({"WARMUP_KEY": KEY}).warmup_key == KEY and KEY not in repr(Settings.from_env({"WARMUP_KEY": KEY}))


@pytest.mark.parametrize("skip", [(), ("requests",)])
def test_every_warmup_step_holds_the_inference_slot(small_settings: Settings, small_registry: Registry,
                                                    skip: tuple[str, ...]) -> None:
    """Its requests take the slot as requests do, but for the camera's live check, which runs on
    the live lane as a live check does (app/api/live.py); each model's own warm-up (the whole pass
    of it when the requests are left out) takes the slot as model work."""
    admission = RecordingSlot()
    app = make(small_settings, small_registry, admission, warmup_skip=skip)
    assert app.test_client().post("/warmup", headers=WARM).status_code == 200
    steps = [step["step"] for step in Service.of(app).warmup_steps]
    requests = [step for step in steps if step.startswith("POST ") and not step.startswith("POST /api/v1/idphoto/check")]
    models = [step for step in steps if step.endswith(".warmup()")]
    assert (requests if not skip else models), steps
    assert admission.taken.count(True) == len(requests) and admission.taken.count(False) == len(models)


def test_one_warmup_at_a_time_per_worker(small_settings: Settings, small_registry: Registry) -> None:
    admission = RecordingSlot()
    app = make(small_settings, small_registry, admission)
    admission.hold.set()
    answers: list[int] = []
    first = threading.Thread(target=lambda: answers.append(app.test_client().post("/warmup", headers=WARM).status_code))
    first.start()
    try:
        assert admission.entered.wait(60), "the first warm-up never reached its slot"
        second = app.test_client().post("/warmup", headers=WARM)
        assert second.status_code == 503 and second.get_json()["error"]["code"] == "busy"
        assert "already running" in second.get_json()["error"]["message"] and second.headers["Retry-After"]
    finally:
        admission.release.set()
        first.join(120)
    assert answers == [200]
    assert app.test_client().post("/warmup", headers=WARM).status_code == 200  # and again once the first is done


def test_a_full_queue_answers_503_busy_not_500(small_settings: Settings, small_registry: Registry) -> None:
    app = make(small_settings, small_registry, RecordingSlot(full=True))
    answer = app.test_client().post("/warmup", headers=WARM)
    assert answer.status_code == 503 and answer.get_json()["error"]["code"] == "busy", answer.get_json()
    assert answer.headers["Retry-After"]


def test_the_pass_warms_face_analysis_wherever_a_detector_is_loaded(small_settings: Settings, small_registry: Registry) -> None:
    """/faces has work of its own past the detector the ID photo ran (its landmarks, crops and JSON),
    so the pass posts to it with a detector alone loaded, and it answers 200 there."""
    from app import warmup

    assert small_registry.face_detector() is not None
    app = make(small_settings, small_registry)
    service = Service.of(app)
    paths = [request.path for request in warmup.requests_for(service, service.warmup_sources)]
    assert "/api/v1/faces" in paths, paths
    assert app.test_client().post("/warmup", headers=WARM).status_code == 200
    assert any(step["step"].startswith("POST /api/v1/faces crops=true") for step in service.warmup_steps), service.warmup_steps
