"""insightface's INSwapper paste-back (whole photo) against ours (app/imaging/face_align.py, the
window around the face): time and pixel difference, on the generated swapper of tests/onnx_fakes.py.

    .venv/bin/python -m bench.paste_back [--runs 5]

Both sides run the same `INSwapper.get` (alignment, the stand-in network); one pastes back with
`paste_back=True`, the other takes `paste_back=False` and calls ours.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from insightface.app.common import Face
from insightface.model_zoo.inswapper import INSwapper
from skimage import data

import app.models.insight  # noqa: F401  (its filter for insightface's scikit-image deprecation warning)
from app.imaging.face_align import paste_back
from app.imaging.opencv import cv2, rgb_to_bgr
from app.models.sessions import Providers, create_session
from tests import onnx_fakes

# CenterFace's five landmarks on the astronaut (tests/test_faces_pure.py).
ASTRONAUT_LANDMARKS = np.array([[202.9, 101.7], [249.4, 102.5], [225.7, 124.5], [204.4, 143.8], [243.5, 144.3]], np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "inswapper_128.onnx"
        path.write_bytes(onnx_fakes.inswapper())
        session = create_session(path, providers=Providers(("CPUExecutionProvider",)), label="bench")
        with contextlib.redirect_stdout(io.StringIO()):
            swapper = INSwapper(str(path), session)
    source = Face(embedding=np.ones(512, np.float32))
    astronaut = rgb_to_bgr(data.astronaut())
    scale = 6000 / 512
    cases = (("512x512", astronaut, ASTRONAUT_LANDMARKS),
             ("6000x4000", cv2.resize(astronaut, (6000, 4000)), ASTRONAUT_LANDMARKS * np.float32([scale, 4000 / 512])))
    print("| photo | insightface (s) | ours (s) | changed pixels | differing | max difference |")  # noqa: T201
    print("|---|---|---|---|---|---|")  # noqa: T201
    for label, photo, landmarks in cases:
        target = Face(kps=landmarks)
        theirs_times, ours_times = [], []
        for _ in range(args.runs):
            started = time.perf_counter()
            theirs = swapper.get(photo, target, source, paste_back=True)
            theirs_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            crop, matrix = swapper.get(photo, target, source, paste_back=False)
            ours = paste_back(photo, crop, matrix)
            ours_times.append(time.perf_counter() - started)
        difference = np.abs(theirs.astype(np.int16) - ours.astype(np.int16))
        changed = int(np.any(theirs != photo, axis=2).sum())
        print(  # noqa: T201
            f"| {label} | {statistics.median(theirs_times):.3f} | {statistics.median(ours_times):.3f} | {changed} "
            f"| {int(np.any(difference > 0, axis=2).sum())} | {int(difference.max())} |"
        )


if __name__ == "__main__":
    main()
