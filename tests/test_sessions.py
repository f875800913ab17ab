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


def test_providers_per_model() -> None:
    from app.models.sessions import CPU, CUDA, ProviderError, resolve_providers

    plan = resolve_providers("u2net=cuda,centerface=cpu", available=[CUDA, CPU])
    assert plan.names_for("u2net") == (CUDA, CPU) and plan.names_for("centerface") == (CPU,)
    assert plan.names_for("arcface") == (CUDA, CPU)  # no bare entry: auto for the others
    assert plan.accelerated
    cpu_default = resolve_providers("cpu,u2net=cuda", available=[CUDA, CPU])
    assert cpu_default.names_for("centerface") == (CPU,) and cpu_default.names_for("u2net") == (CUDA, CPU)
    assert not resolve_providers("u2net=cpu", available=[CPU]).accelerated
    with pytest.raises(ProviderError, match="CUDAExecutionProvider"):
        resolve_providers("u2net=cuda", available=[CPU])
    with pytest.raises(ProviderError, match="model=provider"):
        resolve_providers("u2net=", available=[CPU])


def _tiny_model(path: Path) -> Path:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper, save

    weight = numpy_helper.from_array(np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096, name="w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], initializer=[weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    save(model, str(path))
    return path


def test_lanes_run_the_chosen_session_and_share_the_preoptimised_weights(tmp_path: Path) -> None:
    import numpy as np

    from app.models import optimised, sessions
    from app.models.manifest import ModelSpec, Role

    spec = ModelSpec(name="tiny", role=Role.SEGMENTATION, family="rembg", filename="tiny.onnx", size=None,
                     sha256=None, licence="test", sources=(), description="test")
    _tiny_model(tmp_path / "tiny.onnx")
    home = tmp_path / "optimised"
    assert optimised.usable(spec, tmp_path, home) is None
    graph = optimised.ensure(spec, tmp_path, home)
    assert graph is not None and optimised.usable(spec, tmp_path, home) == graph and optimised.verify(spec, tmp_path, home)
    data = optimised.files_for(spec, home).data
    assert data.stat().st_size >= 64 * 64 * 4  # the weights live in the data file, not the graph

    providers = sessions.Providers((sessions.CPU,), cpu_arena="off")
    lanes = sessions.create_session(graph, providers=providers, label="tiny", preoptimised=True)
    assert isinstance(lanes, sessions.Lanes) and lanes.wide is None
    x = np.ones((1, 64), dtype=np.float32)
    narrow = lanes.run(None, {"x": x})[0]
    assert lanes.open_wide(2) and lanes.wide is not None
    with sessions.lane(sessions.WIDE) as taken:
        assert taken == "wide" and sessions.current_lane() == "wide"
        wide = lanes.run(None, {"x": x})[0]
    assert np.array_equal(narrow, wide)
    with sessions.forced_lane(sessions.NARROW), sessions.lane(sessions.WIDE) as taken:
        assert taken == "narrow"  # warm-up forces a lane whatever the gate picks
    # a model's own warm-up runs in no request: the forced lane is the one it runs on
    runs: list[str] = []
    lanes.narrow, lanes.wide = _Recording("narrow", lanes.narrow, runs), _Recording("wide", lanes.wide, runs)
    with sessions.forced_lane(sessions.WIDE):
        lanes.run(None, {"x": x})
    with sessions.forced_lane(sessions.NARROW):
        lanes.run(None, {"x": x})
    assert runs == ["wide", "narrow"]

    # a session of the original file has no wide lane: it would copy the weights
    original = sessions.create_session(tmp_path / "tiny.onnx", providers=providers, label="tiny")
    assert isinstance(original, sessions.Lanes) and not original.open_wide(2)

    # a changed model file makes the pre-optimised files stale: written again
    _tiny_model(tmp_path / "tiny.onnx")
    with open(tmp_path / "tiny.onnx", "ab") as handle:
        handle.write(b"\0" * 16)
    assert optimised.usable(spec, tmp_path, home) is None


def test_usable_cpus_follow_the_cgroup_quota(tmp_path: Path) -> None:
    from app.config import available_cpus, cgroup_cpu_limit

    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_limit(tmp_path) == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_limit(tmp_path) is None
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("50000")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000")
    assert cgroup_cpu_limit(v1) == 0.5
    assert available_cpus() >= 1


class _Recording:
    """A session stand-in that records which lane ran, then runs the real session."""

    def __init__(self, name: str, session: object, runs: list[str]) -> None:
        self.name, self.session, self.runs = name, session, runs

    def run(self, *args: object, **kwargs: object) -> object:
        self.runs.append(self.name)
        return self.session.run(*args, **kwargs)
