"""Per-stage timings of the ID photo pipeline, in process, on the real default models.

    .venv/bin/python -m bench.idphoto [--spec us-passport] [--runs 5]

Prints the median of each stage over --runs requests (after one warm-up request) and the
compliance report of the last one.
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
    args = parser.parse_args()
    settings = Settings.from_env().with_overrides(models=("u2net", "centerface"), segmentation_model="u2net")
    app = create_app(settings)
    Service.of(app).load()
    client = app.test_client()

    def once() -> dict:
        response = client.post(
            "/api/v1/idphoto",
            data={"spec": args.spec, "image": (io.BytesIO(warmup_photo()), "astronaut.jpg")},
            headers={"Accept": "application/json"},
        )
        if response.status_code != 200:
            raise RuntimeError(response.get_data(as_text=True))
        return response.get_json()

    once()
    bodies = [once() for _ in range(args.runs)]
    stages = list(bodies[0]["timings"])
    print(f"spec {args.spec}, u2net + centerface, 512x512 astronaut, median of {args.runs} (s)")  # noqa: T201
    print("| " + " | ".join(stages) + " | total |")  # noqa: T201
    print("|" + "---|" * (len(stages) + 1))  # noqa: T201
    medians = [statistics.median(body["timings"][stage] for body in bodies) for stage in stages]
    print("| " + " | ".join(f"{m:.3f}" for m in medians) + f" | {sum(medians):.3f} |")  # noqa: T201
    report = bodies[-1]["compliance"]
    print(f"compliance report of the last request (compliant: {report['compliant']}):")  # noqa: T201
    for check in report["checks"]:
        print("  " + json.dumps(check))  # noqa: T201


if __name__ == "__main__":
    main()
