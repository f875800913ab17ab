"""A generic 3D face in the 68-point (iBUG 300-W) layout, for fitting the head's pose to the dense landmarks.

The shape is insightface's `data/objects/meanshape_68.pkl` (insightface 2.1, MIT-licensed library
code; its 3D landmark model fits its own predictions to this mean shape to read a head's pose). It
is read from the installed package, never copied into this repository: the file is checked against
MEANSHAPE_SHA256 and its 68 x 3 float32 values are taken from the pickle's raw bytes (at
MEANSHAPE_OFFSET), so nothing is unpickled. Where the package or the file is missing or differs,
`mean_shape()` is None and the pose falls back to the 5-point estimate (app.imaging.pose).

Axes of the shape: x to the image's right, y down, z towards the camera (the nose tip stands 0.6
in front of the ear-level jaw points at -0.3; the eyes are 0.53 apart between their centres).
`symmetric` averages the shape with its mirror image, so a face the fit reads as turned by 0
degrees is a symmetric one.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

import numpy as np

MEANSHAPE = "data/objects/meanshape_68.pkl"
MEANSHAPE_SHA256 = "39ffecf84ba73f0d0d7e49380833ba88713c9fcdec51df4f7ac45a48b8f4cc51"
MEANSHAPE_OFFSET = 151  # past the pickle's header: numpy's ndarray (68, 3) '<f4', then 816 raw bytes

# each point's partner on the other side of the face (iBUG 300-W, 0-based): the jaw, brows, nostrils,
# eyes and lips swap; the nose's bridge and tip and the lips' middle points stay
MIRROR_68: tuple[int, ...] = (
    *range(16, -1, -1),  # jaw 0-16
    *range(26, 16, -1),  # brows 17-26
    27, 28, 29, 30,  # nose bridge and tip
    35, 34, 33, 32, 31,  # nostrils
    45, 44, 43, 42, 47, 46,  # left eye 36-41 <-> right eye 42-47
    39, 38, 37, 36, 41, 40,
    54, 53, 52, 51, 50, 49, 48,  # outer lips, top 48-54
    59, 58, 57, 56, 55,  # outer lips, bottom 55-59
    64, 63, 62, 61, 60,  # inner lips, top 60-64
    67, 66, 65,  # inner lips, bottom 65-67
)


def read_shape(data: bytes) -> np.ndarray | None:
    """The (68, 3) float64 shape from the pickle's bytes, or None where they are not the known file."""
    if hashlib.sha256(data).hexdigest() != MEANSHAPE_SHA256:
        return None
    raw = data[MEANSHAPE_OFFSET : MEANSHAPE_OFFSET + 68 * 3 * 4]
    return np.frombuffer(raw, dtype="<f4").reshape(68, 3).astype(np.float64)


def symmetric(shape: np.ndarray) -> np.ndarray:
    """The shape averaged with its mirror image (x negated, partners swapped), centred on x = 0."""
    mirrored = shape[list(MIRROR_68)] * np.array([-1.0, 1.0, 1.0])
    out = (shape + mirrored) / 2.0
    out[:, 0] -= out[:, 0].mean()
    return out


@lru_cache(maxsize=1)
def mean_shape() -> np.ndarray | None:
    """The symmetric generic face (68, 3), read once; None where insightface's file is not installed."""
    spec = find_spec("insightface")  # found, not imported
    places = [] if spec is None or spec.submodule_search_locations is None else list(spec.submodule_search_locations)
    try:
        data = next(Path(place, MEANSHAPE).read_bytes() for place in places if Path(place, MEANSHAPE).is_file())
    except (StopIteration, OSError):
        return None
    shape = read_shape(data)
    return None if shape is None else symmetric(shape)
