"""The pose calibration table (issue 51, item 3): every corpus portrait's yaw and pitch as the 5-point
estimate and the 68-point fit read them, with their uncertainties and the verdicts against ISO's 5
degrees (the Chinese 1-inch and 2-inch specs' limits), and the figures app.imaging.dense_pose's
constants come from.

    .venv/bin/python -m bench.pose [--corpus DIR] [--spec cn-1inch]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.config import Settings
from app.imaging.pose import judge
from app.specs import get_spec
from tests.support.corpus import default_dir
from tests.support.pose_readings import load_models, read_corpus, spread

WORDS = {True: "pass", False: "FAIL", None: "undecided"}


def verdict(pose, rules) -> str:
    lines = [judge(pose.yaw, rules.max_yaw_deg, pose.uncertainty("yaw")),
             judge(pose.pitch, rules.max_pitch_deg, pose.uncertainty("pitch"))]
    return "FAIL" if False in lines else "undecided" if None in lines else "pass"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--spec", default="cn-1inch")
    args = parser.parse_args()
    rules = get_spec(args.spec).rules
    readings = read_corpus(*load_models(Settings.from_env().model_home), args.corpus or default_dir())
    out = sys.stdout.write
    out(f"{len(readings)} portraits of {args.corpus or default_dir()}, limits yaw {rules.max_yaw_deg:g} and pitch "
        f"{rules.max_pitch_deg:g} degrees ({args.spec})\n\n")
    out("| portrait | label | 5-point yaw | 5-point pitch | verdict before | 68-point yaw (mirror) | 68-point pitch (mirror) "
        "| verdict after |\n|---|---|---|---|---|---|---|---|\n")
    for r in readings:
        five, _, now = r.photo
        mirror = r.mirror[2]
        out(f"| {r.name} | {r.expect} | {five.yaw:+.1f} +-{five.uncertainty('yaw'):g} | {five.pitch:+.1f} "
            f"+-{five.uncertainty('pitch'):g} | {verdict(five, rules)} | {now.yaw:+.1f} ({-mirror.yaw:+.1f}) "
            f"+-{now.uncertainty('yaw'):g} | {now.pitch:+.1f} ({mirror.pitch:+.1f}) +-{now.uncertainty('pitch'):g} "
            f"| {verdict(now, rules)} |\n")
    out("\n| estimate | axis | one reading (mirror) sd | frontal sd | frontal mean | mirror mean | 2 x root sum of squares |\n"
        "|---|---|---|---|---|---|---|\n")
    for which, name in ((0, "5 points"), (2, "68 points")):
        for axis in ("yaw", "pitch"):
            f = spread(readings, axis, which)
            out(f"| {name} | {axis} | {f['noise_sd']:.2f} | {f['frontal_sd']:.2f} | {f['frontal_mean']:+.2f} | "
                f"{f['mismatch_mean']:+.2f} | {f['uncertainty_95']:.2f} |\n")


if __name__ == "__main__":
    main()
