"""Short YUV4MPEG2 videos for Chromium's fake camera (--use-file-for-fake-video-capture): raw 4:2:0
frames, full-range BT.601 (C420jpeg), written with numpy. Chromium plays the file in a loop."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np


def write_y4m(path: Path, frames: Sequence[np.ndarray], *, fps: int = 10) -> Path:
    """`frames`: (H, W, 3) uint8 RGB, all one even size."""
    height, width = frames[0].shape[:2]
    assert height % 2 == 0 and width % 2 == 0, "4:2:0 needs an even width and height"
    with path.open("wb") as out:
        out.write(f"YUV4MPEG2 W{width} H{height} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
        for rgb in frames:
            assert rgb.shape == (height, width, 3)
            r, g, b = (rgb[..., i].astype(np.float32) for i in range(3))
            y = 0.299 * r + 0.587 * g + 0.114 * b
            u = 128 - 0.168736 * r - 0.331264 * g + 0.5 * b
            v = 128 + 0.5 * r - 0.418688 * g - 0.081312 * b
            half = lambda plane: plane.reshape(height // 2, 2, width // 2, 2).mean(axis=(1, 3))  # noqa: E731
            out.write(b"FRAME\n")
            for plane in (y, half(u), half(v)):
                out.write(np.clip(plane + 0.5, 0, 255).astype(np.uint8).tobytes())
    return path
