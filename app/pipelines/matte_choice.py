"""Which model mattes a photo of a person, shared by the cut-out and ID photo pipelines.

The portrait matte (MODNet) first; where its matte does not hold the face the detector found
(`covers_face`: on an out-of-focus portrait it returns next to nothing), the general one (u2net).
A cut-out that names no model takes the portrait matte only when a face is found (`default_matte`);
bench/matte.py measures both models. The ID photo's matte step (`matte_person`) is the portrait matte with
the sitter kept alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..imaging.people import covers_face, keep_person
from ..models.portrait import MattingModel
from ..models.segmentation import AlphaMatting, Matte
from ..timings import Timings
from .face_reading import FaceReading


def matte_holding_face(rgb: np.ndarray, box: tuple[float, float, float, float], *, portrait: MattingModel,
                       fallback: MattingModel | None, max_side: int, alpha_matting: AlphaMatting | None = None,
                       timings: Timings | None = None, edge_colours: bool = True) -> tuple[Matte, str]:
    """The matte of (H, W, 3) uint8 `rgb` by `portrait`, or by `fallback` where that one does not
    hold the face in `box`; and the name of the model that made it. Without `edge_colours` no model
    estimates the person's colours under soft edges (the foreground is the photo's own pixels): for
    a caller that estimates them itself, on its output."""
    plain = {} if edge_colours else {"decontaminate_edges": False}
    matte = portrait.matte(rgb, max_side=max_side, alpha_matting=alpha_matting, **plain)
    if fallback is None or covers_face(matte.alpha, box):
        return matte, portrait.name
    if timings is not None:
        timings.notes["matte"] = f"{portrait.name} missed the face: {fallback.name}"
    return fallback.matte(rgb, max_side=max_side, **plain), fallback.name


def default_matte(rgb: np.ndarray, *, detector: object | None, portrait: MattingModel, general: MattingModel, max_side: int,
                  timings: Timings) -> tuple[Matte, str]:
    """The matte of a photo whose request names no model, and the model that made it: the portrait
    matte when `detector` (any face detector; None: not loaded) finds a face and that matte holds
    the largest one, else `general`."""
    faces = []
    if detector is not None and portrait is not general:
        with timings.stage("detect"):
            faces = detector.detect(rgb)
    with timings.stage("segment"):
        if not faces:
            return general.matte(rgb, max_side=max_side), general.name
        largest = max(faces, key=lambda face: face.width)
        return matte_holding_face(rgb, tuple(largest.box), portrait=portrait, fallback=general, max_side=max_side,
                                  timings=timings)


# --- the ID photo's matte step ----------------------------------------------------------------------


@dataclass(frozen=True)
class PersonMatte:
    """The matte step's answer: the sitter's matte `alpha` (H, W) uint8 (other people cut away), the
    model's own matte `raw` (everyone salient), the `foreground` (H, W, 3) uint8 RGB the model gave
    (the photo's own pixels: the colours under soft edges are estimated on the output, `background`),
    and the model that made it."""

    alpha: np.ndarray
    raw: np.ndarray
    foreground: np.ndarray
    matted_by: str


def matte_person(rgb: np.ndarray, face: FaceReading, *, segmenter: MattingModel, fallback: MattingModel | None,
                 max_side: int, alpha_matting: AlphaMatting | None, timings: Timings) -> PersonMatte:
    """The matte step: the portrait matte (or `fallback` where it misses the face), the sitter kept."""
    found, matted_by = matte_holding_face(rgb, tuple(face.face.box), portrait=segmenter, fallback=fallback,
                                          max_side=max_side, alpha_matting=alpha_matting, timings=timings,
                                          edge_colours=False)
    alpha = keep_person(found.alpha, face.face.box, face.others, rgb=rgb)
    return PersonMatte(alpha=alpha, raw=found.alpha, foreground=found.foreground, matted_by=matted_by)
