"""Golden hashes of the ID photo pipeline: a refactor that must change no output runs this before and
after and compares.

In process, through the Flask test client with the default models (MODELS' defaults: u2net, modnet,
centerface, landmarks68), on corpus portraits (tests/support/corpus.py, cached) x three specs, each with the spec's
default background and with a white one, plus a gradient under max_kb, the print sheet and
Hivision's /idphoto. Per case: the sha256 of the output image
and of the report (the JSON answer without the image, timings and the model timings dropped), and
the report itself, so a deliberate change of a field can be compared parsed.

    python -m bench.idphoto_golden /tmp/golden-before.json
    python -m bench.idphoto_golden /tmp/golden-after.json --compare /tmp/golden-before.json
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
from pathlib import Path

PORTRAITS = ("obama.jpg", "biden.jpg", "audrey.jpg", "connery.jpg", "takeo.png", "franck-neutral.jpg",
             "row-middle.png", "obama-tight.png", "astronaut-tight.png")
SPECS = ("us-passport", "ca-passport", "cn-1inch")
VOLATILE = ("timings", "image", "image_base64", "image_base64_standard", "image_base64_hd", "photo")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def stable(answer: dict) -> dict:
    """The answer without what differs run to run (timings) or is hashed apart (the images)."""
    out = {key: value for key, value in answer.items() if key not in VOLATILE}
    ours = out.get("pilotlight")
    if isinstance(ours, dict):
        out["pilotlight"] = {key: value for key, value in ours.items() if key not in ("timings",)}
    return out


def run() -> dict[str, dict]:
    from app import create_app
    from app.config import Settings
    from app.models.registry import Registry
    from app.service import Service
    from tests.support.corpus import default_dir

    settings = Settings.from_env()
    app = create_app(settings, Registry())
    Service.of(app).load()
    app.config["TESTING"] = True
    client = app.test_client()
    folder = default_dir()
    cases: dict[str, dict] = {}

    def post(name: str, url: str, form: dict, image_keys: tuple[str, ...]) -> None:
        response = client.post(url, data=form, headers={"Accept": "application/json"})
        answer = response.get_json()
        images = {key: answer[key] for key in image_keys if isinstance(answer, dict) and answer.get(key)}
        report = stable(answer) if isinstance(answer, dict) else {"raw": response.data.decode("latin-1")}
        text = json.dumps(report, sort_keys=True)
        cases[name] = {"status": response.status_code,
                       "images": {key: sha(value.encode("ascii")) for key, value in images.items()},
                       "report_sha": sha(text.encode()), "report": report}
        print(name, response.status_code, cases[name]["report_sha"][:12], file=sys.stderr, flush=True)

    for portrait in PORTRAITS:
        data = (folder / portrait).read_bytes()
        for spec in SPECS:  # the spec's default background (kept, for these three), then a white one
            post(f"{portrait}|{spec}", "/api/v1/idphoto",
                 {"image": (_bytes(data), portrait), "spec": spec, "face": "largest"}, ("image",))
            post(f"{portrait}|{spec}|white", "/api/v1/idphoto",
                 {"image": (_bytes(data), portrait), "spec": spec, "face": "largest", "background": "white"},
                 ("image",))
    for portrait in PORTRAITS[:3]:
        data = (folder / portrait).read_bytes()
        post(f"{portrait}|cn-1inch|gradient-blue", "/api/v1/idphoto",
             {"image": (_bytes(data), portrait), "spec": "cn-1inch", "face": "largest", "background": "blue",
              "background_style": "gradient", "max_kb": "30"}, ("image",))
        post(f"{portrait}|sheet", "/api/v1/idphoto/sheet",
             {"image": (_bytes(data), portrait), "spec": "us-passport", "face": "largest"}, ("image", "photo"))
        post(f"{portrait}|hivision", "/idphoto",
             {"input_image": (_bytes(data), portrait), "height": "413", "width": "295", "hd": "true"},
             ("image_base64_standard", "image_base64_hd"))
    return cases


def _bytes(data: bytes):  # a fresh stream per request: the test client reads it
    import io

    return io.BytesIO(data)


def compare(now: dict[str, dict], before: dict[str, dict]) -> int:
    bad = 0
    for name in sorted(set(now) | set(before)):
        a, b = now.get(name), before.get(name)
        if a is None or b is None:
            print(f"MISSING {name}")
            bad += 1
            continue
        same_images = a["images"] == b["images"] and a["status"] == b["status"]
        same_report = a["report_sha"] == b["report_sha"]
        if not (same_images and same_report):
            bad += 1
            print(f"DIFF {name}: images {'same' if same_images else 'DIFFER'}, report "
                  f"{'same' if same_report else 'DIFFERS'}")
            if not same_report:
                _diff(a["report"], b["report"], name)
    print(f"{len(now)} cases, {bad} differ")
    return 1 if bad else 0


def _diff(a: object, b: object, path: str) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            _diff(a.get(key), b.get(key), f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{i}]")
    elif a != b:
        print(f"  {path}: now {json.dumps(a)[:300]} / before {json.dumps(b)[:300]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args()
    cases = run()
    args.out.write_text(json.dumps(cases, sort_keys=True, indent=1))
    if args.compare is not None:
        sys.exit(compare(cases, json.loads(args.compare.read_text())))


if __name__ == "__main__":
    main()
