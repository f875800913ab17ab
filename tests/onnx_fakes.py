"""Small generated ONNX models with the inputs, outputs and initializer layout of insightface's.

No package registry ships insightface's weights, so the tests run the real loaders and endpoints
on these. Each is deterministic:

- ArcFace (``w600k_r50.onnx``): ``input.1`` [1, 3, 112, 112] -> ``683`` [1, 512]; 16 x 16 average
  pooling then a fixed random projection, so the embedding is a function of the face crop (raw,
  not normalised: its norm is far from 1);
- genderage: ``data`` [1, 3, 96, 96] -> ``fc1`` [1, 3] = [0.2, 0.8, 0.42] (male, 42);
- 2d106det: ``data`` [1, 3, 192, 192] -> ``fc1`` [1, 212]: 106 points on an ellipse of radii
  0.5 x 0.6 around the crop centre (in [-1, 1] crop units);
- SCRFD (``det_10g.onnx``): ``input.1`` [1, 3, ?, ?] -> the 9 outputs of det_10g, names and
  order included (scores, boxes, keypoints for strides 8, 16, 32; ``[A, C]``, no batch axis), all
  constant: one confident face (0.95) at a chosen place of the 640 x 640 input, plus a weaker
  duplicate (0.80) that NMS must remove;
- INSwapper (``inswapper_128.onnx``): ``target`` [1, 3, 128, 128] and ``source`` [1, 512] ->
  ``output`` [1, 3, 128, 128] of one constant bright colour (so the paste-back is visible), and a
  512 x 512 ``emap`` as the graph's last initializer (unused by the nodes, as in the real file).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
SWAP_COLOUR = (0.0, 1.0, 0.0)  # RGB in [0, 1]: pure green
GENDERAGE_OUTPUT = (0.2, 0.8, 0.42)
SCRFD_STRIDES = (8, 16, 32)
SCRFD_OUTPUT_NAMES = ("448", "471", "494", "451", "474", "497", "454", "477", "500")


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
           initializers: list[onnx.TensorProto], name: str) -> bytes:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="pilotlight-tests")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _tensor(name: str, dims: Sequence[int | str]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims))


def _init(name: str, values: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.ascontiguousarray(values, dtype=np.float32), name)


def arcface(*, seed: int = 7, normalise_in_graph: bool = False) -> bytes:
    """ArcFace stand-in. With ``normalise_in_graph`` the first nodes are named ``Sub``/``Mul``
    (an MXNet-converted model that takes raw 0-255 input, as insightface detects it)."""
    rng = np.random.default_rng(seed)
    weights = rng.normal(0.0, 1.0, size=(3 * 7 * 7, 512)).astype(np.float32) * 0.6
    bias = rng.normal(0.0, 0.1, size=(512,)).astype(np.float32)
    nodes = []
    source = "input.1"
    initializers = [_init("fc.weight", weights), _init("fc.bias", bias)]
    if normalise_in_graph:
        initializers += [_init("mean", np.array(127.5)), _init("scale", np.array(1 / 127.5))]
        nodes += [
            helper.make_node("Sub", [source, "mean"], ["centred"], name="Sub_0"),
            helper.make_node("Mul", ["centred", "scale"], ["scaled"], name="Mul_1"),
        ]
        source = "scaled"
    nodes += [
        helper.make_node("AveragePool", [source], ["pooled"], kernel_shape=[16, 16], strides=[16, 16], name="pool"),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1, name="flatten"),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["683"], name="fc"),
    ]
    return _model(nodes, [_tensor("input.1", [1, 3, 112, 112])], [_tensor("683", [1, 512])], initializers, "arcface-fake")


def _constant_head(input_name: str, size: int, output_name: str, values: np.ndarray, graph_name: str) -> bytes:
    """``input [1, 3, size, size] -> output [1, len(values)]`` = ``values`` (a Gemm with zero weights)."""
    width = values.shape[0]
    nodes = [
        helper.make_node("GlobalAveragePool", [input_name], ["pooled"], name="pool"),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1, name="flatten"),
        helper.make_node("Gemm", ["flat", "head.weight", "head.bias"], [output_name], name="head"),
    ]
    initializers = [_init("head.weight", np.zeros((3, width))), _init("head.bias", values)]
    return _model(nodes, [_tensor(input_name, [1, 3, size, size])], [_tensor(output_name, [1, width])], initializers, graph_name)


def genderage() -> bytes:
    return _constant_head("data", 96, "fc1", np.array(GENDERAGE_OUTPUT, dtype=np.float32), "genderage-fake")


def landmark_106_points() -> np.ndarray:
    """The fake's 106 points, ``(106, 2)`` in [-1, 1] crop units."""
    angles = np.linspace(0.0, 2 * np.pi, 106, endpoint=False)
    return np.stack([0.5 * np.cos(angles), 0.6 * np.sin(angles)], axis=1).astype(np.float32)


def landmark_106() -> bytes:
    return _constant_head("data", 192, "fc1", landmark_106_points().reshape(-1), "landmark106-fake")


@dataclass(frozen=True)
class ScrfdFace:
    """Where the fake SCRFD puts its face, in 640 x 640 network-input px."""

    box: tuple[float, float, float, float]
    landmarks: np.ndarray  # (5, 2)


def scrfd_outputs(face: ScrfdFace, *, input_size: int = 640, stride: int = 32) -> list[np.ndarray]:
    """The 9 constant outputs (scores, boxes, keypoints per stride, ``[A, C]``) that decode to ``face``
    at the anchor nearest its centre (first anchor, score 0.95), plus a duplicate on the cell's second
    anchor (score 0.80, box 4 px larger) that NMS removes."""
    scores = [np.zeros((((input_size // s) ** 2) * 2, 1), np.float32) for s in SCRFD_STRIDES]
    boxes = [np.zeros((((input_size // s) ** 2) * 2, 4), np.float32) for s in SCRFD_STRIDES]
    kps = [np.zeros((((input_size // s) ** 2) * 2, 10), np.float32) for s in SCRFD_STRIDES]
    level = SCRFD_STRIDES.index(stride)
    x1, y1, x2, y2 = face.box
    cells = input_size // stride
    j = int(np.clip(round((x1 + x2) / 2 / stride), 0, cells - 1))
    i = int(np.clip(round((y1 + y2) / 2 / stride), 0, cells - 1))
    cx, cy = j * stride, i * stride
    anchor = (i * cells + j) * 2
    distances = np.array([cx - x1, cy - y1, x2 - cx, y2 - cy], np.float32) / stride
    offsets = ((np.asarray(face.landmarks, np.float32) - np.array([cx, cy], np.float32)) / stride).reshape(-1)
    scores[level][anchor] = 0.95
    boxes[level][anchor] = distances
    kps[level][anchor] = offsets
    scores[level][anchor + 1] = 0.80
    boxes[level][anchor + 1] = distances + 4.0 / stride
    kps[level][anchor + 1] = offsets
    return [*scores, *boxes, *kps]


def scrfd(face: ScrfdFace) -> bytes:
    """SCRFD stand-in: det_10g's input and its 9 outputs (names, order, shapes), constant values.

    Each output is ``constant + 0 * mean(input)``, so the graph reads its input like the real one.
    """
    values = scrfd_outputs(face)
    nodes = [
        helper.make_node("ReduceMean", ["input.1"], ["mean"], keepdims=0, name="reduce"),
        helper.make_node("Mul", ["mean", "zero"], ["nothing"], name="times_zero"),
    ]
    initializers = [_init("zero", np.array(0.0))]
    outputs = []
    for name, value in zip(SCRFD_OUTPUT_NAMES, values, strict=True):
        initializers.append(_init(f"const_{name}", value))
        nodes.append(helper.make_node("Add", [f"const_{name}", "nothing"], [name], name=f"out_{name}"))
        outputs.append(_tensor(name, list(value.shape)))
    return _model(nodes, [_tensor("input.1", [1, 3, "?", "?"])], outputs, initializers, "scrfd-fake")


def emap(*, seed: int = 11) -> np.ndarray:
    """The fake swapper's ``(512, 512)`` float32 identity map."""
    rng = np.random.default_rng(seed)
    return (np.eye(512) + rng.normal(0.0, 0.05, size=(512, 512))).astype(np.float32)


def inswapper() -> bytes:
    """INSwapper stand-in: ``target``, ``source`` -> ``output`` of colour :data:`SWAP_COLOUR`;
    the 512 x 512 emap is the last graph initializer, as insightface reads it."""
    nodes = [
        helper.make_node("Mul", ["target", "zero"], ["blank"], name="blank"),
        helper.make_node("ReduceSum", ["source"], ["identity_sum"], keepdims=0, name="identity"),
        helper.make_node("Mul", ["identity_sum", "zero"], ["identity_zero"], name="identity_zero"),
        helper.make_node("Add", ["blank", "colour"], ["painted"], name="paint"),
        helper.make_node("Add", ["painted", "identity_zero"], ["output"], name="output"),
    ]
    initializers = [
        _init("zero", np.array(0.0)),
        _init("colour", np.array(SWAP_COLOUR, np.float32).reshape(1, 3, 1, 1)),
        _init("buff2fs", emap()),  # last: the emap
    ]
    return _model(
        nodes,
        [_tensor("target", [1, 3, 128, 128]), _tensor("source", [1, 512])],
        [_tensor("output", [1, 3, 128, 128])],
        initializers,
        "inswapper-fake",
    )


def write(directory: Path, name: str, data: bytes) -> tuple[Path, str]:
    """Write ``data`` to ``directory/name``; returns the path and its sha256."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()
