"""What was done to one ID photo: what was asked, then each step's value in the order it ran.

The one place to read what the pipeline did: the face it used and every person it saw, the matte
and the model that made it, the roll the photo was levelled by, where the output lies on the input
(the canvas extended, the shortfall where nothing may be painted in, the frame moved to keep the
whole head), the backdrop, the tone, and the file with its JPEG quality. Each value carries its
own edit; `edits` lists those done, in the order they touched the pixels. The judge reads the
record (`idjudge.judge`), and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from ..imageio import Encoded
from ..imaging.framing import Framing
from ..models.segmentation import AlphaMatting
from ..specs import Edit, PhotoSpec
from .face_reading import FaceMode, FaceReading, Levelled
from .idsteps import Framed, Rendered
from .matte_choice import PersonMatte


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
class PhotoRecord:
    """One photo's way through the pipeline, in the order the steps ran:

    asked     the options (spec, background colour, format, dpi, ...)
    photo     the input, (H, W, 3) uint8 RGB, upright
    face      the face step: the face used, every person and face found, landmarks, pose
    level     the level step: the first roll estimate and the level edit
    matte     the matte step: the sitter's matte and the model that made it
    framed    the frame step: the level the output was cut at (corrected on a draft where the eye
              line still leaned), the geometry (placement, extension, shortfall, crown move), the
              canvas (extend_canvas edit) and the crop (crop_scale edit)
    rendered  the background step (replace_background edit)
    tone      the tone step's edit (never done)
    encoded   the file and its JPEG quality
    """

    asked: IdPhotoOptions
    photo: np.ndarray
    face: FaceReading
    level: Levelled
    matte: PersonMatte
    framed: Framed
    rendered: Rendered
    tone: Edit
    encoded: Encoded

    @property
    def edits(self) -> tuple[Edit, ...]:
        """The edits done, in the order they touched the pixels: the canvas grown, then one resampling
        that levels, crops and scales, then the backdrop and the tone."""
        framed = self.framed
        return tuple(edit for edit in (framed.extended.edit, framed.level.edit, framed.cropped.edit,
                                       self.rendered.edit, self.tone) if edit.done)

    @property
    def roll_degrees(self) -> float:
        return self.framed.level.roll

    @property
    def extended_mm(self) -> dict[str, float]:
        return self.framed.geometry.extended_mm(self.asked.spec)

    def facts(self) -> dict[str, object]:
        """What was done, in one dict: the roll, the canvas extended and the shortfall (mm per edge),
        how far the frame moved to keep the whole head (output px), the matte's model, the JPEG
        quality, and the edits done."""
        geometry = self.framed.geometry
        return {"roll_degrees": self.roll_degrees, "extended_mm": self.extended_mm, "missing_mm": geometry.missing_mm,
                "crown_moved_px": geometry.crown_moved_px, "matted_by": self.matte.matted_by,
                "jpeg_quality": self.encoded.jpeg_quality, "edits": [edit.record() for edit in self.edits]}

    def lean(self) -> "PhotoRecord":
        """This record with its input-sized planes emptied (the photo, the matte's planes, the extended
        canvas: zero-size arrays), the rest kept: what outlives the pipeline (the answer, the sheet)
        holds pixels of the output's size only, as a worker holds one photo's input pixels only while
        the pipeline runs."""
        empty = np.empty((0, 0), np.uint8)
        matte = replace(self.matte, alpha=empty, raw=empty, foreground=empty)
        framed = replace(self.framed, extended=replace(self.framed.extended, foreground=empty, alpha=empty))
        return replace(self, photo=empty, matte=matte, framed=framed)
