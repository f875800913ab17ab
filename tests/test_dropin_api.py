"""The drop-in routes through the Flask client on the real small registry (u2netp, centerface):
`rembg s`'s /api/remove and HivisionIDPhotos' seven routes. Status, content type, image mode and
size, JSON shape, the base64 form, and the bad-input, key, readiness and busy answers."""

from __future__ import annotations

import base64
import dataclasses
import io
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient
from PIL import Image

from app import create_app
from app.config import Settings
from app.errors import Busy
from app.models.registry import Registry
from app.service import Service
from tests.conftest import png_bytes

HIVISION_ROUTES = ("/idphoto", "/human_matting", "/add_background", "/generate_layout_photos", "/watermark", "/set_kb",
                   "/idphoto_crop")
PREFIX = "data:image/png;base64,"


def upload(data: bytes, name: str = "input_image", **fields: str) -> dict[str, object]:
    return {name: (io.BytesIO(data), "photo"), **fields}


def image_of(answer: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(answer))
    image.load()
    return image


def from_data_url(value: object) -> Image.Image:
    assert isinstance(value, str) and value.startswith(PREFIX), str(value)[:60]
    return image_of(base64.b64decode(value[len(PREFIX):], validate=True))


def hivision_error(response: object, status: int, *words: str) -> dict[str, object]:
    assert response.status_code == status, (response.status_code, response.get_data(as_text=True)[:300])  # type: ignore[attr-defined]
    body = response.get_json()  # type: ignore[attr-defined]
    assert body["status"] is False and isinstance(body["error"], str), body
    for word in words:
        assert word in body["error"], body
    return body


@pytest.fixture(scope="module")
def transparent_id(astronaut_jpeg: bytes, small_settings: Settings, small_registry: Registry) -> bytes:
    """A transparent ID photo made by /idphoto (the input Hivision's /add_background expects)."""
    client = create_app(small_settings, small_registry).test_client()
    body = client.post("/idphoto", data=upload(astronaut_jpeg, hd="false")).get_json()
    assert body["status"] is True, body
    return base64.b64decode(body["image_base64_standard"][len(PREFIX):])


# -- rembg s --------------------------------------------------------------------------------------------


def test_rembg_remove_answers_an_rgba_png_of_the_photo_size(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    response = client.post("/api/remove", data=upload(astronaut_jpeg, "file", model="u2netp"))
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    assert response.mimetype == "image/png"
    image = image_of(response.data)
    assert (image.mode, image.size) == ("RGBA", (512, 512))
    alpha = np.asarray(image)[:, :, 3]
    assert alpha.min() == 0 and alpha.max() == 255, "a cut-out: some of the photo kept, some of it removed"
    assert response.headers["X-Model"] == "u2netp"


def test_rembg_only_mask_is_an_l_png_and_ppm_makes_it_hard_edged(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    soft = client.post("/api/remove", data=upload(astronaut_jpeg, "file", model="u2netp", om="true"))
    hard = client.post("/api/remove", data=upload(astronaut_jpeg, "file", model="u2netp", om="true", ppm="true"))
    assert soft.status_code == hard.status_code == 200
    soft_mask, hard_mask = image_of(soft.data), image_of(hard.data)
    assert soft_mask.mode == hard_mask.mode == "L" and soft_mask.size == (512, 512)
    assert set(np.unique(np.asarray(hard_mask))) <= {0, 255}
    assert len(np.unique(np.asarray(soft_mask))) > 2, "without ppm the mask keeps its soft edge"
    agreement = ((np.asarray(soft_mask) >= 128) == (np.asarray(hard_mask) >= 128)).mean()
    assert agreement > 0.97, agreement


def test_rembg_bgc_lays_the_cut_out_over_the_colour(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    cut = np.asarray(image_of(client.post("/api/remove", data=upload(astronaut_jpeg, "file", model="u2netp")).data))
    response = client.post("/api/remove?bgc=255,0,0,255", data=upload(astronaut_jpeg, "file", model="u2netp"))
    assert response.status_code == 200
    image = image_of(response.data)
    assert image.mode == "RGBA"
    pixels = np.asarray(image)
    assert (pixels[:, :, 3] == 255).all(), "an opaque colour makes an opaque image"
    gone = cut[:, :, 3] == 0
    assert gone.any() and (pixels[gone][:, :3] == (255, 0, 0)).all()
    kept = cut[:, :, 3] == 255
    assert (pixels[kept][:, :3] == cut[kept][:, :3]).all()


def test_rembg_models_we_do_not_ship_run_the_nearest_and_say_so(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    """s_command.py accepts every name in rembg's sessions_names: here each runs, the model that
    ran in X-Model, the substitution in X-Pilotlight-Not-Applied; a model we load says nothing."""
    own = client.post("/api/remove", data=upload(astronaut_jpeg, "file", model="u2netp"))
    assert own.headers["X-Model"] == "u2netp" and "X-Pilotlight-Not-Applied" not in own.headers
    for name in ("isnet-general-use", "silueta", "birefnet-portrait", "bria-rmbg", "u2net"):
        response = client.post("/api/remove", data=upload(astronaut_jpeg, "file", model=name))
        assert response.status_code == 200, (name, response.get_data(as_text=True)[:200])
        assert image_of(response.data).mode == "RGBA" and response.headers["X-Model"] == "u2netp"
        assert f"model={name} is not shipped here; u2netp ran instead" in response.headers["X-Pilotlight-Not-Applied"]


def test_rembg_extras_are_ignored_as_rembg_ignores_what_it_cannot_read(client: FlaskClient,
                                                                       astronaut_jpeg: bytes) -> None:
    for extras in ("%7Bnot%20json", '{"model_path":"/etc/passwd"}', '{"sam_prompt":[{"type":"point"}]}'):
        response = client.post(f"/api/remove?extras={extras}", data=upload(astronaut_jpeg, "file", model="u2netp"))
        assert response.status_code == 200 and image_of(response.data).mode == "RGBA", extras
        assert "extras ignored" in response.headers["X-Pilotlight-Not-Applied"]
    plain = client.post("/api/remove?extras={}", data=upload(astronaut_jpeg, "file", model="u2netp"))
    assert plain.status_code == 200 and "X-Pilotlight-Not-Applied" not in plain.headers


def test_rembg_human_seg_with_alpha_matting_runs_the_portrait_matte(portrait_app: Flask, astronaut_jpeg: bytes) -> None:
    """u2net_human_seg with a=true (rembg: its human mask refined by alpha matting): here the portrait
    matte, which predicts the alpha itself, so `a` is said not applied rather than refused."""
    client = portrait_app.test_client()
    response = client.post("/api/remove", data=upload(astronaut_jpeg, "file", model="u2net_human_seg", a="true"))
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    assert response.headers["X-Model"] == "modnet" and image_of(response.data).mode == "RGBA"
    said = response.headers["X-Pilotlight-Not-Applied"]
    assert "model=u2net_human_seg" in said and "a=true not applied" in said
    assert client.post("/api/remove", data=upload(astronaut_jpeg, "file", model="modnet", a="true")).status_code == 400


@pytest.mark.parametrize(("fields", "query", "words"), [
    ({"model": "rembg-does-not-know-this"}, "", ("rembg-does-not-know-this", "u2netp", "bria-rmbg")),
    ({"model": "u2netp", "vm": "true"}, "", ("ViTMatte",)),
    ({"model": "u2netp", "af": "300"}, "", ("af", "255")),
    ({"model": "u2netp", "a": "maybe"}, "", ("a must be true or false",)),
    ({"model": "u2netp"}, "?bgc=red", ("bgc",)),
])
def test_rembg_bad_fields_get_a_400_saying_what_is_allowed(client: FlaskClient, astronaut_jpeg: bytes,
                                                           fields: dict[str, str], query: str,
                                                           words: tuple[str, ...]) -> None:
    response = client.post("/api/remove" + query, data=upload(astronaut_jpeg, "file", **fields))
    assert response.status_code == 400, response.get_data(as_text=True)[:300]
    body = response.get_json()
    for word in words:
        assert word in body["detail"], body
    assert body["error"]["message"] == body["detail"]


def test_rembg_get_with_a_url_fetches_nothing(client: FlaskClient) -> None:
    response = client.get("/api/remove?url=http://192.0.2.1/photo.jpg")
    assert response.status_code == 400
    detail = response.get_json()["detail"]
    assert "fetches nothing" in detail and "POST" in detail


def test_rembg_missing_file_oversized_and_not_an_image(client: FlaskClient, small_settings: Settings) -> None:
    missing = client.post("/api/remove", data={"model": "u2netp"}, content_type="multipart/form-data")
    assert missing.status_code == 400 and "file" in missing.get_json()["detail"]
    side = int(small_settings.max_image_pixels ** 0.5) + 10
    huge = png_bytes(np.zeros((side, side, 3), np.uint8))
    assert client.post("/api/remove", data=upload(huge, "file")).status_code == 413
    assert client.post("/api/remove", data=upload(b"not an image at all", "file")).status_code == 415


# -- HivisionIDPhotos ------------------------------------------------------------------------------------


def test_idphoto_answers_a_transparent_standard_and_hd_photo_with_our_report(client: FlaskClient,
                                                                            astronaut_jpeg: bytes) -> None:
    response = client.post("/idphoto", data=upload(astronaut_jpeg, height="413", width="295", dpi="300"))
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    body = response.get_json()
    assert body["status"] is True
    standard, hd = from_data_url(body["image_base64_standard"]), from_data_url(body["image_base64_hd"])
    assert standard.mode == hd.mode == "RGBA" and standard.size == (295, 413)
    assert hd.size[1] >= 413 and abs(hd.size[0] / hd.size[1] - 295 / 413) < 0.01
    assert round(standard.info["dpi"][0]) == 300
    alpha = np.asarray(standard)[:, :, 3]
    assert alpha[0].max() == 0 and alpha[-1, 140:155].min() >= 250, "transparent above the head, opaque shoulders"
    ours = body["pilotlight"]
    operations = [edit["operation"] for edit in ours["edits"]]
    assert "crop_scale" in operations and "remove_background" in operations
    assert "level" not in operations, "face_align is false by default: not levelled"
    assert isinstance(ours["compliance"]["compliant"], bool) and ours["compliance"]["checks"]


def test_idphoto_hd_false_and_base64_input(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    encoded = base64.b64encode(astronaut_jpeg).decode()
    for value in (encoded, "data:image/jpeg;base64," + encoded):
        body = client.post("/idphoto", data={"input_image_base64": value, "hd": "false", "height": "200",
                                             "width": "150"}).get_json()
        assert body["status"] is True and "image_base64_hd" not in body
        assert from_data_url(body["image_base64_standard"]).size == (150, 200)


@pytest.mark.parametrize(("fields", "words"), [
    ({"whitening_strength": "strong"}, ("whitening_strength", "number")),
    ({"height": "tall"}, ("height", "whole number")),
    ({"height": "5000"}, ("height", "4000")),
    ({"dpi": "5"}, ("dpi",)),
])
def test_idphoto_bad_fields_get_a_400_in_hivisions_shape(client: FlaskClient, astronaut_jpeg: bytes,
                                                         fields: dict[str, str], words: tuple[str, ...]) -> None:
    hivision_error(client.post("/idphoto", data=upload(astronaut_jpeg, **fields)), 400, *words)


def test_idphoto_substitutes_what_we_do_not_ship_and_says_so(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    """Hivision's choose_handler runs its default for a model name it does not know, and its
    creator applies the beauty strengths: accepted here, the nearest done, the rest said."""
    asked = {"human_matting_model": "rmbg-1.4", "face_detect_model": "face_plusplus", "whitening_strength": "2",
             "brightness_strength": "1.5", "contrast_strength": "0", "sharpen_strength": "0.5",
             "saturation_strength": "-3", "hd": "false"}
    response = client.post("/idphoto", data=upload(astronaut_jpeg, **asked))
    body = response.get_json()
    assert response.status_code == 200 and body["status"] is True, body
    assert from_data_url(body["image_base64_standard"]).size == (295, 413)
    ours = body["pilotlight"]
    skipped = {entry["field"]: entry for entry in ours["not_applied"]}
    # 295x413 at 300 dpi is our cn-1inch: its head-height rule wins where Hivision's ratios ask a smaller head
    framing = {"head_measure_ratio", "head_height_ratio, top_distance_max, top_distance_min"}
    assert set(skipped) - framing == {"human_matting_model", "face_detect_model", "whitening_strength",
                                      "brightness_strength", "sharpen_strength", "saturation_strength"}, skipped
    assert skipped["human_matting_model"]["value"] == "rmbg-1.4" and "instead" in skipped["human_matting_model"]
    assert "cloud" in skipped["face_detect_model"]["why"] and "CenterFace" in skipped["face_detect_model"]["instead"]
    assert "retouch" in skipped["whitening_strength"]["why"]
    assert ours["model"] == "u2netp", "the model that ran is named"
    plain = client.post("/idphoto", data=upload(astronaut_jpeg, hd="false", human_matting_model="hivision_modnet"))
    plain_body = plain.get_json()["pilotlight"]
    assert {entry["field"] for entry in plain_body["not_applied"]} <= framing, "only where a spec's rule won"
    assert plain_body["framing"]["asked"] == {"face_area": 0.2, "face_centre": 0.45, "top": [0.1, 0.12]}, \
        "Hivision's defaults, in force where none are sent"


def test_idphoto_without_one_face_is_hivisions_status_false(client: FlaskClient, astronaut: np.ndarray) -> None:
    """deploy_api.py answers a FaceError (no face, or several) with 200 {"status": false}; our own
    /api/v1 keeps its 422."""
    grey = png_bytes(np.full((300, 300, 3), 128, np.uint8))
    pair = png_bytes(np.concatenate([astronaut, astronaut], axis=1))
    for photo, code in ((grey, "no_face"), (pair, "face_count")):
        body = hivision_error(client.post("/idphoto", data=upload(photo, hd="false")), 200)
        assert body["code"] == code and "image_base64_standard" not in body, body
    body = hivision_error(client.post("/idphoto_crop", data=upload(grey)), 200)
    assert body["code"] == "no_face"
    ours = client.post("/api/v1/idphoto", data={"image": (io.BytesIO(grey), "grey.png"), "spec": "icao"})
    assert ours.status_code == 422 and ours.get_json()["error"]["code"] == "no_face"


def test_idphoto_report_describes_the_image_it_names(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    body = client.post("/idphoto", data=upload(astronaut_jpeg, height="413", width="295", hd="true")).get_json()
    standard, hd = from_data_url(body["image_base64_standard"]), from_data_url(body["image_base64_hd"])
    assert hd.size != standard.size == (295, 413), "the upload is larger than the standard: two sizes"
    ours = body["pilotlight"]
    assert ours["images"] == {"image_base64_standard": {"width": 295, "height": 413},
                              "image_base64_hd": {"width": hd.size[0], "height": hd.size[1]}}
    compliance = ours["compliance"]
    assert compliance["describes"] == "image_base64_standard"
    pixel_size = next(check for check in compliance["checks"] if check["name"] == "pixel_size")
    assert pixel_size["value"] == "295x413", pixel_size


def test_idphoto_crop_keeps_the_uploads_own_alpha(client: FlaskClient, transparent_id: bytes) -> None:
    response = client.post("/idphoto_crop", data=upload(transparent_id, height="413", width="295", hd="true"))
    body = response.get_json()
    assert response.status_code == 200 and body["status"] is True, body
    standard = from_data_url(body["image_base64_standard"])
    assert standard.mode == "RGBA" and standard.size == (295, 413)
    assert np.asarray(standard)[:, :, 3].min() == 0, "the upload's transparency carried through the crop"
    assert "remove_background" not in [edit["operation"] for edit in body["pilotlight"]["edits"]]


def test_human_matting_answers_an_rgba_cut_out(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    body = client.post("/human_matting", data=upload(astronaut_jpeg, dpi="300")).get_json()
    assert body["status"] is True
    image = from_data_url(body["image_base64"])
    assert image.mode == "RGBA" and image.size == (512, 512)
    assert body["pilotlight"]["edits"] == [{"operation": "remove_background", "asked": True}]
    other = client.post("/human_matting", data=upload(astronaut_jpeg, human_matting_model="birefnet-v1-lite"))
    assert other.get_json()["status"] is True
    assert [entry["field"] for entry in other.get_json()["pilotlight"]["not_applied"]] == ["human_matting_model"]


def sent_back(body: dict[str, object], name: str = "image_base64") -> bytes:
    value = body[name]
    assert isinstance(value, str) and value.startswith(PREFIX), str(value)[:60]
    return base64.b64decode(value[len(PREFIX):], validate=True)


def jpeg_segments(data: bytes) -> list[int]:
    """The markers of a JPEG's segments up to its scan (SOS), walked by their lengths."""
    assert data[:2] == b"\xff\xd8", "SOI"
    markers, at = [], 2
    for _ in range(1000):  # bounded
        assert data[at] == 0xFF, at
        markers.append(data[at + 1])
        if data[at + 1] == 0xDA:
            return markers
        at += 2 + int.from_bytes(data[at + 2:at + 4], "big")
    raise AssertionError("no scan")


def test_add_background_renders_as_hivision_draws(client: FlaskClient) -> None:
    """utils.add_background over a fully transparent 300 x 400 upload: 0 the plain colour; 1 the
    colour at the top row fading to white downwards; 2 (generate_gradient's concentric ellipses) white
    at the centre, the colour's share growing with the distance over the longer side (400 px)."""
    clear = png_bytes(np.zeros((400, 300, 4), np.uint8))
    colour = np.array((0x63, 0x8C, 0xCE))
    drawn = {}
    for render in ("0", "1", "2"):
        body = client.post("/add_background", data=upload(clear, color="638cce", render=render)).get_json()
        assert body["status"] is True and body["pilotlight"]["edits"][0]["operation"] == "replace_background"
        image = image_of(sent_back(body))
        assert image.mode == "RGB" and image.size == (300, 400) and image.format == "PNG"
        drawn[render] = np.asarray(image).astype(int)
    assert (drawn["0"] == colour).all()
    assert np.abs(drawn["1"][0] - colour).max() <= 2 and drawn["1"][-1].min() >= 250
    mix = lambda share: colour * share + 255 * (1 - share)  # noqa: E731
    assert drawn["2"][200, 150].min() >= 253, "white at the centre"
    assert np.abs(drawn["2"][0, 150] - mix(200 / 400)).max() <= 4, "half way at 200 px from the centre"
    assert np.abs(drawn["2"][0, 0] - mix(250 / 400)).max() <= 4, "the corner, 250 px out"


def test_add_background_is_not_an_edit_on_an_opaque_photo(client: FlaskClient, astronaut_jpeg: bytes,
                                                          transparent_id: bytes) -> None:
    opaque = client.post("/add_background", data=upload(astronaut_jpeg, color="ffffff")).get_json()
    assert opaque["status"] is True and opaque["pilotlight"]["edits"] == []
    hivision_error(client.post("/add_background", data=upload(transparent_id, render="3")), 400, "0, 1, 2")
    hivision_error(client.post("/add_background", data=upload(transparent_id, color="blue")), 400, "hex")


def test_kb_is_a_jpeg_of_exactly_kb_grown_inside_its_structure(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    """utils.resize_image_to_kb: the first quality that fits, then exactly kb x 1024 bytes (Hivision
    pads zeros after the end; here a comment segment before the scan), never bytes after EOI."""
    for route, kb in (("/set_kb", "30"), ("/add_background", "45"), ("/watermark", "40")):
        body = client.post(route, data=upload(astronaut_jpeg, kb=kb, dpi="300")).get_json()
        data = sent_back(body)
        assert len(data) == int(kb) * 1024, (route, len(data))
        assert data.endswith(b"\xff\xd9"), "the file ends at its EOI"
        assert 0xFE in jpeg_segments(data), "the filler is a COM segment before the scan"
        image = image_of(data)
        assert image.format == "JPEG" and image.size == (512, 512) and round(image.info["dpi"][0]) == 300
        assert body["pilotlight"]["content_type"] == "image/jpeg" and body["pilotlight"]["not_applied"] == []


def test_kb_zero_and_out_of_reach_answer_as_hivision(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    """deploy_api.py: `if kb:` so kb=0 is no kb (PNG); /set_kb runs its loop to quality 1 and answers
    that file, as it does where kb is out of reach (said here in not_applied)."""
    png = client.post("/add_background", data=upload(astronaut_jpeg, kb="0")).get_json()
    assert image_of(sent_back(png)).format == "PNG"
    smallest = client.post("/set_kb", data=upload(astronaut_jpeg, kb="0")).get_json()
    assert smallest["status"] is True and smallest["pilotlight"]["jpeg_quality"] == 1
    far = client.post("/set_kb", data=upload(astronaut_jpeg, kb="1")).get_json()
    assert far["status"] is True and len(sent_back(far)) == len(sent_back(smallest)) > 1024
    assert [entry["field"] for entry in far["pilotlight"]["not_applied"]] == ["kb"]
    hivision_error(client.post("/set_kb", data=upload(astronaut_jpeg, kb="-1")), 400, "kb")


def test_generate_layout_photos_is_hivisions_six_inch_sheet(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    """layout_calculator.py: 1795 x 1205 px whatever the dpi; 295 x 413 px copies, 30 px apart,
    inside 70 / 50 px margins: 5 columns, 2 rows (upright: 10; turned: 9), the block centred, so
    the first copy at (100, 174)."""
    body = client.post("/generate_layout_photos", data=upload(astronaut_jpeg, height="413", width="295",
                                                             dpi="72")).get_json()
    assert body["status"] is True, body
    sheet = from_data_url(body["image_base64"])
    assert sheet.mode == "RGB" and sheet.size == (1795, 1205) and round(sheet.info["dpi"][0]) == 72
    assert (body["pilotlight"]["copies"], body["pilotlight"]["turned"]) == (10, False)
    pixels = np.asarray(sheet).astype(int)
    assert (pixels[:174, :] == 255).all() and (pixels[:, :100] == 255).all(), "white around the block"
    copy = pixels[174:174 + 413, 100:100 + 295]
    assert (pixels[174:174 + 413, 395:425] == 255).all(), "a 30 px gap"
    assert np.abs(copy - pixels[174 + 413 + 30:174 + 2 * 413 + 30, 100 + 4 * 325:100 + 4 * 325 + 295]).max() == 0
    assert copy.std() > 20, "a photo, not paper"
    wide = client.post("/generate_layout_photos", data=upload(astronaut_jpeg, height="295", width="413")).get_json()
    assert (wide["pilotlight"]["copies"], wide["pilotlight"]["turned"]) == (10, True)
    hivision_error(client.post("/generate_layout_photos", data=upload(astronaut_jpeg, height="1700", width="1700")), 400,
                   "six-inch")


def test_watermark_draws_latin_and_chinese_text(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    plain = np.asarray(image_of(astronaut_jpeg).convert("RGB")).astype(int)
    for text in ("Hello", "仅供办证使用"):
        response = client.post("/watermark?size=30&opacity=1&angle=0&color=%23ff0000&space=10",
                               data=upload(astronaut_jpeg, text=text, dpi="300"))
        body = response.get_json()
        assert body["status"] is True, body
        marked = np.asarray(from_data_url(body["image_base64"]).convert("RGB")).astype(int)
        changed = np.abs(marked - plain).max(axis=2) > 40
        assert 0.02 < changed.mean() < 0.6, (text, changed.mean())
        assert body["pilotlight"]["edits"] == [{"operation": "watermark", "asked": True, "text": text}]
    hivision_error(client.post("/watermark", data=upload(astronaut_jpeg, text="한국어")), 400, "glyphs")
    hivision_error(client.post("/watermark?opacity=2", data=upload(astronaut_jpeg)), 400, "opacity")


@pytest.mark.parametrize("route", HIVISION_ROUTES)
def test_every_hivision_route_answers_bad_input_in_its_shape(client: FlaskClient, small_settings: Settings,
                                                             route: str) -> None:
    hivision_error(client.post(route, data={"input_image_base64": "@@ not base64 @@"}), 400, "base64")
    hivision_error(client.post(route, data={"dpi": "300"}), 400, "input_image")
    side = int(small_settings.max_image_pixels ** 0.5) + 10
    huge = png_bytes(np.zeros((side, side, 4), np.uint8))
    hivision_error(client.post(route, data=upload(huge)), 413)
    hivision_error(client.post(route, data=upload(b"GIF89a not really")), 415)


# -- the same server rules -------------------------------------------------------------------------------


def test_api_keys_guard_the_drop_in_routes(small_settings: Settings, small_registry: Registry,
                                           astronaut_jpeg: bytes) -> None:
    app = create_app(dataclasses.replace(small_settings, api_keys=("s3cret",)), small_registry)
    client = app.test_client()
    refused = client.post("/api/remove", data=upload(astronaut_jpeg, "file", model="u2netp"))
    assert refused.status_code == 401 and "API key" in refused.get_json()["detail"]
    for route in HIVISION_ROUTES:
        body = hivision_error(client.post(route, data=upload(astronaut_jpeg)), 401, "API key")
        assert body["code"] == "unauthorized"
    key = {"Authorization": "Bearer s3cret"}
    assert client.post("/api/remove", data=upload(astronaut_jpeg, "file", model="u2netp"), headers=key).status_code == 200
    assert client.post("/set_kb", data=upload(astronaut_jpeg), headers=key).get_json()["status"] is True


def test_cors_is_off_until_an_origin_is_named_then_the_drop_in_routes_answer_it(
        small_settings: Settings, small_registry: Registry, astronaut_jpeg: bytes) -> None:
    """Both peers answer every origin; here a browser front end needs CORS_ORIGINS (README)."""
    origin = {"Origin": "https://front.example"}
    off = create_app(small_settings, small_registry).test_client()
    response = off.post("/api/remove", data=upload(astronaut_jpeg, "file", model="u2netp"), headers=origin)
    assert response.status_code == 200 and "Access-Control-Allow-Origin" not in response.headers
    on = create_app(dataclasses.replace(small_settings, cors_origins=("https://front.example",)),
                    small_registry).test_client()
    response = on.post("/api/remove", data=upload(astronaut_jpeg, "file", model="silueta"), headers=origin)
    assert response.headers["Access-Control-Allow-Origin"] == "https://front.example"
    exposed = response.headers["Access-Control-Expose-Headers"]
    assert "X-Model" in exposed and "X-Pilotlight-Not-Applied" in exposed
    response = on.post("/set_kb", data=upload(astronaut_jpeg), headers=origin)
    assert response.get_json()["status"] is True
    assert response.headers["Access-Control-Allow-Origin"] == "https://front.example"


def test_not_ready_is_the_fast_503(small_settings: Settings, astronaut_jpeg: bytes) -> None:
    client = create_app(small_settings, Registry()).test_client()  # nothing loaded, preload mode
    response = client.post("/api/remove", data=upload(astronaut_jpeg, "file"))
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
    for route in HIVISION_ROUTES:
        response = client.post(route, data=upload(astronaut_jpeg))
        hivision_error(response, 503, "loading")
        assert response.headers["Retry-After"] == "5"


class Full:
    """An admission gate with no place left: every slot refused."""

    @contextmanager
    def slot(self, *, request: bool = True) -> Iterator[None]:
        raise Busy("busy", "Every inference slot is taken.", details={"reason": "queue_full"})
        yield

    def describe(self) -> dict[str, object]:
        return {}

    def lanes_opened(self, threads: int) -> None:
        return None


def test_a_full_worker_refuses_every_drop_in_route_with_503(app: Flask, astronaut_jpeg: bytes) -> None:
    Service.of(app).admission = Full()
    client = app.test_client()
    response = client.post("/api/remove", data=upload(astronaut_jpeg, "file", model="u2netp"))
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    for route in HIVISION_ROUTES:
        response = client.post(route, data=upload(astronaut_jpeg))
        hivision_error(response, 503, "slot")
        assert response.headers["Retry-After"] == "1"


def test_rembg_dc_estimates_the_colours_under_soft_edges(client: FlaskClient, astronaut_jpeg: bytes) -> None:
    plain = np.asarray(image_of(client.post("/api/remove", data=upload(astronaut_jpeg, "file", model="u2netp")).data))
    clean = np.asarray(image_of(client.post("/api/remove", data=upload(astronaut_jpeg, "file", model="u2netp",
                                                                     dc="true")).data))
    assert (plain[:, :, 3] == clean[:, :, 3]).all(), "the same alpha"
    soft = (plain[:, :, 3] > 0) & (plain[:, :, 3] < 255)
    assert soft.any() and np.abs(plain[soft][:, :3].astype(int) - clean[soft][:, :3]).max() > 10


def test_nginx_knows_the_drop_in_routes_for_its_error_shapes(app: Flask) -> None:
    """nginx answers its own refusals in rembg's shape on rembg's route and in HivisionIDPhotos' on
    its routes (app/serving/front.py): the lists it renders are the blueprints' own paths."""
    from app.serving import front

    paths = {blueprint: {rule.rule for rule in app.url_map.iter_rules() if rule.endpoint.startswith(f"{blueprint}.")}
             for blueprint in ("hivision", "rembg")}
    assert paths["hivision"] == set(front.HIVISION_ROUTES)
    assert paths["rembg"] == set(front.REMBG_ROUTES)
