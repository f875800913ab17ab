"""The ID photo pipeline: models in, print-ready photo and compliance report out.

Shared by the HTTP endpoint and the command line (`python -m app idphoto`). `make_id_photo` is the
chain of steps, each a function with typed values in and out, timed one by one:

    decode        bytes -> pixels                           (app.imageio.decode, in the route)
    people        pixels -> Sitter                          sitter.find_sitter
    level         pixels, Sitter -> Level                   sitter.level             edit: level
    matte         pixels, Sitter -> Matted                  mattes.matte
    frame         pixels, Sitter, Matted, roll -> Framed    idsteps.frame, which is
      place         Sitter, Matted.alpha, roll -> Frame     idsteps.place
      extend        Matted, Frame, Sitter -> Canvas         idsteps.extend_canvas    edit: extend_canvas
      cut           pixels, Matted, Canvas, Frame -> Cut    idsteps.cut              edit: crop_scale
    background    Cut -> Rendered                           idsteps.background       edit: replace_background
    tone          Rendered -> (Rendered, Edit)              idsteps.tone             edit: adjust_tone (never done)
    encode        pixels -> Encoded                         imageio.encode_photo     (JPEG quality under max_kb)
    judge         pixels, Sitter -> capture quality          idjudge.assess_capture
                  pixels, Matted.alpha, Sitter -> OnInput    idjudge.judge_input      (hands, eyes, mouth)
                  Encoded.data, Judged, ... -> checks        idjudge.judge_output     (the file read once)
    layout        IdPhoto -> sheet                          print_sheet              (/api/v1/idphoto/sheet)

The edits are values (`app.specs.Edit`) that the steps return; the report lists those done, in
the order they touched the pixels (the canvas grown, then one resampling that levels, crops and
scales, then the backdrop), and judges their policies.

The level is checked on a draft of the output (the background step without the foreground
estimate): where the eye line still leans, the level's correction (`relevel`) and the frame run
once more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..imageio import encode_photo
from ..imaging import compliance, retake
from ..imaging.framing import Framing
from ..imaging.placement import Placement, warp
from ..imaging.sheet import Paper, SheetLayout, plan_sheet, render_sheet
from ..models.faces import Face
from ..models.landmarks68 import Landmarks68
from ..models.portrait import Matter
from ..models.registry import FaceDetector
from ..models.segmentation import AlphaMatting
from ..specs import OPERATION_WORDS, Edit, PhotoSpec
from ..timings import Timings
from . import idsteps
from .idjudge import Judged, assess_capture, judge_input, judge_output
from .mattes import matte
from .sitter import FaceMode, find_sitter, level, read_output, relevel


@dataclass(frozen=True)
class IdPhotoOptions:
    spec: PhotoSpec
    background: tuple[int, int, int] | None  # the new background's colour; None: keep the photographed one
    gradient: bool = False
    fmt: Literal["jpeg", "png"] = "jpeg"
    dpi: int | None = None  # default: the spec's
    max_kb: int | None = None
    face: FaceMode = "single"
    alpha_matting: AlphaMatting | None = None
    framing: Framing | None = None  # a client's framing (HivisionIDPhotos' ratios); None: the spec's rules place the head

    @property
    def output_dpi(self) -> int:
        return self.dpi or self.spec.dpi

    @property
    def keep_background(self) -> bool:
        return self.background is None


@dataclass(frozen=True)
class IdPhoto:
    pixels: np.ndarray  # (H, W, 3) uint8 RGB, exactly the spec's pixel size
    data: bytes  # the encoded file
    face: Face  # the face used, input px
    faces_found: int
    roll_degrees: float
    placement: Placement
    checks: list[compliance.Check]
    jpeg_quality: int | None
    extended_mm: dict[str, float] | None = None
    made: tuple[Edit, ...] = ()  # the edits done, in the order they touched the pixels
    matted_by: str = ""  # the segmentation model whose matte was used
    unphotographed_share: float = 0.0  # of the output's pixels: replaced or painted, not photographed
    # capture quality of the input face (app.imaging.quality), every measure with its advice; the report
    # judges three of them (compliance.capture_checks: sharpness, exposure, even lighting)
    quality: list[dict[str, object]] = field(default_factory=list)
    alpha: np.ndarray | None = None  # (H, W) uint8, the person's matte on the output (255: person)
    framed: idsteps.ClientFrame | None = None  # where a client's framing placed the head, and which rules won

    @property
    def edits(self) -> list[dict[str, object]]:
        """The report's edits: one line per edit done (`Edit.record`), in order."""
        return [edit.record() for edit in self.made]

    @property
    def compliant(self) -> bool:
        """Every judged line passes: information and what is not checked are not judged; a line the
        measure cannot decide (pass None: a pose or a rule within its reading's uncertainty) is not a pass."""
        return all(check.passed is True for check in self.checks if check.judged)

    def report(self) -> dict[str, object]:
        placement = self.placement
        return {
            "compliant": self.compliant,
            "checks": [check.to_dict() for check in self.checks],
            # the solver's aim: the smallest margin it left to any band end (mm; negative where no
            # placement meets every rule), and the rule it belongs to
            "placement": {"margin_mm": None if not math.isfinite(placement.margin_mm) else round(placement.margin_mm, 2),
                          "binding_rule": placement.binding,
                          "broken": {name: round(mm, 2) for name, mm in placement.broken.items()}},
            "edits": self.edits,
            "unphotographed_share": round(self.unphotographed_share, 4),
        }


def make_id_photo(
    rgb: np.ndarray,
    *,
    detector: FaceDetector,
    segmenter: Matter,
    options: IdPhotoOptions,
    max_side: int,
    timings: Timings,
    landmarker: Landmarks68 | None = None,
    fallback: Matter | None = None,
) -> IdPhoto:
    """From an upright (H, W, 3) uint8 RGB portrait to a photo placed on every rule of the spec.

    `fallback`: the matte to use where `segmenter`'s does not hold the chosen face
    (app/pipelines/mattes.py); `IdPhoto.matted_by` names the one used.

    `landmarker` (the 68-point net, when loaded) adds the mouth-closed line; without it that line
    stays "not checked".

    Raises PhotoRejected (or NoFace) for photos that cannot make one (face count, the head itself
    cut off by an edge, max_kb). Where the frame needs more than the original shows beside, above
    or below the head, the canvas is extended (background, shoulders continued) and the report says so.
    """
    spec = options.spec
    extending = idsteps.may_extend(spec, options.background)
    with timings.stage("detect"):
        sitter = find_sitter(rgb, detector=detector, mode=options.face, landmarker=landmarker)
    with timings.stage("align"):
        levelled = level(rgb, sitter, detector=detector, spec=spec)
    with timings.stage("segment"):
        matted = matte(rgb, sitter, segmenter=segmenter, fallback=fallback, max_side=max_side,
                       alpha_matting=options.alpha_matting, timings=timings)
    with timings.stage("place"):
        framed = idsteps.frame(rgb, sitter, matted, levelled.roll, spec, extending=extending,
                               keep_background=options.keep_background, framing=options.framing)
    with timings.stage("composite"):
        # the level checked on a draft of the output: a second pass where the eye line still leans
        draft = idsteps.background(framed.cut, spec, colour=options.background, gradient=options.gradient, clean=False)
        on_output: list[Face] | None = read_output(detector, draft.pixels, options.background)
        again = relevel(levelled, on_output)
        if again is not None:
            levelled = again
            framed = idsteps.frame(rgb, sitter, matted, levelled.roll, spec, extending=extending,
                                   keep_background=options.keep_background, framing=options.framing)
            on_output = None  # the geometry moved: the judge reads the output again
        rendered, toned = idsteps.tone(idsteps.background(framed.cut, spec, colour=options.background,
                                                          gradient=options.gradient), spec)
    # the edits in the order they touched the pixels: the canvas grown, then one resampling that
    # levels, crops and scales, then the backdrop and the tone
    frame, canvas, piece = framed.frame, framed.canvas, framed.cut
    done = tuple(edit for edit in (canvas.edit, levelled.edit, piece.edit, rendered.edit, toned) if edit.done)
    with timings.stage("encode"):
        encoded = encode_photo(rendered.pixels, fmt=options.fmt, dpi=options.output_dpi, max_kb=options.max_kb)
    extended_mm = frame.extended_mm(spec)
    # the judge: on the original (capture quality, hands, eyes, mouth), then on the file as written
    with timings.stage("quality"):
        capture = assess_capture(rgb, sitter)
    with timings.stage("expression"):
        on_input = judge_input(rgb, matted.alpha, sitter, spec, capture, raw=matted.raw)
    with timings.stage("check"):
        judged = Judged(alpha=rendered.alpha, on_output=on_output, extended_mm=extended_mm, missing_mm=frame.missing_mm,
                        others_alpha=piece.others, edits=done)
        checks = judge_output(encoded.data, judged, sitter, on_input, spec=idsteps.judged_spec(spec, frame),
                              dpi=options.output_dpi,
                              background=options.background, gradient=options.gradient, detector=detector,
                              landmarker=landmarker)
        if frame.missing_mm or frame.crown_kept_px:  # the photo was too tight: say what to change
            checks = retake.advise(checks, spec.rules)
    return IdPhoto(
        pixels=rendered.pixels,
        data=encoded.data,
        face=sitter.face,
        faces_found=len(sitter.people),
        roll_degrees=levelled.roll,
        placement=frame.placement,
        checks=checks,
        jpeg_quality=encoded.jpeg_quality,
        extended_mm=extended_mm,
        quality=on_input.capture,
        made=done,
        unphotographed_share=1.0 - float(rendered.photographed.mean()) / 255.0,
        matted_by=matted.matted_by,
        alpha=rendered.alpha,
        framed=frame.framed,
    )


# --- layout ------------------------------------------------------------------------------------------


def print_sheet(
    photo: IdPhoto, spec: PhotoSpec, paper: Paper, *, copies: int | None, dpi: int
) -> tuple[SheetLayout, np.ndarray, str]:
    """The layout step: copies of the photo at its true physical size on `paper` at `dpi`, with cut
    marks and the report in one line under them (returned too: `sheet_caption`).

    ValueError (with the capacity) when the copies do not fit."""
    layout = plan_sheet(paper=paper, photo_mm=(spec.width_mm, spec.height_mm), dpi=dpi, copies=copies)
    caption = sheet_caption(photo, spec)
    return layout, render_sheet(np.ascontiguousarray(photo.pixels), layout, caption=caption), caption


def sheet_caption(photo: IdPhoto, spec: PhotoSpec) -> str:
    """The report in one line for the print sheet: the spec, what was done to the photographed pixels
    (and which of it the authority refuses), the share not photographed, and the verdict."""
    done = []
    for edit in photo.made:
        words = OPERATION_WORDS.get(edit.operation, edit.operation)
        done.append(f"{words} (refused by the authority)" if edit.policy.allowed is False else words)
    share = round(100 * photo.unphotographed_share)
    painted = f"{share} % not photographed" if share else "every pixel photographed"
    failed = [check for check in photo.checks if check.judged and check.passed is False]
    open_lines = [check for check in photo.checks if check.judged and check.passed is None]
    verdict = ("checked: compliant" if photo.compliant else
               f"checked: NOT compliant ({len(failed)} failed, {len(open_lines)} to check)" if failed else
               f"checked: {len(open_lines)} line(s) to check by eye")
    return f"{spec.name} {spec.width_mm:g}x{spec.height_mm:g} mm · {'; '.join(done) or 'unedited'} · {painted} · {verdict}"


def carry_onto(photo: IdPhoto, plane: np.ndarray) -> np.ndarray:
    """A plane of the input photo ((H, W) or (H, W, C) uint8: its own alpha, say) carried onto the
    output by the same levelling, crop and scale as the photo's pixels; 0 beyond the input. For a
    photo made with its background kept (no canvas extension: the frame lies on the input)."""
    return warp(plane, photo.placement, fill=0)
