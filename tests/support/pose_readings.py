"""The head pose read on every corpus portrait and its mirror image, as the ID pipeline reads it on
its input (`app.pipelines.face_reading.read_face`, face=largest): the 5-point estimate, the 68 dense
points, and the pose a report judges. Shared by tests/test_dense_pose.py (which calibrates
app.imaging.dense_pose against it) and `python -m bench.pose` (the calibration table)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.support import corpus


@dataclass(frozen=True)
class Reading:
    """One portrait read as it is (`photo`) and mirrored (`mirror`): each (5-point Pose, (68, 2) dense
    points or None, the Pose the report judges)."""

    name: str
    expect: str
    photo: tuple
    mirror: tuple


def load_models(model_home: Path):
    """(CenterFace, Landmarks68) on one CPU thread each, from MODEL_HOME (landmarks68 fetched if missing)."""
    import onnxruntime as ort

    from app.models.centerface import CenterFace, make_dims_dynamic
    from app.models.fetch import fetch, inspect
    from app.models.landmarks68 import Landmarks68
    from app.models.manifest import get_spec as model_spec
    from app.models.sessions import Providers, create_session

    spec = model_spec("landmarks68")
    if not inspect(spec, model_home, verify_hash=False).ok:
        fetch(spec, model_home, progress=False)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    landmarker = Landmarks68(ort.InferenceSession(str(model_home / spec.filename), options,
                                                  providers=["CPUExecutionProvider"]))
    detector = CenterFace(create_session(make_dims_dynamic((model_home / "centerface.onnx").read_bytes()),
                                         providers=Providers(("CPUExecutionProvider",)), label="test"))
    return detector, landmarker


def read_corpus(detector, landmarker, folder: Path | None = None) -> list[Reading]:
    """Every png/jpg portrait of the corpus manifest in `folder` (default: the corpus's own) that shows
    a face, as it is and mirrored."""
    from app.errors import ApiError, DomainError
    from app.imaging.pose import estimate_pose
    from app.pipelines.face_reading import read_face

    folder = folder or corpus.default_dir()
    expects = {p.name: p.expect for p in corpus.PORTRAITS}

    def read(rgb: np.ndarray):
        try:
            sitter = read_face(np.ascontiguousarray(rgb), detector=detector, mode="largest", landmarker=landmarker)
        except (ApiError, DomainError):
            return None
        return estimate_pose(sitter.face.landmarks), sitter.dense, sitter.pose

    out = []
    for stem, rgb in corpus.still_photos(folder):
        a, b = read(rgb), read(rgb[:, ::-1])
        if a is not None and b is not None:
            out.append(Reading(stem, expects.get(stem, "photo"), a, b))
    return out


def spread(readings: list[Reading], axis: str, which: int) -> dict[str, float]:
    """For `axis` ("yaw" or "pitch") of the pose at `which` (0: the 5-point estimate, 2: the pose a
    report judges): one reading's noise from the mirror (yaw: photo + mirror; pitch: photo - mirror;
    over sqrt 2), the spread of the mirror-averaged reading over the portraits labelled frontal by eye
    (the bias the mirror cannot see), its mean, and twice the root sum of squares of the two."""
    sign = 1.0 if axis == "yaw" else -1.0
    mismatch = [getattr(r.photo[which], axis) + sign * getattr(r.mirror[which], axis) for r in readings]
    noise = float(np.std(mismatch, ddof=1)) / math.sqrt(2.0)
    frontal = [(getattr(r.photo[which], axis) - sign * getattr(r.mirror[which], axis)) / 2.0
               for r in readings if r.expect == "photo"]
    bias = float(np.std(frontal, ddof=1))
    return {"noise_sd": noise, "frontal_sd": bias, "frontal_mean": float(np.mean(frontal)),
            "mismatch_mean": float(np.mean(mismatch)) / 2.0, "uncertainty_95": 2.0 * math.hypot(noise, bias),
            "frontal": len(frontal), "pairs": len(mismatch)}


def cue_disagreement(readings: list[Reading]) -> dict[str, float]:
    """What the mirror cannot see, bounded by two cues that share none of it: the yaw the nose gives
    against the eyes (app.imaging.dense_pose's fit) and the yaw the jaw's outline gives against the eyes
    (the same fit on points 0-16 and 36-47), each mirror-averaged. The jaw cue is scaled to the nose
    cue (least squares over the portraits read within 20 degrees); `residual_sd` is the spread of their
    difference over the portraits labelled frontal, `slope` the scale, `five_slope` the nose cue
    against the 5-point estimate over every portrait."""
    from app.imaging.dense_pose import EYES, JAW, fit_angles
    from app.imaging.face_model68 import mean_shape

    shape = mean_shape()
    nose, jaw, five, frontal = [], [], [], []
    for r in readings:
        nose.append((fit_angles(r.photo[1], shape)[0] - fit_angles(r.mirror[1], shape)[0]) / 2.0)
        jaw.append((fit_angles(r.photo[1], shape, JAW + EYES)[0] - fit_angles(r.mirror[1], shape, JAW + EYES)[0]) / 2.0)
        five.append((r.photo[0].yaw - r.mirror[0].yaw) / 2.0)
        frontal.append(r.expect == "photo")
    nose_a, jaw_a, five_a, front = np.array(nose), np.array(jaw), np.array(five), np.array(frontal)
    near = np.abs(nose_a) < 20.0
    slope, offset = np.polyfit(jaw_a[near], nose_a[near], 1)
    residual = nose_a[front] - (slope * jaw_a[front] + offset)
    return {"residual_sd": float(np.std(residual, ddof=1)), "slope": float(slope),
            "five_slope": float(np.polyfit(five_a, nose_a, 1)[0]), "frontal_sd": float(np.std(nose_a[front], ddof=1))}

