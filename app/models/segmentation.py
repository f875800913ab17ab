"""Segmentation through rembg: its session classes and `rembg.remove`, on our own ONNX session.

rembg's session constructors resolve (and may download) the model file and build their own
`InferenceSession`; we never call them. `rembg_session` makes a subclass of rembg's class for the
model name whose constructor only takes a ready session, so rembg's pre- and post-processing,
alpha matting and foreground estimation run unchanged on a session from our factory.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import onnxruntime as ort
import rembg
from PIL import Image
from rembg.sessions import sessions_class
from rembg.sessions.base import BaseSession

from ..imaging.compose import resize_alpha, resize_rgb, working_size


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


@cache
def _ready_session_class(model_name: str) -> type[BaseSession]:
    for cls in sessions_class:
        if cls.name() == model_name:
            base = cls
            break
    else:
        raise KeyError(f"rembg has no session class named {model_name!r}")

    def __init__(self: BaseSession, inner_session: ort.InferenceSession) -> None:  # noqa: N807
        self.model_name = model_name
        self.inner_session = inner_session

    return type(f"Ready{base.__name__}", (base,), {"__init__": __init__})


def rembg_session(model_name: str, inner_session: ort.InferenceSession) -> BaseSession:
    """A rembg session of the class registered for `model_name`, running `inner_session`."""
    return _ready_session_class(model_name)(inner_session)


class Segmenter:
    """Person/foreground segmentation with one rembg model."""

    def __init__(self, name: str, session: BaseSession) -> None:
        self.name = name
        self.session = session

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
