"""The camera with live guidance in a real browser (issue 52, items 1-6): Chromium's fake camera fed
a short video made here from a real portrait (the astronaut of the test fixtures), against the real
gunicorn. A sequence with the head tilted, and one with the person too far: the right guidance in
the live region within a bounded wait, and no photo taken by itself; the shutter takes the stream's
full-resolution frame (not the guidance's small one) and makes the ID photo from it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import Page, expect, sync_playwright

from tests.conftest import RunningServer
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, page_errors
from tests.support.harness import Server
from tests.support.y4m import write_y4m

pytestmark = pytest.mark.server

VIDEO = (720, 960)  # (width, height): a phone held upright
WALL = (226, 226, 222)
GUIDANCE_MS = 15_000  # the first answer includes the page's start; "within a second" once running
RESULT_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def server(running_server: RunningServer) -> Iterator[Server]:
    with running_server(MODELS="u2net,centerface,landmarks68", SEGMENTATION_MODEL="u2net") as srv:
        yield srv


def scene(astronaut: np.ndarray, *, rotate: float = 0.0, scale: float = 1.0) -> np.ndarray:
    """The astronaut on a light wall in a VIDEO frame, rotated (degrees) and scaled (of the frame's height)."""
    image = Image.fromarray(astronaut)
    if rotate:
        image = image.rotate(rotate, resample=Image.BICUBIC, fillcolor=WALL)
    side = round(VIDEO[1] * scale * 0.75)
    image = image.resize((side, side), Image.LANCZOS)
    canvas = Image.new("RGB", VIDEO, WALL)
    canvas.paste(image, ((VIDEO[0] - side) // 2, VIDEO[1] - side))
    return np.asarray(canvas)


@contextmanager
def camera_page(server: Server, video: Path) -> Iterator[tuple[Page, list[str]]]:
    args = [*CHROMIUM_ARGS, "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
            f"--use-file-for-fake-video-capture={video}"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args, headless=True)
        try:
            context = browser.new_context(locale="en-US", viewport={"width": 390, "height": 844}, is_mobile=True,
                                          has_touch=True, device_scale_factor=2, permissions=["camera"])
            page = context.new_page()
            page.set_default_timeout(30_000)
            errors = page_errors(page)
            page.goto(f"{server.url}/?spec=icao")
            yield page, errors
        finally:
            browser.close()


def guidance_said(page: Page) -> str:
    return page.inner_text("#guidance-say")


@pytest.mark.parametrize(("name", "rotate", "scale", "line", "title"), [
    ("tilted", 22.0, 1.0, "roll_degrees", "Head tilted"),
    ("far", 0.0, 0.45, "distance", "Too far from the camera"),
])
def test_guidance_names_the_fault_and_takes_no_photo(server: Server, astronaut: np.ndarray, tmp_path: Path,
                                                     name: str, rotate: float, scale: float, line: str,
                                                     title: str) -> None:
    frames = [scene(astronaut, rotate=rotate, scale=scale)] * 4
    video = write_y4m(tmp_path / f"{name}.y4m", frames)
    with camera_page(server, video) as (page, errors):
        page.keyboard.press("Tab")  # keyboard-operable: the camera's button is reached and pressed with keys
        page.focus("#camera-start")
        page.keyboard.press("Enter")
        expect(page.locator("#camera-panel")).to_be_visible()
        expect(page.locator("#camera-video")).to_have_class("mirrored")
        item = page.locator(f'#guidance-lines li[data-line="{line}"]')
        expect(item).to_have_class("fix", timeout=GUIDANCE_MS)
        expect(item).to_contain_text(title)
        expect(item).to_contain_text("To fix:")  # said in words, not colour alone
        assert page.get_attribute("#guidance-say", "aria-live") == "polite"
        said = guidance_said(page)
        assert said and said != "Starting the guidance…", said
        # the live region keeps naming a fault for a while, and no photo is taken by itself
        page.wait_for_timeout(2500)
        expect(page.locator("#camera-panel")).to_be_visible()
        assert page.locator("#result-img").is_hidden()
        assert errors == [], errors


def test_the_shutter_makes_the_id_photo_from_the_full_frame(server: Server, astronaut: np.ndarray, tmp_path: Path) -> None:
    video = write_y4m(tmp_path / "shutter.y4m", [scene(astronaut, scale=0.9)] * 4)
    with camera_page(server, video) as (page, errors):
        page.click("#camera-start")
        expect(page.locator("#guidance-lines li").first).to_be_visible(timeout=GUIDANCE_MS)
        page.uncheck("#camera-auto")
        page.click("#camera-shutter")
        expect(page.locator("#camera-panel")).to_be_hidden()
        expect(page.locator("#result-img")).to_be_visible(timeout=RESULT_TIMEOUT_MS)
        # the photo sent is the stream's whole frame, not the guidance's 320 px view of the outline
        expect(page.locator("#original-size")).to_have_text(f"({VIDEO[0]} × {VIDEO[1]} px)")
        assert page.eval_on_selector("#result-img", "img => img.naturalWidth") > 0
        assert errors == [], errors


def test_a_refused_camera_says_so_and_offers_the_upload(server: Server, astronaut: np.ndarray, tmp_path: Path) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--use-fake-device-for-media-stream",
                                                                               "--deny-permission-prompts"], headless=True)
        try:
            page = browser.new_context(locale="en-US").new_page()
            page.set_default_timeout(30_000)
            page.goto(f"{server.url}/")
            page.click("#camera-start")
            expect(page.locator("#error")).to_be_visible()
            expect(page.locator("#error-text")).to_contain_text("choose a photo instead")
            expect(page.locator("#camera-panel")).to_be_hidden()
            expect(page.locator('label[for="file"]')).to_be_visible()
        finally:
            browser.close()
