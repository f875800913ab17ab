"""The same measurements on an NVIDIA GPU: pilotlight with onnxruntime-gpu, `ORT_PROVIDERS=cuda`.

    .venv/bin/pip uninstall -y onnxruntime && .venv/bin/pip install onnxruntime-gpu==1.32.0   # the CPU pin's version
    .venv/bin/python -m bench.gpu [--quick]

Needs `nvidia-smi` and an onnxruntime build with CUDAExecutionProvider (and the CUDA/cuDNN libraries
it links against). With CUDA providers the gunicorn master loads nothing: each worker creates its
CUDA sessions after the fork (app/serving/hooks.py post_fork), so VRAM is per worker, and it is
measured per worker pid with `nvidia-smi --query-compute-apps=pid,used_memory`.

For 1 and 2 workers: time to the port and to /readyz 200, the first cut-out request after ready
and the next ones (cold penalty, p50/p90/p99), ID photo latency, closed-loop throughput and its
latency (2 clients per worker), VRAM per worker and host PSS after traffic, shutdown. Then the
in-process floor on the GPU (bench/inproc.py pipeline). Writes bench/results/gpu.json and, when
bench/results/cpu.json exists, regenerates docs/BENCHMARKS.md with a GPU section.
rembg s is not run here: its venv has the CPU onnxruntime.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from tests.support.harness import closed_loop, must, sequential, serve_every_worker, summary

from .common import DOCS, RESULTS, WORK, median, say, write_json
from .suite import Plan, calls, machine, pilotlight, run_inproc

CUDA = "CUDAExecutionProvider"


def nvidia_smi(*query: str) -> list[list[str]]:
    completed = subprocess.run(["nvidia-smi", *query, "--format=csv,noheader,nounits"],  # noqa: S603, S607
                               capture_output=True, text=True, timeout=30, check=True)
    return [[cell.strip() for cell in line.split(",")] for line in completed.stdout.strip().splitlines() if line.strip()]


def vram_by_pid() -> dict[int, float]:
    """MiB of GPU memory per process (compute apps)."""
    result: dict[int, float] = {}
    for row in nvidia_smi("--query-compute-apps=pid,used_memory"):
        try:
            result[int(row[0])] = float(row[1])
        except (ValueError, IndexError):
            continue
    return result


def check_gpu() -> dict[str, str]:
    try:
        gpus = nvidia_smi("--query-gpu=name,driver_version,memory.total")
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"nvidia-smi failed ({exc}): bench.gpu needs an NVIDIA GPU and its driver") from None
    probe = subprocess.run([sys.executable, "-c", "import onnxruntime as o; print(','.join(o.get_available_providers()))"],  # noqa: S603
                           capture_output=True, text=True, timeout=120)
    providers = probe.stdout.strip()
    if CUDA not in providers:
        raise SystemExit(f"this onnxruntime offers {providers or probe.stderr[-500:]}: install onnxruntime-gpu in place of onnxruntime")
    name, driver, total = gpus[0][:3]
    return {"gpu": f"{name} ({total} MiB)", "driver": driver, "gpus": str(len(gpus))}


def measure(workers: int, plan: Plan, logs: Path) -> dict:
    c = calls()
    server = pilotlight(f"gpu-{workers}", workers=workers, log_dir=logs, extra_env={"ORT_PROVIDERS": "cuda"})
    with server:
        times = server.wait_started(timeout=600)
        providers = {name: model.get("provider") for name, model in (server.readyz.get("models") or {}).items()}
        if any(provider != CUDA for provider in providers.values()):
            raise RuntimeError(f"models not on CUDA: {providers}; log: {server.log_text()[-2000:]}")
        first = must(c["cutout"].send(server.url), "first request")
        steady = sequential(server, c["cutout"], plan.steady)
        sequential(server, c["idphoto"], 1)
        idphoto = sequential(server, c["idphoto"], plan.steady)
        load = closed_loop(server, c["cutout"], clients=2 * workers, total=plan.throughput_requests, max_seconds=900)
        served = serve_every_worker(server, c["cutout"], workers=workers, per_worker=plan.per_worker, max_waves=4 * plan.per_worker + 4)
        time.sleep(0.5)
        vram = vram_by_pid()
        pids = server.workers()
        per_worker = [vram[pid] for pid in pids if pid in vram]
        row = {
            "workers": workers,
            **times,
            "providers": providers,
            "first_s": first.seconds,
            "steady": summary([reply.seconds for reply in steady]),
            "steady_stages": {n: median(r.server_timing.get(n, 0.0) for r in steady) for n in (steady[0].server_timing if steady else {})},
            "idphoto": summary([reply.seconds for reply in idphoto]),
            "load": load,
            "served": served,
            "vram_mib": {str(pid): vram.get(pid) for pid in [server.pid, *pids]},
            "vram_per_worker_mib": sum(per_worker) / len(per_worker) if per_worker else None,
            "memory": server.memory(),
            "readyz": server.readyz,
            "warm_lines": server.warm_lines(),
        }
        row["cold_penalty"] = row["first_s"] / row["steady"]["p50"] if steady else None
        row["shutdown_s"] = server.stop()
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--results", type=Path, default=None)
    args = parser.parse_args()
    plan = Plan.make(args.quick)
    info = check_gpu()
    results_path = args.results or (WORK / "quick" / "gpu.json" if args.quick else RESULTS / "gpu.json")
    logs = WORK / "gpu-logs"
    logs.mkdir(parents=True, exist_ok=True)
    out: dict = {"meta": {**info, "machine": machine(), "quick": plan.quick, "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}, "servers": []}
    for workers in (1, 2):
        say(f"[gpu] {workers} worker(s)")
        out["servers"].append(measure(workers, plan, logs))
        write_json(results_path, out)
    say("[gpu] in-process floor")
    try:
        out["pipeline"] = run_inproc(["pipeline", "--runs", str(plan.inproc_runs)], {"ORT_PROVIDERS": "cuda"})
    except RuntimeError as exc:
        out["pipeline"] = {"error": str(exc)}
    out["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    write_json(results_path, out)
    say(f"results: {results_path}")
    cpu = results_path.with_name("cpu.json")
    if cpu.is_file():
        from . import report

        sys.stdout.write(report.write(cpu, out_dir=WORK / "quick" if plan.quick else DOCS, gpu_path=results_path))
    else:
        from .report import render_gpu

        sys.stdout.write(render_gpu(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
