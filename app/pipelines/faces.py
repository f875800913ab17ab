"""The face pipelines: analysis (detect, then each optional model per face), comparison, swap.

Faces are listed largest box first (ties: higher score first), so index 0 is the main face
everywhere. The caller passes the models it has (None where a model is not loaded); JSON-ready
dicts come back, and domain errors (`NoFace`, `FaceIndexOutOfRange`) say what is wrong.

Photos arrive RGB. Detectors take RGB; insightface's per-face models take BGR, so each photo is
converted once (`rgb_to_bgr`) and a swapped photo converted back once (`bgr_to_rgb`).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import numpy as np

from ..errors import FaceIndexOutOfRange, NoFace
from ..imageio import encode
from ..imaging.face_align import cosine_similarity
from ..imaging.opencv import bgr_to_rgb, rgb_to_bgr
from ..models.faces import Face
from ..models.insight import ArcFace, Embedding, GenderAge, Landmark106, Swapper, align_112
from ..models.registry import FaceDetector
from ..timings import Timings

MAX_FACES = 100
GENDERS = ("female", "male")


@dataclass(frozen=True)
class Analysers:
    """The optional per-face models of /faces (None: not loaded, the field is left out)."""

    arcface: ArcFace | None = None
    genderage: GenderAge | None = None
    landmarks_106: Landmark106 | None = None


def detect(detector: FaceDetector, rgb: np.ndarray, *, limit: int = MAX_FACES) -> list[Face]:
    """Faces in (H, W, 3) uint8 RGB, largest box first (ties: higher score first), at most `limit`."""
    faces = detector.detect(rgb)
    faces.sort(key=lambda face: (-face.area, -face.score))
    return faces[:limit]


def main_face(detector: FaceDetector, rgb: np.ndarray, *, field: str) -> tuple[Face, int]:
    """(the largest face, how many were found); `NoFace` naming `field` when there is none."""
    faces = detect(detector, rgb)
    if not faces:
        raise NoFace("no_face", f"No face was found in '{field}'.", details={"field": field})
    return faces[0], len(faces)


def _rounded(points: np.ndarray) -> list[list[float]]:
    return [[round(float(x), 1), round(float(y), 1)] for x, y in points]


def embedding_json(embedding: Embedding) -> dict[str, object]:
    return {"embedding": [round(float(v), 7) for v in embedding.vector], "embedding_norm": round(embedding.norm, 4)}


def analyse(
    rgb: np.ndarray, *, detector: FaceDetector, models: Analysers, limit: int, crops: bool, timings: Timings
) -> list[dict[str, object]]:
    """Every face of (H, W, 3) uint8 RGB: box, score, 5 landmarks, and what `models` add; with
    `crops`, the 112 x 112 aligned crop as base64 PNG."""
    with timings.stage("detect"):
        detected = detect(detector, rgb, limit=limit)
    bgr = rgb_to_bgr(rgb)
    results: list[dict[str, object]] = []
    for face in detected:
        result: dict[str, object] = face.to_dict()
        if models.landmarks_106 is not None:
            with timings.stage("landmarks_106"):
                result["landmarks_106"] = _rounded(models.landmarks_106.predict(bgr, face))
        if models.genderage is not None:
            with timings.stage("genderage"):
                gender, age = models.genderage.predict(bgr, face)
            result["gender"] = GENDERS[gender]
            result["age"] = age
        if models.arcface is not None:
            with timings.stage("embed"):
                result.update(embedding_json(models.arcface.embed(bgr, face)))
        if crops:
            with timings.stage("crop"):
                result["crop"] = base64.b64encode(encode(align_112(rgb, face), "png")).decode("ascii")
        results.append(result)
    return results


def main_embedding(
    rgb: np.ndarray, *, field: str, detector: FaceDetector, arcface: ArcFace, timings: Timings
) -> tuple[np.ndarray, dict[str, object]]:
    """The ArcFace embedding of the main face of one photo of a comparison, and that face described."""
    with timings.stage("detect"):
        face, count = main_face(detector, rgb, field=field)
    with timings.stage("embed"):
        embedding = arcface.embed(rgb_to_bgr(rgb), face)
    return embedding.vector, {**face.to_dict(), "faces_found": count, "embedding_norm": round(embedding.norm, 4)}


def source_identity(
    rgb: np.ndarray, *, detector: FaceDetector, arcface: ArcFace, index: int, timings: Timings
) -> tuple[np.ndarray, Face]:
    """The normalised embedding of face `index` of the source photo, and that face."""
    with timings.stage("detect"):
        faces = detect(detector, rgb)
    if not faces:
        raise NoFace("no_face", "No face was found in 'source'.", details={"field": "source"})
    if index >= len(faces):
        raise FaceIndexOutOfRange("face_index_out_of_range", f"source_face_index {index}: the source has {len(faces)} face(s).")
    with timings.stage("embed"):
        embedding = arcface.embed(rgb_to_bgr(rgb), faces[index])
    return embedding.vector, faces[index]


def swap(
    rgb: np.ndarray,
    identity: np.ndarray,
    *,
    detector: FaceDetector,
    swapper: Swapper,
    face_index: int | None,
    timings: Timings,
) -> tuple[np.ndarray, list[int], list[Face]]:
    """`rgb` with face `face_index` (None: every face) given `identity` (a normalised embedding).
    Returns (the new (H, W, 3) uint8 RGB, the indices swapped, the faces found)."""
    with timings.stage("detect"):
        targets = detect(detector, rgb)
    if not targets:
        raise NoFace("no_face", "No face was found in 'target'.", details={"field": "target"})
    if face_index is not None and face_index >= len(targets):
        raise FaceIndexOutOfRange("face_index_out_of_range", f"face_index {face_index}: the target has {len(targets)} face(s).")
    chosen = list(range(len(targets))) if face_index is None else [face_index]
    with timings.stage("swap"):
        pixels = rgb_to_bgr(rgb)
        for index in chosen:
            pixels = swapper.swap(pixels, targets[index], identity)
        pixels = bgr_to_rgb(pixels)
    return pixels, chosen, targets
