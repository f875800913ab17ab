#!/usr/bin/env bash
# What a node pays to pull the image, and what a code-only change costs (run by .ci/run after the
# image is built; needs root and podman, as podman-build-run.sh does).
#   .ci/image-figures.sh IMAGE
# 1. the gzip-compressed image with its default models: at most MAX_IMAGE_MB (500) MB;
# 2. a copy of the build context with one line added to app/ is built with the layer cache: the
#    layers that differ are the last ones (after the venv, models and numba cache) and together
#    at most MAX_CODE_MB (2) MB compressed;
# 3. the venv layer is the same in both builds (it changes only with the requirements files).
# MB = 10^6 bytes. Compressed sizes come from `podman push --compression-format gzip` to an OCI
# directory: what a registry serves.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${1:?usage: image-figures.sh IMAGE}
MAX_IMAGE_MB=${MAX_IMAGE_MB:-500}
MAX_CODE_MB=${MAX_CODE_MB:-2}
W=${PODMAN_WORKDIR:-/tmp/podman-build-run}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$W/containers.conf}  # podman-build-run.sh's (runc, cgroupfs)
work=$(mktemp -d)
trap 'rm -rf "$work"; podman rmi -f localhost/pilotlight:code-change >/dev/null 2>&1 || true' EXIT

layout() {  # IMAGE DIR -> the JSON of .ci/oci_layers.py
  podman push -q --compression-format gzip "$1" "oci:$2:image" >/dev/null
  python3 .ci/oci_layers.py "$2"
}
layout "$IMAGE" "$work/first" > "$work/first.json"

# The same context, file times kept (the layer cache compares them), plus a code-only change.
mkdir "$work/context"
git ls-files -z | xargs -0 cp -a --parents -t "$work/context"
printf '\n# a code-only change (.ci/image-figures.sh)\n' >> "$work/context/app/api/health.py"
podman build -q --format docker --build-arg BASE_IMAGE=localhost/pybase:bookworm \
  -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
  -v "$W/pip.conf:/etc/pip.conf:ro" \
  -t localhost/pilotlight:code-change "$work/context" >/dev/null
layout localhost/pilotlight:code-change "$work/second" > "$work/second.json"

python3 - "$work/first.json" "$work/second.json" "$MAX_IMAGE_MB" "$MAX_CODE_MB" <<'PY'
import json, sys
first, second = (json.load(open(path)) for path in sys.argv[1:3])
max_image, max_code = (float(v) * 1e6 for v in sys.argv[3:5])
mb = lambda n: f"{n / 1e6:.1f} MB"
failures = []
print("image layers, gzip-compressed (as a node pulls them):")
for layer in first["layers"]:
    print(f"  {mb(layer['bytes']):>9}  {layer['step']}")
total = first["total_bytes"]
print(f"1. image with its default models, gzip-compressed: {mb(total)} ({total / 2**20:.0f} MiB; bound {mb(max_image)})")
if total > max_image:
    failures.append(f"the image is {mb(total)}, over {mb(max_image)}")
old = [layer["digest"] for layer in first["layers"]]
changed = [i for i, layer in enumerate(second["layers"]) if i >= len(old) or layer["digest"] != old[i]]
changed_bytes = sum(second["layers"][i]["bytes"] for i in changed)
venv = [i for i, layer in enumerate(first["layers"]) if "/opt/venv" in layer["step"]]
heavy = [i for i, layer in enumerate(first["layers"]) if any(p in layer["step"] for p in ("/opt/venv", "/opt/models", "/opt/numba-cache"))]
print(f"2. a code-only change: {len(changed)} of {len(second['layers'])} layers differ, {mb(changed_bytes)} to pull "
      f"(bound {mb(max_code)}): " + ", ".join(second["layers"][i]["step"][:60] for i in changed))
if changed_bytes > max_code:
    failures.append(f"a code-only change pulls {mb(changed_bytes)}, over {mb(max_code)}")
if heavy and changed and min(changed) <= max(heavy):
    failures.append("a code-only change touched a layer at or before the venv/models/numba layers")
if not venv:
    failures.append("no layer copies /opt/venv (cannot tell the venv layer)")
else:
    same = all(i < len(second["layers"]) and second["layers"][i]["digest"] == first["layers"][i]["digest"] for i in venv)
    print(f"3. venv layer ({mb(first['layers'][venv[0]]['bytes'])}, {first['layers'][venv[0]]['digest'][:19]}): "
          + ("unchanged by a code-only change; it changes only with requirements*.txt" if same else "CHANGED by a code-only change"))
    if not same:
        failures.append("the venv layer changed without a requirements change")
if failures:
    print("image figures out of bounds: " + "; ".join(failures))
    sys.exit(1)
PY
