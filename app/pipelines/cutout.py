"""The cut-out pipeline: segment a photo, then a transparent cut-out, a mask, or a new background.

Which model mattes a photo that names none (`default_matte`): the portrait matte (MODNet) when the
face detector finds a face and the matte holds it, the general one (u2net) otherwise; bench/matte.py
measures both.
"""

from __future__ import annotations

import numpy as np

from ..imaging.compose import RGB, cutout, flatten
from ..models.portrait import PortraitMatte
from ..imaging.people import covers_face
from ..models.segmentation import AlphaMatting, Matte, Segmenter
from ..timings import Timings


Matter = Segmenter | PortraitMatte


def default_matte(rgb: np.ndarray, *, detector: object | None, portrait: Matter, general: Matter, max_side: int,
                  timings: Timings) -> tuple[Matte, str]:
    """The matte of a photo whose request names no model, and the model that made it: `portrait`
    when `detector` (any face detector; None: not loaded) finds a face in (H, W, 3) uint8 `rgb` and
    its matte holds that face (`covers_face`), else `general`."""
    faces = []
    if detector is not None and portrait is not general:
        with timings.stage("detect"):
            faces = detector.detect(rgb)
    if faces:
        with timings.stage("segment"):
            matte = portrait.matte(rgb, max_side=max_side)
        largest = max(faces, key=lambda face: face.width)
        if covers_face(matte.alpha, tuple(largest.box)):
            return matte, portrait.name
        timings.notes["matte"] = f"{portrait.name} missed the face: {general.name}"
    with timings.stage("segment"):
        return general.matte(rgb, max_side=max_side), general.name


def compose(matte: Matte, *, only_mask: bool = False, background: RGB | None = None) -> np.ndarray:
    """The answer from a matte: the (H, W) uint8 mask (`only_mask`), (H, W, 3) RGB flattened onto
    `background`, or (H, W, 4) RGBA with colours unpremultiplied."""
    if only_mask:
        return matte.alpha
    if background is not None:
        return flatten(matte.foreground, matte.alpha, background)
    return cutout(matte.foreground, matte.alpha)


def cut_out(
    rgb: np.ndarray,
    *,
    segmenter: Matter,
    max_side: int,
    timings: Timings,
    alpha_matting: AlphaMatting | None = None,
    only_mask: bool = False,
    background: RGB | None = None,
) -> np.ndarray:
    """(H, W, 3) uint8 RGB in; out: the (H, W) uint8 mask (`only_mask`), (H, W, 3) RGB flattened
    onto `background`, or (H, W, 4) RGBA with colours unpremultiplied."""
    with timings.stage("segment"):
        matte = segmenter.matte(rgb, max_side=max_side, alpha_matting=alpha_matting)
    with timings.stage("compose"):
        return compose(matte, only_mask=only_mask, background=background)
