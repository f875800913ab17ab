"""The ID photo's judge step: the lines judged on the original (hands, eyes, mouth, capture
quality), and the finished photo read once, as written, for the compliance report."""

from __future__ import annotations

import io
from dataclasses import dataclass, replace

import numpy as np
from PIL import Image

from ..imaging import arms, compliance, covering, expression, glasses, outline, quality
from ..imaging.dense_roll import eye_line_roll
from ..imaging.head import chin_row
from ..models.faces import Face
from ..models.landmarks68 import Landmarks68, menton, mouth_openness
from ..models.registry import FaceDetector
from ..specs import Edit, PhotoSpec
from .sitter import Sitter, read_output


@dataclass(frozen=True)
class OnInput:
    """What is judged on the original: the capture quality's measures (`quality.assess`, each with
    its advice) and the lines judged from them and from the face (hands, eyes, mouth)."""

    capture: list[dict[str, object]]
    checks: tuple[compliance.Check, ...]

    @property
    def eyes_judged(self) -> bool:
        return any(check.name == "eyes_open" for check in self.checks)


def assess_capture(rgb: np.ndarray, sitter: Sitter) -> list[dict[str, object]]:
    """The capture quality of the sitter's face on the original (`quality.assess`)."""
    return quality.assess(rgb, box=sitter.face.box, landmarks=sitter.face.landmarks)


def outline_check(alpha: np.ndarray, raw: np.ndarray | None, sitter: Sitter) -> compliance.Check | None:
    """Where other people were cut away (`sitter.others`), whether the cut sliced the sitter's outline
    along a straight line (`outline.straight_cut` on the kept and the model's own matte)."""
    if raw is None or not sitter.others:
        return None
    fields = outline.outline_line(outline.straight_cut(alpha, raw, sitter.face.box, iod=sitter.eye_distance))
    return compliance.Check(**fields)  # type: ignore[arg-type]


def judge_input(rgb: np.ndarray, alpha: np.ndarray, sitter: Sitter, spec: PhotoSpec,
                capture: list[dict[str, object]], *, raw: np.ndarray | None = None) -> OnInput:
    """Hands near the head (the person's matte and the face's own skin colour, above the chin), arms
    near the head (the matte's outline alone: `arms`), a hat or head covering (`covering`), glasses
    (`glasses`, judged as the spec's authority says), the
    eyes open (OpenCV's eye cascade on each eye's window), with the 68 dense landmarks the mouth,
    and the lines judged from the capture quality's measures (`assess_capture`)."""
    face = sitter.face
    area, _ = expression.hands_near_head(rgb, alpha, face.landmarks, chin_y=chin_row(face.landmarks, sitter.chin),
                                         other_faces=sitter.others_detected)
    reach, _ = arms.arms_near_head(alpha, face.landmarks, chin_y=chin_row(face.landmarks, sitter.chin),
                                   other_faces=sitter.others_detected)
    checks = [compliance.hands_check(area), arms.arms_check(reach),
              covering.covering_check(covering.read_covering(rgb, alpha, face.landmarks), spec.covering_source),
              glasses.glasses_check(glasses.bridge_edge(rgb, face.landmarks), policy=spec.glasses,
                                    source=spec.glasses_source)]
    cut = outline_check(alpha, raw, sitter)
    if cut is not None:
        checks.append(cut)
        if cut.passed is False:  # the outline the arms line reads is not the sitter's own: it cannot tick
            checks = [replace(line, passed=None, advice=cut.advice) if line.name == "arms_near_head" else line
                      for line in checks]
    eyes = expression.eyes_found(rgb, face.landmarks)
    if eyes is not None:
        checks.append(compliance.eyes_check(eyes))
    if sitter.dense is not None:
        checks.append(compliance.mouth_check(mouth_openness(sitter.dense), required=spec.rules.mouth_closed,
                                             source=spec.expression_source))
    return OnInput(capture, tuple(checks) + tuple(compliance.capture_checks(capture)))


@dataclass(frozen=True)
class Judged:
    """The judge step's input beyond the file: the output's matte, the people read on the draft
    (None: read them again on the file), the raw matte on the output (a kept background's other
    people), the frame's extension and shortfall (mm), and the edits done."""

    alpha: np.ndarray
    on_output: list[Face] | None
    others_alpha: np.ndarray | None
    extended_mm: dict[str, float]
    missing_mm: dict[str, float]
    edits: tuple[Edit, ...]


def judge_output(data: bytes, given: Judged, sitter: Sitter, on_input: OnInput, *, spec: PhotoSpec, dpi: int,
                 background: tuple[int, int, int] | None, gradient: bool, detector: FaceDetector,
                 landmarker: Landmarks68 | None) -> list[compliance.Check]:
    """The report on the file as written (`data`): decoded once, the people read on it (or on the
    draft, where the final output has the draft's geometry: they differ only in the colours under
    soft edges), the chin where the dense landmarks run, and every line of `compliance.report`."""
    written = Image.open(io.BytesIO(data))
    seen = np.asarray(written.convert("RGB"))
    on_output = read_output(detector, seen, background) if given.on_output is None else given.on_output
    dense = landmarker.landmarks(seen, on_output[0].box) if landmarker is not None and len(on_output) == 1 else None
    chin = None if dense is None else menton(dense)
    return compliance.report(compliance.ReportInput(
        rgb=seen,
        alpha=given.alpha,
        faces=[(f.box, f.landmarks) for f in on_output],
        size=(spec.width_px, spec.height_px),
        dpi=written.info.get("dpi"),
        expected_dpi=dpi,
        rules=spec.rules,
        size_mm=(spec.width_mm, spec.height_mm),
        background=background,
        gradient=gradient,
        extended_mm=given.extended_mm,
        missing_mm=given.missing_mm,
        allowed_backgrounds=spec.background_colours,
        authority_colours=spec.id != "custom",
        others_alpha=given.others_alpha,
        applied=tuple(edit.policy for edit in given.edits),
        input_eye_distance_px=sitter.eye_distance,
        extra=on_input.checks,
        mouth_judged=landmarker is not None,
        eyes_judged=on_input.eyes_judged,
        chin=chin,
        head_pose=sitter.pose,
        dense_roll=None if dense is None else eye_line_roll(dense),
    ))
