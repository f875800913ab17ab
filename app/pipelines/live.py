"""The camera's live check (issue 52): one small frame in, the report's lines a person can still
change out (`imaging.live`), from the face detector and the 68 landmarks alone: no refining crops,
no matte, no output. Cheap on purpose: it runs several times a second per person at the camera, in
its own lane (serving/admission.py: LiveGate), beside the ID photos."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..imaging import live
from ..models.landmarks68 import Landmarks68, menton, mouth_openness
from ..models.registry import FaceDetector
from ..specs import PhotoSpec
from ..timings import Timings
from .face_reading import people


@dataclass(frozen=True)
class LiveCheck:
    """The frame's lines (most important first), whether every line holds, and what to do first."""

    lines: list[live.Line]

    @property
    def ready(self) -> bool:
        return live.ready(self.lines)

    @property
    def advice(self) -> str | None:
        return live.first_advice(self.lines)


def target_of(spec: PhotoSpec) -> live.Target:
    return live.Target(head_height=spec.head_height, eye_line=spec.eye_line, rules=spec.rules,
                       allowed=spec.background_colours)


def check_frame(rgb: np.ndarray, *, detector: FaceDetector, landmarker: Landmarks68 | None, spec: PhotoSpec,
                timings: Timings, wall: bool = True) -> LiveCheck:
    """Detect, read the sitter's 68 landmarks (where that net is loaded), judge the lines (the wall's
    only with `wall`: where the photo keeps its background)."""
    with timings.stage("detect"):
        counted = sorted(people(detector.detect_frame(rgb)), key=lambda face: face.area, reverse=True)
    dense = None
    if counted and landmarker is not None:
        with timings.stage("landmarks"):
            dense = landmarker.landmarks(rgb, counted[0].box)
    with timings.stage("judge"):
        lines = live.judge_frame(rgb, people=[(face.box, face.landmarks) for face in counted],
                                 chin=None if dense is None else menton(dense),
                                 mouth_openness=None if dense is None else mouth_openness(dense),
                                 target=target_of(spec), wall=wall)
    return LiveCheck(lines)
