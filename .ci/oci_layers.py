"""The layers of an image pushed to an OCI layout directory, as a node pulls them.

    python3 .ci/oci_layers.py DIR            JSON: total bytes of DIR/blobs, and each layer in order
                                             (digest, compressed bytes, the Dockerfile step)

`podman push --compression-format gzip IMAGE oci:DIR:TAG` writes the layout; the layer sizes are
the gzip-compressed sizes a registry serves and a node downloads. Standard library only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _blob(root: Path, digest: str) -> Path:
    algorithm, hexdigest = digest.split(":", 1)
    return root / "blobs" / algorithm / hexdigest


def describe(root: Path) -> dict[str, object]:
    index = json.loads((root / "index.json").read_text())
    manifest = json.loads(_blob(root, index["manifests"][0]["digest"]).read_text())
    config = json.loads(_blob(root, manifest["config"]["digest"]).read_text())
    steps = [entry.get("created_by", "") for entry in config.get("history", []) if not entry.get("empty_layer")]
    if len(steps) != len(manifest["layers"]):
        steps = [""] * len(manifest["layers"])
    layers = [
        {"digest": layer["digest"], "bytes": layer["size"], "step": " ".join(step.split())[:120]}
        for layer, step in zip(manifest["layers"], steps, strict=True)
    ]
    total = sum(path.stat().st_size for path in (root / "blobs").rglob("*") if path.is_file())
    return {"total_bytes": total, "layers": layers}


if __name__ == "__main__":
    json.dump(describe(Path(sys.argv[1])), sys.stdout, indent=1)
    print()
