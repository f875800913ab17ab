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

from ..imaging.compose import resize_alpha, resize_rgb, working_size
from .base import SessionFactory, warmup_card


@dataclass(frozen=True)
class AlphaMatting:
    """rembg's closed-form alpha matting thresholds (0-255) and erosion size (px)."""

    foreground_threshold: int = 240
    background_threshold: int = 10
    erode_size: int = 10


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
        decontaminate: bool = False,
    ) -> Matte:
        """Segment (H, W, 3) uint8 RGB. Inputs whose long side exceeds `max_side` px are matted at
        that working size and the alpha scaled back up (the network itself sees 320x320; this caps
        the cost of rembg's full-resolution pre- and post-processing)."""
        height, width = rgb.shape[:2]
        size = working_size(width, height, max_side=max_side)
        working = resize_rgb(rgb, size)
        result = rembg.remove(
            Image.fromarray(working),
            session=self.session,
            alpha_matting=alpha_matting is not None,
            alpha_matting_foreground_threshold=(alpha_matting or AlphaMatting()).foreground_threshold,
            alpha_matting_background_threshold=(alpha_matting or AlphaMatting()).background_threshold,
            alpha_matting_erode_size=(alpha_matting or AlphaMatting()).erode_size,
            decontaminate=decontaminate,
            putalpha=not decontaminate,  # keep colours unpremultiplied (rembg's default darkens edges)
        )
        rgba = np.asarray(result.convert("RGBA"))
        alpha = np.ascontiguousarray(rgba[:, :, 3])
        refined = alpha_matting is not None or decontaminate
        if size != (width, height):
            return Matte(alpha=resize_alpha(alpha, (width, height)), foreground=rgb)
        return Matte(alpha=alpha, foreground=np.ascontiguousarray(rgba[:, :, :3]) if refined else rgb)
