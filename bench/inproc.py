"""In-process measurements, each run by the suite in a fresh interpreter that prints one JSON object.

    .venv/bin/python -m bench.inproc pipeline  --runs 10
    .venv/bin/python -m bench.inproc preopt    --runs 5

pipeline   The floor under the server's latency, on the same photos and the same sessions, on
           the lane a lone request takes in a worker (the wide lane, LONE_REQUEST_THREADS threads,
           where it opens; the bare forward pass on one thread): the Flask app's own handling of the request through
           its test client (no HTTP, no gunicorn) and, inside it, the time spent in
           `InferenceSession.run` (every model's session is wrapped with a timer).
preopt     Pre-optimised models: load time of the original u2net.onnx (optimised at every load), of
           a graph saved already optimised, and of that graph with its weights in an external data
           file and prepacking off; then the memory of two forked children that use a session
           inherited from the parent (preload) or build their own after the fork (lazy, GPU).

Forked children leave with os._exit: onnxruntime 1.29-1.32 hangs at exit in a forked child (FACTS).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from app import create_app  # noqa: I001  (app first: it pins the native thread pools)
from app.service import Service
import numpy as np
import onnxruntime as ort
from PIL import Image

from app.config import Settings
from app.models import sessions
from app.models.sessions import session_options, use_shared_arena

from tests.support.harness import parse_server_timing, private_kib, shared_kib, smaps_rollup, summary
from tests.support.photos import cutout_photo, portrait_photo

from .common import MODEL, WORK, model_home

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def u2net_feed(photo_jpeg: bytes, input_name: str) -> dict[str, np.ndarray]:
    """rembg's U2netSession.normalize on the photo: the tensor every request feeds the network."""
    image = Image.open(io.BytesIO(photo_jpeg)).convert("RGB").resize((320, 320), Image.Resampling.LANCZOS)
    array = np.asarray(image, dtype=np.float64)
    array = array / max(array.max(), 1e-6)
    tensor = (array - np.array(MEAN)) / np.array(STD)
    return {input_name: np.expand_dims(tensor.transpose((2, 0, 1)), 0).astype(np.float32)}


# -- pipeline -------------------------------------------------------------------------------------


class RunTimer:
    """Wraps `InferenceSession.run` of every session it is given; adds up the seconds spent inside."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    def wrap(self, session: ort.InferenceSession) -> None:
        original = session.run

        def run(*args: object, **kwargs: object) -> object:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
                self.calls += 1

        session.run = run  # type: ignore[method-assign]

    def reset(self) -> None:
        self.seconds = 0.0
        self.calls = 0


def sessions_in(model: object, depth: int = 3) -> list[ort.InferenceSession]:
    """The onnxruntime sessions a loaded model object holds (attributes, a few levels down)."""
    if isinstance(model, ort.InferenceSession):
        return [model]
    if depth == 0 or not hasattr(model, "__dict__"):
        return []
    found: list[ort.InferenceSession] = []
    for value in vars(model).values():
        found += sessions_in(value, depth - 1)
    return found


def pipeline(runs: int, warmup: int) -> dict[str, object]:
    settings = Settings.from_env().with_overrides(models=(MODEL, "centerface"), segmentation_model=MODEL)
    app = create_app(settings)
    runtime = Service.of(app)
    runtime.load()
    runtime.wide_threads = settings.lone_request_threads  # as serving/hooks.py's post_fork sets it
    wide = bool(runtime.open_wide_lanes())  # as a worker does after the fork: a lone request runs on it
    timer = RunTimer()
    for entry in runtime.registry.loaded():
        for session in sessions_in(entry.model):
            timer.wrap(session)
    client = app.test_client()
    cutout, portrait = cutout_photo(), portrait_photo()
    segmenter_session = sessions_in(runtime.registry.get(MODEL).model)[0]
    feed = u2net_feed(cutout.jpeg, segmenter_session.get_inputs()[0].name)

    def request(path: str, photo_jpeg: bytes, fields: dict[str, str]) -> tuple[float, float, dict[str, float]]:
        timer.reset()
        started = time.perf_counter()
        with sessions.lane(sessions.WIDE if wide else sessions.NARROW):
            response = client.post(path, data={**fields, "image": (io.BytesIO(photo_jpeg), "photo.jpg")})
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise RuntimeError(f"{path}: {response.status_code} {response.get_data(as_text=True)[:300]}")
        return elapsed, timer.seconds, parse_server_timing(response.headers.get("Server-Timing", ""))

    result: dict[str, object] = {"runs": runs, "warmup": warmup, "lane": sessions.WIDE if wide else sessions.NARROW}
    for key, path, photo, fields in (
        ("remove_background", "/api/v1/remove-background", cutout, {}),
        ("idphoto", "/api/v1/idphoto", portrait, {"spec": "us-passport"}),
    ):
        for _ in range(warmup):
            request(path, photo.jpeg, fields)
        samples = [request(path, photo.jpeg, fields) for _ in range(runs)]
        stage_names = list(samples[0][2])
        result[key] = {
            "photo": photo.name,
            "app": summary([s[0] for s in samples]),
            "ort_run": summary([s[1] for s in samples]),
            "stages": {name: statistics.median(s[2].get(name, 0.0) for s in samples) for name in stage_names},
        }
    # the bare forward pass on the cutout photo's tensor (no pre/post-processing)
    for _ in range(warmup):
        segmenter_session.run(None, feed)
    timer.reset()
    bare = []
    for _ in range(runs):
        started = time.perf_counter()
        segmenter_session.run(None, feed)
        bare.append(time.perf_counter() - started)
    result["forward_u2net"] = summary(bare)
    return result


def in_child(work: Callable[[], object]) -> object:
    """Fork, run `work` in the child, return what it returned (JSON through a pipe)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        try:
            payload = json.dumps({"ok": work()})
        except BaseException as exc:  # noqa: BLE001  (reported to the parent, which raises)
            payload = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
        with os.fdopen(write_end, "w") as pipe:
            pipe.write(payload)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        data = json.loads(pipe.read() or '{"error": "child died"}')
    os.waitpid(pid, 0)
    if "error" in data:
        raise RuntimeError(f"child failed: {data['error']}")
    return data["ok"]


# -- pre-optimised models -----------------------------------------------------------------------


def optimised_files(source: Path, folder: Path) -> tuple[Path, Path, Path]:
    """Write (once) u2net's graph as onnxruntime optimises it, inline and with external data."""
    folder.mkdir(parents=True, exist_ok=True)
    inline = folder / f"{source.stem}.opt.onnx"
    external = folder / f"{source.stem}.opt-ext.onnx"
    weights = folder / f"{source.stem}.opt-ext.bin"
    stamp = f"{source.stat().st_size}-{int(source.stat().st_mtime)}-{ort.__version__}"
    marker = folder / f"{source.stem}.stamp"
    if not (inline.is_file() and external.is_file() and weights.is_file() and marker.is_file() and marker.read_text() == stamp):
        for path, extra in ((inline, {}), (external, {
            "session.optimized_model_external_initializers_file_name": weights.name,
            "session.optimized_model_external_initializers_min_size_in_bytes": "1024",
        })):
            options = session_options()
            options.optimized_model_filepath = str(path)
            for key, value in extra.items():
                options.add_session_config_entry(key, value)
            ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        marker.write_text(stamp)
    return inline, external, weights


def preopt_variants(source: Path, folder: Path) -> dict[str, tuple[str, Path, dict[str, str], bool, list[Path]]]:
    """name -> (description, model file, session config entries, optimise at load, files on disk)."""
    inline, external, weights = optimised_files(source, folder)
    return {
        "original": ("u2net.onnx as shipped, optimised at every load (the current default)", source, {}, True, [source]),
        "optimised": ("graph saved already optimised (optimized_model_filepath), loaded with optimisations off", inline, {}, False, [inline]),
        "optimised-external": (
            "optimised graph + weights in an external data file, session.disable_prepacking=1",
            external, {"session.disable_prepacking": "1"}, False, [external, weights],
        ),
    }


def preopt_session(path: Path, entries: dict[str, str], optimise: bool) -> ort.InferenceSession:
    options = session_options()
    if not optimise:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for key, value in entries.items():
        options.add_session_config_entry(key, value)
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def preopt(runs: int, warmup: int, loads: int, children: int = 2) -> dict[str, object]:
    use_shared_arena()  # the default ORT_CPU_ARENA=shared, as in the server
    source = model_home() / f"{MODEL}.onnx"
    in_child(lambda: [str(path) for path in optimised_files(source, WORK / "optimised")])  # written in a child: this process stays lean
    variants = preopt_variants(source, WORK / "optimised")
    photo = cutout_photo().jpeg
    result: dict[str, object] = {"children": children, "runs": runs}
    rows = {}
    for name, (description, path, entries, optimise, files) in variants.items():

        def time_loads(path: Path = path, entries: dict[str, str] = entries, optimise: bool = optimise) -> list[float]:
            times = []
            for _ in range(loads):
                started = time.perf_counter()
                preopt_session(path, entries, optimise)
                times.append(time.perf_counter() - started)
            return times

        load_times = in_child(time_loads)  # a forked child, so this process stays as it was
        files_mib = sum(file.stat().st_size for file in files) / 2**20
        row: dict[str, object] = {"description": description, "load": summary(load_times), "file_mib": files_mib}
        for mode in ("preload", "lazy"):
            row[mode] = fork_children(path, entries, optimise, photo, mode=mode, children=children, runs=runs, warmup=warmup)
        rows[name] = row
    result["variants"] = rows
    return result


def fork_children(path: Path, entries: dict[str, str], optimise: bool, photo: bytes, *, mode: str, children: int, runs: int, warmup: int) -> dict[str, object]:
    """`children` forked processes run the model `runs` times each, one after the other, and stay
    alive until every one is measured. preload: the session is built in this process before the
    fork; lazy: each child builds its own. Runs in a fresh forked parent so sessions don't pile up."""

    def parent_side() -> dict[str, object]:
        session = preopt_session(path, entries, optimise) if mode == "preload" else None
        kids: list[tuple[int, int, list[float]]] = []  # (pid, the pipe that lets it exit, its run times)
        for _ in range(children):
            ready_r, ready_w = os.pipe()
            go_r, go_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(ready_r)
                os.close(go_w)
                own = session if session is not None else preopt_session(path, entries, optimise)
                feed = u2net_feed(photo, own.get_inputs()[0].name)
                times = []
                for index in range(warmup + runs):
                    started = time.perf_counter()
                    own.run(None, feed)
                    if index >= warmup:
                        times.append(time.perf_counter() - started)
                os.write(ready_w, json.dumps(times).encode())
                os.close(ready_w)
                os.read(go_r, 1)  # stay alive until the parent has read everyone's memory
                os._exit(0)
            os.close(ready_w)
            os.close(go_r)
            # one child at a time: the timings are not a contest for the two cores
            with os.fdopen(ready_r) as handle:
                times_json = handle.read()
            kids.append((pid, go_w, json.loads(times_json or "[]")))
        time.sleep(0.2)
        memory = [smaps_rollup(pid) for pid, _, _ in kids]
        own_memory = smaps_rollup(os.getpid())
        for pid, go_w, _ in kids:
            os.write(go_w, b"x")
            os.close(go_w)
            os.waitpid(pid, 0)
        return {
            "tree_pss_mib": (own_memory["Pss"] + sum(m["Pss"] for m in memory)) / 1024,
            "parent_pss_mib": own_memory["Pss"] / 1024,
            "child_private_mib": statistics.fmean(private_kib(m) for m in memory) / 1024,
            "child_shared_mib": statistics.fmean(shared_kib(m) for m in memory) / 1024,
            "latency": summary([t for _, _, times in kids for t in times]),
        }

    return in_child(parent_side)  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("pipeline", "preopt"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--loads", type=int, default=3)
    args = parser.parse_args()
    if args.what == "pipeline":
        result = pipeline(args.runs, args.warmup)
    else:
        result = preopt(args.runs, args.warmup, args.loads)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)  # the parent imported onnxruntime and ran sessions: skip the exit-time destructors


if __name__ == "__main__":
    main()
