"""SCRFD face detector (insightface's buffalo_l ``det_10g.onnx``), decoded in numpy.

Network contract (insightface ``model_zoo/scrfd.py``, the variant with keypoints):

* input ``[1, 3, H, W]`` float32, **RGB**, ``(x - 127.5) / 128`` (insightface: BGR image and
  ``blobFromImage(swapRB=True)``); we always run a fixed 640 x 640 letterbox (the image scaled to
  fit, top-left, black padding), like :class:`app.models.centerface.CenterFace`, so the shape
  warmed up is the shape every request uses;
* 9 outputs in this order: scores for strides 8, 16, 32 (``[A, 1]``), box distances for the same
  strides (``[A, 4]``: left, top, right, bottom, in units of the stride) and keypoint offsets
  (``[A, 10]``: ``(dx, dy)`` for the 5 landmarks, in units of the stride); ``A = (H / s) * (W / s)
  * 2`` (two anchors per cell, consecutive). An exported batch axis (``[1, A, C]``) is accepted.
  Scores are probabilities already (sigmoid in the graph).
* Anchor centres are the cell corners ``(x, y) = (j * s, i * s)``, row-major, each repeated for
  its 2 anchors. Box = ``centre -/+ distance * s``; landmark = ``centre + offset * s``.

(The 5-stride, 1-anchor variants with 15 outputs decode the same way and are accepted too.)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import onnxruntime

from .centerface import letterbox
from .faces import Face, faces_from_detections
from .insight import to_blob

__all__ = ["Scrfd", "anchor_centres", "decode"]

log = logging.getLogger(__name__)

#: insightface's defaults for det_10g.
SCORE_THRESHOLD = 0.5
NMS_THRESHOLD = 0.4
INPUT_MEAN = 127.5
INPUT_STD = 128.0
DEFAULT_INPUT_SIZE = 640

_LAYOUTS = {9: ((8, 16, 32), 2), 15: ((8, 16, 32, 64, 128), 1)}  # outputs -> (strides, anchors per cell)


def anchor_centres(*, height: int, width: int, stride: int, anchors: int) -> np.ndarray:
    """``(height * width * anchors, 2)`` float32 ``[x, y]`` network-input px, insightface's order."""
    ys, xs = np.mgrid[:height, :width]
    centres = (np.stack([xs, ys], axis=-1).astype(np.float32) * stride).reshape(-1, 2)
    if anchors > 1:
        centres = np.repeat(centres, anchors, axis=0)
    return centres


def _rows(array: np.ndarray, columns: int, name: str) -> np.ndarray:
    values = np.asarray(array, dtype=np.float32)
    if values.ndim == 3:
        if values.shape[0] != 1:
            raise ValueError(f"{name}: only batch size 1 is supported, got {values.shape}")
        values = values[0]
    if values.ndim != 2 or values.shape[1] != columns:
        raise ValueError(f"{name} must be (A, {columns}) or (1, A, {columns}), got {np.shape(array)}")
    return values


def decode(
    outputs: Sequence[np.ndarray],
    *,
    input_size: tuple[int, int],
    score_threshold: float = SCORE_THRESHOLD,
    nms_threshold: float = NMS_THRESHOLD,
    scale_x: float = 1.0,
    scale_y: float = 1.0,
    image_size: tuple[int, int] | None = None,
) -> list[Face]:
    """Turn SCRFD's raw outputs into faces (pure; no model needed).

    Args:
        outputs: The 9 (or 15) output arrays in graph order (scores, boxes, keypoints per stride).
        input_size: ``(width, height)`` of the network input in px.
        score_threshold: Minimum score (inclusive, as insightface).
        nms_threshold: IoU above which the lower-scoring of two boxes is dropped.
        scale_x: Image px -> network-input px factor along x (the letterbox's).
        scale_y: Image px -> network-input px factor along y.
        image_size: ``(width, height)`` of the image, to clip boxes to (landmarks are not clipped).

    Returns:
        Faces in image px, by descending score.
    """
    layout = _LAYOUTS.get(len(outputs))
    if layout is None:
        raise ValueError(f"SCRFD with keypoints has 9 or 15 outputs, got {len(outputs)}")
    strides, anchors = layout
    count = len(strides)
    width, height = input_size
    boxes_all, scores_all, marks_all = [], [], []
    for index, stride in enumerate(strides):
        scores = _rows(outputs[index], 1, f"scores (stride {stride})")[:, 0]
        distances = _rows(outputs[index + count], 4, f"boxes (stride {stride})") * stride
        offsets = _rows(outputs[index + 2 * count], 10, f"keypoints (stride {stride})") * stride
        centres = anchor_centres(height=height // stride, width=width // stride, stride=stride, anchors=anchors)
        if not scores.shape[0] == distances.shape[0] == offsets.shape[0] == centres.shape[0]:
            raise ValueError(
                f"stride {stride}: {scores.shape[0]} scores, {distances.shape[0]} boxes, {offsets.shape[0]} keypoints "
                f"for {centres.shape[0]} anchors of a {width}x{height} input"
            )
        keep = np.flatnonzero(scores >= score_threshold)
        if keep.size == 0:
            continue
        c = centres[keep].astype(np.float64)
        d = distances[keep].astype(np.float64)
        boxes_all.append(np.stack([c[:, 0] - d[:, 0], c[:, 1] - d[:, 1], c[:, 0] + d[:, 2], c[:, 1] + d[:, 3]], axis=1))
        marks_all.append(c[:, None, :] + offsets[keep].astype(np.float64).reshape(-1, 5, 2))
        scores_all.append(scores[keep].astype(np.float64))
    if not boxes_all:
        return []
    boxes = np.concatenate(boxes_all)
    marks = np.concatenate(marks_all)
    scores = np.concatenate(scores_all)
    boxes[:, 0::2] /= scale_x
    boxes[:, 1::2] /= scale_y
    marks[:, :, 0] /= scale_x
    marks[:, :, 1] /= scale_y
    return faces_from_detections(boxes, scores, marks, nms_threshold=nms_threshold, image_size=image_size)


class Scrfd:
    """SCRFD over a ready session (from the session factory); no file I/O, no threads of its own."""

    def __init__(self, session: onnxruntime.InferenceSession, *, input_size: int = DEFAULT_INPUT_SIZE) -> None:
        """
        Args:
            session: Session of an SCRFD model with keypoints (9 or 15 outputs, insightface order).
            input_size: Side of the square network input in px, a multiple of 32. A model whose
                input size is fixed (square) runs at its own size instead.
        """
        inputs = session.get_inputs()
        outputs = session.get_outputs()
        if len(inputs) != 1:
            raise ValueError(f"SCRFD has one input, this model has {len(inputs)}")
        if len(outputs) not in _LAYOUTS:
            raise ValueError(
                f"SCRFD with keypoints has 9 or 15 outputs, this model has {len(outputs)} "
                "(a model without keypoints cannot align faces)"
            )
        shape = inputs[0].shape
        if len(shape) != 4 or shape[1] != 3:
            raise ValueError(f"SCRFD input must be [N, 3, H, W], got {shape}")
        fixed = [dim for dim in shape[2:] if isinstance(dim, int) and dim > 0]
        if len(fixed) == 2:
            if fixed[0] != fixed[1]:
                raise ValueError(f"SCRFD with a fixed non-square input {shape} is not supported")
            input_size = fixed[0]
        if input_size <= 0 or input_size % 32:
            raise ValueError(f"input_size must be a positive multiple of 32, got {input_size}")
        self.session = session
        self.input_size = input_size
        self._input_name: str = inputs[0].name
        self._output_names: list[str] = [output.name for output in outputs]

    def detect(
        self,
        image: np.ndarray,
        *,
        score_threshold: float = SCORE_THRESHOLD,
        nms_threshold: float = NMS_THRESHOLD,
    ) -> list[Face]:
        """Detect faces in an ``(H, W, 3)`` uint8 RGB image; boxes and landmarks in image px, by score."""
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise ValueError(f"image must be (H, W, 3) uint8, got {image.shape} {image.dtype}")
        height, width = image.shape[:2]
        if height == 0 or width == 0:
            raise ValueError(f"image must be non-empty, got {image.shape}")
        canvas, scale_x, scale_y = letterbox(np.ascontiguousarray(image), size=self.input_size)
        blob = to_blob(canvas, mean=INPUT_MEAN, std=INPUT_STD)
        outputs = self.session.run(self._output_names, {self._input_name: blob})
        faces = decode(
            outputs,
            input_size=(self.input_size, self.input_size),
            score_threshold=score_threshold,
            nms_threshold=nms_threshold,
            scale_x=scale_x,
            scale_y=scale_y,
            image_size=(width, height),
        )
        log.debug("scrfd: %d face(s) in %dx%d image", len(faces), width, height)
        return faces

    def warmup(self) -> None:
        """One detection on a generated gradient at the production input size."""
        ramp = np.linspace(0, 255, self.input_size, dtype=np.float32)
        image = np.empty((self.input_size, self.input_size, 3), dtype=np.uint8)
        image[..., 0] = ramp[None, :]
        image[..., 1] = ramp[:, None]
        image[..., 2] = 128
        self.detect(image)
