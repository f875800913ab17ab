"""A real browser for the page's tests: Debian's Chromium driven by Playwright by path (Playwright
cannot download browsers here; test.sh installs chromium), one page per test in a context of its
own, and the page's console errors collected (a CSP violation shows up there)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

from tests.support.harness import ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-quic",
    "--disable-sync",
]
ARTIFACTS = ROOT / "artifacts"
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True}


@contextmanager
def chromium() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install chromium (test.sh does)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def page_errors(page: Page) -> list[str]:
    """Console errors and uncaught exceptions (a CSP violation shows up here), less the
    "Failed to load resource" line Chromium logs for every 4xx answer the page handles itself."""
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error" and "Failed to load resource" not in message.text:
            errors.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    return errors


@contextmanager
def browser_page(browser: Browser, device: dict[str, object] = DESKTOP) -> Iterator[Page]:
    """A page in a fresh context (downloads on, en-US, 30 s default waits); when the body ends
    without an error, the page must have logged none either. The context is closed either way."""
    context = browser.new_context(accept_downloads=True, locale="en-US", **device)  # type: ignore[arg-type]
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors = page_errors(page)
    try:
        yield page
        assert errors == [], errors
    finally:
        context.close()


def assert_isolated_page(headers: dict[str, str] | object) -> None:
    """The page's headers: WebAssembly allowed, no inline or eval'd script, cross-origin isolated."""
    csp = headers["Content-Security-Policy"]  # type: ignore[index]
    assert "script-src 'self' 'wasm-unsafe-eval'" in csp and "unsafe-inline" not in csp and "'unsafe-eval'" not in csp, csp
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"  # type: ignore[index]
    assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"  # type: ignore[index]
