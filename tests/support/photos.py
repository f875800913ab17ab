"""The two photos every server test and benchmark sends: a real group photo for the cut-out and a
real portrait for the ID photo. Nothing here imports the app."""

from __future__ import annotations

import importlib.util
import io
import os
from dataclasses import dataclass
from pathlib import Path

# rembg's CLI server and insightface's data file live in this venv (bench.peer makes it)
BENCH_VENV = Path(os.environ.get("BENCH_VENV", "/tmp/pilotlight-bench-venv"))


@dataclass(frozen=True)
class Photo:
    name: str
    description: str
    jpeg: bytes
    width: int
    height: int


def insightface_t1() -> Path:
    """insightface's t1.jpg (1280x886, a real group photo): found in this interpreter's packages, or
    in the bench venv (requirements-nodeps.txt installs insightface there with --no-deps). Only
    its data file is read."""
    candidates: list[Path] = []
    spec = importlib.util.find_spec("insightface")
    if spec is not None and spec.submodule_search_locations:
        candidates.append(Path(list(spec.submodule_search_locations)[0]) / "data" / "images" / "t1.jpg")
    candidates += sorted(BENCH_VENV.glob("lib/python3*/site-packages/insightface/data/images/t1.jpg"))
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(
        "insightface's t1.jpg was not found; run the suite once without --no-setup (it installs "
        "requirements-nodeps.txt into BENCH_VENV) or pip install --no-deps -r requirements-nodeps.txt"
    )


def cutout_photo() -> Photo:
    """The background-removal photo: insightface's t1.jpg as shipped (1280x886 JPEG, six people)."""
    data = insightface_t1().read_bytes()
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
    return Photo("t1.jpg", f"insightface's t1.jpg, a real photo, {width}x{height} JPEG as shipped ({len(data) // 1024} KiB)", data, width, height)


def portrait_photo() -> Photo:
    """The ID-photo portrait: scikit-image's astronaut (512x512, one frontal face), JPEG quality 92."""
    from PIL import Image
    from skimage import data

    buffer = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buffer, "JPEG", quality=92)
    raw = buffer.getvalue()
    return Photo("astronaut.jpg", f"scikit-image's astronaut, a real portrait, 512x512 JPEG q92 ({len(raw) // 1024} KiB)", raw, 512, 512)
