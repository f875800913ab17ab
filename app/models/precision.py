"""Which variant of a model a CPU session runs, fp32 or int8 (MODEL_PRECISION), chosen by measurement.

`auto` (the default): int8 where it is faster on the CPU in hand, fp32 otherwise, once the int8 recipe
has passed the quality gate (`AUTO_PICKS_INT8`; until then int8 is opt-in). Faster means the
int8 forward pass on one thread (the narrow lane, what a busy server runs) takes at most
`INT8_MARGIN` of the fp32 one's, both measured on the graphs the server loads, interleaved. The
measurement is kept as a record in OPTIMISED_HOME beside the pre-optimised graphs (keyed like them
by onnxruntime version and instruction set, and holding the CPU's model name, its int8 dot-product
extensions and the int8 file's sha256), so it runs once: at fetch time (`python -m app.models
fetch|ensure`) or, where no record fits, once at start in the master (a few seconds). Where only one
variant is installed, that one runs (the container image ships int8 alone) and nothing is measured.

`int8` or `fp32` force a variant; a forced variant that is not installed fails start-up with the
command that installs it. Sessions on another provider (CUDA) always run fp32: onnxruntime's int8 QDQ
kernels here are CPU ones, and `int8` with a GPU is logged and ignored for that model.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from . import optimised, quantised
from .base import warmup_card
from .checksums import install_command
from .manifest import ModelSpec
from .sessions import CPU, Lanes, Providers, create_session

log = logging.getLogger(__name__)

AUTO = "auto"
#: Whether `auto` may pick int8 over an installed fp32 file. Only a recipe that passes the quality gate
#: against fp32 on the real-portrait corpus (tests/test_int8_quality.py, `python -m bench.int8 gate`)
#: makes int8 the default; until then it is opt-in (MODEL_PRECISION=int8), and `auto` runs int8 only
#: where it is the one variant installed.
AUTO_PICKS_INT8 = quantised.PASSES_GATE
INT8_MARGIN = 0.9  # int8 wins when its pass takes at most this share of fp32's (a tie keeps fp32's matte)
MEASURE_RUNS = 3  # timed runs of each variant, after one warm-up run each


class PrecisionError(RuntimeError):
    """The variant MODEL_PRECISION asks for is not installed; the message names the command that fixes it."""


@dataclass(frozen=True)
class Measurement:
    fp32_seconds: float  # median forward pass, one thread
    int8_seconds: float

    @property
    def int8_faster(self) -> bool:
        return self.int8_seconds <= INT8_MARGIN * self.fp32_seconds


@dataclass(frozen=True)
class Choice:
    variant: str  # quantised.FP32 or quantised.INT8
    reason: str
    measurement: Measurement | None = None


def decide(
    *,
    setting: str,
    on_cpu: bool,
    fp32_installed: bool,
    int8_installed: bool,
    measure: Callable[[], Measurement],
    vnni: bool = True,
) -> Choice:
    """The variant to run (pure but for calling `measure`, which only `auto` with both installed does).

    `vnni`: the CPU has an int8 dot-product instruction (VNNI, AMX). Without one onnxruntime runs u8s8
    through vpmaddubsw, whose int16 pair sums saturate with 8-bit weights (its quantisation guide says
    to use 7-bit weights there): `auto` keeps fp32 where fp32 is installed.

    Raises PrecisionError when the forced variant, or for `auto` any variant, is missing; the caller
    adds the file names and commands."""
    if not on_cpu:
        reason = "int8 asked for, but this session is not on the CPU: int8 QDQ runs on CPU kernels" if setting == quantised.INT8 \
            else "not on the CPU"
        if not fp32_installed:
            raise PrecisionError(f"{quantised.FP32} file missing")
        return Choice(quantised.FP32, reason)
    if setting == quantised.FP32 or setting == quantised.INT8:
        if not (fp32_installed if setting == quantised.FP32 else int8_installed):
            raise PrecisionError(f"{setting} file missing")
        return Choice(setting, "forced by MODEL_PRECISION")
    if setting != AUTO:
        raise ValueError(f"MODEL_PRECISION must be auto, int8 or fp32, not {setting!r}")
    if not int8_installed and not fp32_installed:
        raise PrecisionError("no file of either variant")
    if not int8_installed:
        return Choice(quantised.FP32, "no int8 file")
    if not fp32_installed:
        return Choice(quantised.INT8, "the only variant installed")
    if not AUTO_PICKS_INT8:
        return Choice(quantised.FP32, "int8 is opt-in (MODEL_PRECISION=int8): it has not passed the quality gate")
    if not vnni:
        return Choice(quantised.FP32, "no VNNI on this CPU: int8 products saturate in onnxruntime's AVX2 kernels")
    measured = measure()
    variant = quantised.INT8 if measured.int8_faster else quantised.FP32
    return Choice(variant, f"measured on this CPU: int8 {measured.int8_seconds:.3f} s, fp32 {measured.fp32_seconds:.3f} s a pass",
                  measured)


# -- the measurement and its record ----------------------------------------------------------------


def cpu_signature() -> dict[str, object]:
    """What the int8 speed depends on besides the instruction set: the CPU's model and its int8
    dot-product extensions (onnxruntime picks VNNI and AMX kernels from these, mlas/lib/platform.cpp)."""
    model, flags = "", set()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name") and not model:
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return {"model": model, "int8": sorted(flags & {"avx512_vnni", "avx_vnni", "amx_int8", "amx_tile", "avx_vnni_int8"})}


def record_path(spec: ModelSpec, optimised_home: Path) -> Path:
    return optimised.files_for(spec, optimised_home).graph.with_name(f"{Path(spec.filename).stem}.precision.json")


def recorded(spec: ModelSpec, optimised_home: Path, *, int8_sha256: object) -> Measurement | None:
    """The measurement on record for this onnxruntime, CPU and int8 file; None when there is none that fits."""
    try:
        data = json.loads(record_path(spec, optimised_home).read_text(encoding="utf-8"))
        if data["cpu"] != cpu_signature() or data["int8_sha256"] != int8_sha256:
            return None
        return Measurement(float(data["fp32_seconds"]), float(data["int8_seconds"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def keep(spec: ModelSpec, optimised_home: Path, measurement: Measurement, *, int8_sha256: object) -> None:
    """Write the record (atomically); a folder that cannot be written only costs a measurement next start."""
    path = record_path(spec, optimised_home)
    body = {
        "model": spec.name,
        "fp32_seconds": measurement.fp32_seconds,
        "int8_seconds": measurement.int8_seconds,
        "int8_faster": measurement.int8_faster,
        "margin": INT8_MARGIN,
        "cpu": cpu_signature(),
        "int8_sha256": int8_sha256,
        "onnxruntime": ort.__version__,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=".precision-")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(body, out, indent=1)
        os.replace(name, path)
    except OSError as exc:
        log.warning("model %s: cannot keep the precision measurement in %s (%s)", spec.name, path.parent, exc.strerror or exc)


def time_sessions(fp32: ort.InferenceSession | Lanes, int8: ort.InferenceSession | Lanes, *, runs: int = MEASURE_RUNS) -> Measurement:
    """Median seconds of one forward pass of each session on the same input (a warm-up run each,
    then `runs` rounds alternating the two, so that load on the machine hits both alike)."""
    inputs = {
        label: {session.get_inputs()[0].name: quantised.network_input(warmup_card(quantised.NETWORK_SIDE))}
        for label, session in (("fp32", fp32), ("int8", int8))
    }
    times: dict[str, list[float]] = {"fp32": [], "int8": []}
    sessions = {"fp32": fp32, "int8": int8}
    for label, session in sessions.items():
        session.run(None, inputs[label])
    for _ in range(runs):
        for label, session in sessions.items():
            started = time.perf_counter()
            session.run(None, inputs[label])
            times[label].append(time.perf_counter() - started)
    return Measurement(float(np.median(times["fp32"])), float(np.median(times["int8"])))


def measure(spec: ModelSpec, *, model_home: Path, optimised_home: Path | None, providers: Providers) -> Measurement:
    """Time fp32 against int8 on one thread as the server would load them (their pre-optimised graphs
    where OPTIMISED_HOME can hold them), keep the record, return it."""
    int8_home = quantised.folder(model_home)
    graphs: dict[str, tuple[Path, bool]] = {}
    for variant, home in ((quantised.FP32, model_home), (quantised.INT8, int8_home)):
        graph = optimised.ensure(spec, home, optimised_home, variant=variant) if optimised_home is not None else None
        graphs[variant] = (graph, True) if graph is not None else (home / spec.filename, False)
    cpu_only = Providers((CPU,), cpu_arena=providers.cpu_arena, mem_pattern=providers.mem_pattern)
    sessions = {
        variant: create_session(path, providers=cpu_only, label=f"{spec.name} ({variant}, measuring)", preoptimised=pre,
                                prepack=variant == quantised.INT8)
        for variant, (path, pre) in graphs.items()
    }
    started = time.perf_counter()
    measurement = time_sessions(sessions[quantised.FP32], sessions[quantised.INT8])
    log.info("model %s: one-thread forward pass fp32 %.3f s, int8 %.3f s (measured in %.1f s): %s runs", spec.name,
             measurement.fp32_seconds, measurement.int8_seconds, time.perf_counter() - started,
             quantised.INT8 if measurement.int8_faster else quantised.FP32)
    if optimised_home is not None:
        keep(spec, optimised_home, measurement, int8_sha256=(quantised.read_record(spec, model_home) or {}).get("sha256"))
    return measurement


# -- the choice for one model ----------------------------------------------------------------------


@dataclass(frozen=True)
class Resolved:
    choice: Choice
    path: Path  # the file to build the model from (its folder holds what optimised.ensure reads)


def resolve(
    spec: ModelSpec,
    *,
    setting: str,
    model_home: Path,
    optimised_home: Path | None,
    providers: Providers,
    fp32_installed: bool,
) -> Resolved:
    """The variant of `spec` this process runs and the file it loads. `fp32_installed`: the fp32 file
    passed the registry's size check. Raises PrecisionError naming the missing file and the command."""
    on_cpu = providers.names_for(spec.name)[0] == CPU
    int8_path = quantised.usable(spec, model_home) if spec.int8 else None

    def measured() -> Measurement:
        record = quantised.read_record(spec, model_home) or {}
        if optimised_home is not None:
            kept = recorded(spec, optimised_home, int8_sha256=record.get("sha256"))
            if kept is not None:
                return kept
        return measure(spec, model_home=model_home, optimised_home=optimised_home, providers=providers)

    vnni = bool(cpu_signature()["int8"])
    try:
        choice = decide(setting=setting if spec.int8 else quantised.FP32, on_cpu=on_cpu, fp32_installed=fp32_installed,
                        int8_installed=int8_path is not None, measure=measured, vnni=vnni)
    except PrecisionError as exc:
        fp32_file = model_home / spec.filename
        int8_file = quantised.files_for(spec, model_home).model
        wanted = {quantised.FP32: f"the fp32 file {fp32_file}", quantised.INT8: f"the int8 file {int8_file}"}
        what = wanted.get(setting, f"{wanted[quantised.FP32]} or {wanted[quantised.INT8]}") if on_cpu else wanted[quantised.FP32]
        raise PrecisionError(
            f"model {spec.name}: MODEL_PRECISION={setting} needs {what}, which is missing or stale ({exc}); run: "
            f"{install_command(spec)} (it installs the fp32 file and derives the int8 one; MODEL_HOME must be writable)"
        ) from None
    if setting == quantised.INT8 and not on_cpu:
        log.warning("model %s: %s; it runs fp32", spec.name, choice.reason)
    if choice.variant == quantised.INT8 and not vnni:
        log.warning("model %s: int8 on a CPU without VNNI: onnxruntime's AVX2 int8 kernels saturate with this "
                    "file's 8-bit weights and the matte drifts from fp32 (bench.int8; MODEL_PRECISION=fp32 avoids it)",
                    spec.name)
    path = int8_path if choice.variant == quantised.INT8 and int8_path is not None else model_home / spec.filename
    log.info("model %s: %s (%s)", spec.name, choice.variant, choice.reason)
    return Resolved(choice, path)
