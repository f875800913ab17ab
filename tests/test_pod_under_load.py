"""The pod as the Kubernetes base runs it, under the loads that could take it down (issue 34).

The server starts with the environment of the ConfigMap that `kubectl kustomize deploy/k8s/base`
renders, through the real front (nginx, gunicorn, the real models), plus a generated stand-in
ArcFace (tests/onnx_fakes.py) so that /faces/compare runs. Then:

- every worker's slot and queue is filled with slow requests and one more is refused with the fast
  `503 busy`; right then /healthz and /readyz answer within the timeouts the rendered Deployment
  gives the kubelet's probes, before any slow request has finished;
- legal but costly requests, four at a time (alpha matting on a 12 MP portrait, a 36 MP float TIFF,
  base64 answers of a 49 MP photo, comparisons of two 49 MP PNGs, A4 sheets at 600 dpi): each is
  answered (200, or a JSON 4xx, or a fast 503), the summed PSS of the whole process tree, nginx
  included, stays under the Deployment's memory limit throughout, and no worker is replaced.

Slow or costly requests come from loopback addresses of their own (127.0.0.x), so the ConfigMap's
MAX_CONNECTIONS_PER_IP counts none of them twice.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.config import Settings
from app.models import __main__ as models_cli
from app.models.manifest import get_spec
from tests import onnx_fakes
from tests.conftest import RunningServer, reachable_folder
from tests.support.harness import Server, multipart, post_from
from tests.support import kube

pytestmark = [pytest.mark.server, pytest.mark.heavy]

CUTOUT = "/api/v1/remove-background"
SLOW = {"alpha_matting": "true", "alpha_matting_erode_size": "40"}


def rendered_base() -> tuple[dict[str, str], dict[str, object]]:
    """The ConfigMap's data, and the pilotlight container, as kustomize renders the base."""
    objects = kube.base()
    [container] = [c for c in kube.only(objects, "Deployment")["spec"]["template"]["spec"]["containers"] if c["name"] == "pilotlight"]
    return kube.configmap_env(objects), container


def mebibytes(quantity: str) -> int:
    assert quantity.endswith("Mi") or quantity.endswith("Gi"), quantity
    return int(quantity[:-2]) * (1024 if quantity.endswith("Gi") else 1)


@pytest.fixture(scope="module")
def pod_env(model_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env, _ = rendered_base()
    settings = Settings.from_env(env)
    home = tmp_path_factory.mktemp("pod-models")
    for name in settings.models:
        filename = get_spec(name).filename
        (home / filename).symlink_to(model_home / filename)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MODEL_HOME", str(home))
        path, digest = onnx_fakes.write(home / "incoming", "arcface.onnx", onnx_fakes.arcface())
        assert models_cli.main(["add", "arcface", str(path), "--sha256", digest]) == 0
    return {**env, "MODEL_HOME": str(home), "MODELS": f"{env['MODELS']},arcface"}


@pytest.fixture(scope="module")
def pod(running_server: RunningServer, pod_env: dict[str, str]) -> Iterator[Server]:
    # the pod mounts a volume at FRONT_TEMP_DIR; here, a folder nginx's workers can reach. TIMEOUT
    # (the base's 120 s, also the longest wait for an inference slot): the full-queue test's last
    # queued matting waits for four before it, which a machine shared with the rest of the suite can
    # stretch past 120 s into a `wait_timeout` 503. How long a request may wait is not what these
    # tests measure (tests/test_admission.py does).
    with reachable_folder() as folder, running_server(**{**pod_env, "TIMEOUT": "600", "FRONT_TEMP_DIR": str(folder)}) as server:
        yield server


def test_probes_answer_while_every_queue_is_full(pod: Server, pod_env: dict[str, str], astronaut: np.ndarray) -> None:
    _, container = rendered_base()
    settings = Settings.from_env(pod_env)
    assert settings.worker_threads >= settings.queue_depth + 2
    # alpha matting at 900 px keeps a worker busy for seconds: long beside the probes' milliseconds,
    # short enough that the ten requests of the base's queues are through in a few rounds
    photo = jpeg(Image.fromarray(astronaut).resize((900, 900), Image.BILINEAR), quality=92)
    body, content_type = multipart({"image": ("slow.jpg", photo, "image/jpeg")}, SLOW)
    capacity = settings.workers * (1 + settings.queue_depth)
    finished: list[tuple[float, int, bytes]] = []
    lock = threading.Lock()

    def slow(index: int) -> None:
        status, answer = post_from(pod, f"127.0.0.{10 + index}", CUTOUT, body, content_type)
        with lock:
            finished.append((time.monotonic(), status, answer))

    # one more than the workers' slots and queues hold: nginx spreads them evenly (an idle worker
    # first, then the least queued), so every queue fills and the last one is turned away by its
    # worker's gate at once
    threads = [threading.Thread(target=slow, args=(index,), daemon=True) for index in range(capacity + 1)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with lock:
            if finished:
                break
        time.sleep(0.05)
    health = pod.get("/healthz", timeout=container["livenessProbe"].get("timeoutSeconds", 1))
    ready = pod.get("/readyz", timeout=container["readinessProbe"].get("timeoutSeconds", 1))
    answered_at = time.monotonic()
    assert health.status_code == 200 and ready.status_code == 200, (health.text, ready.text)
    for thread in threads:
        thread.join(timeout=600)
    refused = [answer for _, status, answer in finished if status == 503]
    served = [at for at, status, _ in finished if status == 200]
    assert len(refused) == 1 and b'"queue_full"' in refused[0], [(status, answer[:200]) for _, status, answer in finished]
    assert len(served) == capacity, "every slot and queue held a request"
    assert all(at > answered_at for at in served), "a slow request ended before the probes were answered: not under load"


def jpeg(image: Image.Image, quality: int = 85) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


def costly_requests(astronaut: np.ndarray) -> dict[str, tuple[str, bytes, str, str]]:
    """{kind: (path, body, content type, Accept)}: each a legal request that is costly to serve."""
    face = Image.fromarray(astronaut)
    grey = np.asarray(face.convert("L").resize((6000, 6000), Image.BILINEAR), dtype=np.float32)
    tiff = io.BytesIO()
    Image.fromarray(grey, mode="F").save(tiff, "TIFF", compression="tiff_adobe_deflate")  # 36 MP of float32
    canvas = Image.new("RGB", (7000, 7000), (235, 235, 235))  # 49 MP; flat, so the PNG is a few MB
    canvas.paste(face.resize((2000, 2000)), (2500, 1500))
    png = io.BytesIO()
    canvas.save(png, "PNG", compress_level=1)
    portrait_12mp = jpeg(face.resize((4000, 3000), Image.BILINEAR))
    photo_49mp = jpeg(face.resize((7000, 7000), Image.BILINEAR), quality=80)
    requests_ = {
        "alpha matting, 12 MP": (CUTOUT, multipart({"image": ("p.jpg", portrait_12mp, "image/jpeg")}, {"alpha_matting": "true"}), "*/*"),
        "float TIFF, 36 MP": (CUTOUT, multipart({"image": ("f.tif", tiff.getvalue(), "image/tiff")}, {}), "*/*"),
        "base64 answer, 49 MP": (CUTOUT, multipart({"image": ("b.jpg", photo_49mp, "image/jpeg")}, {}), "application/json"),
        "compare two 49 MP PNGs": ("/api/v1/faces/compare", multipart({"image1": ("1.png", png.getvalue(), "image/png"),
                                                                       "image2": ("2.png", png.getvalue(), "image/png")}, {}), "*/*"),
        "A4 sheet at 600 dpi": ("/api/v1/idphoto/sheet", multipart({"image": ("s.jpg", jpeg(face), "image/jpeg")},
                                                                   {"spec": "cn-1inch", "paper": "a4", "sheet_dpi": "600", "format": "png"}), "*/*"),
    }
    return {kind: (path, body, content_type, accept) for kind, (path, (body, content_type), accept) in requests_.items()}


def test_costly_requests_four_at_a_time_keep_the_pod_within_its_memory_limit(
    pod: Server, pod_env: dict[str, str], astronaut: np.ndarray
) -> None:
    _, container = rendered_base()
    limit_mib = mebibytes(container["resources"]["limits"]["memory"])
    upload_limit = Settings.from_env(pod_env).max_upload_bytes
    workers = pod.wait_workers(Settings.from_env(pod_env).workers)
    peaks_kib: dict[str, int] = {}
    current = ["start"]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            kind = current[0]
            peaks_kib[kind] = max(peaks_kib.get(kind, 0), pod.tree_pss_kib())
            stop.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    outcomes: dict[str, list[tuple[int, bytes]]] = {}
    try:
        for kind, (path, body, content_type, accept) in costly_requests(astronaut).items():
            assert len(body) <= upload_limit, f"{kind}: {len(body)} bytes is over MAX_UPLOAD_MB: not a legal request"
            current[0] = kind
            answers: list[tuple[int, bytes]] = []
            lock = threading.Lock()

            def send(index: int) -> None:
                answer = post_from(pod, f"127.0.1.{index + 1}", path, body, content_type, accept=accept)
                with lock:
                    answers.append(answer)

            threads = [threading.Thread(target=send, args=(index,), daemon=True) for index in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=600)
            outcomes[kind] = answers
    finally:
        stop.set()
        sampler.join(timeout=10)
    summary = {kind: sorted(status for status, _ in answers) for kind, answers in outcomes.items()}
    for kind, answers in outcomes.items():
        assert len(answers) == 4, (kind, summary)
        for status, answer in answers:
            assert status in (200, 413, 422, 503), (kind, status, answer[:300])
            if status != 200:
                assert b'"error"' in answer and b'"code"' in answer, (kind, answer[:300])
        assert any(status == 200 for status, _ in answers), f"{kind}: none served, so nothing costly was measured ({summary})"
    peaks = {kind: round(kib / 1024) for kind, kib in peaks_kib.items()}
    assert max(peaks.values()) < limit_mib, f"summed PSS peaked over the pod's {limit_mib} MiB: {peaks} MiB ({summary})"
    assert pod.workers() == workers, "a worker was replaced"
    assert pod.get("/readyz", timeout=20).status_code == 200
    print(f"costly requests, four at a time: summed PSS peaks (MiB, of {limit_mib}) {peaks}; {summary}")  # noqa: T201
