"""Start-up side by side in one run (issue 25): the forward-pass unit, time to ready and its
phases, and the first request of each kind after ready against the steady ones.

    .venv/bin/python -m bench.startup [--starts 2] [--steady 8] [--json bench/results/startup.json]

The unit is the bare u2net forward pass on one thread, in this process, on the cut-out photo's
tensor (median of 10): time to ready is given in those units too, so the figure travels between
machines (FACTS.md). Each fresh start is the server as a user starts it (`./start.sh`, 2 workers,
the default models and warm-up); after /readyz says ready, one request of each kind (a cut-out
and an ID photo, both lanes: alone, so on the wide lane, then two at once on the narrow lanes)
is the first, then `--steady` of each give the median. The cold penalty is the first ÷ that
median; the ID photo's cost is its lone median ÷ the cut-out's lone median.
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnxruntime as ort
from PIL import Image

from tests.support.harness import Call, Server, must
from tests.support.photos import cutout_photo, portrait_photo

from .common import MODEL, WORK, model_home, write_json


def forward_unit(runs: int = 10) -> float:
    """Seconds of one bare u2net forward pass on one thread (median of `runs`, after one)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model_home() / f"{MODEL}.onnx"), options, providers=["CPUExecutionProvider"])
    side = 320  # rembg's u2net input
    with Image.open(io.BytesIO(cutout_photo().jpeg)) as image:
        pixels = np.asarray(image.convert("RGB").resize((side, side)), np.float32) / 255.0
    feed = {session.get_inputs()[0].name: np.ascontiguousarray(pixels.transpose(2, 0, 1)[None])}
    session.run(None, feed)
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        session.run(None, feed)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def one_start(index: int, calls: list[Call], *, steady: int) -> dict:
    server = Server({"PILOTLIGHT_NO_SETUP": "1", "WORKERS": "2", "ORT_PROVIDERS": "cpu"},
                    WORK / "startup" / f"start-{index}.log", name="pilotlight")
    with server:
        times = server.wait_started(timeout=600)
        row: dict = {"ready_s": times["ready_s"], "port_s": times["port_s"], "phases": server.readyz.get("startup", {})}
        for call in calls:  # lone: each kind alone, on the wide lane
            first = must(call.send(server.url), f"first {call.label}")
            rest = [must(call.send(server.url), call.label).seconds for _ in range(steady)]
            row[f"{call.label} lone"] = {"first_s": first.seconds, "median_s": statistics.median(rest),
                                         "stages": first.server_timing}
        with ThreadPoolExecutor(2) as pool:  # two at once: both workers' narrow lanes
            for call in calls:
                pairs = [list(pool.map(lambda _: must(call.send(server.url), call.label).seconds, range(2)))
                         for _ in range(1 + steady // 2)]
                row[f"{call.label} pair"] = {"first_s": max(pairs[0]),
                                             "median_s": statistics.median(s for pair in pairs[1:] for s in pair)}
    return row


def say(line: str) -> None:
    print(line, flush=True)  # noqa: T201 (the table is the output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=2)
    parser.add_argument("--steady", type=int, default=8)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    unit = forward_unit()
    portrait = portrait_photo()
    calls = [Call("cut-out", "/api/v1/remove-background", "image", cutout_photo().jpeg),
             Call("ID photo", "/api/v1/idphoto", "image", portrait.jpeg, {"spec": "us-passport"}),
             Call("cut-out of the portrait", "/api/v1/remove-background", "image", portrait.jpeg)]
    rows = [one_start(index, calls, steady=args.steady) for index in range(args.starts)]
    ready = statistics.median(row["ready_s"] for row in rows)
    say(f"## Start-up ({args.starts} fresh starts, 2 workers, default models and warm-up)")
    say(f"forward-pass unit (bare {MODEL}, 1 thread): {unit:.3f} s")
    say(f"time to ready: {ready:.2f} s = {ready / unit:.1f} forward passes (port open {statistics.median(r['port_s'] for r in rows):.2f} s)")
    phases = rows[0]["phases"]
    for name, seconds in phases.items():
        say(f"  phase {name:<28} {seconds:7.3f} s  {seconds / unit:5.1f} passes")
    say("| request | first after ready (s) | steady median (s) | cold penalty |")
    say("|---|---|---|---|")
    figures = {}
    for key in [k for k in rows[0] if k.endswith((" lone", " pair"))]:
        first = statistics.median(row[key]["first_s"] for row in rows)
        median = statistics.median(row[key]["median_s"] for row in rows)
        figures[key] = {"first_s": first, "median_s": median, "cold_penalty": first / median}
        say(f"| {key} | {first:.3f} | {median:.3f} | {first / median:.2f}x |")
    ratio = figures["ID photo lone"]["median_s"] / figures["cut-out of the portrait lone"]["median_s"]
    say(f"lone ID photo ÷ lone cut-out of the same photo: {ratio:.2f}x")
    say("ID photo stages (first request, ms): " + ", ".join(
        f"{name} {seconds * 1000:.0f}" for name, seconds in rows[0]["ID photo lone"]["stages"].items()))
    if args.json:
        write_json(args.json, {"unit_s": unit, "ready_s": ready, "ready_passes": ready / unit, "phases": phases,
                               "requests": figures, "idphoto_over_cutout": ratio, "starts": rows})


if __name__ == "__main__":
    main()
