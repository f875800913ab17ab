"""insightface is installed with --no-deps (requirements-nodeps.txt): nothing pulls in what it
imports, so this checks, in a fresh interpreter, that the insightface modules the app uses import,
that every third-party module they load is pinned in requirements.txt, and that neither of the
distributions insightface declares and we replace (onnxruntime for GPUs, opencv-python) crept in.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The modules app/models/insight.py imports from insightface.
USED = (
    "insightface.app.common",
    "insightface.model_zoo.arcface_onnx",
    "insightface.model_zoo.attribute",
    "insightface.model_zoo.inswapper",
    "insightface.model_zoo.landmark",
    "insightface.model_zoo.scrfd",
    "insightface.utils.face_align",
)
# top-level module -> the distribution in requirements.txt that provides it
PROVIDERS = {
    "cv2": "opencv-python-headless",
    "google": "protobuf",
    "ml_dtypes": "ml-dtypes",
    "onnx": "onnx",
    "onnxruntime": "onnxruntime",
    "numpy": "numpy",
    "scipy": "scipy",
    "skimage": "scikit-image",
    "requests": "requests",
    "tqdm": "tqdm",
    # what those import in turn
    "certifi": "certifi",
    "charset_normalizer": "charset-normalizer",
    "idna": "idna",
    "lazy_loader": "lazy-loader",
    "packaging": "packaging",
    "typing_extensions": "typing-extensions",
    "urllib3": "urllib3",
}
NOT_PACKAGES = {"insightface", "cython_runtime"}  # the package itself; a module Cython extensions create


def _pinned() -> set[str]:
    names = set()
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==", line)
        if match:
            names.add(match.group(1).lower().replace("_", "-"))
    return names


def test_insightface_imports_what_requirements_pin() -> None:
    script = f"""
import json, sys
before = set(sys.modules)
for name in {USED!r}:
    __import__(name)
loaded = sorted({{m.split('.')[0] for m in set(sys.modules) - before}})
print(json.dumps([m for m in loaded if m not in sys.stdlib_module_names and not m.startswith('_')]))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    third_party = set(json.loads(done.stdout.strip().splitlines()[-1])) - NOT_PACKAGES
    unknown = third_party - set(PROVIDERS)
    assert not unknown, f"insightface now imports {sorted(unknown)}: pin it in requirements.txt and list it here"
    missing = {PROVIDERS[module] for module in third_party} - _pinned()
    assert not missing, f"insightface imports modules from {sorted(missing)}, not pinned in requirements.txt"


def test_the_nodeps_pin_is_what_is_installed_and_nothing_it_declares_replaced_ours() -> None:
    pins = [line for line in (ROOT / "requirements-nodeps.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert pins == [f"insightface=={metadata.version('insightface')}"]
    installed = {dist.metadata["Name"].lower() for dist in metadata.distributions()}
    assert "opencv-python" not in installed, "opencv-python (with GUI) replaces the headless cv2 module"
    assert "opencv-python-headless" in installed
