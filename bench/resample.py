"""Pillow against OpenCV for each resampling step of the image path: time and pixel difference.

    .venv/bin/python -m bench.resample [--runs 7]

Each row is one operation the service runs, on the size it runs at (the astronaut, 512 x 512, as
in bench.idphoto, and a 6000 x 4000 photo for the steps that only large photos take). "Pillow" is
the call the code made before OpenCV was a dependency; "OpenCV" the equivalent OpenCV call, with
the geometry converted (Pillow's affine maps pixel corners, OpenCV's pixel centres). The
difference is in 0-255 levels: the largest, and the mean over all pixels. Medians of --runs, one
thread each (cv2.setNumThreads(1), as in the service).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
from PIL import Image
from skimage import data

from app.imaging.opencv import cv2
from app.imaging.placement import Placement

Op = Callable[[], np.ndarray]


def pillow_affine(pixels: np.ndarray, coefficients: tuple[float, ...], size: tuple[int, int], resample: Image.Resampling) -> np.ndarray:
    return np.asarray(Image.fromarray(pixels).transform(size, Image.Transform.AFFINE, coefficients, resample=resample, fillcolor=0))


def cv_affine(pixels: np.ndarray, coefficients: tuple[float, ...], size: tuple[int, int], interpolation: int) -> np.ndarray:
    a, b, c, d, e, f = coefficients
    # Pillow samples output pixel (u, v) at input a(u+.5)+b(v+.5)+c in corner coordinates; OpenCV
    # wants the centre-based inverse map: x = a u + b v + c + (a + b - 1) / 2.
    inverse = np.array([[a, b, c + (a + b - 1) / 2], [d, e, f + (d + e - 1) / 2]])
    return cv2.warpAffine(pixels, inverse, size, flags=interpolation | cv2.WARP_INVERSE_MAP, borderValue=0)


def timed(op: Op, runs: int) -> tuple[float, np.ndarray]:
    result = op()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = op()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    rgb = data.astronaut()
    yy, xx = np.mgrid[:512, :512]
    alpha = (255 * (((xx - 250) / 160.0) ** 2 + ((yy - 300) / 230.0) ** 2 < 1)).astype(np.uint8)  # a soft-less head
    large = cv2.resize(rgb, (6000, 4000), interpolation=cv2.INTER_CUBIC)
    placement = Placement(roll_deg=3.0, pivot=(226.0, 102.0), scale=2.1, origin=(85.0, 20.0), size=(600, 600),
                          head_ratio=0.6, eye_line=0.6)
    coefficients = placement.output_to_input()
    rotate = Placement(roll_deg=3.0, pivot=(226.0, 102.0), scale=1.0, origin=(0.0, 0.0), size=(512, 512),
                       head_ratio=0.6, eye_line=0.6).output_to_input()
    rows: list[tuple[str, Op, Op]] = [
        ("composite: warp RGB 512 -> 600x600, bicubic",
         lambda: pillow_affine(rgb, coefficients, (600, 600), Image.Resampling.BICUBIC),
         lambda: cv_affine(rgb, coefficients, (600, 600), cv2.INTER_CUBIC)),
        ("composite: warp alpha 512 -> 600x600, bicubic",
         lambda: pillow_affine(alpha, coefficients, (600, 600), Image.Resampling.BICUBIC),
         lambda: cv_affine(alpha, coefficients, (600, 600), cv2.INTER_CUBIC)),
        ("place: rotate alpha 512, bilinear",
         lambda: np.asarray(Image.fromarray(alpha).rotate(3.0, resample=Image.Resampling.BILINEAR, center=(226.0, 102.0), fillcolor=0)),
         lambda: cv_affine(alpha, rotate, (512, 512), cv2.INTER_LINEAR)),
        ("detect: letterbox 512 -> 640, bilinear",
         lambda: np.asarray(Image.fromarray(rgb).resize((640, 640), Image.Resampling.BILINEAR)),
         lambda: cv2.resize(rgb, (640, 640), interpolation=cv2.INTER_LINEAR)),
        ("detect: letterbox 6000x4000 -> 640x427, bilinear / area",
         lambda: np.asarray(Image.fromarray(large).resize((640, 427), Image.Resampling.BILINEAR)),
         lambda: cv2.resize(large, (640, 427), interpolation=cv2.INTER_AREA)),
        ("segment: working size 6000x4000 -> 1024x683, Lanczos / area",
         lambda: np.asarray(Image.fromarray(large).resize((1024, 683), Image.Resampling.LANCZOS)),
         lambda: cv2.resize(large, (1024, 683), interpolation=cv2.INTER_AREA)),
        ("segment: alpha 1024x683 -> 6000x4000, bilinear",
         lambda: np.asarray(Image.fromarray(cv2.resize(alpha, (1024, 683))).resize((6000, 4000), Image.Resampling.BILINEAR)),
         lambda: cv2.resize(cv2.resize(alpha, (1024, 683)), (6000, 4000), interpolation=cv2.INTER_LINEAR)),
        ("colour: RGB -> BGR 6000x4000",
         lambda: np.ascontiguousarray(large[:, :, ::-1]),
         lambda: cv2.cvtColor(large, cv2.COLOR_RGB2BGR)),
    ]
    print(f"median of {args.runs} runs, one thread (s); difference in levels 0-255")  # noqa: T201
    print("| step | Pillow / numpy | OpenCV | OpenCV / Pillow | max difference | mean difference |")  # noqa: T201
    print("|---|---|---|---|---|---|")  # noqa: T201
    for label, pillow, opencv in rows:
        t_pil, a = timed(pillow, args.runs)
        t_cv, b = timed(opencv, args.runs)
        diff = np.abs(a.astype(np.int16) - b.astype(np.int16))
        print(f"| {label} | {t_pil:.4f} | {t_cv:.4f} | {t_cv / t_pil:.2f} | {int(diff.max())} | {float(diff.mean()):.3f} |")  # noqa: T201


if __name__ == "__main__":
    main()
