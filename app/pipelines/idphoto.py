"""The ID photo pipeline: models in, print-ready photo and compliance report out.

Shared by the HTTP endpoint and the command line (`python -m app idphoto`). `make_id_photo` is the
chain of steps, each a function with typed values in and out, timed one by one; each step's value
goes into one record (`idrecord.PhotoRecord`, what was done), which the judge alone reads:

    face        pixels -> FaceReading                          face_reading.read_face
    level       pixels, FaceReading -> Levelled                 face_reading.estimate_level  edit: level
    matte       pixels, FaceReading -> PersonMatte              matte_choice.matte_person
    frame       ... -> Framed: the final geometry               idsteps.frame: place, extend (edit:
                (placed, extended and cropped at the level,     extend_canvas), crop (edit: crop_scale);
                which a draft of the output corrects)           the level corrected on a draft
    background  Cropped -> Rendered                             idsteps.background      edit: replace_background
    tone        Rendered -> (Rendered, Edit)                    idsteps.tone            edit: adjust_tone (never done)
    encode      pixels -> Encoded                               imageio.encode_photo    (JPEG quality under max_kb)
    judge       PhotoRecord, spec, models -> Report             idjudge.judge
    layout      IdPhoto -> sheet                                print_sheet             (/api/v1/idphoto/sheet)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..imageio import encode_photo
from ..imaging.compliance import Check
from ..imaging.placement import Placement, warp
from ..imaging.sheet import Paper, SheetLayout, plan_sheet, render_sheet
from ..models.faces import Face
from ..models.landmarks68 import Landmarks68
from ..models.portrait import MattingModel
from ..models.registry import FaceDetector
from ..specs import OPERATION_WORDS, PhotoSpec
from ..timings import Timings
from . import idsteps
from .face_reading import estimate_level, read_face
from .idjudge import JudgeModels, Report, judge
from .idrecord import IdPhotoOptions, PhotoRecord
from .matte_choice import matte_person

@dataclass(frozen=True)
class IdPhoto:
    """The photo made (`record`: what was done, step by step, its input-sized planes emptied:
    `PhotoRecord.lean`) and its judgement (`verdict`)."""

    record: PhotoRecord
    verdict: Report

    @property
    def pixels(self) -> np.ndarray:
        """(H, W, 3) uint8 RGB, exactly the spec's pixel size."""
        return self.record.rendered.pixels

    @property
    def alpha(self) -> np.ndarray:
        """(H, W) uint8, the person's matte on the output (255: person)."""
        return self.record.rendered.alpha

    @property
    def data(self) -> bytes:
        """The encoded file."""
        return self.record.encoded.data

    @property
    def checks(self) -> list[Check]:
        return self.verdict.checks

    @property
    def compliant(self) -> bool:
        return self.verdict.compliant

    @property
    def quality(self) -> list[dict[str, object]]:
        """The capture quality of the input face (`app.imaging.quality`), every measure with its advice."""
        return self.verdict.capture

    @property
    def edits(self) -> list[dict[str, object]]:
        """The report's edits: one line per edit done (`Edit.record`), in order."""
        return [edit.record() for edit in self.record.edits]

    @property
    def face(self) -> Face:
        return self.record.face.face

    @property
    def placement(self) -> Placement:
        return self.record.framed.geometry.placement

    @property
    def extended_mm(self) -> dict[str, float]:
        return self.record.extended_mm

    @property
    def unphotographed_share(self) -> float:
        return self.record.rendered.unphotographed_share

    @property
    def matted_by(self) -> str:
        return self.record.matte.matted_by

    def report(self) -> dict[str, object]:
        return self.verdict.to_dict()


def make_id_photo(rgb: np.ndarray, *, detector: FaceDetector, segmenter: MattingModel, options: IdPhotoOptions,
                  max_side: int, timings: Timings, landmarker: Landmarks68 | None = None,
                  fallback: MattingModel | None = None) -> IdPhoto:
    """From an upright (H, W, 3) uint8 RGB portrait to a photo placed on every rule of the spec, and
    its report. `fallback`: the matte where `segmenter`'s misses the face (`PhotoRecord.matte` names
    the one used); `landmarker`: the 68-point net, where loaded (without it the mouth is not checked).

    Raises PhotoRejected (or NoFace) for photos that cannot make one (face count, the head itself
    cut off by an edge, max_kb). Where the frame needs more than the original shows beside, above
    or below the head, the canvas is extended (background, shoulders continued) and the report says so.
    """
    spec, colour = options.spec, options.background
    edits = idsteps.plan_edits(spec, colour)
    with timings.stage("detect"):
        face = read_face(rgb, detector=detector, mode=options.face, landmarker=landmarker)
    with timings.stage("align"):
        level = estimate_level(rgb, face, detector=detector, edit=edits.level)
    with timings.stage("segment"):
        matte = matte_person(rgb, face, segmenter=segmenter, fallback=fallback, max_side=max_side,
                             alpha_matting=options.alpha_matting, timings=timings)
    with timings.stage("place"):
        framed = idsteps.frame(rgb, face, matte, level, spec, edits, detector=detector, colour=colour,
                               gradient=options.gradient, framing=options.framing)
    with timings.stage("composite"):
        rendered, tone = idsteps.tone(idsteps.background(framed.cropped, edits.replace_background, colour=colour,
                                                         gradient=options.gradient), edits.adjust_tone)
    with timings.stage("encode"):
        encoded = encode_photo(rendered.pixels, fmt=options.fmt, dpi=options.output_dpi, max_kb=options.max_kb)
    record = PhotoRecord(options, rgb, face, level, matte, framed, rendered, tone, encoded)
    return IdPhoto(record.lean(), judge(record, spec, JudgeModels(detector, landmarker), timings=timings))


# --- layout ------------------------------------------------------------------------------------------


def print_sheet(
    photo: IdPhoto, spec: PhotoSpec, paper: Paper, *, copies: int | None, dpi: int
) -> tuple[SheetLayout, np.ndarray, str]:
    """The layout step: copies of the photo at its true physical size on `paper` at `dpi`, with cut
    marks and the report in one line under them (returned too: `sheet_caption`).

    ValueError (with the capacity) when the copies do not fit."""
    layout = plan_sheet(paper=paper, photo_mm=(spec.width_mm, spec.height_mm), dpi=dpi, copies=copies)
    caption = sheet_caption(photo.verdict, spec)
    return layout, render_sheet(np.ascontiguousarray(photo.pixels), layout, caption=caption), caption


def sheet_caption(report: Report, spec: PhotoSpec) -> str:
    """The report in one line for the print sheet: the spec, what was done to the photographed pixels
    (and which of it the authority refuses), the share not photographed, and the verdict."""
    done = []
    for edit in report.edits:
        words = OPERATION_WORDS.get(edit.operation, edit.operation)
        done.append(f"{words} (refused by the authority)" if edit.policy.allowed is False else words)
    share = round(100 * report.unphotographed_share)
    painted = f"{share} % not photographed" if share else "every pixel photographed"
    failed = [check for check in report.checks if check.judged and check.passed is False]
    open_lines = [check for check in report.checks if check.judged and check.passed is None]
    verdict = ("checked: compliant" if report.compliant else
               f"checked: NOT compliant ({len(failed)} failed, {len(open_lines)} to check)" if failed else
               f"checked: {len(open_lines)} line(s) to check by eye")
    return f"{spec.name} {spec.width_mm:g}x{spec.height_mm:g} mm · {'; '.join(done) or 'unedited'} · {painted} · {verdict}"


def carry_onto(photo: IdPhoto, plane: np.ndarray) -> np.ndarray:
    """A plane of the input photo ((H, W) or (H, W, C) uint8: its own alpha, say) carried onto the
    output by the same levelling, crop and scale as the photo's pixels; 0 beyond the input. For a
    photo made with its background kept (no canvas extension: the frame lies on the input)."""
    return warp(plane, photo.placement, fill=0)
