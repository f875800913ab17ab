"""The page's on-device cut-out, measured in Chromium on this machine: what the browser downloads,
the first and a warm cut-out, the model alone, and how the browser's mask compares with the
server's u2netp mask of the same photo, beside the server's own u2netp cut-out time.

    .venv/bin/python -m bench.browser

Runs the browser test (tests/test_browser_ondevice.py: real gunicorn, Debian's Chromium through
Playwright), which records the figures; writes them with the browser's and machine's description
to bench/results/browser.json, prints them, and, when bench/results/cpu.json exists, regenerates
docs/BENCHMARKS.md (its "In the browser" section).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import RESULTS, ROOT, write_json
from .report import write


def chromium_version() -> str:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    completed = subprocess.run([chromium, "--version"], capture_output=True, text=True, timeout=30, check=False)  # noqa: S603
    return completed.stdout.strip() or "unknown"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pilotlight-browser-") as scratch:
        figures_path = Path(scratch) / "figures.json"
        env = {**os.environ, "PILOTLIGHT_BROWSER_FIGURES": str(figures_path)}
        started = time.time()
        loadavg_before = os.getloadavg()
        command = [sys.executable, "-m", "pytest", "tests/test_browser_ondevice.py", "-q", "-p", "no:cacheprovider"]
        completed = subprocess.run(command, cwd=ROOT, env=env, timeout=1800, check=False)  # noqa: S603
        if completed.returncode != 0 or not figures_path.is_file():
            print(f"the browser test failed (exit {completed.returncode}); nothing recorded", file=sys.stderr)  # noqa: T201
            return 1
        figures = json.loads(figures_path.read_text())
    result = {
        "meta": {
            "finished": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "seconds": round(time.time() - started, 1),
            "browser": chromium_version(),
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            "loadavg_before": [round(value, 2) for value in loadavg_before],
        },
        **figures,
    }
    write_json(RESULTS / "browser.json", result)
    print(json.dumps(result, indent=1))  # noqa: T201
    if (RESULTS / "cpu.json").is_file():
        write(RESULTS / "cpu.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
