"""The page's on-device cut-out files, through the Flask client: offered only when present, served
at URLs that name their sha256 with immutable caching, and the page's headers that let it run
WebAssembly threads."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from flask.testing import FlaskClient

from app import create_app
from app.assets import asset_version
from app.config import Settings
from app.models.manifest import WEB_RUNTIME, get_spec
from app.models.registry import Registry
from tests.support.browser import assert_isolated_page


def client_for(settings: Settings, registry: Registry, model_home: Path) -> FlaskClient:
    app = create_app(dataclasses.replace(settings, model_home=model_home), registry)
    app.config["TESTING"] = True
    return app.test_client()


def page_data(client: FlaskClient) -> dict:
    html = client.get("/").get_data(as_text=True)
    return json.loads(re.search(r'id="page-data">(.*?)</script>', html, re.S).group(1))


def stand_ins(home: Path) -> None:
    """Files of the right sizes (only the size is checked before a file is offered)."""
    folder = home / WEB_RUNTIME.folder
    folder.mkdir(parents=True)
    for member, checksum in WEB_RUNTIME.files.items():
        with (folder / Path(member).name).open("wb") as handle:
            handle.truncate(checksum.size)
    model = get_spec("u2netp")
    with (home / model.filename).open("wb") as handle:
        handle.truncate(model.size or 0)


def test_not_offered_without_its_files(tmp_path: Path, small_settings: Settings, small_registry: Registry) -> None:
    client = client_for(small_settings, small_registry, tmp_path)
    assert page_data(client)["ondevice"] is None
    page = client.get("/")
    assert page.status_code == 200 and 'id="local-row" hidden' in page.get_data(as_text=True)
    assert client.get(f"/ui/ondevice/{'0' * 16}/u2netp.onnx").status_code == 404


def test_offered_and_served_immutable(tmp_path: Path, small_settings: Settings, small_registry: Registry) -> None:
    stand_ins(tmp_path)
    client = client_for(small_settings, small_registry, tmp_path)
    data = page_data(client)["ondevice"]
    assert data["working_max_side"] == small_settings.working_max_side
    assert data["module"] == f"/ui/v/{asset_version()}/ondevice.js"
    for role, content_type in (("runtime", "text/javascript"), ("wasm", "application/wasm"), ("model", "application/octet-stream")):
        item = data[role]
        assert re.fullmatch(r"/ui/ondevice/[0-9a-f]{16}/[\w.-]+", item["url"]) and item["sha256"].startswith(item["url"].split("/")[3])
        with client.get(item["url"]) as answer:  # a file response: closed here
            assert answer.status_code == 200 and answer.mimetype == content_type
            assert answer.headers["Cache-Control"] == "public, max-age=31536000, immutable"
            assert int(answer.headers["Content-Length"]) == item["size"]
        assert client.get(item["url"].replace(item["url"].split("/")[3], "f" * 16)).status_code == 404
    assert client.get("/ui/ondevice/" + data["model"]["url"].split("/")[3] + "/u2net.onnx").status_code == 404  # only the listed files


def test_page_headers_allow_wasm_and_isolate_the_page(client: FlaskClient) -> None:
    page = client.get("/")
    assert_isolated_page(page.headers)
    assert "Cross-Origin-Embedder-Policy" not in client.get("/api/v1/specs").headers  # the API is not the page
