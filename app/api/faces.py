"""Faces: POST /api/v1/faces, POST /api/v1/faces/compare, POST /api/v1/swap.

Detection uses SCRFD when it is loaded, else CenterFace. Faces are listed largest box first, so
index 0 is the main face everywhere (`compare` uses it, `swap` defaults to it). Each model is
optional: a field whose model is not in MODELS is left out of /faces, and an endpoint whose
model is missing answers 503 `model_unavailable` naming the command that installs it.
"""

from __future__ import annotations

import base64
import json
import math

import numpy as np
from flask import Blueprint, Response, current_app, jsonify, request

from .. import observability
from ..errors import ApiError, bad_request
from ..imageio import decode, encode, normalise_format
from ..models.checksums import install_command
from ..models.faces import Face
from ..models.insight import ArcFace, Embedding, GenderAge, Landmark106, Swapper
from ..models.manifest import Role, get_spec
from ..models.registry import FaceDetector, Registry
from ..pipelines.faces import cosine_similarity, norm_crop
from ..runtime import Runtime, WarmupRequest
from ..timings import Timings
from . import forms

bp = Blueprint("faces", __name__, url_prefix="/api/v1")

#: ArcFace (buffalo_l w600k_r50) cosine similarity at or above which two faces are called the same
#: person. insightface's own evaluation tool (insightface 2.1, gui/core/constants.py) defaults to
#: 0.4, with 0.35-0.4 reported as uncertain; the range in insightface's examples and issues runs
#: from about 0.28 (permissive) to 0.5 (strict). 0.4 errs towards "not the same person" on a
#: service where a false match is the costly mistake; a request may pass its own `threshold`.
SAME_PERSON_THRESHOLD = 0.4
MAX_FACES = 100
DEFAULT_MAX_FACES = 20
GENDERS = ("female", "male")


def warmup_requests(registry: Registry) -> list[WarmupRequest]:
    """/faces when a face-analysis model is loaded, /swap when the swapper is (the astronaut)."""
    found = registry.face_detector()
    if found is None:
        return []
    detector_name, _ = found
    roles = (Role.FACE_RECOGNITION, Role.FACE_ATTRIBUTES, Role.FACE_LANDMARKS_106)
    analysis = [name for role in roles for name in registry.names(role)]
    requests: list[WarmupRequest] = []
    if analysis or get_spec(detector_name).family == "scrfd":
        requests.append(WarmupRequest("/api/v1/faces", {"crops": "true"}, (detector_name, *analysis)))
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


def _runtime() -> Runtime:
    from .. import get_runtime

    return get_runtime(current_app)


# -- model lookup ------------------------------------------------------------------------------


def _unavailable(runtime: Runtime, what: str, *names: str) -> ApiError:
    """503 naming the models that would provide `what` and how to install them."""
    commands = " or ".join(install_command(get_spec(name)) for name in names)
    listed = ",".join(runtime.settings.models)
    return ApiError(
        503,
        "model_unavailable",
        f"{what} is not available: the model is not loaded in this deployment. To enable it run: {commands}, "
        f"then add {' or '.join(names)} to MODELS (now MODELS={listed}) and restart.",
        details={"models": list(names)},
    )


def _detector(runtime: Runtime) -> tuple[str, FaceDetector]:
    found = runtime.registry.face_detector()
    if found is None:
        raise _unavailable(runtime, "Face detection", "scrfd", "centerface")
    return found


def _arcface(runtime: Runtime, what: str) -> tuple[str, ArcFace]:
    found = runtime.registry.find_named(ArcFace)
    if found is None:
        raise _unavailable(runtime, what, "arcface")
    return found


def _swapper(runtime: Runtime) -> tuple[str, Swapper]:
    found = runtime.registry.find_named(Swapper)
    if found is None:
        raise _unavailable(runtime, "Face swap", "inswapper")
    return found


def _json(body: dict[str, object], timings: Timings) -> Response:
    """A JSON answer with the stage timings (body, `Server-Timing`, inference metrics)."""
    observability.observe_inference(timings)
    response = jsonify({**body, "timings": timings.as_dict()})
    response.headers["Server-Timing"] = timings.header()
    return response


# -- form fields ---------------------------------------------------------------------------------


def _file(*names: str) -> bytes:
    """The bytes of the one file sent under the first of `names` present (the others are aliases)."""
    forms.require_multipart()
    for name in names:
        files = request.files.getlist(name)
        if len(files) > 1:
            raise bad_request("too_many_images", f"Send exactly one file in the field '{name}' ({len(files)} were sent).")
        if files:
            return files[0].read()
    raise bad_request("missing_image", f"Attach the photo as the multipart file field '{names[0]}'.")


def _threshold() -> float:
    value = forms.text("threshold")
    if value is None:
        return SAME_PERSON_THRESHOLD
    try:
        number = float(value)
    except ValueError:
        raise bad_request("invalid_field", f"threshold must be a number, not {value!r}.") from None
    if not -1.0 <= number <= 1.0:
        raise bad_request("invalid_field", f"threshold must be between -1 and 1, not {number}.")
    return number


def _embedding_field(name: str, *, size: int) -> np.ndarray | None:
    value = forms.text(name)
    if value is None:
        return None
    try:
        numbers = json.loads(value)
        vector = np.asarray(numbers, dtype=np.float64)
    except (ValueError, TypeError):
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


# -- shared steps ----------------------------------------------------------------------------------


def _detect(detector: FaceDetector, rgb: np.ndarray, *, limit: int) -> list[Face]:
    """Faces, largest box first (ties: higher score first), at most `limit`."""
    faces = detector.detect(rgb)
    faces.sort(key=lambda face: (-face.area, -face.score))
    return faces[:limit]


def _rounded(points: np.ndarray) -> list[list[float]]:
    return [[round(float(x), 1), round(float(y), 1)] for x, y in points]


def _png_base64(pixels: np.ndarray) -> str:
    return base64.b64encode(encode(pixels, "png")).decode("ascii")


def _main_face(detector: FaceDetector, rgb: np.ndarray, *, field: str) -> tuple[Face, int]:
    faces = _detect(detector, rgb, limit=MAX_FACES)
    if not faces:
        raise ApiError(422, "no_face", f"No face was found in '{field}'.", details={"field": field})
    return faces[0], len(faces)


def _embedding_json(embedding: Embedding) -> dict[str, object]:
    return {"embedding": [round(float(v), 7) for v in embedding.vector], "embedding_norm": round(embedding.norm, 4)}


# -- endpoints ---------------------------------------------------------------------------------------


@bp.post("/faces")
def faces() -> Response:
    """Every face: box, score, 5 landmarks; with the models loaded, 106 landmarks, gender and age,
    the normalised embedding; with `crops=true`, the 112 x 112 aligned crop as base64 PNG."""
    runtime = _runtime()
    settings = runtime.settings
    timings = Timings()
    data = forms.image_bytes()
    crops = forms.boolean("crops")
    limit = forms.integer("max_faces", DEFAULT_MAX_FACES, low=1, high=MAX_FACES)
    runtime.require_ready()
    detector_name, detector = _detector(runtime)
    registry = runtime.registry
    timings.models["detect"] = detector_name
    arcface = registry.find_named(ArcFace)
    genderage = registry.find_named(GenderAge)
    landmarks = registry.find_named(Landmark106)
    for stage, named in (("embed", arcface), ("genderage", genderage), ("landmarks_106", landmarks)):
        if named is not None:
            timings.models[stage] = named[0]
    with timings.stage("decode"):
        image = decode(data, max_pixels=settings.max_image_pixels)
    rgb = image.rgb
    results: list[dict[str, object]] = []
    with runtime.inference_gate.slot():
        with timings.stage("detect"):
            detected = _detect(detector, rgb, limit=limit)
        for face in detected:
            result: dict[str, object] = face.to_dict()
            if landmarks is not None:
                with timings.stage("landmarks_106"):
                    result["landmarks_106"] = _rounded(landmarks[1].predict(rgb, face))
            if genderage is not None:
                with timings.stage("genderage"):
                    gender, age = genderage[1].predict(rgb, face)
                result["gender"] = GENDERS[gender]
                result["age"] = age
            crop = None
            if arcface is not None:
                with timings.stage("embed"):
                    crop = arcface[1].align(rgb, face)
                    result.update(_embedding_json(arcface[1].embed_crop(crop)))
            if crops:
                with timings.stage("crop"):
                    if crop is None:
                        crop, _ = norm_crop(rgb, face.landmarks, size=112)
                    result["crop"] = _png_base64(crop)
            results.append(result)
    return _json(
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
    runtime = _runtime()
    settings = runtime.settings
    timings = Timings()
    first = _file("image1")
    second = _file("image2")
    threshold = _threshold()
    runtime.require_ready()
    detector_name, detector = _detector(runtime)
    arcface_name, arcface = _arcface(runtime, "Face comparison")
    timings.models.update(detect=detector_name, embed=arcface_name)
    with timings.stage("decode"):
        images = [decode(first, max_pixels=settings.max_image_pixels), decode(second, max_pixels=settings.max_image_pixels)]
    described: list[dict[str, object]] = []
    vectors: list[np.ndarray] = []
    with runtime.inference_gate.slot():
        for field, image in zip(("image1", "image2"), images, strict=True):
            with timings.stage("detect"):
                face, count = _main_face(detector, image.rgb, field=field)
            with timings.stage("embed"):
                embedding = arcface.embed(image.rgb, face)
            vectors.append(embedding.vector)
            described.append({**face.to_dict(), "faces_found": count, "embedding_norm": round(embedding.norm, 4)})
    similarity = cosine_similarity(vectors[0], vectors[1])
    return _json(
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
    runtime = _runtime()
    settings = runtime.settings
    timings = Timings()
    target_data = _file("target", "image")
    source_data = request.files.get("source")
    face_index = _face_index()
    source_index = forms.integer("source_face_index", 0, low=0, high=MAX_FACES - 1)
    requested_format = forms.text("format")
    runtime.require_ready()
    detector_name, detector = _detector(runtime)
    swapper_name, swapper = _swapper(runtime)
    timings.models.update(detect=detector_name, swap=swapper_name)
    source_vector = _embedding_field("source_embedding", size=swapper.embedding_size)
    if source_vector is None and source_data is None:
        raise bad_request("missing_source", "Send the face to put in as the file field 'source' (or 'source_embedding').")
    arcface = None
    if source_vector is None:
        arcface_name, arcface = _arcface(runtime, "Face swap from a source photo")
        timings.models["embed"] = arcface_name
    with timings.stage("decode"):
        target = decode(target_data, max_pixels=settings.max_image_pixels)
        source = None
        if source_vector is None and source_data is not None:
            source = decode(source_data.read(), max_pixels=settings.max_image_pixels)
    fmt = normalise_format(requested_format, default=target.source_format)
    source_face: dict[str, object] | None = None
    with runtime.inference_gate.slot():
        if source is not None and arcface is not None:
            with timings.stage("detect"):
                source_faces = _detect(detector, source.rgb, limit=MAX_FACES)
            if not source_faces:
                raise ApiError(422, "no_face", "No face was found in 'source'.", details={"field": "source"})
            if source_index >= len(source_faces):
                raise ApiError(
                    422,
                    "face_index_out_of_range",
                    f"source_face_index {source_index}: the source has {len(source_faces)} face(s).",
                )
            with timings.stage("embed"):
                embedding = arcface.embed(source.rgb, source_faces[source_index])
            source_vector = embedding.vector
            source_face = source_faces[source_index].to_dict()
        if source_vector is None:  # unreachable: a source photo or an embedding was required above
            raise RuntimeError("no source identity")
        with timings.stage("detect"):
            targets = _detect(detector, target.rgb, limit=MAX_FACES)
        if not targets:
            raise ApiError(422, "no_face", "No face was found in 'target'.", details={"field": "target"})
        if face_index is not None and face_index >= len(targets):
            raise ApiError(
                422, "face_index_out_of_range", f"face_index {face_index}: the target has {len(targets)} face(s)."
            )
        chosen = list(range(len(targets))) if face_index is None else [face_index]
        pixels = target.rgb
        with timings.stage("swap"):
            latent = swapper.latent(source_vector)
            for index in chosen:
                pixels = swapper.swap(pixels, targets[index], latent)
    with timings.stage("encode"):
        body = encode(pixels, fmt)
    return forms.image_response(
        body,
        fmt,
        timings=timings,
        filename=f"swap-{target.width}x{target.height}.{'jpg' if fmt == 'jpeg' else fmt}",
        extra={
            "width": target.width,
            "height": target.height,
            "faces_swapped": chosen,
            "target_faces": [face.to_dict() for face in targets],
            "source_face": source_face,
        },
    )
