"""The ID photo's judge step, the only way into the compliance report: `judge(record, spec, models)`.

It judges the lines read on the original (capture quality, hands, arms, a covering, glasses, the
outline, eyes, mouth), then reads the finished photo once, as written, for every other line
(`compliance.report`)."""

from __future__ import annotations

import io
import math
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace

import numpy as np
from PIL import Image

from ..imaging import arms, compliance, covering, expression, glasses, outline, quality
from ..imaging.eye_line_roll import eye_line_roll
from ..imaging.head import chin_row
from ..imaging.placement import Placement
from ..models.landmarks68 import Landmarks68, menton, mouth_openness
from ..models.registry import FaceDetector
from ..specs import Edit, PhotoSpec
from ..timings import Timings
from .face_reading import FaceReading, read_faces_on
from .idrecord import PhotoRecord
from .idsteps import judged_spec


def assess_capture(rgb: np.ndarray, face: FaceReading) -> list[dict[str, object]]:
    """The capture quality of the sitter's face on the original (`quality.assess`)."""
    return quality.assess(rgb, box=face.face.box, landmarks=face.face.landmarks)


def outline_check(alpha: np.ndarray, raw: np.ndarray | None, face: FaceReading) -> compliance.Check | None:
    """Where other people were cut away (`face.others`), whether the cut sliced the sitter's outline
    along a straight line (`outline.straight_cut` on the kept and the model's own matte)."""
    if raw is None or not face.others:
        return None
    fields = outline.outline_line(outline.straight_cut(alpha, raw, face.face.box, iod=face.eye_distance))
    return compliance.Check(**fields)  # type: ignore[arg-type]


def judge_input(rgb: np.ndarray, alpha: np.ndarray, face: FaceReading, spec: PhotoSpec,
                capture: list[dict[str, object]], *, raw: np.ndarray | None = None) -> tuple[compliance.Check, ...]:
    """Hands near the head (the person's matte and the face's own skin colour, above the chin), arms
    near the head (the matte's outline alone: `arms`), a hat or head covering (`covering`), glasses
    (`glasses`, judged as the spec's authority says), the
    eyes open (OpenCV's eye cascade on each eye's window), with the 68 dense landmarks the mouth,
    and the lines judged from the capture quality's measures (`assess_capture`)."""
    landmarks, others = face.face.landmarks, face.others_detected
    chin_y = chin_row(landmarks, face.chin)
    area, _ = expression.hands_near_head(rgb, alpha, landmarks, chin_y=chin_y, other_faces=others)
    reach, _ = arms.arms_near_head(alpha, landmarks, chin_y=chin_y, other_faces=others)
    checks = [compliance.hands_check(area), arms.arms_check(reach),
              covering.covering_check(covering.read_covering(rgb, alpha, landmarks), spec.covering_source),
              glasses.glasses_check(glasses.bridge_edge(rgb, landmarks), policy=spec.glasses,
                                    source=spec.glasses_source)]
    cut = outline_check(alpha, raw, face)
    if cut is not None:
        checks.append(cut)
        if cut.passed is False:  # the outline the arms line reads is not the sitter's own: it cannot tick
            checks = [replace(line, passed=None, advice=cut.advice) if line.name == "arms_near_head" else line
                      for line in checks]
    eyes = expression.eyes_found(rgb, landmarks)
    if eyes is not None:
        checks.append(compliance.eyes_check(eyes))
    if face.dense is not None:
        checks.append(compliance.mouth_check(mouth_openness(face.dense), required=spec.rules.mouth_closed,
                                             source=spec.expression_source))
    return tuple(checks) + tuple(compliance.capture_checks(capture))




@dataclass(frozen=True)
class JudgeModels:
    """The models the judge reads the finished photo with: the face detector, and the 68-point
    landmark net where it is loaded (without it the mouth stays "not checked")."""

    detector: FaceDetector
    landmarker: Landmarks68 | None = None


@dataclass(frozen=True)
class Report:
    """The judge's answer: every line of the report in order, the capture quality's measures (each
    with its advice), and what the report states beside the lines: the solver's aim, the edits done
    and the share of the output not photographed."""

    checks: list[compliance.Check]
    capture: list[dict[str, object]]
    placement: Placement
    edits: tuple[Edit, ...]
    unphotographed_share: float

    @property
    def compliant(self) -> bool:
        """Every judged line passes: information and what is not checked are not judged; a line the
        measure cannot decide (pass None: a pose or a rule within its reading's uncertainty) is not a pass."""
        return all(check.passed is True for check in self.checks if check.judged)

    def to_dict(self) -> dict[str, object]:
        placement = self.placement
        return {
            "compliant": self.compliant,
            "checks": [check.to_dict() for check in self.checks],
            # the solver's aim: the smallest margin it left to any band end (mm; negative where no
            # placement meets every rule), and the rule it belongs to
            "placement": {"margin_mm": None if not math.isfinite(placement.margin_mm) else round(placement.margin_mm, 2),
                          "binding_rule": placement.binding,
                          "broken": {name: round(mm, 2) for name, mm in placement.broken.items()}},
            "edits": [edit.record() for edit in self.edits],
            "unphotographed_share": round(self.unphotographed_share, 4),
        }


def judge(record: PhotoRecord, spec: PhotoSpec, models: JudgeModels, *, timings: Timings | None = None) -> Report:
    """The report on one photo: the lines judged on the original (`assess_capture`, `judge_input`),
    then the file as written (`record.encoded`) decoded once, the people read on it (or on the frame
    step's draft, where the output has the draft's geometry: they differ only in the colours under
    soft edges), the chin where the dense landmarks run, and every line of `compliance.report`. The
    rule lines of a photo too tight for its frame say what to change when taking it again."""

    def stage(name: str) -> AbstractContextManager[object]:
        return nullcontext() if timings is None else timings.stage(name)

    face, framed, asked = record.face, record.framed, record.asked
    geometry, edits = framed.geometry, record.edits
    judged_by, share, extended_mm = (judged_spec(spec, geometry), record.rendered.unphotographed_share,
                                     geometry.extended_mm(spec))
    with stage("quality"):
        capture = assess_capture(record.photo, face)
    with stage("expression"):
        on_input = judge_input(record.photo, record.matte.alpha, face, spec, capture, raw=record.matte.raw)
    with stage("check"):
        file = Image.open(io.BytesIO(record.encoded.data))
        seen = np.asarray(file.convert("RGB"))
        faces = (read_faces_on(models.detector, seen, asked.background) if framed.draft_faces is None
                 else list(framed.draft_faces))
        landmarker = models.landmarker
        dense = landmarker.landmarks(seen, faces[0].box) if landmarker is not None and len(faces) == 1 else None
        written = compliance.Written(seen, record.rendered.alpha, [(f.box, f.landmarks) for f in faces],
                                     file.info.get("dpi"), chin=None if dense is None else menton(dense),
                                     dense_roll=None if dense is None else eye_line_roll(dense),
                                     others_alpha=framed.cropped.others)
        original = compliance.Original(face.eye_distance, face.pose, on_input, mouth_judged=landmarker is not None,
                                       eyes_judged=any(check.name == "eyes_open" for check in on_input))
        checks = compliance.report(compliance.ReportInput(
            written, judged_by, asked.output_dpi, asked.background, asked.gradient, original, extended_mm=extended_mm,
            missing_mm=geometry.missing_mm, applied=tuple(edit.policy for edit in edits),
            tight_rules=spec.rules if geometry.tight else None))
    return Report(checks, capture, geometry.placement, edits, share)
