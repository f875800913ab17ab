"""The cut-out pipeline: segment a photo, then a transparent cut-out, a mask, or a new background
(which model mattes a photo that names none: app/pipelines/matte_choice.py)."""

from __future__ import annotations

import numpy as np

from ..imaging.compose import RGB, cutout, flatten, smooth_mask
from ..models.portrait import MattingModel
from ..models.segmentation import AlphaMatting, Matte
from ..timings import Timings


def compose(matte: Matte, *, only_mask: bool = False, background: RGB | None = None, smooth: bool = False) -> np.ndarray:
    """The answer from a matte: the (H, W) uint8 mask (`only_mask`), (H, W, 3) RGB flattened onto
    `background`, or (H, W, 4) RGBA with colours unpremultiplied. `smooth`: the alpha made a hard,
    rounded mask first (`smooth_mask`)."""
    if smooth:
        matte = Matte(alpha=smooth_mask(matte.alpha), foreground=matte.foreground)
    if only_mask:
        return matte.alpha
    if background is not None:
        return flatten(matte.foreground, matte.alpha, background)
    return cutout(matte.foreground, matte.alpha)


def cut_out(
    rgb: np.ndarray,
    *,
    segmenter: MattingModel,
    max_side: int,
    timings: Timings,
    alpha_matting: AlphaMatting | None = None,
    only_mask: bool = False,
    background: RGB | None = None,
    smooth: bool = False,
    decontaminate: bool = False,
) -> np.ndarray:
    """(H, W, 3) uint8 RGB in; out: the (H, W) uint8 mask (`only_mask`), (H, W, 3) RGB flattened
    onto `background`, or (H, W, 4) RGBA with colours unpremultiplied. `decontaminate`: the
    person's colours under soft edges estimated, whatever the model's default."""
    with timings.stage("segment"):
        extra = {"decontaminate_edges": True} if decontaminate else {}
        matte = segmenter.matte(rgb, max_side=max_side, alpha_matting=alpha_matting, **extra)
    with timings.stage("compose"):
        return compose(matte, only_mask=only_mask, background=background, smooth=smooth)
