"""Faces: POST /api/v1/faces, POST /api/v1/faces/compare, POST /api/v1/swap.

Detection uses SCRFD when it is loaded, else CenterFace. Faces are listed largest box first, so
index 0 is the main face everywhere (`compare` uses it, `swap` defaults to it). Each model is
optional: a field whose model is not in MODELS is left out of /faces, and an endpoint whose
model is missing answers 503 `model_unavailable` naming the command that installs it.
"""

from __future__ import annotations

import json
import math

import numpy as np
from flask import Blueprint, Response, request

from ..errors import ModelUnavailable, bad_request
from ..imaging.face_align import cosine_similarity
from ..imageio import answer_format, decode, encode, normalise_format
from ..models.checksums import install_command
from ..models.insight import ArcFace, GenderAge, Landmark106, Swapper
from ..models.manifest import Role, get_spec
from ..models.registry import FaceDetector
from ..pipelines import faces as face_pipeline
from ..service import Service, current_service
from ..timings import Timings
from ..warmup import WarmupRequest
from . import forms

bp = Blueprint("faces", __name__, url_prefix="/api/v1")

#: ArcFace (buffalo_l w600k_r50) cosine similarity at or above which two faces are called the same
#: person. insightface's own evaluation tool (insightface 2.1, gui/core/constants.py) defaults to
#: 0.4, with 0.35-0.4 reported as uncertain; the range in insightface's examples and issues runs
#: from about 0.28 (permissive) to 0.5 (strict). 0.4 errs towards "not the same person" on a
#: service where a false match is the costly mistake; a request may pass its own `threshold`.
SAME_PERSON_THRESHOLD = 0.4
MAX_FACES = face_pipeline.MAX_FACES
DEFAULT_MAX_FACES = 20


def warmup_requests(service: Service) -> list[WarmupRequest]:
    """/faces whenever a face detector is loaded, /swap when the swapper is (the astronaut). /faces
    has code of its own (its boxes, landmarks, crops and JSON) even where the ID photo has already
    run the detector: left out, a first face analysis was the cold matrix's worst cell (bench.cold)."""
    registry = service.registry
    found = registry.face_detector()
    if found is None:
        return []
    detector_name, _ = found
    roles = (Role.FACE_RECOGNITION, Role.FACE_ATTRIBUTES, Role.FACE_LANDMARKS_106)
    analysis = [name for role in roles for name in registry.names(role)]
    requests = [WarmupRequest("/api/v1/faces", {"crops": "true"}, (detector_name, *analysis))]
    swapper = registry.find(Swapper)
    if swapper is not None:
        identity = np.full(swapper.embedding_size, 1.0 / math.sqrt(swapper.embedding_size))
        requests.append(
            WarmupRequest(
                "/api/v1/swap",
                {"source_embedding": json.dumps([round(float(v), 6) for v in identity]), "format": "jpeg"},
                (detector_name, *registry.names(Role.FACE_SWAP)),
            )
        )
    return requests


# -- model lookup ------------------------------------------------------------------------------


def _unavailable(service: Service, what: str, *names: str) -> ModelUnavailable:
    """`model_unavailable` naming the models that would provide `what` and how to install them."""
    commands = " or ".join(install_command(get_spec(name)) for name in names)
    listed = ",".join(service.settings.models)
    return ModelUnavailable(
        "model_unavailable",
        f"{what} is not available: the model is not loaded in this deployment. To enable it run: {commands}, "
        f"then add {' or '.join(names)} to MODELS (now MODELS={listed}) and restart.",
        details={"models": list(names)},
    )


def _detector(service: Service) -> tuple[str, FaceDetector]:
    found = service.registry.face_detector()
    if found is None:
        raise _unavailable(service, "Face detection", "scrfd", "centerface")
    return found


def _arcface(service: Service, what: str) -> tuple[str, ArcFace]:
    found = service.registry.find_named(ArcFace)
    if found is None:
        raise _unavailable(service, what, "arcface")
    return found


def _swapper(service: Service) -> tuple[str, Swapper]:
    found = service.registry.find_named(Swapper)
    if found is None:
        raise _unavailable(service, "Face swap", "inswapper")
    return found


# -- form fields ---------------------------------------------------------------------------------


MAX_EMBEDDING_CHARS = 64 * 1024  # 512 numbers as JSON with 17 digits each take about 12 KB


def _embedding_field(name: str, *, size: int) -> np.ndarray | None:
    value = forms.text(name)
    if value is None:
        return None
    if len(value) > MAX_EMBEDDING_CHARS:
        raise bad_request("invalid_field", f"{name} is {len(value):,} characters long; an embedding of {size} numbers takes "
                                           f"at most {MAX_EMBEDDING_CHARS:,}.")
    try:
        numbers = json.loads(value)
        vector = np.asarray(numbers, dtype=np.float64)
    except (ValueError, TypeError, RecursionError):  # RecursionError: deeply nested arrays
        raise bad_request(
            "invalid_field", f"{name} must be a JSON array of {size} numbers (an embedding from /api/v1/faces)."
        ) from None
    if vector.shape != (size,) or not np.all(np.isfinite(vector)) or not np.any(vector):
        raise bad_request("invalid_field", f"{name} must be a JSON array of {size} finite numbers, not all zero.")
    return vector


def _face_index() -> int | None:
    """`face_index`: an index into the target's faces (largest first), or `all` (None)."""
    value = forms.text("face_index")
    if value is not None and value.lower() == "all":
        return None
    return forms.integer("face_index", 0, low=0, high=MAX_FACES - 1)


# -- endpoints ---------------------------------------------------------------------------------------


@bp.post("/faces")
def faces() -> Response:
    """Every face: box, score, 5 landmarks; with the models loaded, 106 landmarks, gender and age,
    the normalised embedding; with `crops=true`, the 112 x 112 aligned crop as base64 PNG."""
    service = current_service()
    timings = Timings()
    data = forms.image_bytes()
    crops = forms.boolean("crops")
    limit = forms.integer("max_faces", DEFAULT_MAX_FACES, low=1, high=MAX_FACES)
    service.require_ready()
    registry = service.registry
    detector_name, detector = _detector(service)
    timings.models["detect"] = detector_name
    found = {"embed": registry.find_named(ArcFace), "genderage": registry.find_named(GenderAge),
             "landmarks_106": registry.find_named(Landmark106)}
    timings.models.update({stage: named[0] for stage, named in found.items() if named is not None})
    models = face_pipeline.Analysers(
        *(None if named is None else named[1] for named in (found["embed"], found["genderage"], found["landmarks_106"]))
    )
    with service.inference(timings):  # decode inside the slot: one photo's pixels per worker at a time
        with timings.stage("decode"):
            image = decode(data, max_pixels=service.settings.max_image_pixels)
        results = face_pipeline.analyse(image.rgb, detector=detector, models=models, limit=limit, crops=crops, timings=timings)
    return forms.json_response(
        {
            "faces": results,
            "image": {"width": image.width, "height": image.height},
            "detector": detector_name,
            "models": [name for name in registry.names() if get_spec(name).role != Role.SEGMENTATION],
        },
        timings,
    )


@bp.post("/faces/compare")
def compare() -> Response:
    """Two photos (`image1`, `image2`): their main faces' ArcFace cosine similarity and a verdict."""
    service = current_service()
    timings = Timings()
    first = forms.image_bytes("image1")
    second = forms.image_bytes("image2")
    threshold = forms.decimal("threshold", SAME_PERSON_THRESHOLD, low=-1.0, high=1.0)
    service.require_ready()
    detector_name, detector = _detector(service)
    arcface_name, arcface = _arcface(service, "Face comparison")
    timings.models.update(detect=detector_name, embed=arcface_name)
    max_pixels = service.settings.max_image_pixels
    vectors: list[np.ndarray] = []
    described: list[dict[str, object]] = []
    # one slot's budget for the two photos: each is decoded, embedded and let go before the next
    with service.inference(timings):
        for field, data in (("image1", first), ("image2", second)):
            with timings.stage("decode"):
                rgb = decode(data, max_pixels=max_pixels).rgb
            vector, face = face_pipeline.main_embedding(rgb, field=field, detector=detector, arcface=arcface, timings=timings)
            del rgb
            vectors.append(vector)
            described.append(face)
    similarity = cosine_similarity(*vectors)
    return forms.json_response(
        {
            "similarity": round(similarity, 4),
            "same_person": similarity >= threshold,
            "threshold": threshold,
            "faces": described,
        },
        timings,
    )


@bp.post("/swap")
def swap() -> Response:
    """`target` (the photo to change; `image` also accepted) with the face of `source` put in
    (or `source_embedding`, a 512-number embedding from /faces); `face_index` (default 0, the
    largest face; `all`); `source_face_index` (default 0); `format` (default: the target's)."""
    service = current_service()
    max_pixels = service.settings.max_image_pixels
    timings = Timings()
    target_data = forms.image_bytes("target", "image")
    source_data = request.files.get("source")
    face_index = _face_index()
    source_index = forms.integer("source_face_index", 0, low=0, high=MAX_FACES - 1)
    requested_format = forms.text("format")
    service.require_ready()
    detector_name, detector = _detector(service)
    swapper_name, swapper = _swapper(service)
    timings.models.update(detect=detector_name, swap=swapper_name)
    identity = _embedding_field("source_embedding", size=swapper.embedding_size)
    if identity is None and source_data is None:
        raise bad_request("missing_source", "Send the face to put in as the file field 'source' (or 'source_embedding').")
    arcface = None
    if identity is None:
        arcface_name, arcface = _arcface(service, "Face swap from a source photo")
        timings.models["embed"] = arcface_name
    source_bytes = None if identity is not None or source_data is None else source_data.read()
    source_face: dict[str, object] | None = None
    # one slot's budget for the two photos: the source is decoded, embedded and let go before the
    # target is decoded; the answer (encoding, base64) is made inside the slot too
    with service.inference(timings):
        if identity is None:
            if source_bytes is None or arcface is None:  # unreachable: a source photo or an embedding was required above
                raise RuntimeError("no source identity")
            with timings.stage("decode"):
                source = decode(source_bytes, max_pixels=max_pixels).rgb
            identity, face = face_pipeline.source_identity(
                source, detector=detector, arcface=arcface, index=source_index, timings=timings
            )
            del source
            source_face = face.to_dict()
        with timings.stage("decode"):
            target = decode(target_data, max_pixels=max_pixels)
        fmt = normalise_format(requested_format, default=answer_format(target.source_format))
        width, height = target.width, target.height
        pixels, chosen, targets = face_pipeline.swap(
            target.rgb, identity, detector=detector, swapper=swapper, face_index=face_index, timings=timings
        )
        del target
        with timings.stage("encode"):
            body = encode(pixels, fmt)
        del pixels
        return forms.image_response(
            body,
            fmt,
            timings=timings,
            filename=f"swap-{width}x{height}.{'jpg' if fmt == 'jpeg' else fmt}",
            extra={
                "width": width,
                "height": height,
                "faces_swapped": chosen,
                "target_faces": [face.to_dict() for face in targets],
                "source_face": source_face,
            },
        )
