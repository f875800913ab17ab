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

Lanes (LONE_REQUEST_THREADS): every CPU session is handed out as a `Lanes` object. Its narrow lane
is the one-thread session built in the master; after the fork each worker may open a wide lane, a
second session of the same pre-optimised file (app/models/optimised.py) whose intra-op pool spans
the cores the container may use. The weights of both lanes, in every worker, are the same pages of
the external data file in the page cache, so the wide lane costs no private copy of them. Which
lane a run takes is chosen per request by the serving layer (`lane()`): the wide one when no other
worker is inferring, the narrow one otherwise.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    always last), by default and per model, and the CPU memory options (ORT_CPU_ARENA, ORT_MEM_PATTERN)."""

    names: tuple[str, ...]
    cpu_arena: str = "shared"  # one of ARENA_MODES
    mem_pattern: bool = False
    per_model: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (model name, its providers)

    def names_for(self, model: str) -> tuple[str, ...]:
        """The providers of `model`: its own (ORT_PROVIDERS=u2net=cuda,...) or the default ones."""
        return dict(self.per_model).get(model, self.names)

    @property
    def accelerated(self) -> bool:
        """True when some session holds device state (CUDA contexts) that cannot cross a fork."""
        return any(name != CPU for names in (self.names, *dict(self.per_model).values()) for name in names)


def _provider_list(parts: list[str], *, setting: str, available: list[str]) -> tuple[str, ...]:
    if len(parts) == 1 and parts[0].lower() == "auto":
        return (CUDA, CPU) if CUDA in available else (CPU,)
    names = [_SHORT_NAMES.get(part.lower(), part) for part in parts]
    missing = [name for name in names if name not in available]
    if missing or not names:
        raise ProviderError(
            f"ORT_PROVIDERS={setting!r}: {', '.join(missing) or 'nothing'} not available; "
            f"this onnxruntime offers {', '.join(available)}"
        )
    if CPU not in names:
        names.append(CPU)
    return tuple(names)


def resolve_providers(
    setting: str, *, available: list[str] | None = None, cpu_arena: str = "shared", mem_pattern: bool = False
) -> Providers:
    """Turn ORT_PROVIDERS into provider lists.

    "auto": CUDA when this onnxruntime build offers it, else CPU. "cpu", "cuda", or a comma list of
    full provider names ("CUDAExecutionProvider,CPUExecutionProvider") choose for every model.
    `model=provider` entries choose for one model ("u2net=cuda,centerface=cpu": the small detector
    stays on the CPU and the GPU keeps its memory for the heavy model); the bare entries, or "auto"
    when there are none, are the default for the others.
    """
    available = ort.get_available_providers() if available is None else available
    parts = [part.strip() for part in setting.split(",") if part.strip()]
    bare = [part for part in parts if "=" not in part]
    per_model: dict[str, tuple[str, ...]] = {}
    for part in parts:
        if "=" in part:
            model, _, provider = (piece.strip() for piece in part.partition("="))
            if not model or not provider:
                raise ProviderError(f"ORT_PROVIDERS={setting!r}: {part!r} is not model=provider")
            per_model[model] = _provider_list([provider], setting=setting, available=available)
    names = _provider_list(bare or ["auto"], setting=setting, available=available)
    return Providers(names, cpu_arena=cpu_arena, mem_pattern=mem_pattern, per_model=tuple(per_model.items()))


def session_options(
    *, cpu_arena: str = "shared", mem_pattern: bool = False, threads: int = 1, preoptimised: bool = False,
    prepack: bool = False,
) -> ort.SessionOptions:
    """Options shared by every session (see the module docstring for `cpu_arena` and `mem_pattern`).

    `threads`: the intra-op pool (1 for the narrow lane; the wide lane's cores). `preoptimised`: the
    graph was saved already optimised (app/models/optimised.py): no optimisation at load, and no
    pre-packed copies of the weights, so they stay the shared pages of the external data file, unless
    `prepack`: an int8 graph's QLinearConv kernels pack their weights at load, and without that pack
    they run at half speed (bench.int8 speed), so they keep it (a private copy, 45 MB for u2net)."""
    if cpu_arena not in ARENA_MODES:
        raise ValueError(f"cpu_arena must be one of {', '.join(ARENA_MODES)}, not {cpu_arena!r}")
    options = ort.SessionOptions()
    options.enable_cpu_mem_arena = cpu_arena != "off"
    options.enable_mem_pattern = mem_pattern
    if cpu_arena == "shared":
        options.add_session_config_entry("session.use_env_allocators", "1")
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if preoptimised:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.add_session_config_entry("session.disable_prepacking", "0" if prepack else "1")
    else:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only: provider fallbacks are reported by us below
    return options


def create_session(
    model: Path | bytes, *, providers: Providers, label: str, preoptimised: bool = False, prepack: bool = False
) -> ort.InferenceSession | Lanes:
    """Build a session for `model` (a path or serialized ONNX bytes; `preoptimised`: a file written
    by app/models/optimised.py; `prepack`: see `session_options`) and log the active provider. A CPU
    session comes wrapped in `Lanes` (the narrow lane now; a wide one may be opened after the fork).

    Raises RuntimeError-derived onnxruntime errors for corrupt files; callers name the file.
    """
    if providers.cpu_arena == "shared":
        use_shared_arena()
    names = providers.names_for(label)
    source = str(model) if isinstance(model, Path) else model
    options = session_options(cpu_arena=providers.cpu_arena, mem_pattern=providers.mem_pattern, preoptimised=preoptimised,
                              prepack=prepack)
    session = ort.InferenceSession(source, sess_options=options, providers=list(names))
    active = active_provider(session)
    if names[0] != CPU and active == CPU:
        log.warning("model %s: %s requested but the session runs on CPU", label, names[0])
    log.debug("model %s: session on %s", label, active)
    if active != CPU:
        return session
    lanes = Lanes(session, label=label, wide_source=model if preoptimised and isinstance(model, Path) else None,
                  providers=providers, prepack=prepack)
    _ALL_LANES.add(lanes)
    return lanes


# -- lanes: one-thread sessions for a busy server, a wide one for a lone request ----------------------

NARROW, WIDE = "narrow", "wide"
_LANE: ContextVar[str] = ContextVar("pilotlight_lane", default=NARROW)
_FORCED: ContextVar[str | None] = ContextVar("pilotlight_forced_lane", default=None)
_ALL_LANES: weakref.WeakSet[Lanes] = weakref.WeakSet()


class Lanes:
    """A CPU session as the models see it: `run` goes to the lane chosen for this request
    (`lane()`), everything else (inputs, outputs, providers) to the narrow session."""

    def __init__(self, narrow: ort.InferenceSession, *, label: str, wide_source: Path | None, providers: Providers,
                 prepack: bool = False) -> None:
        self.narrow = narrow
        self.wide: ort.InferenceSession | None = None
        self.label = label
        self.wide_source = wide_source  # the pre-optimised file; None: no wide lane (it would copy the weights)
        self.prepack = prepack  # the wide lane packs its weights too (an int8 graph: session_options)
        self._providers = providers

    def run(self, *args: Any, **kwargs: Any) -> Any:
        session = self.wide if self.wide is not None and _LANE.get() == WIDE else self.narrow
        return session.run(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.narrow, name)

    def open_wide(self, threads: int) -> bool:
        """Build the wide lane (`threads` intra-op threads) from the pre-optimised file; False when
        this model has none (its narrow lane serves every request)."""
        if self.wide is not None:
            return True
        if self.wide_source is None or threads < 2:
            return False
        options = session_options(
            cpu_arena=self._providers.cpu_arena, mem_pattern=self._providers.mem_pattern, threads=threads, preoptimised=True,
            prepack=self.prepack,
        )
        self.wide = ort.InferenceSession(str(self.wide_source), sess_options=options, providers=[CPU])
        return True


def open_wide_lanes(threads: int) -> list[str]:
    """After the fork: open the wide lane of every CPU session that can have one; returns their labels."""
    return sorted(lanes.label for lanes in list(_ALL_LANES) if lanes.open_wide(threads))


def wide_lanes_open() -> bool:
    return any(lanes.wide is not None for lanes in list(_ALL_LANES))


@contextmanager
def lane(name: str) -> Iterator[str]:
    """Runs inside take the `name` lane, unless a lane is forced (`forced_lane`); yields the lane taken."""
    taken = _FORCED.get() or name
    token = _LANE.set(taken)
    try:
        yield taken
    finally:
        _LANE.reset(token)


@contextmanager
def forced_lane(name: str) -> Iterator[None]:
    """Every `lane()` inside takes `name`, and so does every run made directly inside, outside any
    `lane()` (warm-up warms each lane in turn: its model warm-ups run in no request)."""
    token = _FORCED.set(name)
    lane_token = _LANE.set(name)
    try:
        yield
    finally:
        _LANE.reset(lane_token)
        _FORCED.reset(token)


def current_lane() -> str:
    return _LANE.get()


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


def active_provider(session: ort.InferenceSession | Lanes) -> str:
    return session.get_providers()[0]
