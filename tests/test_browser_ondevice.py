"""The page's on-device cut-out in a real browser: Debian's Chromium driven by Playwright, against the
real gunicorn serving u2netp (MODELS=u2netp,centerface, SEGMENTATION_MODEL=u2netp).

- the API answers 503 (routed by Playwright): the cut-out is made in the browser, says so, and its
  alpha matches the server's own mask of the same photo (`only_mask=true`, model u2netp): IoU >= 0.9;
- the network to the API is cut (the request aborted): the same; the ID-photo mode offers the cut-out
  and says the ID photo needs the server;
- "Keep my photo on this device": no request carries the photo (the network log has no POST at all);
- every request of the page goes to its own origin.

The figures (bytes downloaded, first and warm run, the model alone, IoU, the server's u2netp cut-out
on the same photo) are printed and written as JSON to $PILOTLIGHT_BROWSER_FIGURES (default
artifacts/browser-ondevice.json); written to bench/results/browser.json, docs/BENCHMARKS.md's
"In the browser" section shows them (`python -m bench.report`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import Browser, Page, Request, Route, expect

from app.models.fetch import fetch_npm, inspect_npm
from app.models.manifest import WEB_RUNTIME
from tests.conftest import RunningServer
from tests.support.harness import Server
from tests.support.browser import ARTIFACTS, assert_isolated_page, browser_page
from tests.test_browser import browser, photos  # noqa: F401 (fixtures)

pytestmark = pytest.mark.server

RESULT_TIMEOUT_MS = 180_000
IOU_MIN = 0.9
FIGURES: dict[str, object] = {}
CUTOUT_API = "**/api/v1/remove-background"


@pytest.fixture(scope="module")
def web_runtime(model_home: Path) -> Path:
    """onnxruntime-web's files in MODEL_HOME (test.sh fetches them; fetched here when missing)."""
    if not inspect_npm(WEB_RUNTIME, model_home, verify_hash=False).ok:
        fetch_npm(WEB_RUNTIME, model_home, progress=False)
    return model_home / WEB_RUNTIME.folder


@pytest.fixture(scope="module")
def server(running_server: RunningServer, web_runtime: Path) -> Iterator[Server]:
    with running_server() as srv:  # the small models: u2netp is also the page's on-device model
        yield srv


@pytest.fixture(scope="module", autouse=True)
def figures() -> Iterator[dict[str, object]]:
    """Collects the measured figures; printed and written once the module's tests are done."""
    yield FIGURES
    if not FIGURES:
        return
    target = Path(os.environ.get("PILOTLIGHT_BROWSER_FIGURES", str(ARTIFACTS / "browser-ondevice.json")))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(FIGURES, indent=2, sort_keys=True) + "\n")
    print("\non-device cut-out figures:\n" + json.dumps(FIGURES, indent=2, sort_keys=True))  # noqa: T201 (the figures asked for)


class Network:
    """Every request the page makes: method, URL and whether its body holds the photo."""

    def __init__(self, page: Page, photo: bytes) -> None:
        self.requests: list[tuple[str, str, bool]] = []
        self._needle = photo[:4096]

        def record(request: Request) -> None:
            body = request.post_data_buffer or b""
            self.requests.append((request.method, request.url, self._needle in body))

        page.on("request", record)

    def foreign(self, origin: str) -> list[str]:
        return [url for _, url, _ in self.requests if not (url.startswith(origin + "/") or url.startswith(("blob:", "data:")))]

    def posts(self) -> list[str]:
        return [url for method, url, _ in self.requests if method == "POST"]

    def carrying_photo(self) -> list[str]:
        return [url for _, url, photo in self.requests if photo]


def visit(page: Page, server: Server, photo: Path) -> Network:
    """Open the page, recording every request it makes from then on (and whether one carries `photo`)."""
    page.goto(server.url + "/")
    return Network(page, photo.read_bytes())


def server_mask(server: Server, photo: bytes) -> np.ndarray:
    answer = server.post(
        "/api/v1/remove-background", files={"image": ("photo.jpg", photo, "image/jpeg")},
        data={"only_mask": "true", "model": "u2netp", "format": "png"},
    )
    assert answer.status_code == 200, answer.text[:300]
    return np.asarray(Image.open(io.BytesIO(answer.content)).convert("L"))


def server_cutout_seconds(server: Server, photo: bytes, runs: int = 4) -> dict[str, float]:
    """The server's u2netp cut-out of the same photo over loopback: the first and the median of the rest."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        answer = server.post("/api/v1/remove-background", files={"image": ("photo.jpg", photo, "image/jpeg")}, data={"model": "u2netp"})
        times.append(time.perf_counter() - started)
        assert answer.status_code == 200
    return {"first_s": round(times[0], 3), "median_s": round(statistics.median(times[1:]), 3)}


def iou(a: np.ndarray, b: np.ndarray) -> float:
    fa, fb = a >= 128, b >= 128
    return float((fa & fb).sum() / max(1, (fa | fb).sum()))


def result_png(page: Page) -> np.ndarray:
    """The cut-out the page offers for download, as (H, W, 4) RGBA, read from its object URL."""
    with page.expect_download() as info:
        page.click("#download-photo")
    body = Path(info.value.path()).read_bytes()
    image = Image.open(io.BytesIO(body))
    assert image.format == "PNG" and image.mode == "RGBA", (image.format, image.mode)
    return np.asarray(image)


def timings(page: Page) -> dict[str, float]:
    """The on-device rows of the page's timings table: {key: number} (bytes or ms)."""
    return page.eval_on_selector_all(
        "#timings tr[data-key]", "rows => Object.fromEntries(rows.map(r => [r.dataset.key, Number(r.dataset.value)]))"
    )


def cutout_on_page(page: Page, photo: Path, *, button: str = "Remove the background") -> None:
    """The cut-out of `photo`: "Background only", then the photo, which starts the work at once, except
    with "Keep my photo on this device" on, where the person presses `button`."""
    page.get_by_role("radio", name="Background only").check()
    expect(page.get_by_role("radio", name="Transparent")).to_be_checked()
    expect(page.get_by_role("radio", name="PNG")).to_be_checked()
    page.set_input_files("#file", photo)
    # the photo is decoded once its pixel size is shown (a web-first wait: wait_for_function evaluates
    # a string, which the page's CSP forbids, and failed now and then)
    expect(page.locator("#file-info")).to_contain_text(re.compile(r"\d+ × \d+ px"))
    if page.get_by_role("switch", name="Keep my photo on this device").is_checked():
        page.get_by_role("button", name=button, exact=True).click()
    expect(page.locator("#download-photo")).to_be_visible(timeout=RESULT_TIMEOUT_MS)


def test_ondevice_files_served_immutable_with_their_checksums(server: Server) -> None:
    page = server.get("/")
    assert_isolated_page(page.headers)
    text = page.text
    start = text.index('id="page-data">') + len('id="page-data">')
    data = json.loads(text[start : text.index("</script>", start)])["ondevice"]
    assert data is not None, "the on-device files are in MODEL_HOME, so the page must offer them"
    types = {"runtime": "text/javascript", "wasm": "application/wasm", "model": "application/octet-stream"}
    sizes = {}
    for role, content_type in types.items():
        item = data[role]
        answer = server.get(item["url"])
        assert answer.status_code == 200, item["url"]
        assert answer.headers["Content-Type"].startswith(content_type)
        assert answer.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert hashlib.sha256(answer.content).hexdigest() == item["sha256"] and len(answer.content) == item["size"]
        assert item["integrity"].startswith("sha256-") and item["sha256"][:16] in item["url"]
        sizes[role] = len(answer.content)
        # another digest in the URL is another file: not found, never the current one
        assert server.get(item["url"].replace(item["sha256"][:16], "0" * 16)).status_code == 404
    FIGURES["files_bytes"] = sizes
    FIGURES["runtime"] = f"{WEB_RUNTIME.package} {WEB_RUNTIME.version}"


def test_busy_server_cut_out_on_the_device(
    server: Server, browser: Browser, photos: dict[str, Path]  # noqa: F811
) -> None:
    """503 from the API: the cut-out appears, made in the browser, with the server's mask (IoU)."""
    with browser_page(browser) as page:
        routed: list[str] = []

        def busy(route: Route) -> None:
            routed.append(route.request.method)
            route.fulfill(status=503, headers={"Retry-After": "2"}, content_type="application/json",
                          body=json.dumps({"error": {"code": "busy", "message": "the server is busy"}}))

        page.route(CUTOUT_API, busy)
        network = visit(page, server, photos["portrait"])
        results: dict[str, object] = {}
        for name in ("portrait", "crowd"):
            cutout_on_page(page, photos[name])
            expect(page.locator("#verdict")).to_contain_text("Made on your device: the server was busy")
            expect(page.locator("#status")).to_contain_text("Made on your device: the server was busy")
            rgba = result_png(page)
            mask = server_mask(server, photos[name].read_bytes())
            assert rgba.shape[:2] == mask.shape
            score = iou(rgba[..., 3], mask)
            diff = np.abs(rgba[..., 3].astype(int) - mask.astype(int))
            results[name] = {
                "size": [int(mask.shape[1]), int(mask.shape[0])], "iou": round(score, 4),
                "alpha_mean_abs_diff": round(float(diff.mean()), 3), "alpha_max_abs_diff": int(diff.max()),
                "timings_ms": timings(page),
            }
            assert score >= IOU_MIN, (name, score)
            alpha = rgba[..., 3]
            assert alpha[0, 0] < 10 and alpha.mean() > 20, "a transparent corner, a person"
        assert routed == ["POST", "POST"], routed  # one try each: no retries against a busy server
        # the first cut-out downloaded the runtime and model; the second ran the warm model
        first = results["portrait"]["timings_ms"]  # type: ignore[index]
        warm = results["crowd"]["timings_ms"]  # type: ignore[index]
        assert first["download_bytes"] > 14_000_000 and "warm_run_ms" not in first and warm["warm_run_ms"] > 0
        # a warm run on the same photo: the figure to compare with the first
        cutout_on_page(page, photos["portrait"])
        again = timings(page)
        assert again["warm_run_ms"] > 0
        assert network.foreign(server.url) == [], network.foreign(server.url)
        page.screenshot(path=str(ARTIFACTS / "browser-ondevice-busy.png"), full_page=True)
        FIGURES["busy_503"] = results
        FIGURES["portrait_first_run_ms"] = round(first["first_run_ms"], 1)
        FIGURES["portrait_warm_run_ms"] = round(again["warm_run_ms"], 1)
        FIGURES["portrait_warm_infer_ms"] = round(again["infer_ms"], 1)
        FIGURES["download_bytes"] = first["download_bytes"]
        FIGURES["load_ms"] = round(first["load_ms"], 1)
        FIGURES["session_ms"] = round(first["session_ms"], 1)
        FIGURES["threads"] = page.evaluate("window.crossOriginIsolated ? Math.min(4, navigator.hardwareConcurrency || 1) : 1")
        FIGURES["server_u2netp_cutout_portrait"] = server_cutout_seconds(server, photos["portrait"].read_bytes())


def test_network_cut_cut_out_on_the_device_and_id_photo_offer(
    server: Server, browser: Browser, photos: dict[str, Path]  # noqa: F811
) -> None:
    with browser_page(browser) as page:
        def cut(route: Route) -> None:  # the uploads fail as on a dropped connection; the page itself loads
            if route.request.method == "POST":
                route.abort("internetdisconnected")
            else:
                route.continue_()

        page.route("**/api/v1/**", cut)
        network = visit(page, server, photos["portrait"])
        cutout_on_page(page, photos["portrait"])
        expect(page.locator("#verdict")).to_contain_text("Made on your device: the server could not be reached")
        rgba = result_png(page)
        score = iou(rgba[..., 3], server_mask(server, photos["portrait"].read_bytes()))
        assert score >= IOU_MIN, score
        FIGURES["network_cut"] = {"portrait_iou": round(score, 4), "timings_ms": timings(page)}


        # The ID photo needs the server: the page says so and offers the cut-out instead.
        page.get_by_role("radio", name="ID photo").check()
        page.get_by_role("button", name="Make my ID photo").click()
        error = page.get_by_role("alert")
        expect(error).to_contain_text("needs the server", timeout=RESULT_TIMEOUT_MS)
        page.get_by_role("button", name="Cut out the background on this device").click()
        expect(page.locator("#download-photo")).to_be_visible(timeout=RESULT_TIMEOUT_MS)
        expect(page.locator("#verdict")).to_contain_text("the ID photo needs the server")
        assert network.foreign(server.url) == [], network.foreign(server.url)


def test_keep_my_photo_on_this_device_uploads_nothing(
    server: Server, browser: Browser, photos: dict[str, Path]  # noqa: F811
) -> None:
    with browser_page(browser) as page:
        network = visit(page, server, photos["portrait"])
        page.wait_for_load_state("networkidle")
        # nothing of the on-device cut-out is fetched before it is needed
        assert not [url for _, url, _ in network.requests if "ondevice" in url], network.requests
        switch = page.get_by_role("switch", name="Keep my photo on this device")
        switch.check()
        expect(page.locator("#local-help")).to_contain_text("ID photo")  # says what it cannot do here
        page.set_input_files("#file", photos["portrait"])
        page.get_by_role("button", name="Remove the background on this device").click()
        expect(page.locator("#download-photo")).to_be_visible(timeout=RESULT_TIMEOUT_MS)
        expect(page.locator("#verdict")).to_contain_text("Made on your device: your photo never left it")
        expect(page.locator("#verdict")).to_contain_text("the ID photo needs the server")
        # what it is, said plainly: not the chosen spec's size (that needs the server), the photo's own
        expect(page.locator("#verdict")).to_contain_text("It is not sized to the US passport rules (51 × 51 mm)")
        expect(page.locator("#verdict")).to_contain_text("this is your whole photo, 512 × 512 px")
        page.get_by_role("radio", name="Background only").check()
        page.get_by_role("button", name="Remove the background on this device").click()
        expect(page.locator("#download-photo")).to_be_visible(timeout=RESULT_TIMEOUT_MS)
        rgba = result_png(page)
        assert rgba.shape[:2] == (512, 512)
        assert network.posts() == [], network.posts()
        assert network.carrying_photo() == [], network.carrying_photo()
        assert network.foreign(server.url) == [], network.foreign(server.url)
        FIGURES["local_mode_requests"] = sorted({f"{method} {url.replace(server.url, '')}" for method, url, _ in network.requests})

        # A new visit: the runtime and the model come from the browser's cache (immutable URLs).
        # (Not in the tests above: Playwright turns the HTTP cache off while it routes requests.)
        page.reload()
        page.get_by_role("switch", name="Keep my photo on this device").check()
        cutout_on_page(page, photos["portrait"], button="Remove the background on this device")
        cached = timings(page)
        assert cached["network_bytes"] == 0 and cached["download_bytes"] > 14_000_000, cached
        expect(page.locator("#timings")).to_contain_text("from the browser's cache")
        FIGURES["cached_visit"] = {"timings_ms": cached}
        assert network.posts() == [], network.posts()
        page.screenshot(path=str(ARTIFACTS / "browser-ondevice-local.png"), full_page=True)


def test_a_server_that_answers_makes_the_cut_out_and_nothing_loads_on_the_device(
    server: Server, browser: Browser, photos: dict[str, Path]  # noqa: F811
) -> None:
    with browser_page(browser) as page:
        network = visit(page, server, photos["portrait"])
        cutout_on_page(page, photos["portrait"])
        expect(page.locator("#result-caption")).to_have_text("Background removed")
        expect(page.locator("#verdict")).to_be_hidden()
        assert network.posts() == [server.url + "/api/v1/remove-background"]
        assert not [url for _, url, _ in network.requests if "ondevice" in url], network.requests


def test_no_answer_after_the_upload_cut_out_on_the_device(
    server: Server, browser: Browser, photos: dict[str, Path]  # noqa: F811
) -> None:
    """The cut-out request is sent but nothing moves (held by the route): after 30 quiet seconds the
    page stops waiting (its clock fast-forwarded) and makes the cut-out on the device."""
    with browser_page(browser) as page:
        held: list[Route] = []
        page.route(CUTOUT_API, lambda route: held.append(route))  # never answered while the test runs
        page.clock.install()
        page.goto(server.url + "/")
        page.get_by_role("radio", name="Background only").check()
        page.set_input_files("#file", photos["portrait"])  # which starts the work
        # (no wait_for_function here: with the clock installed it evaluates a string, which the CSP forbids)
        expect(page.locator("#file-info")).to_contain_text("512 × 512 px")
        expect(page.locator("#progress-text")).to_contain_text("Uploading")  # sent, never answered
        expect(page.locator("#download-photo")).to_be_hidden()
        page.clock.run_for("00:31")
        expect(page.locator("#download-photo")).to_be_visible(timeout=RESULT_TIMEOUT_MS)
        expect(page.locator("#verdict")).to_contain_text("Made on your device: the server took too long to answer")
        assert len(held) == 1
