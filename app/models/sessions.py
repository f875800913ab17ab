"""The session factory: the only place in the project that builds `onnxruntime.InferenceSession`.

Every session runs with one intra-op and one inter-op thread and no spinning: the service gets its
parallelism from gunicorn's worker processes, and a session without pool threads is safe to share
copy-on-write across fork (onnxruntime#9800: pool threads do not survive a fork).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import onnxruntime as ort

log = logging.getLogger(__name__)

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
_SHORT_NAMES = {"cpu": CPU, "cuda": CUDA}


class ProviderError(ValueError):
    """ORT_PROVIDERS names a provider this onnxruntime build does not have."""


@dataclass(frozen=True)
class Providers:
    """How sessions are built: the execution providers to ask for, in order of preference (CPU
    always last), and the CPU memory options (ORT_CPU_ARENA, ORT_MEM_PATTERN)."""

    names: tuple[str, ...]
    cpu_arena: bool = True
    mem_pattern: bool = True

    @property
    def accelerated(self) -> bool:
        """True when a session holds device state (CUDA contexts) that cannot cross a fork."""
        return any(name != CPU for name in self.names)


def resolve_providers(
    setting: str, *, available: list[str] | None = None, cpu_arena: bool = True, mem_pattern: bool = True
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


def session_options(*, cpu_arena: bool = True, mem_pattern: bool = True) -> ort.SessionOptions:
    """Options shared by every session (see the module docstring). `cpu_arena`: onnxruntime keeps
    freed activation buffers for reuse (fast, but resident per worker); `mem_pattern`: it plans one
    block per run for all activations (bench.suite measures both)."""
    options = ort.SessionOptions()
    options.enable_cpu_mem_arena = cpu_arena
    options.enable_mem_pattern = mem_pattern
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
    source = str(model) if isinstance(model, Path) else model
    options = session_options(cpu_arena=providers.cpu_arena, mem_pattern=providers.mem_pattern)
    session = ort.InferenceSession(source, sess_options=options, providers=list(providers.names))
    active = active_provider(session)
    if providers.accelerated and active == CPU:
        log.warning("model %s: %s requested but the session runs on CPU", label, providers.names[0])
    log.debug("model %s: session on %s", label, active)
    return session


def active_provider(session: ort.InferenceSession) -> str:
    return session.get_providers()[0]
