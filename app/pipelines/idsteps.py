"""The ID photo's steps after the people, the level and the matte, in the order the pixels go through
them: frame (place, extend, then cut: crop and scale), background, tone. (Encoding is
`app.imageio.encode_photo`.)

Each step is a function with typed values in and out (frozen dataclasses); a step that edits the
photo returns its `Edit`. The image math is in `app.imaging` (placement, the solver, the canvas,
compositing); a step calls it once, in order, and never hands pixels back to a module an earlier
step has left. The chain is `app.pipelines.idphoto.make_id_photo`; the Hivision routes call the
steps one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import PhotoRejected
from ..imaging import expression
from ..imaging.canvas import Extension, extend, fit_inside, needed_extension, photographed_mask
from ..imaging.headroom import keep_whole_head
from ..imaging.compose import clean_foreground, flatten, lighter, photographed_person, vertical_gradient
from ..imaging.head import FACE_WIDTH_IOD, PlacementError, chin_row, eye_distance, eye_midpoint, head_cut_edge, measure_upright
from ..imaging.placement import Placement, upright_matte, warp
from ..imaging.solver import place_on_rules
from ..imaging.wording import CUT_MESSAGES
from ..specs import Edit, PhotoSpec
from .mattes import Matted
from .sitter import Sitter

RGB = tuple[int, int, int]


# --- frame: place, then cut ---------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """Where the output lies on the input: the placement, the extension it is drawn on (px beyond
    each edge of the input), where the canvas may not be extended how far (mm of the print, per
    edge) the photo falls short of the frame the rules wanted, and the crop_scale edit."""

    placement: Placement
    extension: Extension
    missing_mm: dict[str, float] = field(default_factory=dict)
    crown_kept_px: float = 0.0  # output px the frame moved up to keep the top of the hair in (headroom)

    def extended_mm(self, spec: PhotoSpec) -> dict[str, float]:
        return self.extension.mm(self.placement, size_mm=(spec.width_mm, spec.height_mm))


def cut_off(edge: str) -> PhotoRejected:
    return PhotoRejected("photo_cut_off", CUT_MESSAGES[edge], details={"edge": edge})


def may_extend(spec: PhotoSpec, background: RGB | None) -> Edit:
    """The extend_canvas edit: it applies where the spec extends and the background is replaced."""
    return Edit(spec.edit("extend_canvas"), applies=spec.edit("extend_canvas").apply and background is not None)


def place(sitter: Sitter, alpha: np.ndarray, roll: float, spec: PhotoSpec, *, extending: Edit) -> Frame:
    """The frame step's placing: measure the head levelled by `roll`, solve the spec's rules, and say
    how far the output reaches beyond the input. Where `extending` does not apply, the frame is kept
    inside the photographed pixels (`fit_inside`) and the shortfall is recorded.
    PhotoRejected(photo_cut_off, edge) when the head itself is cut."""
    face, chin = sitter.face, sitter.chin
    pivot = eye_midpoint(face.landmarks)
    edge = head_cut_edge(face.landmarks, face.box, alpha, chin=chin)
    if edge is not None:
        raise cut_off(edge)
    try:
        head = measure_upright(face.landmarks, face.box, upright_matte(alpha, roll_deg=roll, pivot=pivot),
                               roll_deg=roll, pivot=pivot, crown=spec.rules.crown, chin=chin)
    except PlacementError as exc:
        raise cut_off(exc.edge) from None
    placement = place_on_rules(head, spec.rules, roll_deg=roll, pivot=pivot, size=(spec.width_px, spec.height_px),
                               size_mm=(spec.width_mm, spec.height_mm))
    extension = needed_extension(placement, alpha.shape)
    if extending.applies or not extension.any:
        # never through the hair: the frame moves up to keep the whole head (headroom.keep_whole_head)
        placement, moved = keep_whole_head(placement, head, inside=None if extending.applies else alpha.shape)
        return Frame(placement, needed_extension(placement, alpha.shape) if extending.applies else extension,
                     crown_kept_px=moved)
    missing = extension.mm(placement, size_mm=(spec.width_mm, spec.height_mm))
    placement, moved = keep_whole_head(fit_inside(placement, alpha.shape), head, inside=alpha.shape)
    return Frame(placement, Extension(), missing, crown_kept_px=moved)


@dataclass(frozen=True)
class Canvas:
    """What the output is cut from: the foreground (H, W, 3) uint8 RGB and matte (H, W) uint8, grown
    by the frame's extension where it has one, the placement on it, and the extend_canvas edit."""

    foreground: np.ndarray
    alpha: np.ndarray
    placement: Placement
    edit: Edit


def extend_canvas(matted: Matted, frame: Frame, sitter: Sitter, *, extending: Edit) -> Canvas:
    """The extend step: where the frame reaches past the photo, the canvas grown (background, the
    clothing continued below the chin, a cut neck widened into shoulders; never the face's skin)."""
    if not frame.extension.any:
        return Canvas(matted.foreground, matted.alpha, frame.placement, extending.did(False))
    landmarks = sitter.face.landmarks
    skin = expression.face_skin(matted.foreground, landmarks)
    foreground, alpha = extend(matted.foreground, matted.alpha, frame.extension, body_from_y=chin_row(landmarks, sitter.chin),
                               skin=skin, face_width=FACE_WIDTH_IOD * eye_distance(landmarks))
    placement = frame.placement.shifted(frame.extension.left, frame.extension.top)
    return Canvas(foreground, alpha, placement, extending.did())


@dataclass(frozen=True)
class Cut:
    """The frame step's cut: the output's pixels before any background step, (h, w, 3) uint8 RGB
    (the foreground where the background is replaced, the photographed pixels where it is kept), its
    matte (h, w) uint8, the output pixels that were photographed (255) as a mask, and the edit."""

    pixels: np.ndarray
    alpha: np.ndarray
    photographed: np.ndarray
    edit: Edit
    others: np.ndarray | None = None  # with the background kept: the model's raw matte, everyone salient


def cut(rgb: np.ndarray, matted: Matted, canvas: Canvas, frame: Frame, spec: PhotoSpec, *,
        keep_background: bool) -> Cut:
    """Level, crop and scale in one resampling (`warp`) of the canvas (or, with the background kept,
    of the photographed pixels `rgb` and the raw matte: no extension there)."""
    alpha = warp(canvas.alpha, canvas.placement, fill=0)
    pixels = warp(rgb if keep_background else canvas.foreground, canvas.placement, fill=0)
    photographed = photographed_mask(frame.placement, rgb.shape[:2])
    others = warp(matted.raw, frame.placement, fill=0) if keep_background else None
    return Cut(pixels, alpha, photographed, Edit(spec.edit("crop_scale"), applies=True, done=True), others)


@dataclass(frozen=True)
class Framed:
    """The frame step's answer: where the output lies (`Frame`), the canvas it is cut from, the cut."""

    frame: Frame
    canvas: Canvas
    cut: Cut


def frame(rgb: np.ndarray, sitter: Sitter, matted: Matted, roll: float, spec: PhotoSpec, *, extending: Edit,
          keep_background: bool) -> Framed:
    """The frame step: place (`place`), grow the canvas where the frame needs it (`extend_canvas`),
    then cut the output in one resampling (`cut`)."""
    placed = place(sitter, matted.alpha, roll, spec, extending=extending)
    canvas = extend_canvas(matted, placed, sitter, extending=extending)
    return Framed(placed, canvas, cut(rgb, matted, canvas, placed, spec, keep_background=keep_background))


# --- background and tone ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rendered:
    """The output pixels (h, w, 3) uint8 RGB, its person matte (h, w) uint8, a (h, w) uint8 mask of
    the pixels that were photographed (255) rather than replaced or painted, and the step's edit."""

    pixels: np.ndarray
    alpha: np.ndarray
    photographed: np.ndarray
    edit: Edit


def background(piece: Cut, spec: PhotoSpec, *, colour: RGB | None, gradient: bool, clean: bool = True) -> Rendered:
    """The background step: with `colour`, the person over a new backdrop (plain, or with `gradient`
    fading from a lighter tone down to it), the person's colours under soft edges estimated first
    (`clean=False` skips that: a draft for measuring, not for the client); without, the cut as it is."""
    edit = Edit(spec.edit("replace_background"), applies=colour is not None)
    if colour is None:
        return Rendered(piece.pixels, piece.alpha, piece.photographed, edit)
    rgb = clean_foreground(piece.pixels, piece.alpha) if clean else piece.pixels
    photographed = photographed_person(piece.photographed, piece.alpha)
    height, width = piece.alpha.shape
    backdrop = vertical_gradient((width, height), lighter(colour), colour) if gradient else colour
    return Rendered(flatten(rgb, piece.alpha, backdrop), piece.alpha, photographed, edit.did())


def tone(rendered: Rendered, spec: PhotoSpec) -> tuple[Rendered, Edit]:
    """The tone step: brightness, contrast and colour are never changed (no option asks for it, and
    most authorities refuse it), so the pixels pass as they are and the adjust_tone edit is not done."""
    return rendered, Edit(spec.edit("adjust_tone"), applies=False)
