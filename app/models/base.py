"""What every model family implements, and the one generated warm-up image.

A family is one class (listed once, in `app.models.registry.FAMILIES`) with:
- `from_file(path, *, session_factory)`: build the model from its file; every onnxruntime
  session comes from `session_factory` (the registry's, i.e. `app.models.sessions.create_session`
  with the deployment's providers and memory options), so no model builds its own;
- `warmup()`: one inference on `warmup_card` at the size requests use, for models that no warm-up
  request covers (app/warmup.py). A model that runs at several fixed input shapes (`SHAPES`,
  app/models/portrait.py) is never covered by one request: its `warmup()` runs each shape that has
  not run on the current lane yet, so every (model, shape, lane) runs once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, Self

import numpy as np
import onnxruntime as ort

SessionFactory = Callable[[Path | bytes], ort.InferenceSession]
"""A model file (path, or serialized ONNX bytes) -> a ready session."""


class Model(Protocol):
    @classmethod
    def from_file(cls, path: Path, *, session_factory: SessionFactory) -> Self: ...

    def warmup(self) -> None: ...


def warmup_card(size: int) -> np.ndarray:
    """A deterministic (size, size, 3) uint8 gradient test card: channel 0 rises left to right,
    channel 1 top to bottom, channel 2 is 128 (a warm-up needs the shape, not the colour order)."""
    ramp = np.linspace(0, 255, size, dtype=np.float32)
    card = np.empty((size, size, 3), dtype=np.uint8)
    card[..., 0] = ramp[None, :]
    card[..., 1] = ramp[:, None]
    card[..., 2] = 128
    return card
