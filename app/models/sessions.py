"""The session factory: the only place in the project that builds `onnxruntime.InferenceSession`.

Every session runs with one intra-op and one inter-op thread and no spinning: the service gets its
parallelism from gunicorn's worker processes, and a session without pool threads is safe to share
copy-on-write across fork (onnxruntime#9800: pool threads do not survive a fork).

CPU memory (ORT_CPU_ARENA, ORT_MEM_PATTERN; docs/BENCHMARKS.md has the measurements):
- "shared" (default): every session allocates its activations from one process-wide arena that grows
  by what is asked (kSameAsRequested), so it can be shrunk: `shrink_shared_arena()` gives its free
  regions back (app/memory.py does that when a worker goes idle). A busy worker keeps its buffers
  and runs as fast as with onnxruntime's default per-session arena.
- "session": onnxruntime's default, one arena per session grown by powers of two, never given back.
- "off": plain malloc/free per run (every run faults its pages in again, which costs CPU time).
The memory pattern (one planned block per run for all activations) is off by default: it about
doubles what a worker keeps, for no speed that bench.suite can tell apart from noise.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from ..config import ARENA_MODES

log = logging.getLogger(__name__)

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
_SHORT_NAMES = {"cpu": CPU, "cuda": CUDA}
_KSAME_AS_REQUESTED = 1  # OrtArenaCfg arena_extend_strategy
_SHRINK = "memory.enable_memory_arena_shrinkage"


class ProviderError(ValueError):
    """ORT_PROVIDERS names a provider this onnxruntime build does not have."""


@dataclass(frozen=True)
class Providers:
    """How sessions are built: the execution providers to ask for, in order of preference (CPU
    always last), and the CPU memory options (ORT_CPU_ARENA, ORT_MEM_PATTERN)."""

    names: tuple[str, ...]
    cpu_arena: str = "shared"  # one of ARENA_MODES
    mem_pattern: bool = False

    @property
    def accelerated(self) -> bool:
        """True when a session holds device state (CUDA contexts) that cannot cross a fork."""
        return any(name != CPU for name in self.names)


def resolve_providers(
    setting: str, *, available: list[str] | None = None, cpu_arena: str = "shared", mem_pattern: bool = False
) -> Providers:
    """Turn ORT_PROVIDERS into a provider list.

    "auto": CUDA when this onnxruntime build offers it, else CPU. "cpu", "cuda", or a comma list of
    full provider names ("CUDAExecutionProvider,CPUExecutionProvider") choose explicitly.
    """
    available = ort.get_available_providers() if available is None else available
    value = setting.strip()
    if value.lower() == "auto":
        names = [CUDA, CPU] if CUDA in available else [CPU]
    else:
        names = [_SHORT_NAMES.get(part.strip().lower(), part.strip()) for part in value.split(",") if part.strip()]
        missing = [name for name in names if name not in available]
        if missing or not names:
            raise ProviderError(
                f"ORT_PROVIDERS={setting!r}: {', '.join(missing) or 'nothing'} not available; "
                f"this onnxruntime offers {', '.join(available)}"
            )
        if CPU not in names:
            names.append(CPU)
    return Providers(tuple(names), cpu_arena=cpu_arena, mem_pattern=mem_pattern)


def session_options(*, cpu_arena: str = "shared", mem_pattern: bool = False) -> ort.SessionOptions:
    """Options shared by every session (see the module docstring for `cpu_arena` and `mem_pattern`)."""
    if cpu_arena not in ARENA_MODES:
        raise ValueError(f"cpu_arena must be one of {', '.join(ARENA_MODES)}, not {cpu_arena!r}")
    options = ort.SessionOptions()
    options.enable_cpu_mem_arena = cpu_arena != "off"
    options.enable_mem_pattern = mem_pattern
    if cpu_arena == "shared":
        options.add_session_config_entry("session.use_env_allocators", "1")
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only: provider fallbacks are reported by us below
    return options


def create_session(model: Path | bytes, *, providers: Providers, label: str) -> ort.InferenceSession:
    """Build a session for `model` (a path or serialized ONNX bytes) and log the active provider.

    Raises RuntimeError-derived onnxruntime errors for corrupt files; callers name the file.
    """
    if providers.cpu_arena == "shared":
        use_shared_arena()
    source = str(model) if isinstance(model, Path) else model
    options = session_options(cpu_arena=providers.cpu_arena, mem_pattern=providers.mem_pattern)
    session = ort.InferenceSession(source, sess_options=options, providers=list(providers.names))
    active = active_provider(session)
    if providers.accelerated and active == CPU:
        log.warning("model %s: %s requested but the session runs on CPU", label, providers.names[0])
    log.debug("model %s: session on %s", label, active)
    return session


# -- the process-wide CPU arena ---------------------------------------------------------------

_arena_lock = threading.Lock()
_shrinker: ort.InferenceSession | None = None  # set once the shared arena is registered
_ONE = np.zeros((1,), dtype=np.float32)  # the shrinker's input


def use_shared_arena() -> None:
    """Register the process-wide CPU arena, once per process (a forked worker inherits it), and
    the one-node session whose runs shrink it."""
    global _shrinker
    with _arena_lock:
        if _shrinker is not None:
            return
        info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
        ort.create_and_register_allocator(info, ort.OrtArenaCfg({"arena_extend_strategy": _KSAME_AS_REQUESTED}))
        _shrinker = ort.InferenceSession(_identity_model(), sess_options=session_options(cpu_arena="shared"),
                                         providers=[CPU])


def shrink_shared_arena() -> bool:
    """Give the shared arena's free regions back to malloc; False when this process has none.

    onnxruntime shrinks an arena only at the end of a run that asks for it, so this runs the
    one-node session on the same arena with the shrink option. Safe while another thread runs a
    model: the arena frees only regions nothing is using, under its own lock.
    """
    shrinker = _shrinker
    if shrinker is None:
        return False
    options = ort.RunOptions()
    options.add_run_config_entry(_SHRINK, "cpu:0")
    shrinker.run(None, {"x": _ONE}, options)
    return True


def _identity_model() -> bytes:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "arena-shrinker",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def active_provider(session: ort.InferenceSession) -> str:
    return session.get_providers()[0]
