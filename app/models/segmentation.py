"""Segmentation through rembg: its session classes and `rembg.remove`, on our own ONNX session.

rembg's session constructors resolve (and may download) the model file and build their own
`InferenceSession` (rembg 2.0.86, `BaseSession.__init__`); we never call them. `rembg_session`
creates an instance of rembg's own class for the model name without running its constructor and
sets the two attributes that constructor sets, `model_name` and `inner_session` (a session from
our factory). rembg's pre- and post-processing, alpha matting and foreground estimation then run
unchanged, on rembg's class itself: no subclass, no class built at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Self

import numpy as np
import onnxruntime as ort
import rembg
from PIL import Image
from rembg.sessions import sessions_class
from rembg.sessions.base import BaseSession

from pymatting import estimate_alpha_cf, estimate_foreground_ml

from ..errors import TooCostly
from ..imaging.matte_edges import UNKNOWN, matting_trimap
from ..imaging.resample import resize_alpha, resize_rgb, working_size
from .base import SessionFactory, warmup_card


@dataclass(frozen=True)
class AlphaMatting:
    """rembg's closed-form alpha matting thresholds (0-255) and erosion size (px), and the most
    pixels of unknown alpha the solver may take on (`max_unknown_px`, from TIMEOUT: see
    `matting_budget`), checked before it starts."""

    foreground_threshold: int = 240
    background_threshold: int = 10
    erode_size: int = 10
    max_unknown_px: int = 600_000


# Measured on a 2-core machine (pymatting's closed-form solve, 512 to 2048 px portraits, bands of
# 26,000 to 750,000 unknown pixels): 0.01 to 0.11 ms per unknown pixel, the most for wide bands.
MATTING_SECONDS_PER_UNKNOWN_PX = 1.2e-4


# The solver's working size: pymatting's closed-form Laplacian builds index and value arrays for every
# pixel it is given (some 25 per pixel, copied again by scipy), so its memory follows the image, not
# the band. It solves at most MATTING_MAX_SIDE px on the long side, and only on the unknown band's
# bounding box (plus MATTING_CONTEXT px of sure pixels around it: the Laplacian's windows reach 1 px,
# so the crop's solution is the whole image's). Measured by bench/matting_memory.py.
MATTING_MAX_SIDE = 1024
MATTING_CONTEXT = 4


def band_box(trimap: np.ndarray, *, context: int = MATTING_CONTEXT) -> tuple[int, int, int, int] | None:
    """(x0, y0, x1, y1) of the trimap's unknown pixels, widened by `context` px (clipped to the
    image); None when nothing is unknown."""
    rows = np.flatnonzero((trimap == UNKNOWN).any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero((trimap == UNKNOWN).any(axis=0))
    height, width = trimap.shape
    return (max(0, int(cols[0]) - context), max(0, int(rows[0]) - context),
            min(width, int(cols[-1]) + 1 + context), min(height, int(rows[-1]) + 1 + context))


def matting_budget(timeout_s: float, *, configured: int | None = None) -> int:
    """Unknown pixels the matting solver may take on: `configured` (MAX_MATTING_PIXELS) when set,
    else what ends within half of `timeout_s` (TIMEOUT) at the slowest rate measured, so that a
    client's thresholds never get its worker ended."""
    if configured is not None:
        return configured
    return int(0.5 * timeout_s / MATTING_SECONDS_PER_UNKNOWN_PX)


@dataclass(frozen=True)
class Matte:
    """A segmentation result at the input's size.

    `alpha`: (H, W) uint8 coverage, 255 = person. `foreground`: (H, W, 3) uint8 RGB colours to use
    under the alpha (the input itself, or rembg's estimated foreground when matting or
    decontaminating, which removes the old background's colour from soft edges).
    """

    alpha: np.ndarray
    foreground: np.ndarray


def rembg_session(model_name: str, inner_session: ort.InferenceSession) -> BaseSession:
    """An instance of rembg's session class for `model_name`, running `inner_session`.

    `__new__` without `__init__`: rembg's constructor would locate or download the file and build
    its own session; the two attributes it sets are set here instead.
    """
    for cls in sessions_class:
        if cls.name() == model_name:
            session = cls.__new__(cls)
            session.model_name = model_name
            session.inner_session = inner_session
            return session
    raise KeyError(f"rembg has no session class named {model_name!r}")


class Segmenter:
    """Person/foreground segmentation with one rembg model."""

    WARMUP_SIDE = 320  # the network's input side

    def __init__(self, name: str, session: BaseSession) -> None:
        self.name = name
        self.session = session

    @classmethod
    def from_file(cls, path: Path, *, session_factory: SessionFactory) -> Self:
        """rembg's model name is the file's stem, as rembg names its files (u2net.onnx: u2net)."""
        return cls(path.stem, rembg_session(path.stem, session_factory(path)))

    def warmup(self) -> None:
        self.matte(warmup_card(self.WARMUP_SIDE), max_side=self.WARMUP_SIDE)

    def matte(
        self,
        rgb: np.ndarray,
        *,
        max_side: int,
        alpha_matting: AlphaMatting | None = None,
        decontaminate_edges: bool = False,
    ) -> Matte:
        """Segment (H, W, 3) uint8 RGB. Inputs whose long side exceeds `max_side` px are matted at
        that working size and the alpha scaled back up (the network itself sees 320x320; this caps
        the cost of rembg's full-resolution pre- and post-processing)."""
        height, width = rgb.shape[:2]
        size = working_size(width, height, max_side=max_side)
        working = resize_rgb(rgb, size)
        if alpha_matting is not None:
            return self._matted(rgb, working, alpha_matting)
        result = rembg.remove(
            Image.fromarray(working),
            session=self.session,
            decontaminate=decontaminate_edges,
            putalpha=not decontaminate_edges,  # keep colours unpremultiplied (rembg's default darkens edges)
        )
        rgba = np.asarray(result.convert("RGBA"))
        alpha = np.ascontiguousarray(rgba[:, :, 3])
        if size != (width, height):
            return Matte(alpha=resize_alpha(alpha, (width, height)), foreground=rgb)
        return Matte(alpha=alpha, foreground=np.ascontiguousarray(rgba[:, :, :3]) if decontaminate_edges else rgb)

    def _matted(self, rgb: np.ndarray, working: np.ndarray, matting: AlphaMatting) -> Matte:
        """rembg's alpha matting (the network's mask, a trimap, pymatting's closed-form alpha and its
        foreground estimate), with the trimap's unknown band counted before the solver starts:
        `TooCostly` when it exceeds `matting.max_unknown_px`. The solver sees at most
        MATTING_MAX_SIDE px and only the band's bounding box (`band_box`): sure pixels outside it
        keep the trimap's 0 or 255, and the photo's own colour."""
        if max(working.shape[:2]) > MATTING_MAX_SIDE:
            working = resize_rgb(working, working_size(working.shape[1], working.shape[0], max_side=MATTING_MAX_SIDE))
        mask = np.asarray(rembg.remove(Image.fromarray(working), session=self.session, only_mask=True))
        trimap = matting_trimap(mask, foreground_threshold=matting.foreground_threshold,
                                background_threshold=matting.background_threshold, erode_size=matting.erode_size)
        unknown = int(np.count_nonzero(trimap == UNKNOWN))
        if unknown > matting.max_unknown_px:
            raise TooCostly(
                "alpha_matting_too_costly",
                f"Alpha matting with these settings would solve for {unknown:,} pixels of uncertain alpha; this "
                f"server takes at most {matting.max_unknown_px:,}. Narrow the band: raise "
                "alpha_matting_background_threshold, lower alpha_matting_foreground_threshold or "
                "alpha_matting_erode_size (or send a smaller photo).",
                details={"unknown_px": unknown, "max_unknown_px": matting.max_unknown_px},
            )
        alpha_u8 = np.where(trimap >= UNKNOWN, 255, 0).astype(np.uint8)  # sure pixels; the band is solved below
        foreground = working.copy()
        box = band_box(trimap)
        try:
            if box is None:
                raise ValueError("no unknown pixels")
            x0, y0, x1, y1 = box
            image = working[y0:y1, x0:x1] / 255.0
            alpha = estimate_alpha_cf(image, trimap[y0:y1, x0:x1] / 255.0)
        except ValueError:  # no sure foreground or background in the trimap: the plain mask, as rembg does
            alpha_u8 = mask
        else:
            foreground[y0:y1, x0:x1] = np.clip(estimate_foreground_ml(image, alpha) * 255.0 + 0.5, 0, 255).astype(np.uint8)
            alpha_u8[y0:y1, x0:x1] = np.clip(alpha * 255.0 + 0.5, 0, 255).astype(np.uint8)
        height, width = rgb.shape[:2]
        if (working.shape[1], working.shape[0]) != (width, height):
            return Matte(alpha=resize_alpha(alpha_u8, (width, height)), foreground=rgb)
        return Matte(alpha=np.ascontiguousarray(alpha_u8), foreground=np.ascontiguousarray(foreground))
