from __future__ import annotations

from pathlib import Path

import pytest

from app.config import ConfigError, Settings
from app.models.sessions import CPU, CUDA, ProviderError, resolve_providers


def test_defaults() -> None:
    settings = Settings.from_env({"HOME": "/home/u"})
    assert settings.port == 8000 and settings.host == "127.0.0.1"
    assert settings.models == ("u2net", "centerface") and settings.segmentation_model == "u2net"
    assert settings.preload_models is True and settings.warmup_requests == 2
    assert settings.model_home == Path("/home/u/.cache/pilotlight/models")
    assert settings.workers >= 1


def test_values_are_parsed() -> None:
    settings = Settings.from_env(
        {"PORT": "9000", "WORKERS": "4", "MODELS": "u2netp, centerface,u2netp", "SEGMENTATION_MODEL": "u2netp",
         "PRELOAD_MODELS": "false", "MAX_UPLOAD_MB": "2.5", "HOST": "::1", "MODEL_HOME": "/m"}
    )
    assert settings.port == 9000 and settings.workers == 4
    assert settings.models == ("u2netp", "centerface")
    assert settings.preload_models is False and settings.max_upload_bytes == int(2.5 * 1024 * 1024)
    assert settings.bind == "[::1]:9000" and settings.model_home == Path("/m")


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"PORT": "eighty"}, "PORT"),
        ({"PORT": "70000"}, "PORT"),
        ({"PRELOAD_MODELS": "maybe"}, "PRELOAD_MODELS"),
        ({"LOG_LEVEL": "loud"}, "LOG_LEVEL"),
        ({"MODELS": "u2netp"}, "SEGMENTATION_MODEL"),
        ({"MODELS": " , "}, "MODELS"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        Settings.from_env(env)


def test_providers() -> None:
    assert resolve_providers("auto", available=[CPU]).names == (CPU,)
    assert resolve_providers("auto", available=[CUDA, CPU]).names == (CUDA, CPU)
    assert resolve_providers("cuda", available=[CUDA, CPU]).accelerated
    assert not resolve_providers("cpu", available=[CUDA, CPU]).accelerated
    with pytest.raises(ProviderError, match="CUDAExecutionProvider"):
        resolve_providers("cuda", available=[CPU])


def test_memory_settings_reach_the_session_factory() -> None:
    from app.models.sessions import session_options

    settings = Settings.from_env({"ORT_CPU_ARENA": "off", "ORT_MEM_PATTERN": "on", "RELEASE_MEMORY": "request", "RELEASE_MEMORY_IDLE_S": "2.5"})
    providers = settings.session_providers()
    assert providers.cpu_arena == "off" and providers.mem_pattern is True
    assert settings.release_memory == "request" and settings.release_memory_idle_s == 2.5
    options = session_options(cpu_arena=providers.cpu_arena, mem_pattern=providers.mem_pattern)
    assert options.enable_cpu_mem_arena is False and options.enable_mem_pattern is True
    defaults = Settings.from_env({})
    assert (defaults.ort_cpu_arena, defaults.ort_mem_pattern, defaults.release_memory) == ("shared", False, "idle")
    shared = session_options()
    assert shared.enable_cpu_mem_arena is True and shared.enable_mem_pattern is False
    assert shared.get_session_config_entry("session.use_env_allocators") == "1"
    assert session_options(cpu_arena="session").enable_cpu_mem_arena is True
    with pytest.raises(ConfigError, match="RELEASE_MEMORY"):
        Settings.from_env({"RELEASE_MEMORY": "always"})
    with pytest.raises(ConfigError, match="ORT_CPU_ARENA"):
        Settings.from_env({"ORT_CPU_ARENA": "true"})


def test_inference_gate_releases_after_a_request_only_when_asked() -> None:
    from app.memory import malloc_trim
    from app.runtime import InferenceGate

    assert malloc_trim() is True  # glibc here
    eager = InferenceGate(queue_depth=1, wait_timeout=1.0, release_after_request=True)
    lazy = InferenceGate(queue_depth=1, wait_timeout=1.0)
    for gate in (eager, lazy):
        with gate.slot():
            assert gate.idle_for() == 0.0
    assert eager.released is True and lazy.released is False
    assert lazy.idle_for() >= 0.0
    lazy.release()
    assert lazy.released is True


def test_memory_keepers_hand_out_slots_and_free_a_dead_workers() -> None:
    from app.runtime import MemoryKeepers

    keepers = MemoryKeepers(1)
    assert keepers.claim(101) and keepers.claim(101)  # idempotent for the holder
    assert not keepers.claim(102) and keepers.holds(101) and not keepers.holds(102)
    keepers.drop(102)  # not a keeper: nothing changes
    assert keepers.holds(101)
    keepers.drop(101)  # the master, when the keeper has exited
    assert keepers.claim(102) and keepers.holds(102) and not keepers.holds(101)
    two = MemoryKeepers(2)
    assert two.claim(1) and two.claim(2) and not two.claim(3)
    none = MemoryKeepers(0)
    assert not none.claim(1) and not none.holds(1)


# A fresh interpreter per arena mode (the shared arena is registered once per process): a model whose
# activations are ~200 MB, run twice, then app.memory.release(); prints resident MiB after the runs
# and after the release.
_RELEASE_PROBE = """
import sys
import app  # native thread settings first, as every entry point
import numpy as np
from onnx import TensorProto, helper
from app.memory import release
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
