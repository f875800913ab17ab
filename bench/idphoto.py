"""Per-stage timings of the ID photo pipeline, in process, on the real default models.

    .venv/bin/python -m bench.idphoto [--spec us-passport] [--runs 5] [--cutout]

Prints the median of each stage over --runs requests (after one warm-up request) and the
compliance report of the last one. With --cutout, also the stages of the cut-out
(POST /api/v1/remove-background, transparent PNG) of the same photo.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics

from app import create_app
from app.service import Service
from app.warmup import photo as warmup_photo
from app.config import Settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", default="us-passport")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cutout", action="store_true", help="also time the cut-out of the same photo")
    args = parser.parse_args()
    settings = Settings.from_env().with_overrides(models=("u2net", "centerface"), segmentation_model="u2net")
    app = create_app(settings)
    Service.of(app).load()
    client = app.test_client()

    def once(path: str, fields: dict[str, str]) -> dict:
        response = client.post(
            path,
            data={**fields, "image": (io.BytesIO(warmup_photo()), "astronaut.jpg")},
            headers={"Accept": "application/json"},
        )
        if response.status_code != 200:
            raise RuntimeError(response.get_data(as_text=True))
        return response.get_json()

    def table(title: str, bodies: list[dict]) -> None:
        stages = list(bodies[0]["timings"])
        print(f"{title}, u2net + centerface, 512x512 astronaut, median of {args.runs} (s)")  # noqa: T201
        print("| " + " | ".join(stages) + " | total |")  # noqa: T201
        print("|" + "---|" * (len(stages) + 1))  # noqa: T201
        medians = [statistics.median(body["timings"][stage] for body in bodies) for stage in stages]
        print("| " + " | ".join(f"{m:.3f}" for m in medians) + f" | {sum(medians):.3f} |")  # noqa: T201

    idphoto = ("/api/v1/idphoto", {"spec": args.spec})
    once(*idphoto)
    bodies = [once(*idphoto) for _ in range(args.runs)]
    table(f"ID photo, spec {args.spec}", bodies)
    if args.cutout:
        cutout = ("/api/v1/remove-background", {"model": "u2net", "format": "png"})
        once(*cutout)
        table("cut-out (transparent PNG)", [once(*cutout) for _ in range(args.runs)])
    report = bodies[-1]["compliance"]
    print(f"compliance report of the last request (compliant: {report['compliant']}):")  # noqa: T201
    for check in report["checks"]:
        print("  " + json.dumps(check))  # noqa: T201


if __name__ == "__main__":
    main()
