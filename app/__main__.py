"""Command line: `python -m app idphoto INPUT... --spec us-passport --out DIR`.

Runs the same ID photo pipeline as the server, without a server: one output per input, failures
reported per file without stopping. Models come from MODEL_HOME like the server's.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .config import ConfigError, Settings
from .errors import ApiError, DomainError
from .imageio import decode, encode
from .imaging.sheet import get_paper
from .models.registry import ModelFileError, Registry
from .models.sessions import resolve_providers
from .pipelines.idphoto import IdPhotoOptions, make_id_photo, print_sheet
from .specs import SPECS, get_spec, parse_background
from .timings import Timings

log = logging.getLogger("app")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    idp = sub.add_parser("idphoto", help="make ID photos from portraits")
    idp.add_argument("inputs", nargs="+", type=Path, help="portrait files (JPEG, PNG, WebP)")
    idp.add_argument("--spec", required=True, help=f"photo spec id ({', '.join(SPECS)})")
    idp.add_argument("--out", required=True, type=Path, help="output folder (created if missing)")
    idp.add_argument("--background", help="keep (the photographed one, judged), a colour name or #rrggbb (default: the spec's)")
    idp.add_argument("--gradient", action="store_true", help="a vertical gradient background instead of a solid one")
    idp.add_argument("--format", choices=("jpeg", "png"), default="jpeg")
    idp.add_argument("--max-kb", type=int, help="JPEG size limit in KB")
    idp.add_argument("--face", choices=("single", "largest"), default="single")
    idp.add_argument("--sheet", help="also write a print sheet on this paper (4x6, 5x7, a4, 10x15)")
    idp.add_argument("--copies", type=int, help="copies on the sheet (default: as many as fit)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        settings = Settings.from_env()
        spec = get_spec(args.spec)
        background = parse_background(args.background or spec.default_background)
        paper = get_paper(args.sheet) if args.sheet else None
    except (ConfigError, KeyError, ValueError) as exc:
        log.error("%s", exc.args[0] if exc.args else exc)
        return 2
    options = IdPhotoOptions(
        spec=spec, background=background, gradient=args.gradient, fmt=args.format, max_kb=args.max_kb, face=args.face
    )
    registry = Registry()
    try:
        registry.load(
            list(dict.fromkeys([settings.portrait_matte, settings.segmentation_model, "centerface"])), model_home=settings.model_home, providers=resolve_providers(settings.ort_providers, cpu_arena=settings.ort_cpu_arena, mem_pattern=settings.ort_mem_pattern)
        )
    except ModelFileError as exc:
        log.error("%s", exc)
        return 2
    _, detector = registry.face_detector() or ("", None)
    if detector is None:
        log.error("centerface did not load as a face detector")
        return 2
    # as the server: the portrait matte, u2net where it misses the face
    segmenter, fallback = registry.portrait_mattes(settings.portrait_matte, settings.segmentation_model)
    args.out.mkdir(parents=True, exist_ok=True)
    extension = "jpg" if args.format == "jpeg" else "png"
    failures = 0
    for path in args.inputs:
        try:
            image = decode(path.read_bytes(), max_pixels=settings.max_image_pixels)
            timings = Timings()
            photo = make_id_photo(
                image.rgb, detector=detector, segmenter=segmenter, options=options, max_side=settings.working_max_side, timings=timings,
                fallback=fallback,
            )
            target = args.out / f"{path.stem}-{spec.id}-{spec.width_px}x{spec.height_px}.{extension}"
            _write(target, photo.data)
            failed = [check.name for check in photo.checks if check.passed is False]
            log.info("ok      %s -> %s (%.2f s%s)", path, target, sum(timings.stages.values()), f"; check: {', '.join(failed)}" if failed else "")
            if paper is not None:
                layout, sheet, _ = print_sheet(photo, spec, paper, copies=args.copies, dpi=300)
                sheet_path = args.out / f"{path.stem}-{spec.id}-sheet-{paper.id}-{len(layout.positions)}x.{extension}"
                _write(sheet_path, encode(sheet, args.format, dpi=300))
                log.info("        %s", sheet_path)
        except (ApiError, DomainError) as exc:
            failures += 1
            log.error("FAILED  %s: %s", path, exc.message)
        except (OSError, ValueError) as exc:
            failures += 1
            log.error("FAILED  %s: %s", path, exc)
    log.info("%d of %d done", len(args.inputs) - failures, len(args.inputs))
    return 1 if failures else 0


def _write(path: Path, data: bytes) -> None:
    """Write via a temporary file and a rename, so no half-written photo is ever left behind."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    partial.replace(path)


if __name__ == "__main__":
    sys.exit(main())
