"""Contract tests against the real servers.

- `rembg s` (rembg 2.0.86, in the bench's environment, made by `python -m bench.peer`: the first
  time it installs rembg and compiles numba's kernels, minutes on a fresh machine; then it is
  reused while the requirements are unchanged) and pilotlight answer the same requests to
  /api/remove with `model=u2net`: same status, content type, image mode and size, and the alpha
  agrees. One server runs at a time: rembg s first, then pilotlight.
- HivisionIDPhotos' documented curl and Python examples (docs/api_EN.md, verbatim but for the
  host and port) run against the real pilotlight, in a folder holding the files they name.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import requests
from PIL import Image

from tests.conftest import RunningServer, jpeg_bytes
from tests.support.harness import ROOT, Server
from tests.support.photos import BENCH_VENV

pytestmark = pytest.mark.server

CASES = {  # name: (query, form) sent to both servers
    "cutout": ("", {"model": "u2net"}),
    "mask": ("", {"model": "u2net", "om": "true"}),
    "colour": ("?bgc=0,0,255,255", {"model": "u2net"}),
    "smooth": ("", {"model": "u2net", "ppm": "true"}),
}
HIVISION_URL = "http://127.0.0.1:8080"


def answers(url: str, photo: bytes) -> dict[str, requests.Response]:
    return {name: requests.post(f"{url}/api/remove{query}", files={"file": ("photo.jpg", photo, "image/jpeg")},
                                data=form, timeout=300) for name, (query, form) in CASES.items()}


@pytest.fixture(scope="module")
def rembg_answers(model_home: Path, astronaut: np.ndarray, tmp_path_factory: pytest.TempPathFactory,
                  ) -> dict[str, requests.Response]:
    subprocess.run([sys.executable, "-m", "bench.peer"], cwd=ROOT, check=True, timeout=1800)  # noqa: S603
    rembg = BENCH_VENV / "bin" / "rembg"
    server = Server(env={"U2NET_HOME": str(model_home), "BROWSER": "true"}, name="rembg s", kind="rembg",
                    command=[str(rembg), "s", "--host", "127.0.0.1", "--port", "{port}", "--no-ui"],
                    log_path=tmp_path_factory.mktemp("rembg") / "rembg.log").start()
    try:
        server.wait_started(timeout=120, ready_path=None)
        return answers(server.url, jpeg_bytes(astronaut))
    finally:
        server.stop()


@pytest.fixture(scope="module")
def server(running_server: RunningServer) -> Iterator[Server]:
    with running_server(MODELS="u2net,centerface", SEGMENTATION_MODEL="u2net") as srv:
        yield srv


def test_api_remove_answers_as_rembg_s_does(rembg_answers: dict[str, requests.Response], server: Server,
                                            astronaut: np.ndarray) -> None:
    ours = answers(server.url, jpeg_bytes(astronaut))
    for name, theirs in rembg_answers.items():
        mine = ours[name]
        assert (mine.status_code, mine.headers["Content-Type"]) == (theirs.status_code, theirs.headers["Content-Type"]), name
        a, b = Image.open(io.BytesIO(theirs.content)), Image.open(io.BytesIO(mine.content))
        assert (b.mode, b.size) == (a.mode, a.size), name
        band = -1 if a.mode == "RGBA" else 0
        alpha_a = np.asarray(a.split()[band], np.float32) / 255
        alpha_b = np.asarray(b.split()[band], np.float32) / 255
        agree = ((alpha_a >= 0.5) == (alpha_b >= 0.5)).mean()
        assert agree > 0.99 and np.abs(alpha_a - alpha_b).mean() < 0.02, (name, agree)
    colour = np.asarray(Image.open(io.BytesIO(ours["colour"].content)))
    cut = np.asarray(Image.open(io.BytesIO(ours["cutout"].content)))
    assert (colour[cut[:, :, 3] == 0][:, :3] == (0, 0, 255)).all(), "the query colour shows where the cut-out is clear"


CURL = {  # docs/api_EN.md's cURL examples, as written there
    "idphoto": '''curl -X POST "http://127.0.0.1:8080/idphoto" \\
-F "input_image=@demo/images/test0.jpg" \\
-F "height=413" \\
-F "width=295" \\
-F "human_matting_model=modnet_photographic_portrait_matting" \\
-F "face_detect_model=mtcnn" \\
-F "hd=true" \\
-F "dpi=300" \\
-F "face_alignment=true"''',
    "add_background": '''curl -X POST "http://127.0.0.1:8080/add_background" \\
-F "input_image=@test.png" \\
-F "color=638cce" \\
-F "kb=200" \\
-F "render=0" \\
-F "dpi=300"''',
    "generate_layout_photos": '''curl -X POST "http://127.0.0.1:8080/generate_layout_photos" \\
-F "input_image=@test.jpg" \\
-F "height=413" \\
-F "width=295" \\
-F "kb=200" \\
-F "dpi=300"''',
    "human_matting": '''curl -X POST "http://127.0.0.1:8080/human_matting" \\
-F "input_image=@demo/images/test0.jpg" \\
-F "human_matting_model=modnet_photographic_portrait_matting" \\
-F "dpi=300"''',
    "watermark": '''curl -X 'POST' \\
  'http://127.0.0.1:8080/watermark?size=20&opacity=0.5&angle=30&color=%23000000&space=25' \\
  -H 'accept: application/json' \\
  -H 'Content-Type: multipart/form-data' \\
  -F 'input_image=@demo/images/test0.jpg;type=image/jpeg' \\
  -F 'text=Hello' \\
  -F 'dpi=300\'''',
    "set_kb": '''curl -X 'POST' \\
  'http://127.0.0.1:8080/set_kb' \\
  -H 'accept: application/json' \\
  -H 'Content-Type: multipart/form-data' \\
  -F 'input_image=@demo/images/test0.jpg;type=image/jpeg' \\
  -F 'kb=50' \\
  -F 'dpi=300\'''',
    "idphoto_crop": '''curl -X 'POST' \\
  'http://127.0.0.1:8080/idphoto_crop?head_measure_ratio=0.2&head_height_ratio=0.45&top_distance_max=0.12&top_distance_min=0.1' \\
  -H 'accept: application/json' \\
  -H 'Content-Type: multipart/form-data' \\
  -F 'input_image=@idphoto_matting.png;type=image/png' \\
  -F 'height=413' \\
  -F 'width=295' \\
  -F 'face_detect_model=mtcnn' \\
  -F 'hd=true' \\
  -F 'dpi=300\'''',
}

PYTHON = {  # docs/api_EN.md's Python examples, as written there
    "idphoto": '''import requests

url = "http://127.0.0.1:8080/idphoto"
input_image_path = "demo/images/test0.jpg"

# Set request parameters
files = {"input_image": open(input_image_path, "rb")}
data = {
    "height": 413,
    "width": 295,
    "human_matting_model": "modnet_photographic_portrait_matting",
    "face_detect_model": "mtcnn",
    "hd": True,
    "dpi": 300,
    "face_alignment": True,
    "head_measure_ratio": 0.2,
    "head_height_ratio": 0.45,
    "top_distance_max": 0.12,
    "top_distance_min": 0.1,
    "brightness_strength": 0,
    "contrast_strength": 0,
    "sharpen_strength": 0,
    "saturation_strength": 0,
}

response = requests.post(url, files=files, data=data).json()

# response is a JSON formatted dictionary containing status, image_base64_standard, and image_base64_hd
print(response)
''',
    "add_background": '''import requests

url = "http://127.0.0.1:8080/add_background"
input_image_path = "test.png"

files = {"input_image": open(input_image_path, "rb")}
data = {
    "color": '638cce',
    "kb": None,
    "render": 0,
    "dpi": 300,
}

response = requests.post(url, files=files, data=data).json()

# response is a JSON formatted dictionary containing status and image_base64
print(response)
''',
    "generate_layout_photos": '''import requests

url = "http://127.0.0.1:8080/generate_layout_photos"
input_image_path = "test.jpg"

files = {"input_image": open(input_image_path, "rb")}
data = {
    "height": 413,
    "width": 295,
    "kb": 200,
    "dpi": 300,
}

response = requests.post(url, files=files, data=data).json()

# response is a JSON formatted dictionary containing status and image_base64
print(response)
''',
    "human_matting": '''import requests

url = "http://127.0.0.1:8080/human_matting"
input_image_path = "test.jpg"

files = {"input_image": open(input_image_path, "rb")}
data = {
    "human_matting_model": "modnet_photographic_portrait_matting",
    "dpi": 300,
}

response = requests.post(url, files=files, data=data).json()

# response is a JSON formatted dictionary containing status and image_base64
print(response)
''',
    "watermark": '''import requests

# Set the request URL and parameters
url = "http://127.0.0.1:8080/watermark"
params = {
    "size": 20,
    "opacity": 0.5,
    "angle": 30,
    "color": "#000000",
    "space": 25,
}

# Set file and other form data
input_image_path = "demo/images/test0.jpg"
files = {"input_image": open(input_image_path, "rb")}
data = {"text": "Hello", "dpi": 300}

# Send POST request
response = requests.post(url, params=params, files=files, data=data)

# Check response
if response.ok:
    # Output response content
    print(response.json())
else:
    # Output error message
    print(f"Request failed with status code {response.status_code}: {response.text}")
''',
    "set_kb": '''import requests

# Set the request URL
url = "http://127.0.0.1:8080/set_kb"

# Set file and other form data
input_image_path = "demo/images/test0.jpg"
files = {"input_image": open(input_image_path, "rb")}
data = {"kb": 50, "dpi": 300}

# Send POST request
response = requests.post(url, files=files, data=data)

# Check response
if response.ok:
    # Output response content
    print(response.json())
else:
    # Output error message
    print(f"Request failed with status code {response.status_code}: {response.text}")
''',
    "idphoto_crop": '''import requests

# Set the request URL
url = "http://127.0.0.1:8080/idphoto_crop"

# Set file and other form data
input_image_path = "idphoto_matting.png"
files = {"input_image": ("idphoto_matting.png", open(input_image_path, "rb"), "image/png")}
data = {
    "height": 413,
    "width": 295,
    "face_detect_model": "mtcnn",
    "hd": "true",
    "dpi": 300,
    "head_measure_ratio": 0.2,
    "head_height_ratio": 0.45,
    "top_distance_max": 0.12,
    "top_distance_min": 0.1,
}

# Send POST request
response = requests.post(url, files=files, data=data)

# Check response
if response.ok:
    # Output response content
    print(response.json())
else:
    # Output error message
    print(f"Request failed with status code {response.status_code}: {response.text}")
''',
}
EXPECTED = {"idphoto": {"image_base64_standard", "image_base64_hd"}, "idphoto_crop": {"image_base64_standard",
                                                                                      "image_base64_hd"}}


@pytest.fixture(scope="module")
def example_folder(tmp_path_factory: pytest.TempPathFactory, astronaut: np.ndarray, server: Server) -> Path:
    """A folder with the files the examples name: the portrait, and the transparent ID photo that
    /add_background and /idphoto_crop take (made by /idphoto)."""
    import base64

    folder = tmp_path_factory.mktemp("hivision-examples")
    (folder / "demo" / "images").mkdir(parents=True)
    for name in ("demo/images/test0.jpg", "test.jpg"):
        (folder / name).write_bytes(jpeg_bytes(astronaut))
    made = server.post("/idphoto", files={"input_image": ("a.jpg", jpeg_bytes(astronaut), "image/jpeg")},
                       data={"hd": "false"}).json()
    transparent = base64.b64decode(made["image_base64_standard"].partition(",")[2])
    for name in ("test.png", "idphoto_matting.png"):
        (folder / name).write_bytes(transparent)
    return folder


def check_answer(route: str, body: dict[str, object]) -> None:
    assert body["status"] is True, (route, body)
    for field in EXPECTED.get(route, {"image_base64"}):
        value = body[field]
        assert isinstance(value, str) and value.startswith("data:image/png;base64,"), (route, field)
    assert isinstance(body["pilotlight"], dict) and "edits" in body["pilotlight"], route


@pytest.mark.parametrize("route", list(CURL))
def test_hivisions_curl_examples_run_unchanged(server: Server, example_folder: Path, route: str) -> None:
    command = CURL[route].replace(HIVISION_URL, server.url).replace("\\\n", " ")
    done = subprocess.run(["bash", "-c", command + " --silent --show-error --fail-with-body"], cwd=example_folder,  # noqa: S603,S607
                          capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, (route, done.stderr[-500:], done.stdout[-500:])
    check_answer(route, json.loads(done.stdout))


@pytest.mark.parametrize("route", list(PYTHON))
def test_hivisions_python_examples_run_unchanged(server: Server, example_folder: Path, route: str) -> None:
    script = PYTHON[route].replace(HIVISION_URL, server.url)
    script += ("\nimport json\nwith open('answer.json', 'w') as out:\n"
               "    json.dump(response if isinstance(response, dict) else response.json(), out)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=example_folder, capture_output=True, timeout=300,  # noqa: S603
                          check=False, env={**os.environ, "NO_PROXY": "127.0.0.1"})
    assert done.returncode == 0, (route, done.stderr[-800:])
    assert b"Request failed" not in done.stdout, done.stdout[-300:]
    check_answer(route, json.loads((example_folder / "answer.json").read_text()))
