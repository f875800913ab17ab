"""Pre-optimised models: each model's graph as onnxruntime optimises it, saved once with its weights
in an external data file.

A session built from such a file loads in milliseconds (no graph optimisation at load), and every
session of the model, narrow or wide, in the master and in every worker, reads the same weight pages
of the data file from the page cache instead of holding its own copy (app/models/sessions.py: Lanes).

They live in `OPTIMISED_HOME/<key>/` (default `MODEL_HOME/optimised`): `<name>.onnx` (the graph),
`<name>.onnx.data` (the weights) and `<name>.json` (the sha256 and size of both, and the size and
sha256 of the model file they came from); a model's int8 variant (app/models/quantised.py) has its
own, `<name>.int8.onnx` and so on. The key names the onnxruntime version and the CPU's vector
instruction set, because the saved graph holds layout choices (NCHWc blocking) that depend on both.
The fetch command writes them (`python -m app.models fetch|ensure`); a server that finds none for
its onnxruntime and CPU (a new version, another machine, a container whose image holds only the
original files) writes them before it loads, once, in the master, where OPTIMISED_HOME is
writable, and loads the original file where it is not (slower to load, and no wide lane: it
would copy the weights).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import onnxruntime as ort

from .fetch import sha256_of
from .manifest import ModelSpec

log = logging.getLogger(__name__)

MIN_EXTERNAL_BYTES = 1024  # initializers at least this big go to the data file


def instruction_set() -> str:
    """The widest vector instruction set this CPU offers that onnxruntime's kernels lay out for."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            flags = next((line.split(":", 1)[1].split() for line in handle if line.startswith("flags")), [])
    except OSError:
        flags = []
    for isa in ("avx512f", "avx2", "avx", "sse4_1"):
        if isa in flags:
            return isa
    return "base"


def cache_key() -> str:
    return f"ort-{ort.__version__}-{instruction_set()}"


@dataclass(frozen=True)
class OptimisedFiles:
    graph: Path
    data: Path
    record: Path


def session_source(spec: ModelSpec, path: Path) -> Path | bytes:
    """The model as its sessions load it: the file, or for CenterFace its graph with symbolic input
    dimensions (the shipped file declares a fixed [10, 3, 32, 32])."""
    if spec.family == "centerface":
        from .centerface import make_dims_dynamic

        return make_dims_dynamic(path.read_bytes())
    return path


FP32 = "fp32"  # the manifest's own file; other variants (app/models/quantised.py: "int8") get a suffix


def files_for(spec: ModelSpec, optimised_home: Path, *, key: str | None = None, variant: str = FP32) -> OptimisedFiles:
    folder = optimised_home / (key or cache_key())
    stem = Path(spec.filename).stem + ("" if variant == FP32 else f".{variant}")
    return OptimisedFiles(folder / f"{stem}.onnx", folder / f"{stem}.onnx.data", folder / f"{stem}.json")


def usable(spec: ModelSpec, model_home: Path, optimised_home: Path, *, variant: str = FP32) -> Path | None:
    """The pre-optimised graph of `spec` for this onnxruntime and CPU when it is there, came from a
    model file of the present one's size, and its graph and weights have the sha256 on record (they
    live in a writable folder, /tmp in the image: a torn or altered file is written again, never
    loaded; hashing the 176 MB of u2net's weights takes about 0.1 s and reads them into the page
    cache the sessions load them from); else None. `model_home`: the folder of the file the graph
    is made from (for the int8 variant, app.models.quantised.folder)."""
    files = files_for(spec, optimised_home, variant=variant)
    try:
        record = json.loads(files.record.read_text())
        sizes = (files.graph.stat().st_size, files.data.stat().st_size, (model_home / spec.filename).stat().st_size)
        intact = sizes == (record["graph"]["size"], record["data"]["size"], record["source_size"]) and (
            sha256_of(files.graph) == record["graph"]["sha256"] and sha256_of(files.data) == record["data"]["sha256"]
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not intact:
        log.warning("model %s: pre-optimised files in %s are stale or damaged; they are written again",
                    spec.name, files.graph.parent)
        return None
    return files.graph


def verify(spec: ModelSpec, model_home: Path, optimised_home: Path, *, variant: str = FP32) -> bool:
    """True when the pre-optimised files match their recorded sha256 and the model file they came from."""
    files = files_for(spec, optimised_home, variant=variant)
    try:
        record = json.loads(files.record.read_text())
        return (
            sha256_of(files.graph) == record["graph"]["sha256"]
            and sha256_of(files.data) == record["data"]["sha256"]
            and sha256_of(model_home / spec.filename) == record["source_sha256"]
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


def write(spec: ModelSpec, model_home: Path, optimised_home: Path, *, variant: str = FP32) -> Path:
    """Optimise the model as its sessions load it and save graph + data + record for this key;
    each file is renamed into place once complete, the record last."""
    from .sessions import session_options  # onnxruntime's options, one place

    source = session_source(spec, model_home / spec.filename)
    files = files_for(spec, optimised_home, variant=variant)
    files.graph.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=files.graph.parent, prefix=".writing-") as scratch:
        graph = Path(scratch) / files.graph.name
        options = session_options(cpu_arena="off")
        options.optimized_model_filepath = str(graph)
        options.add_session_config_entry("session.optimized_model_external_initializers_file_name", files.data.name)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", str(MIN_EXTERNAL_BYTES)
        )
        ort.InferenceSession(str(source) if isinstance(source, Path) else source, sess_options=options,
                             providers=["CPUExecutionProvider"])
        data = Path(scratch) / files.data.name
        if not data.is_file():  # a model without large initializers: an empty data file keeps one shape
            data.write_bytes(b"")
        record = {
            "model": spec.name,
            "variant": variant,
            "key": cache_key(),
            "graph": {"size": graph.stat().st_size, "sha256": sha256_of(graph)},
            "data": {"size": data.stat().st_size, "sha256": sha256_of(data)},
            "source_size": (model_home / spec.filename).stat().st_size,
            "source_sha256": sha256_of(model_home / spec.filename),
        }
        files.record.unlink(missing_ok=True)  # no record: not usable while the files are replaced
        os.replace(data, files.data)
        os.replace(graph, files.graph)
        staged = Path(scratch) / files.record.name
        staged.write_text(json.dumps(record, indent=2))
        os.replace(staged, files.record)
    log.info("%s (%s): pre-optimised for %s (%.1f MB of weights shared from %s)", spec.name, variant, cache_key(),
             files.data.stat().st_size / 1e6, files.data)
    return files.graph


def ensure(spec: ModelSpec, model_home: Path, optimised_home: Path, *, variant: str = FP32) -> Path | None:
    """The usable pre-optimised graph, written first if there is none; None where OPTIMISED_HOME
    cannot be written (logged: the original file is loaded instead)."""
    graph = usable(spec, model_home, optimised_home, variant=variant)
    if graph is not None:
        return graph
    try:
        return write(spec, model_home, optimised_home, variant=variant)
    except OSError as exc:
        log.warning("model %s: cannot write pre-optimised files in %s (%s); loading the original file",
                    spec.name, optimised_home, exc.strerror or exc)
        return None
