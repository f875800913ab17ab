"""The cut-out pipeline: segment a photo, then a transparent cut-out, a mask, or a new background.

Which model mattes a photo that names none (`default_segmenter`): the portrait matte (MODNet) when
the face detector finds a face, the general one (u2net) otherwise; bench/matte.py measures both.
"""

from __future__ import annotations

import numpy as np

from ..imaging.compose import RGB, cutout, flatten
from ..models.portrait import PortraitMatte
from ..models.segmentation import AlphaMatting, Segmenter
from ..timings import Timings


Matter = Segmenter | PortraitMatte


def default_segmenter(rgb: np.ndarray, *, detector: object | None, portrait: Matter, general: Matter,
                      timings: Timings) -> Matter:
    """The model for a photo whose request names none: `portrait` when `detector` (any face
    detector; None: not loaded) finds a face in (H, W, 3) uint8 `rgb`, else `general`."""
    if detector is None or portrait is general:
        return general
    with timings.stage("detect"):
        faces = detector.detect(rgb)
    return portrait if faces else general


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
        if only_mask:
            return matte.alpha
        if background is not None:
            return flatten(matte.foreground, matte.alpha, background)
        return cutout(matte.foreground, matte.alpha)
