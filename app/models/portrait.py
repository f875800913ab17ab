"""MODNet, a portrait matting network: a real alpha for people (hair strands, soft edges), where
u2net gives a salient-object mask.

The network takes any size that is a multiple of 32; it runs here at a few fixed input shapes only
(`SHAPES`), each warmed once on the narrow lane (and on the wide one with WARMUP_SKIP=none), so an odd
aspect ratio never means a first run at a new shape there (onnxruntime plans its buffers and kernels
per shape; the wide lane's first run at a shape draws on the arena the narrow one grew, and measured
no slower than its next: bench/cold.py). A photo is scaled to fit the shape that
wastes the least of it and padded by reflection; the padding is cut off the output before the alpha
goes back to the photo's size. The colours under the soft edges are estimated at the network's
size and carried to the photo's (app/imaging/matte_edges.py), so a cut-out's hair holds none of the old
background's colour.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Self

import numpy as np

from ..imaging.resample import resize_alpha, resize_rgb
from ..imaging.matte_edges import decontaminate, edge_colours, fit_shape, pad_to
from .base import SessionFactory, warmup_card
from .segmentation import AlphaMatting, Matte, Segmenter
from .sessions import current_lane

# (width, height) px: square, portrait 3:4-ish and landscape, each a multiple of 32 with the short
# side at 512 (MODNet's reference size, its own demo's). Measured by bench/matte.py.
SHAPES: tuple[tuple[int, int], ...] = ((512, 512), (512, 672), (672, 512))


class AlphaMattingNotApplicable(ValueError):
    """Alpha matting refines a mask into an alpha; this model's output already is one."""


@dataclass(frozen=True)
class NetworkInput:
    """A photo as the network sees it: the padded (1, 3, H, W) float32 tensor in [-1, 1], the
    shape it was fitted to and where the photo lies inside it (x, y, width, height)."""

    tensor: np.ndarray
    shape: tuple[int, int]
    content: tuple[int, int, int, int]


def network_input(rgb: np.ndarray, shapes: tuple[tuple[int, int], ...] = SHAPES) -> NetworkInput:
    """(H, W, 3) uint8 RGB -> the network's input at the fixed shape that fits it best."""
    height, width = rgb.shape[:2]
    shape, fitted = fit_shape(width, height, shapes)
    small = resize_rgb(rgb, fitted)
    padded, content = pad_to(small, shape)
    tensor = padded.astype(np.float32).transpose(2, 0, 1)[None]
    tensor *= 2.0 / 255.0
    tensor -= 1.0
    return NetworkInput(np.ascontiguousarray(tensor), shape, content)


class PortraitMatte:
    """Portrait matting with MODNet (input `[B, 3, H, W]` in [-1, 1], output alpha `[B, 1, H, W]` in [0, 1])."""

    SHAPES = SHAPES

    def __init__(self, name: str, session: object) -> None:
        self.name = name
        self.session = session
        self.input_name = session.get_inputs()[0].name
        self._ran: set[tuple[str, tuple[int, int]]] = set()  # (lane, shape) run in this process

    @classmethod
    def from_file(cls, path: Path, *, session_factory: SessionFactory) -> Self:
        return cls("modnet", session_factory(path))

    def warmup(self) -> None:
        """Each fixed shape once on the current lane, unless a request already ran it there: the
        whole matte, so the colours under its soft edges (a cut-out's own work at that shape) are
        warm too, not the network alone."""
        for width, height in self.SHAPES:
            if (current_lane(), (width, height)) not in self._ran:
                self.matte(warmup_card(max(width, height))[:height, :width], max_side=max(width, height))

    def warm_shapes(self) -> list[str]:
        """The (lane, shape) pairs this process has run, "lane:WxH" (/readyz shows them)."""
        return sorted(f"{lane}:{width}x{height}" for lane, (width, height) in self._ran)

    def alpha(self, rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The network's alpha for (H, W, 3) uint8 RGB at the size it ran: ((h, w) float32 alpha in
        [0, 1], the (h, w, 3) uint8 RGB it saw), without the padding."""
        given = network_input(rgb, self.SHAPES)
        (output,) = self.session.run(None, {self.input_name: given.tensor})
        self._ran.add((current_lane(), given.shape))
        x, y, width, height = given.content
        seen = ((given.tensor[0, :, y : y + height, x : x + width].transpose(1, 2, 0) + 1.0) * 127.5 + 0.5)
        return np.clip(output[0, 0, y : y + height, x : x + width], 0.0, 1.0), seen.astype(np.uint8)

    def matte(
        self,
        rgb: np.ndarray,
        *,
        max_side: int,
        alpha_matting: AlphaMatting | None = None,
        decontaminate_edges: bool = True,
    ) -> Matte:
        """The matte of (H, W, 3) uint8 RGB at its size, with the person's own colours under the
        soft edges (`decontaminate_edges`; else the photo's). Both are estimated at the network's size
        (at most 672 px), so `max_side` (the working size of rembg's models) bounds nothing here."""
        if alpha_matting is not None:
            raise AlphaMattingNotApplicable(
                f"alpha matting refines a salient-object mask into an alpha; {self.name} predicts the alpha itself"
            )
        height, width = rgb.shape[:2]
        small_alpha, seen = self.alpha(rgb)
        alpha_u8 = np.clip(small_alpha * 255.0 + 0.5, 0, 255).astype(np.uint8)
        alpha = resize_alpha(alpha_u8, (width, height))
        if not decontaminate_edges:
            return Matte(alpha=alpha, foreground=rgb)
        return Matte(alpha=alpha, foreground=decontaminate(rgb, alpha, edge_colours(seen, small_alpha)))


MattingModel = Segmenter | PortraitMatte
"""A segmentation model as the pipelines use it: `matte(rgb, *, max_side, alpha_matting=None,
decontaminate_edges=...) -> Matte` (`decontaminate_edges`: the person's own colours under the soft
edges as the foreground; the portrait matte does it by default, rembg's models do not)."""
