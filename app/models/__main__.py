"""`python -m app.models fetch|ensure|add|list`: install and check model files in MODEL_HOME.

`fetch` and `ensure` also write each model's pre-optimised graph and weights for this onnxruntime
and CPU (app/models/optimised.py) under OPTIMISED_HOME, unless `--no-optimise`.

For a model with an int8 variant (u2net) they derive it from the verified fp32 file
(app/models/quantised.py: ~35 s, once) with `--int8` or `--int8-only`, or where something would run
it: MODEL_PRECISION=int8 (or auto, once the recipe passes the quality gate), and not where this
onnxruntime offers CUDA and ORT_PROVIDERS is not `cpu` (GPU sessions run fp32); never with
`--no-int8`. With the pre-optimised files they also time both variants on this CPU and
keep the result, from which MODEL_PRECISION=auto picks (app/models/precision.py), once int8 is no
longer opt-in (`precision.AUTO_PICKS_INT8`). `--int8-only`
derives it and then removes the fp32 file of such models (the container image ships the int8 file
alone).

The int8 code is imported only where an int8 file is wanted: the images' `models` stages copy only
the fetch code this command imports.

Besides the models, `web-runtime` names the upload page's WebAssembly runtime (onnxruntime-web's
files, `manifest.WEB_RUNTIME`) and `axe-core` the browser test's accessibility checker
(`manifest.AXE_CORE`), each fetched from its npm package into the same MODEL_HOME.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from ..config import ConfigError, Settings
import onnxruntime as ort

from . import optimised
from .fetch import FetchError, add, fetch, fetch_npm, inspect, inspect_npm
from .manifest import DEFAULT_FETCH, MANIFEST, NPM_PINS, ModelSpec, ZipMemberSource, get_spec


def _names(requested: list[str], settings: Settings) -> list[str]:
    names = requested or list(dict.fromkeys([*DEFAULT_FETCH, *settings.models]))
    for name in names:
        if name not in NPM_PINS:
            get_spec(name)  # KeyError with the known names
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.models", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    fetch_parser = sub.add_parser("fetch", help="download, verify (sha256) and install model files")
    fetch_parser.add_argument("names", nargs="*", help=f"models to fetch (default: {', '.join(DEFAULT_FETCH)} and MODELS)")
    fetch_parser.add_argument("--force", action="store_true", help="download again even if the file is right")
    fetch_parser.add_argument("--quiet", action="store_true", help="no progress bars")
    fetch_parser.add_argument("--no-optimise", action="store_true", help="do not write the pre-optimised files")
    fetch_parser.add_argument("--no-int8", action="store_true", help="do not derive int8 variants")
    fetch_parser.add_argument("--int8", action="store_true", help="derive int8 variants even where onnxruntime offers CUDA")
    fetch_parser.add_argument(
        "--int8-only", action="store_true", help="derive the int8 variant, then remove the fp32 file of models that have one"
    )
    fetch_parser.add_argument(
        "--sha256", metavar="HEX", help="checksum to verify the download against (one model; for models the manifest does not pin)"
    )
    add_parser = sub.add_parser("add", help="install a local file as a model after checking the sha256 you give")
    add_parser.add_argument("name", help="manifest name, e.g. inswapper")
    add_parser.add_argument("file", type=Path, help="the model file")
    add_parser.add_argument("--sha256", metavar="HEX", required=True, help="the file's sha256, from a source you trust")
    ensure_parser = sub.add_parser("ensure", help="fetch only the models that are missing or the wrong size (no hashing)")
    ensure_parser.add_argument("names", nargs="*", help="models to ensure (default: MODELS)")
    ensure_parser.add_argument("--no-optimise", action="store_true", help="do not write the pre-optimised files")
    ensure_parser.add_argument("--no-int8", action="store_true", help="do not derive int8 variants")
    list_parser = sub.add_parser("list", help="show the manifest and the state of each file")
    list_parser.add_argument("--verify", action="store_true", help="also check each present file's sha256")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    log = logging.getLogger("app.models")

    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        return 2
    home = settings.model_home
    try:
        if args.command == "list":
            for spec in MANIFEST.values():
                state = inspect(spec, home, verify_hash=args.verify)
                size = _size_mb(spec)
                fast = optimised.usable(spec, home, settings.optimised_dir) is not None
                if fast and args.verify:
                    fast = optimised.verify(spec, home, settings.optimised_dir)
                note = "pre-optimised" if fast else ""
                if spec.int8:
                    from . import quantised

                    made = quantised.verify(spec, home) if args.verify else quantised.usable(spec, home) is not None
                    note = f"{note}{', ' if note else ''}int8" if made else note
                print(f"{spec.name:16} {spec.role.value:19} {size:>9}  {state.status:26} {note:14} {spec.licence}")  # noqa: T201 (CLI output)
            for pin, role in zip(NPM_PINS.values(), ("browser runtime", "browser test"), strict=True):
                state = inspect_npm(pin, home, verify_hash=args.verify)
                size = f"{pin.size / 1e6:.1f} MB"
                print(f"{pin.name:16} {role:19} {size:>9}  {state.status:26} {'':14} {pin.licence}")  # noqa: T201
            return 0
        if args.command == "add":
            spec = get_spec(args.name)
            _announce(log, spec)
            add(spec, args.file, home, sha256=args.sha256)
            return 0
        names = args.names or (list(settings.models) if args.command == "ensure" else _names([], settings))
        names = _names(names, settings)
        npm_pins = [NPM_PINS[name] for name in names if name in NPM_PINS]
        names = [name for name in names if name not in NPM_PINS]
        sha256 = getattr(args, "sha256", None)
        if sha256 is not None and len(names) != 1:
            log.error("--sha256 applies to one model; name exactly one")
            return 2
        specs = wanted = [get_spec(name) for name in names]
        if args.command == "ensure":
            specs = [spec for spec in specs if not inspect(spec, home, verify_hash=False).ok
                     and not _int8_stands_alone(spec, home, settings)]
        with ExitStack() as stack:
            archives = None
            if sum(any(isinstance(source, ZipMemberSource) for source in spec.sources) for spec in specs) > 1:
                # Several models from one archive (insightface's buffalo_l pack): download it once.
                archives = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=_ensure(home), prefix=".archives-")))
            for spec in specs:
                _announce(log, spec)
                fetch(
                    spec,
                    home,
                    force=getattr(args, "force", False),
                    progress=not getattr(args, "quiet", False),
                    sha256=sha256,
                    archives=archives,
                )
        int8_specs = [spec for spec in wanted if _wants_int8(spec, settings, args)]
        if int8_specs:
            from . import quantised
        for spec in int8_specs:
            if inspect(spec, home, verify_hash=False).ok:
                (quantised.write if getattr(args, "force", False) else quantised.ensure)(spec, home)
        if not args.no_optimise:
            for spec in wanted:
                if not inspect(spec, home, verify_hash=False).ok:
                    continue
                if getattr(args, "force", False):
                    optimised.write(spec, home, settings.optimised_dir)
                else:
                    optimised.ensure(spec, home, settings.optimised_dir)
            for spec in int8_specs:
                if inspect(spec, home, verify_hash=False).ok and quantised.usable(spec, home) is not None:
                    optimised.ensure(spec, quantised.folder(home), settings.optimised_dir, variant=quantised.INT8)
                    from . import precision

                    if settings.model_precision == precision.AUTO and precision.AUTO_PICKS_INT8:
                        from .sessions import resolve_providers

                        cpu = resolve_providers("cpu", cpu_arena=settings.ort_cpu_arena, mem_pattern=settings.ort_mem_pattern)
                        precision.measure(spec, model_home=home, optimised_home=settings.optimised_dir, providers=cpu)
        if getattr(args, "int8_only", False):
            for spec in int8_specs:  # quantised is imported: int8_specs is not empty
                if quantised.usable(spec, home) is not None:
                    (home / spec.filename).unlink(missing_ok=True)
                    log.info("%s: fp32 file removed (--int8-only); the int8 file stays: %s", spec.name,
                             quantised.files_for(spec, home).model)
        for pin in npm_pins:
            if args.command != "ensure" or not inspect_npm(pin, home, verify_hash=False).ok:
                log.info("%s: %s; licence: %s", pin.name, pin.description, pin.licence)
                fetch_npm(pin, home, force=getattr(args, "force", False), progress=not getattr(args, "quiet", False))
    except KeyError as exc:
        log.error("%s", exc.args[0])
        return 2
    except ValueError as exc:  # a malformed --sha256, or ORT_PROVIDERS naming a provider this build lacks
        log.error("%s", exc)
        return 2
    except FetchError as exc:
        log.error("%s", exc)
        return 1
    except RuntimeError as exc:  # quantised.QuantiseError: the int8 file could not be made
        log.error("%s", exc)
        return 1
    return 0


def _wants_int8(spec: ModelSpec, settings: Settings, args: argparse.Namespace) -> bool:
    """Derive the int8 variant of `spec`: it has one and something here may run it, unless --no-int8:
    --int8 or --int8-only; else MODEL_PRECISION=int8, or auto once the recipe passes the quality gate
    (quantised.PASSES_GATE), where sessions run on the CPU (a CUDA build runs fp32 unless
    ORT_PROVIDERS=cpu)."""
    if not spec.int8 or getattr(args, "no_int8", False) or settings.model_precision == "fp32":
        return False
    if getattr(args, "int8", False) or getattr(args, "int8_only", False):
        return True
    if "CUDAExecutionProvider" in ort.get_available_providers() and settings.ort_providers.strip().lower() != "cpu":
        return False
    if settings.model_precision == "int8":
        return True
    from . import quantised

    return quantised.PASSES_GATE


def _int8_stands_alone(spec: ModelSpec, home: Path, settings: Settings) -> bool:
    """`ensure`: the fp32 file is absent on purpose (an image that ships the int8 file alone) and
    nothing asks for it (MODEL_PRECISION is not fp32)."""
    if not spec.int8 or settings.model_precision == "fp32" or (home / spec.filename).exists():
        return False
    from . import quantised

    return quantised.usable(spec, home) is not None


def _announce(log: logging.Logger, spec: ModelSpec) -> None:
    """Name the model and its licence before anything is downloaded or installed."""
    log.info("%s: %s; licence: %s", spec.name, spec.description, spec.licence)
    if "non-commercial" in spec.licence:
        log.warning("%s: licence: %s. Do not use it in a commercial product.", spec.name, spec.licence)


def _size_mb(spec: ModelSpec) -> str:
    known = spec.pinned or spec.published
    return "?" if known is None else f"{known.size / 1e6:.1f} MB"


def _ensure(home: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    return home


if __name__ == "__main__":
    sys.exit(main())
