"""The page's code by concern (issue 52, item 8): ES modules, none over 600 lines, each served at a
URL that names the assets' version (so their relative imports are versioned too) as immutable, with
the page's security headers; nginx serves the same list (app/assets.py: served_files)."""

from __future__ import annotations

import re
from pathlib import Path

from flask.testing import FlaskClient

from app.assets import IMMUTABLE, MODULES, STATIC, asset_version, module_url, served_files


def test_every_module_is_small_and_imports_only_listed_modules() -> None:
    on_disk = {path.name for path in STATIC.glob("*.js")}
    assert on_disk == set(MODULES), "every script of the page is a listed module, and every listed module exists"
    for name in MODULES:
        text = (STATIC / name).read_text()
        assert text.count("\n") <= 600, f"{name} is over 600 lines"
        for imported in re.findall(r'from "\./([\w.]+)"', text):
            assert imported in MODULES, (name, imported)


def test_modules_are_served_versioned_and_immutable(client: FlaskClient) -> None:
    page = client.get("/").get_data(as_text=True)
    assert f'<script type="module" src="{module_url("app.js")}"></script>' in page
    assert "<script>" not in page and "onclick=" not in page, "no inline script: the CSP refuses it"
    csp = client.get("/").headers["Content-Security-Policy"]
    for name in MODULES:
        with client.get(module_url(name)) as answer:
            assert answer.status_code == 200 and answer.mimetype == "text/javascript", name
            assert answer.headers["Cache-Control"] == IMMUTABLE and answer.headers["Content-Security-Policy"] == csp
    assert client.get(f"/ui/v/{'0' * 12}/app.js").status_code == 404, "another version is not this file"
    assert client.get(f"/ui/v/{asset_version()}/nothing.js").status_code == 404


def test_nginx_serves_the_same_modules_from_disk(tmp_path: Path) -> None:
    served = {item.url: item for item in served_files(tmp_path)}
    for name in MODULES:
        item = served[module_url(name)]
        assert item.path == STATIC / name and item.immutable and item.content_type == "text/javascript"
