"""Alpha matting's cost per request: the peak memory and the time of one cut-out with alpha matting,
each size in a fresh process (ru_maxrss is a process's high-water mark), on the real u2net.

    .venv/bin/python -m bench.matting_memory [--megapixels 4 12]

Prints, per size: the solver's input (px), the unknown band, the peak RSS above the loaded process,
and the seconds. The photo is scikit-image's astronaut scaled up (a person filling the frame)."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def one(megapixels: float) -> dict[str, object]:
    import numpy as np
    from PIL import Image
    from skimage import data

    from app.config import Settings
    from app.imaging.matte_edges import UNKNOWN, matting_trimap
    from app.models import segmentation
    from bench.idphoto import _in_process

    settings, _, cached, _ = _in_process("u2net")
    segmenter = cached.segmenter  # the registry's own, not the benchmark cache
    width = int(round((megapixels * 1e6 * 4 / 3) ** 0.5))
    rgb = np.asarray(Image.fromarray(data.astronaut()).resize((width, width * 3 // 4)))
    matting = segmentation.AlphaMatting(max_unknown_px=10**9)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    segmenter.matte(rgb, max_side=Settings.from_env().working_max_side, alpha_matting=matting)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # the band and the box the solver took, read again the way the segmenter reads them
    side = min(settings.working_max_side, segmentation.MATTING_MAX_SIDE)
    scale = side / max(rgb.shape[:2])
    small = np.asarray(Image.fromarray(rgb).resize((round(rgb.shape[1] * scale), round(rgb.shape[0] * scale))))
    import rembg
    mask = np.asarray(rembg.remove(Image.fromarray(small), session=segmenter.session, only_mask=True))
    trimap = matting_trimap(mask, foreground_threshold=matting.foreground_threshold,
                            background_threshold=matting.background_threshold, erode_size=matting.erode_size)
    box = segmentation.band_box(trimap)
    solved = 0 if box is None else (box[2] - box[0]) * (box[3] - box[1])
    return {"megapixels": megapixels, "input": f"{rgb.shape[1]}x{rgb.shape[0]}", "solver_px": solved,
            "unknown_px": int((trimap == UNKNOWN).sum()), "peak_mib": round((peak - before) / 1024),
            "seconds": round(seconds, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megapixels", type=float, nargs="+", default=[4.0, 12.0])
    parser.add_argument("--one", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one)))
        return
    print("| photo | solver input (px) | unknown band (px) | peak memory above the loaded process | seconds |")
    print("|---|---|---|---|---|")
    for megapixels in args.megapixels:
        found = subprocess.run([sys.executable, "-m", "bench.matting_memory", "--one", str(megapixels)],
                               capture_output=True, text=True, check=True, timeout=600)
        row = json.loads(found.stdout.strip().splitlines()[-1])
        print(f"| {row['input']} ({row['megapixels']:g} MP) | {row['solver_px']:,} | {row['unknown_px']:,} | "
              f"{row['peak_mib']} MiB | {row['seconds']} |")


if __name__ == "__main__":
    main()
