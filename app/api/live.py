"""The camera's live check: POST /api/v1/idphoto/check (issue 52).

A small frame (the page sends the outline's view, downscaled) and a spec in; the report's lines a
person at the camera can still change out, with the report's words, most important first, and
whether every line holds. No matte and no photo: the face detector and the 68 landmarks, in the
live lane (`Service.live_inference`), never an ID photo's slot. Busy: 503 `busy` with Retry-After.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from ..errors import ApiError, ModelUnavailable, bad_request
from ..imageio import decode
from ..pipelines.live import check_frame
from ..models.landmarks68 import Landmarks68
from ..service import Service, current_service
from ..specs import SPECS, get_spec
from ..timings import Timings
from ..warmup import WarmupRequest
from . import forms

bp = Blueprint("live", __name__, url_prefix="/api/v1")

MAX_FRAME_BYTES = 512 * 1024  # a frame of the preview, not a photo: the page sends about 30 KB
MAX_FRAME_PIXELS = 1280 * 1280


@bp.post("/idphoto/check")
def check() -> Response:
    timings = Timings()
    service = current_service()
    data = forms.image_bytes("image", "frame")
    if len(data) > MAX_FRAME_BYTES:
        raise ApiError(413, "frame_too_large", f"A live frame is at most {MAX_FRAME_BYTES // 1024} KB: send the "
                                               "preview downscaled (about 480 px high), not the photo.")
    spec_id = forms.text("spec") or "icao"
    if spec_id not in SPECS:
        raise bad_request("unknown_spec", f"Unknown spec; GET /api/v1/specs lists them ({', '.join(list(SPECS)[:6])}, ...).")
    spec = get_spec(spec_id)
    # the wall is a line of the final report only where the photo keeps it (background=keep, or the
    # spec's default): with a new background the report judges the one painted in, so neither does this
    background = (forms.text("background") or spec.default_background).lower()
    service.require_ready()
    found = service.registry.face_detector()
    if found is None:
        raise ModelUnavailable("model_unavailable", "No face detector is loaded; add centerface to MODELS.")
    detector_name, detector = found
    timings.models.update(detect=detector_name)
    with service.live_inference(timings):
        with timings.stage("decode"):
            image = decode(data, max_pixels=MAX_FRAME_PIXELS)
        result = check_frame(image.rgb, detector=detector, landmarker=service.registry.landmarker(), spec=spec,
                             timings=timings, wall=background == "keep")
    response = jsonify({"spec": spec.id, "ready": result.ready, "advice": result.advice,
                        "lines": [line.to_dict() for line in result.lines], "size": [image.width, image.height],
                        "timings": timings.as_dict()})
    response.headers["Server-Timing"] = timings.header()
    return response


def warmup_requests(service: Service) -> list[WarmupRequest]:
    """The live check's first run in a worker (the eye cascade, the backdrop's blurs at a frame's
    size) is paid at start-up, as every other request's is."""
    found = service.registry.face_detector()
    if found is None:
        return []
    landmarker = service.registry.find_named(Landmarks68)
    models = (found[0], *(() if landmarker is None else (landmarker[0],)))
    return [WarmupRequest("/api/v1/idphoto/check", {"spec": "icao"}, models)]
