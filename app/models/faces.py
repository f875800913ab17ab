"""Detector-agnostic face type and non-maximum suppression.

Coordinates are always in pixels (px) of the image that was handed to the
detector, with the origin at the top-left corner, x to the right and y down.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Face", "nms"]

#: Names of the five landmarks, in insightface order.
LANDMARK_NAMES: tuple[str, ...] = (
    "left_eye",
    "right_eye",
    "nose",
    "left_mouth",
    "right_mouth",
)


@dataclass(frozen=True, eq=False)
class Face:
    """One detected face.

    Attributes:
        box: ``(x1, y1, x2, y2)`` in input-image px, ``x1 <= x2`` and ``y1 <= y2``.
        score: Detector confidence in ``[0, 1]``.
        landmarks: ``(5, 2)`` float32 array of ``[x, y]`` in input-image px, in
            insightface order: left eye (the one with the smaller x in a frontal
            face, i.e. the subject's right eye), right eye, nose tip, left mouth
            corner, right mouth corner. Stored as a read-only copy.

    ``eq=False`` because a dataclass-generated ``__eq__``/``__hash__`` would
    compare/hash the ndarray field, which raises; faces compare by identity.
    """

    box: tuple[float, float, float, float]
    score: float
    landmarks: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        box = tuple(float(v) for v in self.box)
        if len(box) != 4:
            raise ValueError(f"box must have 4 values (x1, y1, x2, y2), got {len(box)}")
        landmarks = np.array(self.landmarks, dtype=np.float32, copy=True)
        if landmarks.shape != (5, 2):
            raise ValueError(f"landmarks must have shape (5, 2), got {landmarks.shape}")
        landmarks.flags.writeable = False
        object.__setattr__(self, "box", box)
        object.__setattr__(self, "score", float(self.score))
        object.__setattr__(self, "landmarks", landmarks)

    @property
    def width(self) -> float:
        """Box width in px (``x2 - x1``, never negative)."""
        return max(0.0, self.box[2] - self.box[0])

    @property
    def height(self) -> float:
        """Box height in px (``y2 - y1``, never negative)."""
        return max(0.0, self.box[3] - self.box[1])

    @property
    def area(self) -> float:
        """Box area in px²."""
        return self.width * self.height

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready representation.

        Returns:
            ``{"box": [x1, y1, x2, y2], "score": s, "landmarks": [[x, y] * 5]}``
            with coordinates as Python floats in px rounded to 0.1 px and the
            score rounded to 4 decimal places.
        """
        return {
            "box": [round(float(v), 1) for v in self.box],
            "score": round(float(self.score), 4),
            "landmarks": [[round(float(x), 1), round(float(y), 1)] for x, y in self.landmarks],
        }


def nms(boxes: np.ndarray, scores: np.ndarray, *, iou_threshold: float) -> np.ndarray:
    """Greedy non-maximum suppression.

    Args:
        boxes: ``(N, 4)`` array (any float/int dtype) of ``x1, y1, x2, y2`` in px.
        scores: ``(N,)`` array of scores; higher is better.
        iou_threshold: A box is suppressed when its intersection-over-union with
            an already kept, higher-scoring box is strictly greater than this.

    Returns:
        ``(K,)`` int64 array of indices into ``boxes`` of the kept boxes, ordered
        by descending score (ties keep input order).
    """
    boxes = np.asarray(boxes, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"boxes must have shape (N, 4), got {boxes.shape}")
    if scores.shape != (boxes.shape[0],):
        raise ValueError(f"scores must have shape ({boxes.shape[0]},), got {scores.shape}")
    if boxes.shape[0] == 0:
        return np.empty(0, dtype=np.int64)

    x1, y1, x2, y2 = boxes.T
    areas = np.clip(x2 - x1, 0.0, None) * np.clip(y2 - y1, 0.0, None)
    order = np.argsort(-scores, kind="stable")
    keep: list[int] = []
    while order.size > 0:
        i = int(order[0])
        keep.append(i)
        rest = order[1:]
        iw = np.clip(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0.0, None)
        ih = np.clip(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0.0, None)
        inter = iw * ih
        union = areas[i] + areas[rest] - inter
        iou = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        order = rest[iou <= iou_threshold]
    return np.asarray(keep, dtype=np.int64)


def faces_from_detections(
    boxes: np.ndarray,
    scores: np.ndarray,
    marks: np.ndarray,
    *,
    nms_threshold: float,
    image_size: tuple[int, int] | None,
) -> list[Face]:
    """The shared end of every detector's decode: clip (N, 4) boxes to `image_size` = (width,
    height) px when given (landmarks stay unclipped), drop empty boxes, NMS, and build `Face`s,
    best score first. `marks` is (N, 5, 2) [x, y] in image px."""
    boxes = np.array(boxes, dtype=np.float64, copy=True)
    if image_size is not None:
        width, height = image_size
        boxes[:, 0::2] = np.clip(boxes[:, 0::2], 0.0, float(width))
        boxes[:, 1::2] = np.clip(boxes[:, 1::2], 0.0, float(height))
    valid = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    boxes, scores, marks = boxes[valid], scores[valid], marks[valid]
    keep = nms(boxes, scores, iou_threshold=nms_threshold)
    return [
        Face(
            box=(float(boxes[k, 0]), float(boxes[k, 1]), float(boxes[k, 2]), float(boxes[k, 3])),
            score=float(scores[k]),
            landmarks=marks[k].astype(np.float32),
        )
        for k in keep
    ]
