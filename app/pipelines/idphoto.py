"""The ID photo pipeline: models in, print-ready photo and compliance report out.

Shared by the HTTP endpoint and the command line (`python -m app idphoto`). The image math lives in
`app.imaging`; this module calls the models and the pure functions in order and times each stage.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from PIL import Image
from pymatting import estimate_foreground_ml

from ..errors import NoFace, PhotoRejected
from ..imageio import encode, jpeg_within
from ..imaging import arms, compliance, expression, quality, retake
from ..imaging.dense_roll import eye_line_roll
from ..imaging.headroom import keep_whole_head
from ..imaging.compose import flatten
from ..imaging.pose import estimate_pose
from ..imaging.sheet import Paper, SheetLayout, plan_sheet, render_sheet
from ..models.faces import Face
from ..models.landmarks68 import Landmarks68, menton, mouth_openness
from ..models.registry import FaceDetector
from ..models.portrait import Matter
from .mattes import matte_holding_face
from ..models.segmentation import AlphaMatting
from ..imaging.canvas import Extension, extend, fit_inside, needed_extension, photographed_mask
from ..imaging.people import keep_person
from ..imaging.placement import (
    FACE_WIDTH_IOD,
    Placement,
    PlacementError,
    eye_midpoint,
    head_cut_edge,
    lighter,
    measure_upright,
    place_on_rules,
    chin_from_landmarks,
    roll_degrees,
    upright_matte,
    vertical_gradient,
    warp,
)
from ..specs import OPERATION_WORDS, PhotoSpec
from ..timings import Timings

FaceMode = Literal["single", "largest"]
PEOPLE_MIN_WIDTH = 0.4  # faces narrower than this share of the largest face are not counted as people
REFINE_CONTEXT = 2.2  # the levelling crop's side, in face sizes
REFINE_CONTEXTS = (1.6, 2.2, 3.0, 4.0)  # the refining crops' sides, in face sizes
RELEVEL_DEG = 1.0  # an output whose eye line still leans more than this gets a second levelling pass
RELEVEL_MAX = 3.0  # degrees: the second pass corrects at most this much (the first reading had two estimates)
JPEG_QUALITY_MAX = 95
JPEG_QUALITY_MIN = 25


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

    @property
    def output_dpi(self) -> int:
        return self.dpi or self.spec.dpi

    @property
    def keep_background(self) -> bool:
        return self.background is None


@dataclass(frozen=True)
class Frame:
    """Where the output lies on the input: the placement, the extension it is drawn on (px beyond
    each edge of the input), and, where the canvas may not be extended, how far (mm of the print,
    per edge) the photo falls short of the frame the rules wanted."""

    placement: Placement
    extension: Extension
    missing_mm: dict[str, float] = field(default_factory=dict)
    crown_kept_px: float = 0.0  # output px the frame moved up to keep the top of the hair in (headroom)


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
    edits: list[dict[str, object]] = field(default_factory=list)  # the operations applied, in order
    matted_by: str = ""  # the segmentation model whose matte was used
    unphotographed_share: float = 0.0  # of the output's pixels: replaced or painted, not photographed
    # capture quality of the input face (app.imaging.quality), every measure with its advice; the report
    # judges three of them (compliance.capture_checks: sharpness, exposure, even lighting)
    quality: list[dict[str, object]] = field(default_factory=list)
    alpha: np.ndarray | None = None  # (H, W) uint8, the person's matte on the output (255: person)

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


def people(faces: list[Face]) -> list[Face]:
    """The faces that count as people: not much smaller than the largest (posters, crowds far behind)."""
    if not faces:
        return []
    widest = max(face.width for face in faces)
    return [face for face in faces if face.width >= PEOPLE_MIN_WIDTH * widest]


def choose_face(faces: list[Face], mode: FaceMode) -> Face:
    counted = people(faces)
    if not counted:
        raise NoFace("no_face", "No face was found; use a photo that shows your face clearly, looking at the camera.",
                     details={"faces": 0})
    if mode == "single" and len(counted) != 1:
        raise PhotoRejected(
            "face_count",
            f"We found {len(counted)} faces; choose a photo with just you in it (or send face=largest).",
            details={"faces": len(counted)},
        )
    return max(counted, key=lambda face: face.area)


def _nearest(found: list[Face], near: tuple[float, float]) -> Face | None:
    """The face whose eye midpoint is nearest `near` (px), or None."""
    if not found:
        return None
    return min(found, key=lambda f: float(np.hypot(*(np.asarray(eye_midpoint(f.landmarks)) - near))))


def _median_face(readings: list[Face]) -> Face:
    landmarks = np.median([f.landmarks for f in readings], axis=0).astype(np.float32)
    box = tuple(float(v) for v in np.median([f.box for f in readings], axis=0))
    return Face(box=box, score=max(f.score for f in readings), landmarks=landmarks)  # type: ignore[arg-type]


def refine(detector: FaceDetector, rgb: np.ndarray, face: Face, *, fill: tuple[int, int, int] | None = None) -> Face:
    """Detect again on crops around `face` so the face fills much of the detector's input, at
    several sizes (REFINE_CONTEXTS face sizes), all in one run (`detect_close_ups`): one CenterFace
    reading of the eye line moves by several degrees with the face's size in its input, so the
    landmarks are the per-coordinate median of the readings (the roll estimate needs them to a
    pixel). Where a crop passes the photo's edge it is `fill` (default: the photo's mean colour)."""
    height, width = rgb.shape[:2]
    cx, cy = (face.box[0] + face.box[2]) / 2.0, (face.box[1] + face.box[3]) / 2.0
    near = eye_midpoint(face.landmarks)
    colour = rgb.reshape(-1, 3).mean(axis=0).astype(np.uint8) if fill is None else np.asarray(fill, np.uint8)
    crops, origins = [], []
    for context in REFINE_CONTEXTS:
        # a square of `context` face sizes around the face; where it passes the photo's edge, a
        # plain border (a face that fills the whole input reads as poorly as a tiny one)
        half = context * max(face.width, face.height) / 2.0
        x0, y0 = int(cx - half), int(cy - half)
        x1, y1 = int(np.ceil(cx + half)), int(np.ceil(cy + half))
        sx0, sy0, sx1, sy1 = max(0, x0), max(0, y0), min(width, x1), min(height, y1)
        if sx1 <= sx0 or sy1 <= sy0:
            continue
        canvas = np.empty((y1 - y0, x1 - x0, 3), np.uint8)
        canvas[:] = colour
        canvas[sy0 - y0 : sy1 - y0, sx0 - x0 : sx1 - x0] = rgb[sy0:sy1, sx0:sx1]
        crops.append(canvas)
        origins.append((x0, y0))
    readings = []
    for found, (x0, y0) in zip(detector.detect_close_ups(crops) if crops else [], origins, strict=True):
        best = _nearest(found, (near[0] - x0, near[1] - y0))
        if best is None:
            continue
        box = (best.box[0] + x0, best.box[1] + y0, best.box[2] + x0, best.box[3] + y0)
        readings.append(Face(box=box, score=best.score, landmarks=best.landmarks + np.array([x0, y0], np.float32)))
    return _median_face(readings) if readings else face


def clean_foreground(rgb: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Estimate the true person colours under soft edges (pymatting's multilevel foreground
    estimation), so no fringe of the old background survives the new one. (H, W, 3) uint8 RGB."""
    soft = (alpha > 0) & (alpha < 255)
    if not soft.any():
        return rgb
    foreground = estimate_foreground_ml(rgb.astype(np.float64) / 255.0, alpha.astype(np.float64) / 255.0)
    return np.clip(foreground * 255.0 + 0.5, 0, 255).astype(np.uint8)


def encode_photo(pixels: np.ndarray, options: IdPhotoOptions) -> tuple[bytes, int | None]:
    """Encode at the output dpi; with `max_kb`, the highest JPEG quality that fits (binary search)."""
    dpi = options.output_dpi
    if options.fmt == "png":
        data = encode(pixels, "png", dpi=dpi)
        if options.max_kb is not None and len(data) > options.max_kb * 1024:
            raise PhotoRejected("max_kb_unreachable", f"A PNG of this photo is {len(data) / 1024:.0f} KB, over "
                                f"max_kb={options.max_kb}; ask for format=jpeg.", details={"smallest_kb": round(len(data) / 1024, 1)})
        return data, None
    if options.max_kb is None:
        return encode(pixels, "jpeg", dpi=dpi, jpeg_quality=JPEG_QUALITY_MAX), JPEG_QUALITY_MAX
    data, quality = jpeg_within(pixels, options.max_kb * 1024, dpi=dpi, best=JPEG_QUALITY_MAX, worst=JPEG_QUALITY_MIN)
    if len(data) > options.max_kb * 1024:
        raise PhotoRejected(
            "max_kb_unreachable",
            f"The smallest JPEG of this photo is {len(data) / 1024:.1f} KB, over max_kb={options.max_kb}.",
            details={"smallest_kb": round(len(data) / 1024, 1)},
        )
    return data, quality


def level(detector: FaceDetector, rgb: np.ndarray, face: Face) -> float:
    """The face's roll in degrees from two estimates: the refined landmarks, and landmarks read
    again (at several crop sizes) on a copy levelled by that first estimate (a detector is most
    precise on an upright face; what it still sees there is the first estimate's error). The two
    estimates are averaged; the output's own reading (`detect_output`) takes what is left."""
    first = roll_degrees(face.landmarks)
    height, width = rgb.shape[:2]
    cx, cy = eye_midpoint(face.landmarks)
    half = 2.5 * max(face.width, face.height)
    x0, y0 = max(0, int(cx - half)), max(0, int(cy - half))
    x1, y1 = min(width, int(np.ceil(cx + half))), min(height, int(np.ceil(cy + half)))
    if x1 - x0 < 16 or y1 - y0 < 16:
        return first
    crop = Image.fromarray(np.ascontiguousarray(rgb[y0:y1, x0:x1]))
    levelled = np.asarray(crop.rotate(first, resample=Image.Resampling.BILINEAR, center=(cx - x0, cy - y0)))
    shifted = Face(box=(face.box[0] - x0, face.box[1] - y0, face.box[2] - x0, face.box[3] - y0), score=face.score,
                   landmarks=face.landmarks - np.array([x0, y0], np.float32))
    again = refine(detector, levelled, shifted)
    second = first + roll_degrees(again.landmarks)
    return (first + second) / 2.0


def detect_output(detector: FaceDetector, pixels: np.ndarray, background: tuple[int, int, int] | None) -> list[Face]:
    """The people on the output (one run over the whole output); for one face, its landmarks read
    again as `refine` reads them on the input (crops of several face sizes, one run), with the
    background colour past the output's edges. With other than one face, the plain reading."""
    found = people(detector.detect(pixels))
    if len(found) != 1:
        return found
    return [refine(detector, pixels, found[0], fill=background)]


def _cut_off(edge: str) -> PhotoRejected:
    return PhotoRejected("photo_cut_off", CUT_MESSAGES[edge], details={"edge": edge})


CUT_MESSAGES = {
    "bottom": "The photo is cut off above the chin; use one that shows your whole face and some of your shoulders.",
    "top": "The photo is cut off through the top of the head; use one that shows all of your hair.",
    "left": "The photo is cut off through the left of the head; use one that shows your whole head.",
    "right": "The photo is cut off through the right of the head; use one that shows your whole head.",
}


def _place(face: Face, alpha: np.ndarray, roll: float, spec: PhotoSpec, chin: np.ndarray | None, *,
           extend_canvas: bool) -> Frame:
    """Measure the head levelled by `roll` (`chin`: the dense landmarks' menton, or None), solve the
    spec's rules, and say how far the output reaches beyond the input. Without `extend_canvas` the
    frame is kept inside the photographed pixels (`fit_inside`) and the shortfall is recorded.
    PhotoRejected(photo_cut_off, edge) when the head itself is cut."""
    pivot = eye_midpoint(face.landmarks)
    edge = head_cut_edge(face.landmarks, face.box, alpha, chin=chin)
    if edge is not None:
        raise _cut_off(edge)
    try:
        head = measure_upright(face.landmarks, face.box, upright_matte(alpha, roll_deg=roll, pivot=pivot),
                               roll_deg=roll, pivot=pivot, crown=spec.rules.crown, chin=chin)
    except PlacementError as exc:
        raise _cut_off(exc.edge) from None
    placement = place_on_rules(head, spec.rules, roll_deg=roll, pivot=pivot, size=(spec.width_px, spec.height_px),
                               size_mm=(spec.width_mm, spec.height_mm))
    extension = needed_extension(placement, alpha.shape)
    if extend_canvas or not extension.any:
        # never through the hair: the frame moves up to keep the whole head (headroom.keep_whole_head)
        placement, moved = keep_whole_head(placement, head, inside=None if extend_canvas else alpha.shape)
        return Frame(placement, needed_extension(placement, alpha.shape) if extend_canvas else extension,
                     crown_kept_px=moved)
    missing = extension.mm(placement, size_mm=(spec.width_mm, spec.height_mm))
    placement, moved = keep_whole_head(fit_inside(placement, alpha.shape), head, inside=alpha.shape)
    return Frame(placement, Extension(), missing, crown_kept_px=moved)


LEVEL_APPLIED_DEG = 0.05  # a rotation smaller than this is no levelling


@dataclass(frozen=True)
class Rendered:
    """The output pixels (H, W, 3) uint8 RGB, its person matte (H, W) uint8, the operations that
    made it from the photographed pixels (in order, EDIT_OPERATIONS' names), and a (H, W) uint8
    mask of the output pixels that were photographed (255) rather than replaced or painted."""

    pixels: np.ndarray
    alpha: np.ndarray
    applied: tuple[str, ...]
    photographed: np.ndarray


def _render(photo: np.ndarray, foreground: np.ndarray, alpha: np.ndarray, frame: Frame, chin_y: float,
            options: IdPhotoOptions, *, clean: bool = True, face: Face | None = None) -> Rendered:
    """The output, as the steps that change pixels, each recording itself: extend the canvas (where
    the frame needs it), level and crop in one resampling, and replace the background (unless it is
    kept: then the output is the photographed pixels `photo`). `clean=False` skips the foreground
    estimation under soft edges (a draft for measuring, not for the client). With `face`, an
    extension continues clothing only (never the face's skin colour) and a cut neck widens into
    shoulders."""
    applied: list[str] = []
    placement, extension = frame.placement, frame.extension
    photographed = photographed_mask(placement, alpha.shape)
    if extension.any:
        skin = None if face is None else expression.face_skin(foreground, face.landmarks)
        face_width = None if face is None else FACE_WIDTH_IOD * float(np.hypot(*(face.landmarks[1] - face.landmarks[0])))
        foreground, alpha = extend(foreground, alpha, extension, body_from_y=chin_y, skin=skin, face_width=face_width)
        placement = placement.shifted(extension.left, extension.top)
        applied.append("extend_canvas")
    if abs(placement.roll_deg) >= LEVEL_APPLIED_DEG:
        applied.append("level")
    applied.append("crop_scale")
    alpha_out = warp(alpha, placement, fill=0)
    if options.background is None:
        return Rendered(warp(photo, placement, fill=0), alpha_out, tuple(applied), photographed)
    rgb_out = warp(foreground, placement, fill=0)
    if clean:
        rgb_out = clean_foreground(rgb_out, alpha_out)
    applied.append("replace_background")
    # what is still photographed: the person's own pixels (wholly where the matte is opaque)
    photographed = (photographed.astype(np.uint16) * alpha_out // 255).astype(np.uint8)
    if options.gradient:
        backdrop = vertical_gradient(placement.size, lighter(options.background), options.background)
        return Rendered(flatten(rgb_out, alpha_out, backdrop), alpha_out, tuple(applied), photographed)
    return Rendered(flatten(rgb_out, alpha_out, options.background), alpha_out, tuple(applied), photographed)


def face_checks(
    rgb: np.ndarray, alpha: np.ndarray, face: Face, faces: list[Face], spec: PhotoSpec, dense: np.ndarray | None,
    chin: np.ndarray | None,
) -> list[compliance.Check]:
    """The lines judged on the original: hands near the head (the person's matte and the face's own
    skin colour, above `chin`), arms near the head (the matte's outline alone: `arms`), the eyes open (OpenCV's eye cascade on each eye's window), and with
    the 68 dense landmarks (`dense`, from the landmark net), the mouth."""
    others = [other.box for other in faces if not _same_face(other, face)]
    area, _ = expression.hands_near_head(rgb, alpha, face.landmarks, chin_y=_chin_y(face, chin), other_faces=others)
    reach, _ = arms.arms_near_head(alpha, face.landmarks, chin_y=_chin_y(face, chin), other_faces=others)
    checks = [compliance.hands_check(area), arms.arms_check(reach)]
    eyes = expression.eyes_found(rgb, face.landmarks)
    if eyes is not None:
        checks.append(compliance.eyes_check(eyes))
    if dense is not None:
        checks.append(compliance.mouth_check(mouth_openness(dense), required=spec.rules.mouth_closed,
                                             source=spec.expression_source))
    return checks


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
    extend_canvas = spec.edit("extend_canvas").apply and not options.keep_background
    with timings.stage("detect"):
        faces = detector.detect(rgb)
        face = choose_face(faces, options.face)
    with timings.stage("align"):
        face = refine(detector, rgb, face)
        roll = level(detector, rgb, face) if spec.edit("level").apply else 0.0
        dense = None if landmarker is None else landmarker.landmarks(rgb, face.box)
        chin = None if dense is None else menton(dense)  # the jaw's lowest point, (x, y) input px
    with timings.stage("quality"):
        capture = quality.assess(rgb, box=face.box, landmarks=face.landmarks)
    with timings.stage("segment"):
        # the person's colours under soft edges are estimated on the output, where a background is
        # replaced (`_render`: clean_foreground), so the matte leaves the photo's pixels as they are
        matte, matted_by = matte_holding_face(rgb, tuple(face.box), portrait=segmenter, fallback=fallback,
                                              max_side=max_side, alpha_matting=options.alpha_matting, timings=timings,
                                              edge_colours=False)
        others = [other.box for other in people(faces) if not _same_face(other, face)]
        alpha = keep_person(matte.alpha, face.box, others, rgb=rgb)
    with timings.stage("expression"):
        judged = face_checks(rgb, alpha, face, faces, spec, dense, chin) + compliance.capture_checks(capture)
    with timings.stage("place"):
        frame = _place(face, alpha, roll, spec, chin, extend_canvas=extend_canvas)
        chin_in = _chin_y(face, chin)
    with timings.stage("composite"):
        # the levelling checked on a draft of the output: a second pass when the eye line still leans
        draft = _render(rgb, matte.foreground, alpha, frame, chin_in, options, clean=False, face=face)
        on_output = detect_output(detector, draft.pixels, options.background)
        residual = roll_degrees(on_output[0].landmarks) if len(on_output) == 1 else None
        if spec.edit("level").apply and residual is not None and abs(residual) > RELEVEL_DEG:
            roll += float(np.clip(residual, -RELEVEL_MAX, RELEVEL_MAX))
            frame = _place(face, alpha, roll, spec, chin, extend_canvas=extend_canvas)
            on_output = None  # the geometry moved: the check reads the output again
        out = _render(rgb, matte.foreground, alpha, frame, chin_in, options, face=face)
        pixels, alpha_out = out.pixels, out.alpha
    placement = frame.placement
    extended_mm = frame.extension.mm(placement, size_mm=(spec.width_mm, spec.height_mm))
    with timings.stage("encode"):
        data, jpeg_quality = encode_photo(pixels, options)
    with timings.stage("check"):
        written = Image.open(io.BytesIO(data))
        seen = np.asarray(written.convert("RGB"))
        # the faces as read on the draft when the final output has its geometry (the draft differs
        # only in the colours under soft edges), else read again on the written output
        if on_output is None:
            on_output = detect_output(detector, seen, options.background)
        found = [(f.box, f.landmarks) for f in on_output]
        dense_out = landmarker.landmarks(seen, on_output[0].box) if landmarker is not None and len(on_output) == 1 else None
        chin_out = None if dense_out is None else menton(dense_out)
        checks = compliance.report(
            rgb=seen,
            alpha=alpha_out,
            faces=found,
            size=(spec.width_px, spec.height_px),
            dpi=written.info.get("dpi"),
            expected_dpi=options.output_dpi,
            rules=spec.rules,
            size_mm=(spec.width_mm, spec.height_mm),
            background=options.background,
            gradient=options.gradient,
            extended_mm=extended_mm,
            missing_mm=frame.missing_mm,
            allowed_backgrounds=spec.background_colours,
            others_alpha=None if not options.keep_background else warp(matte.alpha, placement, fill=0),
            applied=[spec.edit(operation) for operation in out.applied],
            input_eye_distance_px=float(np.hypot(*(face.landmarks[1] - face.landmarks[0]))),
            extra=judged,
            mouth_judged=landmarker is not None,
            eyes_judged=any(check.name == "eyes_open" for check in judged),
            chin=chin_out,
            head_pose=estimate_pose(face.landmarks),
            dense_roll=None if dense_out is None else eye_line_roll(dense_out),
        )
        if frame.missing_mm or frame.crown_kept_px:  # the photo was too tight: say what to change
            checks = retake.advise(checks, spec.rules)
    return IdPhoto(
        pixels=pixels,
        data=data,
        face=face,
        faces_found=len(people(faces)),
        roll_degrees=roll,
        placement=placement,
        checks=checks,
        jpeg_quality=jpeg_quality,
        extended_mm=extended_mm,
        quality=capture,
        edits=[{"operation": operation, "allowed": spec.edit(operation).allowed, "source": spec.edit(operation).source_key}
               for operation in out.applied],
        unphotographed_share=1.0 - float(out.photographed.mean()) / 255.0,
        matted_by=matted_by,
        alpha=alpha_out,
    )


def _same_face(a: Face, b: Face) -> bool:
    """Whether two detections are one face (the refined face against the detector's first reading)."""
    ax, ay = (a.box[0] + a.box[2]) / 2.0, (a.box[1] + a.box[3]) / 2.0
    bx, by = (b.box[0] + b.box[2]) / 2.0, (b.box[1] + b.box[3]) / 2.0
    return bool(abs(ax - bx) < 0.5 * b.width and abs(ay - by) < 0.5 * b.height)


def _chin_y(face: Face, chin: np.ndarray | None = None) -> float:
    """The chin's row in the input: the dense landmarks' menton (`chin`), or the eye-mouth line
    continued (placement.chin_from_landmarks)."""
    return chin_from_landmarks(face.landmarks) if chin is None else float(chin[1])


def print_sheet(
    photo: IdPhoto, spec: PhotoSpec, paper: Paper, *, copies: int | None, dpi: int
) -> tuple[SheetLayout, np.ndarray, str]:
    """Copies of the photo at its true physical size on `paper` at `dpi`, with cut marks and the
    report in one line under them (returned too: `sheet_caption`).

    ValueError (with the capacity) when the copies do not fit."""
    layout = plan_sheet(paper=paper, photo_mm=(spec.width_mm, spec.height_mm), dpi=dpi, copies=copies)
    caption = sheet_caption(photo, spec)
    return layout, render_sheet(np.ascontiguousarray(photo.pixels), layout, caption=caption), caption


def sheet_caption(photo: IdPhoto, spec: PhotoSpec) -> str:
    """The report in one line for the print sheet: the spec, what was done to the photographed pixels
    (and which of it the authority refuses), the share not photographed, and the verdict."""
    done = []
    for edit in photo.edits:
        words = OPERATION_WORDS.get(str(edit["operation"]), str(edit["operation"]))
        done.append(f"{words} (refused by the authority)" if edit["allowed"] is False else words)
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
