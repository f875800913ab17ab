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

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import PhotoRejected
from ..imaging import expression
from ..imaging.canvas import Extension, extend, fit_inside, needed_extension, photographed_mask
from ..imaging.framing import (HEAD_TOLERANCE, JUDGED_HEAD, TOP_TOLERANCE, Aim, Framing, aim, asked_rules, person_top,
                               weigh)
from ..imaging.crown_tops import framing_rules
from ..imaging.headroom import hair_top, keep_whole_head
from ..imaging.compose import clean_foreground, flatten, lighter, photographed_person, vertical_gradient
from ..imaging.head import (FACE_WIDTH_IOD, Head, PlacementError, chin_row, eye_distance, eye_midpoint, head_cut_edge,
                            measure_upright, rotate_points)
from ..imaging.placement import Placement, upright_matte, warp
from ..imaging.solver import place_on_rules, solve
from ..imaging.wording import CUT_MESSAGES
from ..specs import Band, Edit, PhotoSpec, Rules, Source
from .mattes import Matted
from .sitter import Sitter

RGB = tuple[int, int, int]
CLIENT_FRAMING = Source(
    title="HivisionIDPhotos' head-ratio fields, as the client sent them (its defaults where it sent none)",
    url="https://github.com/Zeyi-Lin/HivisionIDPhotos/blob/master/hivision/creator/photo_adjuster.py",
    quote="head_measure_ratio: face area over photo area; head_height_ratio: the face's centre over the height; "
          "top_distance_max / top_distance_min: the top of the head below the top edge over the height",
    kind="secondary",
)


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
    framed: "ClientFrame | None" = None  # where a client's framing placed the head (None: the spec's rules alone)

    def extended_mm(self, spec: PhotoSpec) -> dict[str, float]:
        return self.extension.mm(self.placement, size_mm=(spec.width_mm, spec.height_mm))


def cut_off(edge: str) -> PhotoRejected:
    return PhotoRejected("photo_cut_off", CUT_MESSAGES[edge], details={"edge": edge})


def may_extend(spec: PhotoSpec, background: RGB | None) -> Edit:
    """The extend_canvas edit: it applies where the spec extends and the background is replaced."""
    return Edit(spec.edit("extend_canvas"), applies=spec.edit("extend_canvas").apply and background is not None)


@dataclass(frozen=True)
class ClientFrame:
    """A client's framing on this head: what it asked (`aim`), the rules the solver placed by, the
    rules the report judges by (the spec's own where the size matches one of ours, the client's
    bands elsewhere), and the spec's rules that won over the client's ({rule: why})."""

    framing: Framing
    aim: Aim
    placed_by: Rules
    judged_by: Rules
    won: dict[str, dict[str, object]]
    top_y: float | None = None  # the top of the person (upright px), hair, hat or hand: kept clear of the top edge


def client_frame(framing: Framing, head: Head, sitter: Sitter, roll: float, pivot: tuple[float, float],
                 spec: PhotoSpec, upright_alpha: np.ndarray) -> ClientFrame:
    """The client's framing weighed against `spec`: a spec of ours (any id but "custom": the size
    matched it) keeps each rule the framing would break; a custom size takes the client's bands."""
    face = sitter.face
    x1, y1, x2, y2 = face.box
    centre = rotate_points([[(x1 + x2) / 2.0, (y1 + y2) / 2.0]], degrees=-roll, pivot=pivot)[0]
    size, size_mm = (spec.width_px, spec.height_px), (spec.width_mm, spec.height_mm)
    top_y = person_top(upright_alpha)
    target = aim(framing, head, box_size=(face.width, face.height), box_centre_y=float(centre[1]), size=size,
                 size_mm=size_mm, top_y=top_y)
    bound = spec.id != "custom"

    def asked(won: tuple[str, ...], *, judged: bool = False) -> Rules:
        if judged:  # the report: the spec's own bands where it states them, the client's where it does not
            stated = tuple(name for name in ("head_height", "crown_margin") if getattr(spec.rules, name) is not None)
            return asked_rules(spec.rules, target, Band, CLIENT_FRAMING, height_mm=spec.height_mm,
                               tolerance=JUDGED_HEAD, keep=won + (stated if bound else ()))
        return asked_rules(spec.rules, target, Band, CLIENT_FRAMING, height_mm=spec.height_mm,
                           tolerance=HEAD_TOLERANCE, top_tolerance=TOP_TOLERANCE, won=won)

    alone = set(solve(head, spec.rules, size_mm=size_mm).broken)

    def broken(keep: tuple[str, ...]) -> set[str]:
        return set(solve(head, asked(keep), size_mm=size_mm).broken) - alone

    won = weigh(target, spec.rules, bound=bound, solve_broken=broken)
    return ClientFrame(framing, target, asked(tuple(won)), asked(tuple(won), judged=True), won, top_y)


def judged_spec(spec: PhotoSpec, frame: Frame) -> PhotoSpec:
    """The spec the report judges the photo by: `spec`, its head and crown rules the client's where a
    client's framing placed the head and the spec did not win."""
    if frame.framed is None:
        return spec
    rules = frame.framed.judged_by
    head = rules.head_height
    return replace(spec, rules=rules, head_height=(head.low / spec.height_mm, head.high / spec.height_mm))  # type: ignore[operator]


def place(sitter: Sitter, alpha: np.ndarray, roll: float, spec: PhotoSpec, *, extending: Edit,
          framing: Framing | None = None) -> Frame:
    """The frame step's placing: measure the head levelled by `roll`, solve the spec's rules (or, with
    a client's `framing`, its bands where the spec does not win: `client_frame`), and say how far the
    output reaches beyond the input. Where `extending` does not apply, the frame is kept inside the
    photographed pixels (`fit_inside`) and the shortfall is recorded, unless the framing pads (the
    frame reaches past the photo, transparent there, as HivisionIDPhotos cuts).
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
    framed = None if framing is None else client_frame(framing, head, sitter, roll, pivot, spec,
                                                       upright_matte(alpha, roll_deg=roll, pivot=pivot))
    # both tops inside the head band where they fit (crown_tops.framing_rules), the authority's in any case
    placed_by = framing_rules(spec.rules, head) if framed is None else framed.placed_by
    placement = place_on_rules(head, placed_by, roll_deg=roll, pivot=pivot,
                               size=(spec.width_px, spec.height_px), size_mm=(spec.width_mm, spec.height_mm))
    if framed is not None and framed.framing.pad and not extending.applies:
        # the whole person's top kept CROWN_GAP inside the top edge, whatever top band was asked
        whole = head if framed.top_y is None else replace(head, hair_y=min(framed.top_y, hair_top(head)))
        placement, moved = keep_whole_head(placement, whole, inside=None)
        return Frame(placement, Extension(), crown_kept_px=moved, framed=framed)
    extension = needed_extension(placement, alpha.shape)
    if extending.applies or not extension.any:
        # never through the hair: the frame moves up to keep the whole head (headroom.keep_whole_head)
        placement, moved = keep_whole_head(placement, head, inside=None if extending.applies else alpha.shape)
        return Frame(placement, needed_extension(placement, alpha.shape) if extending.applies else extension,
                     crown_kept_px=moved, framed=framed)
    missing = extension.mm(placement, size_mm=(spec.width_mm, spec.height_mm))
    placement, moved = keep_whole_head(fit_inside(placement, alpha.shape), head, inside=alpha.shape)
    return Frame(placement, Extension(), missing, crown_kept_px=moved, framed=framed)


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
          keep_background: bool, framing: Framing | None = None) -> Framed:
    """The frame step: place (`place`, by a client's `framing` where one is given), grow the canvas
    where the frame needs it (`extend_canvas`), then cut the output in one resampling (`cut`)."""
    placed = place(sitter, matted.alpha, roll, spec, extending=extending, framing=framing)
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
