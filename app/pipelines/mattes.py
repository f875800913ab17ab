"""Which model mattes a photo of a person, shared by the cut-out and ID photo pipelines.

The portrait matte (MODNet) first; where its matte does not hold the face the detector found
(`covers_face`: on an out-of-focus portrait it returns next to nothing), the general one (u2net).
A cut-out that names no model takes the portrait matte only when a face is found (`default_matte`);
bench/matte.py measures both models.
"""

from __future__ import annotations

import numpy as np

from ..imaging.people import covers_face
from ..models.portrait import Matter
from ..models.segmentation import AlphaMatting, Matte
from ..timings import Timings


def matte_holding_face(rgb: np.ndarray, box: tuple[float, float, float, float], *, portrait: Matter,
                       fallback: Matter | None, max_side: int, alpha_matting: AlphaMatting | None = None,
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


def default_matte(rgb: np.ndarray, *, detector: object | None, portrait: Matter, general: Matter, max_side: int,
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
