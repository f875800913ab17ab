"""The session factory's shared CPU arena and its release (app/models/sessions.py, app/serving/memory.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


# A fresh interpreter per arena mode (the shared arena is registered once per process): a model whose
# activations are ~200 MB, run twice, then app.serving.memory.release(); prints resident MiB after the runs
# and after the release.
_RELEASE_PROBE = """
import sys
import app  # native thread settings first, as every entry point
import numpy as np
from onnx import TensorProto, helper
from app.serving.memory import release
from app.models.sessions import Providers, create_session

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["b"]),
         helper.make_node("Relu", ["b"], ["c"]), helper.make_node("Add", ["a", "c"], ["d"]),
         helper.make_node("ReduceSum", ["d"], ["y"], keepdims=0)]
graph = helper.make_graph(nodes, "wide", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 512, 512])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
session = create_session(model.SerializeToString(), providers=Providers(("CPUExecutionProvider",), cpu_arena=sys.argv[1]), label="wide")
x = np.ones((1, 64, 512, 512), dtype=np.float32)
for _ in range(2):
    session.run(None, {"x": x})
busy = rss()
release()
print(busy, rss())
"""


@pytest.mark.parametrize("arena", ["shared", "session"])
def test_release_gives_the_shared_arena_back(arena: str) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _RELEASE_PROBE, arena], capture_output=True, text=True, timeout=120,  # noqa: S603
                          cwd=Path(__file__).resolve().parents[1], check=True)
    busy, released = map(float, done.stdout.split())
    if arena == "shared":
        assert busy - released > 100, (busy, released)  # two of the three 64 MiB buffers went back
    else:
        assert busy - released < 20, (busy, released)  # onnxruntime's per-session arena keeps them
