#!/usr/bin/env bash
# Smoke test of the running container (called by podman-build-run.sh as SMOKE, with the container
# up and /readyz already 200): real photos through the ID photo, background-removal and face
# endpoints (insightface and OpenCV import in the slimmed venv), non-root, read-only root filesystem. URL: http://127.0.0.1:$HOST_PORT.
set -euo pipefail
cd "$(dirname "$0")/.."
url="http://127.0.0.1:${HOST_PORT:-8000}"
cid=$(podman ps --format '{{.ID}} {{.Ports}}' | awk -v port=":${HOST_PORT:-8000}->" 'index($0, port) {print $1; exit}')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.venv/bin/python -c "
import sys; from skimage import data; from PIL import Image
Image.fromarray(data.astronaut()).save(sys.argv[1], quality=92)" "$work/astronaut.jpg"

curl -sf "$url/readyz" -o "$work/readyz.json"
# background=white: the replaced-background path (the US refuses it, and the report says so; the
# default, the photographed background kept, is the subset of it the tests cover)
curl -sf -F image=@"$work/astronaut.jpg" -F spec=us-passport -F background=white "$url/api/v1/idphoto" -o "$work/passport.jpg"
curl -sf -F image=@"$work/astronaut.jpg" "$url/api/v1/remove-background" -o "$work/cutout.png"
curl -sf "$url/" -o "$work/page.html"
curl -sf -F image=@"$work/astronaut.jpg" -F crops=true "$url/api/v1/faces" -o "$work/faces.json"
# HivisionIDPhotos' watermark in Chinese: the image's CJK font (fonts-droid-fallback) is in place
curl -sf -F input_image=@"$work/astronaut.jpg" -F text=仅供办证使用 "$url/watermark?size=30&opacity=1" -o "$work/watermark.json"
status=$(curl -s -o "$work/error.json" -w '%{http_code}' -F image=@README.md "$url/api/v1/idphoto" -F spec=icao)
.venv/bin/python - "$work" "$status" "$url" <<'PY'
import json, sys
from pathlib import Path
import numpy as np
from PIL import Image
work, status = Path(sys.argv[1]), int(sys.argv[2])
ready = json.loads((work / "readyz.json").read_text())
assert ready["status"] == "ready" and ready["worker"]["warm"], ready
# the default models: MODNet (the portrait matte) with each of its input shapes warm on each lane
assert len(ready["models"]["modnet"]["warm_shapes"]) >= 3 and "u2net" in ready["models"], ready["models"]
passport = Image.open(work / "passport.jpg")
assert passport.size == (600, 600) and round(passport.info["dpi"][0]) == 300, (passport.size, passport.info)
corner = np.asarray(passport.convert("RGB"))[:10, :10].reshape(-1, 3).mean(axis=0)
assert (corner > 245).all(), f"background corner {corner} is not white"
cutout = Image.open(work / "cutout.png")
alpha = np.asarray(cutout)[:, :, 3]
assert cutout.size == (512, 512) and alpha[60:170, 180:280].mean() > 230 and alpha[:128, 384:].mean() < 10
faces = json.loads((work / "faces.json").read_text())["faces"]
assert len(faces) == 1 and len(faces[0]["landmarks"]) == 5 and faces[0]["crop"], faces
watermark = json.loads((work / "watermark.json").read_text())
assert watermark["status"] is True and watermark["image_base64"], {k: v for k, v in watermark.items() if k != "image_base64"}
error = json.loads((work / "error.json").read_text())
assert status == 415 and error["error"]["code"] == "unsupported_media_type", (status, error)
# The page's on-device cut-out: its files were fetched at build time and are served, immutable.
import hashlib, re, urllib.request
html = (work / "page.html").read_text()
ondevice = json.loads(re.search(r'id="page-data">(.*?)</script>', html, re.S).group(1))["ondevice"]
assert ondevice is not None, "the image lacks the on-device cut-out's files (app.models fetch web-runtime u2netp)"
base = sys.argv[3]
for role in ("runtime", "wasm", "model"):
    with urllib.request.urlopen(base + ondevice[role]["url"], timeout=60) as answer:
        body = answer.read()
        assert "immutable" in answer.headers["Cache-Control"], answer.headers
    assert hashlib.sha256(body).hexdigest() == ondevice[role]["sha256"], role
print("container smoke: readyz ready; idphoto 600x600 at 300 dpi on white; cut-out alpha separates the person; "
      "one face with its aligned crop; Chinese watermark; 415 JSON error; on-device cut-out files served with their sha256")
print("startup phases:", json.dumps(ready["startup"]))
PY
# Slow clients through the image's own front (nginx): 64 slow-header, 16 slow-body and 12
# slow-reader connections, each kind open beside a good client whose probes and cut-outs must all be 200.
.venv/bin/python -m bench.slowloris --url "$url" --seconds 8 --check \
  --scenario slow_headers --scenario slow_body --scenario slow_reader

if [ -n "$cid" ]; then
  processes=$(podman top "$cid" args | tail -n +2)
  echo "$processes" | grep -q '^/usr/bin/tini' || { echo "PID 1 is not tini: $processes"; exit 1; }
  echo "$processes" | grep -q 'nginx: master process' || { echo "no nginx in the container: $processes"; exit 1; }
  uid=$(podman exec "$cid" id -u)
  [ "$uid" != 0 ] || { echo "container runs as root"; exit 1; }
  if podman exec "$cid" sh -c 'touch /srv/pilotlight/probe' 2>/dev/null; then
    echo "root filesystem is writable"; exit 1
  fi
  echo "container smoke: runs as uid $uid; root filesystem is read-only; tini runs the launcher, nginx and gunicorn"
  # SIGTERM (docker/podman stop): nginx drains, gunicorn stops, the container exits 0 in time
  started=$(date +%s)
  podman stop -t 60 "$cid" >/dev/null
  code=$(podman inspect -f '{{.State.ExitCode}}' "$cid")
  took=$(( $(date +%s) - started ))
  [ "$code" = 0 ] || { echo "the container exited $code on SIGTERM"; podman logs "$cid" | tail -20; exit 1; }
  [ "$took" -lt 35 ] || { echo "the container took $took s to stop"; exit 1; }
  echo "container smoke: SIGTERM stopped it in $took s with exit code 0"
fi
