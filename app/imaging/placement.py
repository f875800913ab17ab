"""ID photo geometry: the affine cut of the input that makes the output (`Placement`), and the
resampling through it.

Pure functions on numpy arrays. Coordinates are image px, x to the right, y down, (x, y) order.
The placement works in the "upright frame": the input rotated about the eye midpoint by the face's
roll so the eyes are level. Output px (u, v) map to upright px (x0 + u / scale, y0 + v / scale),
and those to input px by the inverse rotation: one affine transform, one resampling.

Its neighbours: `head` measures the head, `solver` chooses the placement on a spec's rules,
`canvas` extends the frame beyond the photo (or keeps it inside), `people` keeps the chosen person.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .opencv import warp_pillow_affine


@dataclass(frozen=True)
class Placement:
    """How the output is cut from the input (see the module docstring)."""

    roll_deg: float  # the face's roll; the input is rotated by -roll to level the eyes
    pivot: tuple[float, float]  # rotation centre, input px
    scale: float  # output px per upright px
    origin: tuple[float, float]  # upright px of the output's top-left corner
    size: tuple[int, int]  # output (width, height) px
    head_ratio: float  # head height / output height
    eye_line: float  # eye height above the bottom edge / output height
    predicted: dict[str, float] = field(default_factory=dict)  # rule name -> mm the solver expects
    broken: dict[str, float] = field(default_factory=dict)  # rule name -> mm outside its band
    margin_mm: float = math.inf  # the smallest margin (mm) the solver left to any band end (negative: a miss)
    binding: str | None = None  # the rule with that smallest margin

    def shifted(self, dx: float, dy: float) -> "Placement":
        """The same placement on an input padded by (dx, dy) px at the left and top."""
        return replace(
            self,
            pivot=(self.pivot[0] + dx, self.pivot[1] + dy),
            origin=(self.origin[0] + dx, self.origin[1] + dy),
        )

    def output_to_input(self) -> tuple[float, float, float, float, float, float]:
        """Coefficients (a, b, c, d, e, f): input (x, y) = (a u + b v + c, d u + e v + f).

        This is the form `PIL.Image.transform(..., Image.Transform.AFFINE, ...)` takes.
        """
        theta = math.radians(self.roll_deg)
        cos, sin = math.cos(theta), math.sin(theta)
        px, py = self.pivot
        ox, oy = self.origin
        k = 1.0 / self.scale
        # upright (x, y) = (ox + k u, oy + k v); input = pivot + R(theta) @ (upright - pivot)
        a, b = cos * k, -sin * k
        d, e = sin * k, cos * k
        c = px + cos * (ox - px) - sin * (oy - py)
        f = py + sin * (ox - px) + cos * (oy - py)
        return a, b, c, d, e, f

    def input_to_output(self, points: np.ndarray) -> np.ndarray:
        """Map (N, 2) input px to output px."""
        a, b, c, d, e, f = self.output_to_input()
        matrix = np.array([[a, b], [d, e]])
        return (np.asarray(points, dtype=np.float64) - (c, f)) @ np.linalg.inv(matrix).T


def warp(pixels: np.ndarray, placement: Placement, *, fill: int | tuple[int, ...] = 0) -> np.ndarray:
    """Resample (H, W) or (H, W, 3) uint8 pixels into the output (bicubic); outside the input is `fill`.

    OpenCV with the geometry Pillow's `transform` gave (`output_to_input` keeps Pillow's
    convention), several times faster (figures in docs/image-path.md)."""
    return warp_pillow_affine(pixels, placement.output_to_input(), placement.size, cubic=True, fill=fill)


def upright_matte(alpha: np.ndarray, *, roll_deg: float, pivot: tuple[float, float]) -> np.ndarray:
    """The (H, W) uint8 matte rotated into the upright frame (same size; outside filled 0): what
    Pillow's `rotate(roll_deg, BILINEAR, center=pivot)` gave, with OpenCV (about 10x faster)."""
    if abs(roll_deg) < 0.05:
        return alpha
    # Pillow's rotate: output (u, v) samples input R(-roll) ((u, v) - pivot) + pivot, corner convention.
    angle = -math.radians(roll_deg)
    cos, sin = math.cos(angle), math.sin(angle)
    px, py = pivot
    coefficients = (cos, sin, px - cos * px - sin * py, -sin, cos, py + sin * px - cos * py)
    height, width = alpha.shape[:2]
    return warp_pillow_affine(alpha, coefficients, (width, height), cubic=False)
