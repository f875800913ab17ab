"""The camera's live check beside the ID photos (issue 52, item 4): latency, cost, capacity.

    .venv/bin/python -m bench.live            # ~2 min on 2 cores; prints the table
    .venv/bin/python -m bench.live --seconds 5

One pilotlight, 2 workers, as start.sh starts it (nginx in front), with the models the page's camera
uses (centerface, landmarks68; u2net for the ID photos). Live clients each send the frame the page
sends (the astronaut in the icao outline, 320 px high, JPEG) at most 4 times a second, one at a
time (the page waits for each answer). For 1, 4 and 8 live clients: the live check's p50 and p95,
the checks answered a second and the share refused busy (503). Then an ID photo's time alone and
with 4 live clients beside it. Capacity: the checks answered a second with 8 clients over 4.
"""

from __future__ import annotations

import argparse
import io
import statistics
import threading
import time

import requests
from PIL import Image

from tests.support.harness import Server
from tests.support.photos import portrait_photo

from .common import WORK, say

RATE_HZ = 4.0


def frame() -> bytes:
    from skimage import data

    image = Image.fromarray(data.astronaut()).crop((70, 0, 70 + 398, 512)).resize((249, 320))
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=80)
    return buffer.getvalue()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def live_clients(url: str, count: int, seconds: float, body: bytes, done: threading.Event | None = None) -> dict[str, float]:
    """`count` clients for `seconds` (or until `done` is set, when given)."""
    latencies: list[float] = []
    refused = [0]
    deadline = time.monotonic() + seconds
    lock = threading.Lock()

    def running() -> bool:
        return not done.is_set() if done is not None else time.monotonic() < deadline

    def client() -> None:
        session = requests.Session()
        while running():
            started = time.monotonic()
            answer = session.post(f"{url}/api/v1/idphoto/check", files={"image": ("f.jpg", body, "image/jpeg")},
                                  data={"spec": "icao"}, timeout=30)
            took = time.monotonic() - started
            with lock:
                if answer.status_code == 200:
                    latencies.append(took)
                else:
                    refused[0] += 1
            time.sleep(max(0.0, 1.0 / RATE_HZ - took))

    threads = [threading.Thread(target=client) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if done is not None:
        seconds = time.monotonic() - (deadline - seconds)
    answered = len(latencies)
    return {"p50_ms": 1000 * percentile(latencies, 0.5), "p95_ms": 1000 * percentile(latencies, 0.95),
            "per_s": answered / seconds, "busy_share": refused[0] / max(1, answered + refused[0])}


def id_photos(url: str, count: int) -> float:
    photo = portrait_photo()
    times = []
    for _ in range(count):
        started = time.monotonic()
        answer = requests.post(f"{url}/api/v1/idphoto", files={"image": ("p.jpg", photo.jpeg, "image/jpeg")},
                               data={"spec": "icao"}, timeout=120)
        assert answer.status_code == 200, answer.text[:300]
        times.append(time.monotonic() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    env = {"PILOTLIGHT_NO_SETUP": "1", "WORKERS": "2", "MODELS": "u2net,centerface,landmarks68",
           "SEGMENTATION_MODEL": "u2net", "ORT_PROVIDERS": "cpu", "RATE_LIMIT": "0", "GET_RATE_LIMIT": "0",
           "MAX_POSTS_PER_CLIENT": "0"}
    body = frame()
    with Server(env, WORK / "live.log") as server:
        server.wait_started(ready_path="/readyz")
        url = server.url
        live_clients(url, 1, 2.0, body)  # a first pass: nothing measured
        rows = {}
        for count in (1, 4, 8):
            say(f"live: {count} client(s) for {args.seconds:g} s")
            rows[count] = live_clients(url, count, args.seconds, body)
        say("ID photos alone, then beside 4 live clients")
        alone = id_photos(url, 5)
        beside: dict[str, float] = {}
        done = threading.Event()
        runner = threading.Thread(target=lambda: beside.update(live_clients(url, 4, 0.0, body, done)))
        runner.start()
        time.sleep(1.0)
        with_live = id_photos(url, 5)
        done.set()
        runner.join(timeout=60)
    print()
    print("| live clients (2 workers, 4 updates/s each) | p50 ms | p95 ms | checks/s answered | busy (503) |")
    print("| --- | --- | --- | --- | --- |")
    for count, row in rows.items():
        print(f"| {count} | {row['p50_ms']:.0f} | {row['p95_ms']:.0f} | {row['per_s']:.1f} | {100 * row['busy_share']:.0f}% |")
    print()
    print(f"ID photo (icao, portrait), median of 5: alone {alone:.2f} s; beside 4 live clients {with_live:.2f} s "
          f"({100 * (with_live / alone - 1):+.0f}%); the live checks meanwhile: p50 {beside['p50_ms']:.0f} ms, "
          f"p95 {beside['p95_ms']:.0f} ms, {100 * beside['busy_share']:.0f}% busy")
    print(f"Live clients 2 workers hold at 4 updates/s: {rows[8]['per_s'] / RATE_HZ:.1f} "
          f"(checks answered a second with 8 clients, over 4)")


if __name__ == "__main__":
    main()
