"""int8 u2net against fp32: candidate recipes, the quality gate on the real-portrait corpus, the forward pass.

    .venv/bin/python -m bench.int8 recipes [--recipe minmax --recipe percentile ...] [--model u2net]
    .venv/bin/python -m bench.int8 gate [--model u2net] [--json OUT]
    .venv/bin/python -m bench.int8 speed [--model u2net] [--runs 9]
    .venv/bin/python -m bench.int8 idphoto [--spec icao --spec us-passport] [--limit N]
    .venv/bin/python -m bench.int8 sensitivity [--recipe minmax] [--photo friends]
    .venv/bin/python -m bench.int8 servers [--quick]

recipes   Makes the int8 file of each candidate recipe (app.models.quantised.quantise, into a scratch
          folder, from the installed fp32 file and the package photos), then prints per recipe: time
          to make, size, the gate figures against fp32 and the 1- and 2-thread forward pass.
gate      The installed int8 file (`python -m app.models fetch` makes it) against fp32 on every
          portrait of the corpus (`python -m tests.support.corpus fetch`), each matte made by the service's
          own Segmenter (rembg's pre- and post-processing) and read from the output alpha:
          thresholded-mask IoU (alpha >= 128), mean |alpha difference| (0-1). Also on the held-out
          part only (the portraits that do not come from a calibration photo's file).
speed     The bare forward pass on the astronaut's tensor, fp32 and int8 (the QDQ file as onnxruntime
          optimises it at load, and its pre-optimised graph as the server loads it), 1 and 2 intra-op
          threads, runs interleaved in one process so that load on the machine hits all alike.
idphoto   Every corpus portrait through the ID photo pipeline with fp32 and with int8 u2net; each
          output judged by the independent inspector (tests/support/inspector.py): counts per outcome.
sensitivity  Where the int8 error arises: each tensor's SQNR against fp32 on chosen portraits
          (onnxruntime.quantization.qdq_loss_debug), in graph order.
servers   rembg s, pilotlight MODEL_PRECISION=fp32 and =int8 (2 workers), started fresh one after the
          other (bench.lanes' measurement): a lone cut-out, an ID photo, 2 clients, and the ratios.

Figures depend on the machine: compare the ratios printed in one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import app  # noqa: F401, I001  (app first: it pins the native thread pools)
import numpy as np
import onnxruntime as ort
from PIL import Image

from app.models import optimised, quantised
from app.models.manifest import get_spec
from app.models.segmentation import Segmenter, rembg_session
from app.models.sessions import session_options

from .common import WORK, model_home, outcome_lines, say, write_json
from tests.support.judge import MAX_MEAN_ALPHA_DIFF, MIN_MEDIAN_IOU, MIN_WORST_IOU, Portrait, compare, corpus_portraits, idphoto_outcomes

# The quality gate (issue 24): int8 against fp32 on the real-portrait corpus.
_ALL_INT8 = replace(quantised.RECIPE, fp32_heads=False, fp32_nodes=())
_HEADS = replace(quantised.RECIPE, fp32_nodes=())
CANDIDATES: dict[str, quantised.Recipe] = {
    # every node int8
    "minmax-all": replace(_ALL_INT8, method="MinMax"),
    "percentile-all": replace(_ALL_INT8, method="Percentile"),
    "minmax-7bit-all": replace(_ALL_INT8, method="MinMax", reduce_range=True),
    "percentile-7bit-all": replace(_ALL_INT8, method="Percentile", reduce_range=True),
    # the output heads fp32 (quantised.head_nodes)
    "minmax-heads": replace(_HEADS, method="MinMax"),
    "percentile-heads": replace(_HEADS, method="Percentile"),
    "minmax-7bit-heads": replace(_HEADS, method="MinMax", reduce_range=True),
    "entropy-heads": replace(_HEADS, method="Entropy"),
    # and the RSU ends of the full-size decoder stages (quantised.U2NET_FP32_NODES): the recipe
    "minmax": replace(quantised.RECIPE, method="MinMax"),
    "percentile": replace(quantised.RECIPE, method="Percentile"),
    # and the whole full-size decoder stage (stage1d)
    "minmax-stage1d": replace(quantised.RECIPE, method="MinMax"),  # its fp32_nodes are added in recipes_main
}


def _nodes_from(index: int) -> tuple[str, ...]:
    """Names of u2net's compute nodes from graph position `index` on (stage1d, the full-size decoder
    stage, starts at 810 in the pinned file)."""
    import onnx

    graph = onnx.load(str(model_home() / "u2net.onnx"), load_external_data=False).graph
    kinds = ("Conv", "Relu", "Add", "Concat", "Resize", "MaxPool")
    return tuple(node.name for position, node in enumerate(graph.node) if position >= index and node.op_type in kinds)


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


# -- the gate's arithmetic (pure) ------------------------------------------------------------------


# -- photos and sessions ---------------------------------------------------------------------------


def session(path: Path, *, threads: int, preoptimised: bool = False, prepack: bool = False) -> ort.InferenceSession:
    """A CPU session with the service's options (app.models.sessions.session_options)."""
    options = session_options(threads=threads, preoptimised=preoptimised, prepack=prepack)
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def segmenter(model: str, path: Path, *, threads: int) -> Segmenter:
    return Segmenter(model, rembg_session(model, session(path, threads=threads)))


def mattes(seg: Segmenter, portraits: Sequence[Portrait]) -> dict[str, np.ndarray]:
    return {p.name: seg.matte(p.rgb, max_side=2048).alpha for p in portraits}


def feed(model_input: str) -> dict[str, np.ndarray]:
    from skimage import data

    return {model_input: quantised.network_input(data.astronaut())}


def interleaved(runners: dict[str, Callable[[], object]], *, runs: int) -> dict[str, float]:
    """Median seconds of each runner: one warm-up each, then `runs` rounds, each runner once a round."""
    for run in runners.values():
        run()
    times: dict[str, list[float]] = {label: [] for label in runners}
    for _ in range(runs):
        for label, run in runners.items():
            started = time.perf_counter()
            run()
            times[label].append(time.perf_counter() - started)
    return {label: statistics.median(values) for label, values in times.items()}


def forward_runners(files: dict[str, Path], *, threads: Sequence[int] = (1, 2)) -> dict[str, Callable[[], object]]:
    runners: dict[str, Callable[[], object]] = {}
    for label, path in files.items():
        preopt = "(pre-optimised" in label
        for count in threads:
            s = session(path, threads=count, preoptimised=preopt, prepack="prepacked" in label)
            inputs = feed(s.get_inputs()[0].name)
            runners[f"{label}, {count} thread{'s' if count > 1 else ''}"] = (lambda s=s, inputs=inputs: s.run(None, inputs))
    return runners


def speed_table(medians: dict[str, float], *, baseline: str) -> None:
    out("| session | forward pass | against fp32 |")
    out("|---|---|---|")
    for label, seconds in medians.items():
        threads = label.rsplit(", ", 1)[1]
        base = medians.get(f"{baseline}, {threads}")
        ratio = f"{seconds / base:.2f}x" if base else ""
        out(f"| {label} | {seconds:.3f} s | {ratio} |")


def load_note() -> str:
    with open("/proc/loadavg", encoding="ascii") as handle:
        return "load average " + " ".join(handle.read().split()[:3])


# -- commands --------------------------------------------------------------------------------------


def recipes_main(args: argparse.Namespace) -> None:
    spec = get_spec(args.model)
    home = model_home()
    fp32 = home / spec.filename
    names = args.recipe or list(CANDIDATES)
    portraits = corpus_portraits(limit=args.limit)
    say(f"{len(portraits)} portraits; {load_note()}")
    reference = mattes(segmenter(spec.name, fp32, threads=2), portraits)
    inputs = quantised.calibration_inputs()
    rows = []
    scratch_root = WORK / "int8"
    scratch_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch_root) as scratch:
        made: dict[str, Path] = {}
        for name in names:
            recipe = CANDIDATES[name]
            if name == "minmax-stage1d":
                recipe = replace(recipe, fp32_nodes=quantised.U2NET_FP32_NODES + _nodes_from(810))
            target = Path(scratch) / name / spec.filename
            target.parent.mkdir()
            say(f"making {name}: {recipe}")
            started = time.perf_counter()
            quantised.quantise(fp32, target, inputs=inputs, recipe=recipe)
            seconds = time.perf_counter() - started
            made[name] = target
            figures = compare(reference, mattes(segmenter(spec.name, target, threads=2), portraits), portraits)
            rows.append({"recipe": name, "seconds_to_make": seconds, "size": target.stat().st_size, **figures})
            say(f"  {seconds:.0f} s, gate: {figures['all']}")
        say(f"timing; {load_note()}")
        medians = interleaved(forward_runners({"fp32": fp32, **made}), runs=args.runs)
    out(f"## int8 recipes for {spec.name} ({len(inputs)} calibration inputs, {len(portraits)} portraits; {load_note()})")
    out()
    out("| recipe | time to make | size | IoU median | IoU worst (photo) | mean abs alpha diff | held out: IoU median / worst / alpha diff | gate | 1 thread | 2 threads |")
    out("|---|---|---|---|---|---|---|---|---|---|")
    fp32_1, fp32_2 = medians["fp32, 1 thread"], medians["fp32, 2 threads"]
    out(f"| fp32 | - | {fp32.stat().st_size / 1e6:.1f} MB | - | - | - | - | - | {fp32_1:.3f} s | {fp32_2:.3f} s |")
    for row in rows:
        a, h = row["all"], row["held_out"]
        held = f"{h['median_iou']:.4f} / {h['worst_iou']:.4f} / {h['mean_alpha_diff']:.4f}" if h else "-"
        one, two = medians[f"{row['recipe']}, 1 thread"], medians[f"{row['recipe']}, 2 threads"]
        out(f"| {row['recipe']} | {row['seconds_to_make']:.0f} s | {row['size'] / 1e6:.1f} MB | {a['median_iou']:.4f} | "
            f"{a['worst_iou']:.4f} ({row['worst_photo']}) | {a['mean_alpha_diff']:.4f} | {held} | {'pass' if a['passes'] and (not h or h['passes']) else 'FAIL'} | "
            f"{one:.3f} s ({one / fp32_1:.2f}x) | {two:.3f} s ({two / fp32_2:.2f}x) |")
    if args.json:
        write_json(args.json, {"rows": rows, "forward_seconds": medians})


def installed_int8(model: str) -> tuple[Path, Path, dict[str, object]]:
    spec = get_spec(model)
    home = model_home()
    path = quantised.usable(spec, home)
    if path is None:
        raise SystemExit(f"no usable int8 file for {model}; run: python -m app.models fetch {model}")
    return home / spec.filename, path, quantised.read_record(spec, home) or {}


def resaved(portrait: Portrait, *, quality: int = 95) -> Portrait:
    """The same photo saved once more as a JPEG of `quality`: a change no viewer would call a new photo."""
    import io

    buffer = io.BytesIO()
    Image.fromarray(portrait.rgb).save(buffer, "JPEG", quality=quality)
    return replace(portrait, rgb=np.asarray(Image.open(buffer).convert("RGB")))


def uncertain_share(alpha: np.ndarray) -> float:
    """Share of the mask (alpha >= 128) whose alpha lies in 96..160: where the network is undecided."""
    return float(((alpha > 96) & (alpha < 160)).sum() / max(int((alpha >= 128).sum()), 1))


def gate_main(args: argparse.Namespace) -> None:
    fp32, int8, record = installed_int8(args.model)
    portraits = corpus_portraits(limit=args.limit)
    reference_seg = segmenter(args.model, fp32, threads=2)
    reference = mattes(reference_seg, portraits)
    figures = compare(reference, mattes(segmenter(args.model, int8, threads=2), portraits), portraits)
    # fp32 against itself on the photo saved once more as JPEG 95: how stable the thresholded matte is
    floor = compare(reference, mattes(reference_seg, [resaved(p) for p in portraits]), portraits)
    out(f"## {args.model} int8 ({record.get('recipe', {}).get('method')}) against fp32 on {len(portraits)} portraits "
        f"({load_note()})")
    out()
    out("| portrait | held out | undecided share of the fp32 mask | int8: mask IoU | int8: mean abs alpha diff | "
        "fp32 on a JPEG-95 copy: mask IoU | mean abs alpha diff |")
    out("|---|---|---|---|---|---|---|")
    for p in portraits:
        gap, same = figures["photos"][p.name], floor["photos"][p.name]
        out(f"| {p.name} | {'yes' if p.held_out else 'no'} | {uncertain_share(reference[p.name]):.3f} | {gap['iou']:.4f} | "
            f"{gap['alpha_diff']:.4f} | {same['iou']:.4f} | {same['alpha_diff']:.4f} |")
    out()
    for label, result in (("int8 against fp32", figures), ("fp32 on a JPEG-95 copy against fp32", floor)):
        for part in ("all", "held_out"):
            f = result[part]
            if f:
                out(f"{label}, {part}: {f['photos']} photos, IoU median {f['median_iou']:.4f} (>= {MIN_MEDIAN_IOU}), "
                    f"worst {f['worst_iou']:.4f} ({result['worst_photo'] if part == 'all' else 'held out'}; >= "
                    f"{MIN_WORST_IOU}), mean |alpha diff| {f['mean_alpha_diff']:.4f} (<= {MAX_MEAN_ALPHA_DIFF}): "
                    f"{'pass' if f['passes'] else 'FAIL'}")
    if args.json:
        write_json(args.json, {"record": record, **figures, "jpeg95_floor": floor})


def speed_main(args: argparse.Namespace) -> None:
    fp32, int8, record = installed_int8(args.model)
    spec = get_spec(args.model)
    scratch_root = WORK / "int8"
    scratch_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch_root) as scratch:
        home = Path(scratch)
        graphs = {"fp32": fp32, "int8": int8}
        graphs["fp32 (pre-optimised: as the server loads it)"] = optimised.write(spec, fp32.parent, home)
        graphs["int8 (pre-optimised, weights not packed)"] = optimised.write(spec, int8.parent, home, variant=quantised.INT8)
        graphs["int8 (pre-optimised, prepacked: as the server loads it)"] = graphs["int8 (pre-optimised, weights not packed)"]
        say(f"timing; {load_note()}")
        medians = interleaved(forward_runners(graphs), runs=args.runs)
    out(f"## {args.model} forward pass, fp32 against int8 ({args.runs} interleaved runs each, median; {load_note()})")
    out()
    speed_table(medians, baseline="fp32")
    out()
    out(f"size: fp32 {fp32.stat().st_size / 1e6:.1f} MB, int8 {int8.stat().st_size / 1e6:.1f} MB; "
        f"int8 made in {record.get('seconds_to_make')} s ({record.get('recipe', {}).get('method')}, "
        f"{len(record.get('calibration_inputs', []))} calibration inputs)")


def variant_registry(variant: str, settings: object) -> object:
    from app.models.registry import Registry
    from app.models.sessions import resolve_providers

    registry = Registry()
    registry.load(["u2net", "centerface"], model_home=settings.model_home, optimised_home=None,
                  providers=resolve_providers("cpu"), model_precision=variant)
    return registry


def idphoto_main(args: argparse.Namespace) -> None:
    """ID photos from fp32 and int8 u2net, each judged by the independent inspector."""
    from app.config import Settings

    installed_int8("u2net")
    settings = Settings.from_env()
    portraits = corpus_portraits(limit=args.limit)
    specs = args.spec or ["icao", "us-passport"]
    results = {variant: idphoto_outcomes(variant_registry(variant, settings), portraits, specs, settings=settings)
               for variant in (quantised.FP32, quantised.INT8)}
    out(f"## ID photos with fp32 and int8 u2net ({len(portraits)} portraits x {', '.join(specs)}; judged by tests/support/inspector.py)")
    out()
    for line in outcome_lines(results, label="variant", before=quantised.FP32, after=quantised.INT8):
        out(line)


def sensitivity_main(args: argparse.Namespace) -> None:
    """Per tensor, the signal-to-quantisation-noise ratio of the int8 graph against fp32 on some
    portraits (onnxruntime.quantization.qdq_loss_debug), in graph order: where the error appears."""
    import onnx
    from onnxruntime.quantization.qdq_loss_debug import (
        collect_activations, compute_activation_error, create_activation_matching,
        modify_model_output_intermediate_tensors,
    )

    spec = get_spec(args.model)
    fp32 = model_home() / spec.filename
    names = args.photo or ["friends"]
    portraits = [p for p in corpus_portraits() if p.name in names]
    tensors = [quantised.network_input(p.rgb) for p in portraits]
    recipe = CANDIDATES[args.recipe[0]] if args.recipe else quantised.RECIPE
    scratch_root = WORK / "int8"
    scratch_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch_root) as scratch:
        folder = Path(scratch)
        int8 = folder / "int8.onnx"
        quantised.quantise(fp32, int8, inputs=quantised.calibration_inputs(), recipe=recipe)
        activations = {}
        for label, path in (("fp32", fp32), ("int8", int8)):
            augmented = folder / f"{label}-augmented.onnx"
            modify_model_output_intermediate_tensors(str(path), str(augmented))
            activations[label] = collect_activations(str(augmented), [{"input.1": t} for t in tensors])
        errors = compute_activation_error(create_activation_matching(activations["int8"], activations["fp32"]))
    graph = onnx.load(str(fp32), load_external_data=False).graph
    order = {output: (index, node.name) for index, node in enumerate(graph.node) for output in node.output}
    rows = sorted((order[name], error["xmodel_err"]) for name, error in errors.items() if name in order and "xmodel_err" in error)
    out(f"## SQNR of each tensor, int8 ({args.recipe[0] if args.recipe else 'default recipe'}) against fp32, on {', '.join(names)}")
    out()
    out("| node | SQNR (dB) |")
    out("|---|---|")
    for (_, node), sqnr in rows:
        out(f"| {node} | {float(np.mean(sqnr)):.1f} |")


def servers_main(args: argparse.Namespace) -> None:
    """rembg s, pilotlight fp32 and pilotlight int8 (2 workers, MODEL_PRECISION forced), each started
    fresh as a user starts it, one after the other in one run (bench.lanes' own measurement)."""
    from . import peer
    from tests.support.harness import Call, Server
    from tests.support.photos import cutout_photo, portrait_photo
    from .lanes import measure, pilotlight

    installed_int8("u2net")
    steady, loop = (4, 8) if args.quick else (10, 30)
    log_dir = WORK / "int8-servers"
    cut, portrait = cutout_photo(), portrait_photo()
    ours_cut = Call("remove-background", "/api/v1/remove-background", "image", cut.jpeg)
    ours_id = Call("idphoto", "/api/v1/idphoto", "image", portrait.jpeg, {"spec": "us-passport"})
    rembg = peer.ensure_venv()
    results: dict[str, dict] = {}
    say(f"[int8] rembg s; {load_note()}")
    results["rembg s"] = measure(Server(peer.env(), log_dir / "rembg.log", peer.command(rembg), "rembg-s", kind="rembg"),
                                 peer.call(cut.jpeg), None, steady=steady, loop=loop)
    for variant in (quantised.FP32, quantised.INT8):
        say(f"[int8] pilotlight {variant}; {load_note()}")
        server = pilotlight(f"pilotlight-{variant}", log_dir, MODEL_PRECISION=variant)
        results[f"pilotlight {variant}"] = measure(server, ours_cut, ours_id, steady=steady, loop=loop)
    peer_, fp32, int8 = results["rembg s"], results["pilotlight fp32"], results["pilotlight int8"]
    out(f"## Servers: rembg s, pilotlight fp32, pilotlight int8 (u2net, 2 workers, {cut.name}; {load_note()})")
    out()
    out("| | rembg s | pilotlight fp32 | pilotlight int8 |")
    out("|---|---|---|---|")
    rows = (("ready (s)", ("ready_s",)), ("first cut-out (s)", ("first_s",)), ("lone cut-out, steady median (s)", ("steady_s",)),
            ("cold penalty", ("cold_penalty",)), ("lone ID photo, steady median (s)", ("idphoto_steady_s",)),
            ("2 clients (req/s)", ("two_clients", "throughput_rps")), ("summed PSS at rest (MiB)", ("memory", "tree_pss_mib")))
    for label, path in rows:
        cells = []
        for result in (peer_, fp32, int8):
            value = result
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            cells.append("-" if value is None else f"{value:.3f}")
        out(f"| {label} | " + " | ".join(cells) + " |")
    out()
    lone = lambda r: r["steady_s"] / peer_["steady_s"]  # noqa: E731
    rate = lambda r: r["two_clients"]["throughput_rps"] / peer_["two_clients"]["throughput_rps"]  # noqa: E731
    out(f"- lone cut-out against rembg s: fp32 {lone(fp32):.2f}x, int8 {lone(int8):.2f}x (target at most 0.6x)")
    out(f"- 2 clients against rembg s: fp32 {rate(fp32):.2f}x, int8 {rate(int8):.2f}x (target at least 2x)")
    out(f"- cold penalty: fp32 {fp32['cold_penalty']:.2f}, int8 {int8['cold_penalty']:.2f} (target at most 1.05)")
    out(f"- time to ready: fp32 {fp32['ready_s']:.2f} s, int8 {int8['ready_s']:.2f} s; lone ID photo: fp32 "
        f"{fp32['idphoto_steady_s']:.3f} s, int8 {int8['idphoto_steady_s']:.3f} s")
    if args.json:
        write_json(args.json, results)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.int8", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    recipes = sub.add_parser("recipes")
    recipes.add_argument("--recipe", action="append", choices=list(CANDIDATES))
    gate = sub.add_parser("gate")
    speed = sub.add_parser("speed")
    idphoto = sub.add_parser("idphoto")
    idphoto.add_argument("--spec", action="append")
    servers = sub.add_parser("servers")
    servers.add_argument("--quick", action="store_true")
    sensitivity = sub.add_parser("sensitivity")
    sensitivity.add_argument("--recipe", action="append", choices=list(CANDIDATES))
    sensitivity.add_argument("--photo", action="append", help="corpus portrait names (default: friends)")
    for command in (recipes, gate, speed, idphoto, sensitivity, servers):
        command.add_argument("--model", default="u2net")
        command.add_argument("--limit", type=int)
        command.add_argument("--runs", type=int, default=7)
        command.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    {"recipes": recipes_main, "gate": gate_main, "speed": speed_main, "idphoto": idphoto_main,
     "sensitivity": sensitivity_main, "servers": servers_main}[args.command](args)


if __name__ == "__main__":
    main()
