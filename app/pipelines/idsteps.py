"""The ID photo's steps after the face, the level's first estimate and the matte, in the order the
pixels go through them: frame (place, extend, crop: the final geometry, the level corrected on a
draft of the output), background, tone. (Encoding is `app.imageio.encode_photo`.)

Each step is a function with typed values in and out (frozen dataclasses); a step that edits the
photo takes its `Edit` from the `EditPlan` (what the spec and the options allow) and returns it,
done or not. The image math is in `app.imaging` (placement, the solver, the canvas, compositing).
The chain is `app.pipelines.idphoto.make_id_photo`.
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
from ..imaging.whole_head import hair_top, keep_whole_head
from ..imaging.compose import clean_foreground, flatten, lighter, photographed_person, vertical_gradient
from ..imaging.head import (FACE_WIDTH_IOD, Head, PlacementError, chin_row, eye_distance, eye_midpoint, head_cut_edge,
                            measure_upright, rotate_points)
from ..imaging.placement import Placement, upright_matte, warp
from ..imaging.solver import place_on_rules, solve
from ..imaging.wording import CUT_MESSAGES
from ..models.faces import Face
from ..models.registry import FaceDetector
from ..specs import Band, Edit, PhotoSpec, Rules, Source
from .face_reading import FaceReading, Levelled, correct_level, read_faces_on
from .matte_choice import PersonMatte

RGB = tuple[int, int, int]
CLIENT_FRAMING = Source(
    title="HivisionIDPhotos' head-ratio fields, as the client sent them (its defaults where it sent none)",
    url="https://github.com/Zeyi-Lin/HivisionIDPhotos/blob/master/hivision/creator/photo_adjuster.py",
    quote="head_measure_ratio: face area over photo area; head_height_ratio: the face's centre over the height; "
          "top_distance_max / top_distance_min: the top of the head below the top edge over the height",
    kind="secondary",
)


@dataclass(frozen=True)
class EditPlan:
    """The edits a photo may get, one per operation, each with the spec's policy and whether it
    applies to this spec and these options: each step takes its own and returns it, done or not."""

    level: Edit
    extend_canvas: Edit
    crop_scale: Edit
    replace_background: Edit
    adjust_tone: Edit


def plan_edits(spec: PhotoSpec, background: RGB | None) -> EditPlan:
    """The level where the spec levels; the canvas extended where the spec extends and the background
    is replaced; always a crop and scale; the background replaced where a colour is asked; the tone
    never (no option asks for it, and most authorities refuse it)."""
    return EditPlan(level=Edit(spec.edit("level"), applies=spec.edit("level").apply),
                    extend_canvas=Edit(spec.edit("extend_canvas"),
                                       applies=spec.edit("extend_canvas").apply and background is not None),
                    crop_scale=Edit(spec.edit("crop_scale"), applies=True),
                    replace_background=Edit(spec.edit("replace_background"), applies=background is not None),
                    adjust_tone=Edit(spec.edit("adjust_tone"), applies=False))


# --- frame: place, extend, crop ----------------------------------------------------------------------


@dataclass(frozen=True)
class Geometry:
    """Where the output lies on the input: the placement, the extension it is drawn on (px beyond
    each edge of the input), where the canvas may not be extended how far (mm of the print, per
    edge) the photo falls short of the frame the rules wanted, how far the frame moved up to keep
    the whole head, and a client's framing weighed against the spec."""

    placement: Placement
    extension: Extension
    missing_mm: dict[str, float] = field(default_factory=dict)
    crown_moved_px: float = 0.0  # output px the frame moved up to keep the top of the hair in (`keep_whole_head`)
    client: "ClientRules | None" = None  # where a client's framing placed the head (None: the spec's rules alone)

    def extended_mm(self, spec: PhotoSpec) -> dict[str, float]:
        return self.extension.mm(self.placement, size_mm=(spec.width_mm, spec.height_mm))

    @property
    def tight(self) -> bool:
        """The photo was too tight for the frame: it falls short of it, or the frame moved to keep the head."""
        return bool(self.missing_mm or self.crown_moved_px)


def cut_off(edge: str) -> PhotoRejected:
    return PhotoRejected("photo_cut_off", CUT_MESSAGES[edge], details={"edge": edge})


@dataclass(frozen=True)
class ClientRules:
    """A client's framing on this head: what it asked (`aim`), the rules the solver placed by, the
    rules the report judges by (the spec's own where the size matches one of ours, the client's
    bands elsewhere), and the spec's rules that won over the client's ({rule: why})."""

    framing: Framing
    aim: Aim
    placed_by: Rules
    judged_by: Rules
    won: dict[str, dict[str, object]]
    top_y: float | None = None  # the top of the person (upright px), hair, hat or hand: kept clear of the top edge


def client_rules(framing: Framing, head: Head, face: FaceReading, roll: float, pivot: tuple[float, float],
                 spec: PhotoSpec, upright_alpha: np.ndarray) -> ClientRules:
    """The client's framing weighed against `spec`: a spec of ours (any id but "custom": the size
    matched it) keeps each rule the framing would break; a custom size takes the client's bands."""
    x1, y1, x2, y2 = face.face.box
    centre = rotate_points([[(x1 + x2) / 2.0, (y1 + y2) / 2.0]], degrees=-roll, pivot=pivot)[0]
    size, size_mm = (spec.width_px, spec.height_px), (spec.width_mm, spec.height_mm)
    top_y = person_top(upright_alpha)
    target = aim(framing, head, box_size=(face.face.width, face.face.height), box_centre_y=float(centre[1]), size=size,
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
    return ClientRules(framing, target, asked(tuple(won)), asked(tuple(won), judged=True), won, top_y)


def judged_spec(spec: PhotoSpec, geometry: Geometry) -> PhotoSpec:
    """The spec the report judges the photo by: `spec`, its head and crown rules the client's where a
    client's framing placed the head and the spec did not win."""
    if geometry.client is None:
        return spec
    rules = geometry.client.judged_by
    head = rules.head_height
    return replace(spec, rules=rules, head_height=(head.low / spec.height_mm, head.high / spec.height_mm))  # type: ignore[operator]


def place(face: FaceReading, alpha: np.ndarray, roll: float, spec: PhotoSpec, *, extending: Edit,
          framing: Framing | None = None) -> Geometry:
    """The frame step's placing: measure the head levelled by `roll`, solve the spec's rules (or, with
    a client's `framing`, its bands where the spec does not win: `client_rules`), and say how far the
    output reaches beyond the input. Where `extending` does not apply, the frame is kept inside the
    photographed pixels (`fit_inside`) and the shortfall is recorded, unless the framing pads (the
    frame reaches past the photo, transparent there, as HivisionIDPhotos cuts).
    PhotoRejected(photo_cut_off, edge) when the head itself is cut."""
    landmarks, box, chin = face.face.landmarks, face.face.box, face.chin
    pivot = eye_midpoint(landmarks)
    edge = head_cut_edge(landmarks, box, alpha, chin=chin)
    if edge is not None:
        raise cut_off(edge)
    try:
        head = measure_upright(landmarks, box, upright_matte(alpha, roll_deg=roll, pivot=pivot),
                               roll_deg=roll, pivot=pivot, crown=spec.rules.crown, chin=chin)
    except PlacementError as exc:
        raise cut_off(exc.edge) from None
    client = None if framing is None else client_rules(framing, head, face, roll, pivot, spec,
                                                       upright_matte(alpha, roll_deg=roll, pivot=pivot))
    # both tops inside the head band where they fit (crown_tops.framing_rules), the authority's in any case
    placed_by = framing_rules(spec.rules, head) if client is None else client.placed_by
    placement = place_on_rules(head, placed_by, roll_deg=roll, pivot=pivot,
                               size=(spec.width_px, spec.height_px), size_mm=(spec.width_mm, spec.height_mm))
    if client is not None and client.framing.pad and not extending.applies:
        # the whole person's top kept CROWN_GAP inside the top edge, whatever top band was asked
        whole = head if client.top_y is None else replace(head, hair_y=min(client.top_y, hair_top(head)))
        placement, moved = keep_whole_head(placement, whole, inside=None)
        return Geometry(placement, Extension(), crown_moved_px=moved, client=client)
    extension = needed_extension(placement, alpha.shape)
    if extending.applies or not extension.any:
        # never through the hair: the frame moves up to keep the whole head (whole_head.keep_whole_head)
        placement, moved = keep_whole_head(placement, head, inside=None if extending.applies else alpha.shape)
        return Geometry(placement, needed_extension(placement, alpha.shape) if extending.applies else extension,
                        crown_moved_px=moved, client=client)
    missing = extension.mm(placement, size_mm=(spec.width_mm, spec.height_mm))
    placement, moved = keep_whole_head(fit_inside(placement, alpha.shape), head, inside=alpha.shape)
    return Geometry(placement, Extension(), missing, crown_moved_px=moved, client=client)


@dataclass(frozen=True)
class Extended:
    """The foreground (H, W, 3) uint8 RGB and matte (H, W) uint8 the output is cut from, grown by the
    geometry's extension where it has one, the placement on them, and the extend_canvas edit."""

    foreground: np.ndarray
    alpha: np.ndarray
    placement: Placement
    edit: Edit


def extend_canvas(matte: PersonMatte, geometry: Geometry, face: FaceReading, *, extending: Edit) -> Extended:
    """The extend step: where the frame reaches past the photo, the canvas grown (background, the
    clothing continued below the chin, a cut neck widened into shoulders; never the face's skin)."""
    if not geometry.extension.any:
        return Extended(matte.foreground, matte.alpha, geometry.placement, extending.did(False))
    landmarks = face.face.landmarks
    skin = expression.face_skin(matte.foreground, landmarks)
    foreground, alpha = extend(matte.foreground, matte.alpha, geometry.extension, body_from_y=chin_row(landmarks, face.chin),
                               skin=skin, face_width=FACE_WIDTH_IOD * eye_distance(landmarks))
    placement = geometry.placement.shifted(geometry.extension.left, geometry.extension.top)
    return Extended(foreground, alpha, placement, extending.did())


@dataclass(frozen=True)
class Cropped:
    """The output's pixels before any background step, (h, w, 3) uint8 RGB (the foreground where the
    background is replaced, the photographed pixels where it is kept), its matte (h, w) uint8, the
    output pixels that were photographed (255) as a mask, and the crop_scale edit."""

    pixels: np.ndarray
    alpha: np.ndarray
    photographed: np.ndarray
    edit: Edit
    others: np.ndarray | None = None  # with the background kept: the model's raw matte, everyone salient


def crop(rgb: np.ndarray, matte: PersonMatte, extended: Extended, geometry: Geometry, edit: Edit, *,
         keep_background: bool) -> Cropped:
    """Level, crop and scale in one resampling (`warp`) of the extended canvas (or, with the background
    kept, of the photographed pixels `rgb` and the raw matte: no extension there)."""
    alpha = warp(extended.alpha, extended.placement, fill=0)
    pixels = warp(rgb if keep_background else extended.foreground, extended.placement, fill=0)
    photographed = photographed_mask(geometry.placement, rgb.shape[:2])
    others = warp(matte.raw, geometry.placement, fill=0) if keep_background else None
    return Cropped(pixels, alpha, photographed, edit.did(), others)


@dataclass(frozen=True)
class Framed:
    """The frame step's answer, the photo's final geometry: the level it was cut at, where it lies on
    the input, the canvas it was cut from, the crop; and the faces read on the draft it was checked
    on (None where the geometry moved after: the judge reads the output again)."""

    level: Levelled
    geometry: Geometry
    extended: Extended
    cropped: Cropped
    draft_faces: tuple[Face, ...] | None = None


def frame_at(rgb: np.ndarray, face: FaceReading, matte: PersonMatte, level: Levelled, spec: PhotoSpec,
             edits: EditPlan, *, keep_background: bool, framing: Framing | None) -> Framed:
    """Place at `level`'s roll (`place`, by a client's `framing` where one is given), grow the canvas
    where the geometry needs it (`extend_canvas`), then crop the output in one resampling (`crop`)."""
    geometry = place(face, matte.alpha, level.roll, spec, extending=edits.extend_canvas, framing=framing)
    extended = extend_canvas(matte, geometry, face, extending=edits.extend_canvas)
    return Framed(level, geometry, extended, crop(rgb, matte, extended, geometry, edits.crop_scale,
                                                   keep_background=keep_background))


def frame(rgb: np.ndarray, face: FaceReading, matte: PersonMatte, level: Levelled, spec: PhotoSpec,
          edits: EditPlan, *, detector: FaceDetector, colour: RGB | None, gradient: bool,
          framing: Framing | None = None) -> Framed:
    """The frame step: the photo framed at the level step's roll (`frame_at`), then the level checked
    on a draft of the output (the background step without the colours under soft edges estimated):
    where the eye line still leans (`correct_level`), framed again at the corrected roll."""
    keep = colour is None
    framed = frame_at(rgb, face, matte, level, spec, edits, keep_background=keep, framing=framing)
    draft = background(framed.cropped, edits.replace_background, colour=colour, gradient=gradient, clean=False)
    faces = read_faces_on(detector, draft.pixels, colour)
    corrected = correct_level(level, faces)
    if corrected is None:
        return replace(framed, draft_faces=tuple(faces))
    return frame_at(rgb, face, matte, corrected, spec, edits, keep_background=keep, framing=framing)


# --- background and tone ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rendered:
    """The output pixels (h, w, 3) uint8 RGB, its person matte (h, w) uint8, a (h, w) uint8 mask of
    the pixels that were photographed (255) rather than replaced or painted, and the step's edit."""

    pixels: np.ndarray
    alpha: np.ndarray
    photographed: np.ndarray
    edit: Edit

    @property
    def unphotographed_share(self) -> float:
        """Of the output's pixels: replaced or painted, not photographed."""
        return 1.0 - float(self.photographed.mean()) / 255.0


def background(cropped: Cropped, edit: Edit, *, colour: RGB | None, gradient: bool, clean: bool = True) -> Rendered:
    """The background step: with `colour`, the person over a new backdrop (plain, or with `gradient`
    fading from a lighter tone down to it), the person's colours under soft edges estimated first
    (`clean=False` skips that: a draft for measuring, not for the client); without, the crop as it is."""
    if colour is None:
        return Rendered(cropped.pixels, cropped.alpha, cropped.photographed, edit)
    rgb = clean_foreground(cropped.pixels, cropped.alpha) if clean else cropped.pixels
    photographed = photographed_person(cropped.photographed, cropped.alpha)
    height, width = cropped.alpha.shape
    backdrop = vertical_gradient((width, height), lighter(colour), colour) if gradient else colour
    return Rendered(flatten(rgb, cropped.alpha, backdrop), cropped.alpha, photographed, edit.did())


def tone(rendered: Rendered, edit: Edit) -> tuple[Rendered, Edit]:
    """The tone step: brightness, contrast and colour are never changed, so the pixels pass as they
    are and the adjust_tone edit (which never applies: `plan_edits`) is not done."""
    return rendered, edit.did(False)
