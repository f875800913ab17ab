"""Issue 51, items 1 and 4: a hat or head covering, and eyeglasses, judged as each spec's authority says.

Pure functions on drawn heads first; then the real corpus, matted as the service mattes: hopper (a
navy cap over white hair, glasses) is caught on both lines, and the frontal portraits without a
covering or glasses do not trip them.
"""

from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import pytest

from app.imaging import covering, glasses
from app.specs import SPECS, get_spec
from tests.support import corpus
from tests.support.sitters import corpus_sitters

pytestmark = pytest.mark.heavy  # the corpus through the models: collected first (conftest.py)

FIVE = np.array([[270, 300], [330, 300], [300, 335], [278, 362], [322, 362]], dtype=np.float64)  # 60 px apart
SKIN, HAIR = (200, 160, 140), (60, 45, 35)


def drawn_head(*, top_above_eyes: float = 110, cap: tuple[int, int, int] | None = None,
               cap_top: tuple[int, int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rgb, alpha) of a head: hair from `top_above_eyes` px above the eyes down to the forehead;
    a cap (`cap` band over the forehead's top, `cap_top` above it) in place of the hair where given."""
    height, width = 700, 600
    ys, xs = np.mgrid[0:height, 0:width]
    top = 300 - top_above_eyes
    head = ((xs - 300) / 95.0) ** 2 + ((ys - (top + 205) / 2 - 95) / ((405 - top) / 2.0)) ** 2 <= 1.0
    alpha = np.where(head, 255, 0).astype(np.uint8)
    rgb = np.full((height, width, 3), 240, np.uint8)
    rgb[head] = SKIN
    rgb[head & (ys < 300 - 70)] = HAIR  # hair above the forehead's top (70 px = 1.17 eye distances)
    if cap is not None:
        rgb[head & (ys < 300 - 60)] = cap
        rgb[head & (ys < top + 0.45 * (300 - 60 - top))] = cap_top if cap_top is not None else cap
    return rgb, alpha


def test_hair_passes_and_a_two_coloured_cap_fails() -> None:
    rgb, alpha = drawn_head()
    assert covering.covering_check(covering.read_covering(rgb, alpha, FIVE), get_spec("us-passport").covering_source).passed is True
    rgb, alpha = drawn_head(cap=(25, 30, 60), cap_top=(235, 235, 235))
    check = covering.covering_check(covering.read_covering(rgb, alpha, FIVE), get_spec("us-passport").covering_source)
    assert check.passed is False and check.advice == covering.COVERING_ADVICE
    assert "religious" in check.allowed and check.name == "head_covering"


def test_a_tall_one_coloured_top_is_undecided_never_a_pass() -> None:
    """A bun, voluminous hair or a covering of the hair's colour, standing far above the skull."""
    rgb, alpha = drawn_head(top_above_eyes=180)
    reading = covering.read_covering(rgb, alpha, FIVE)
    assert reading is not None and reading.rise > covering.MAX_HAIR_RISE_IOD
    check = covering.covering_check(reading, get_spec("ca-passport").covering_source)
    assert check.passed is None and check.advice == covering.UNDECIDED_ADVICE


def test_every_spec_names_its_words_on_coverings_or_says_it_has_none() -> None:
    for spec in SPECS.values():
        source = spec.covering_source
        assert source.kind in ("primary", "copy", "secondary", "none")
        if source.kind == "none":
            assert source.title.startswith("pilotlight default:") and "Not the authority's words" in source.quote
        else:
            assert "religious" in source.quote and "medical" in source.quote and source.url.startswith("https://")
    assert get_spec("us-passport").glasses == "forbidden" and "November 1, 2016" in get_spec("us-passport").glasses_source.quote
    assert get_spec("ca-passport").glasses == "conditions"


def test_the_glasses_line_follows_the_authority() -> None:
    us, ca = get_spec("us-passport"), get_spec("ca-passport")
    assert glasses.glasses_check(25.0, policy=us.glasses, source=us.glasses_source).passed is False
    assert glasses.glasses_check(11.0, policy=us.glasses, source=us.glasses_source).passed is None
    assert glasses.glasses_check(3.0, policy=us.glasses, source=us.glasses_source).passed is True
    info = glasses.glasses_check(25.0, policy=ca.glasses, source=ca.glasses_source)
    assert info.kind == "info" and info.passed is None and "glare" in info.advice


def test_a_drawn_frame_across_the_nose_is_seen() -> None:
    rgb, _ = drawn_head()
    assert glasses.glasses_seen(glasses.bridge_edge(rgb, FIVE)) is False
    rgb[296:302, 280:320] = (20, 20, 20)  # a dark bridge between the eyes
    assert glasses.glasses_seen(glasses.bridge_edge(rgb, FIVE)) is True


# -- the real corpus ----------------------------------------------------------------------------------

GLASSES = {"hopper", "row-glasses", "takeo"}  # read by eye (tests/support/corpus.py's notes)


@pytest.fixture(scope="module")
def frontal(model_home: Path) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """name -> (rgb, the chosen person's matte, five landmarks) for every frontal portrait, matted as
    the service mattes (tests/support/sitters.py)."""
    return {s.portrait.name: (s.rgb, s.alpha, s.face.landmarks) for s in corpus_sitters(model_home) if s.portrait.expect == "photo"}


def test_hoppers_cap_is_caught_and_bare_heads_are_not(frontal: dict) -> None:
    """hopper's navy cap fails; of the other frontal portraits none fails, at most two are
    undecided (measured: one, party-talking, whose friend's knee stands above her hair)."""
    readings = {name: covering.read_covering(rgb, alpha, five) for name, (rgb, alpha, five) in frontal.items()}
    verdicts = {name: covering.covering_verdict(reading) for name, reading in readings.items()}
    assert verdicts.pop("hopper") is False, readings["hopper"]
    assert len(verdicts) >= 25
    assert not [name for name, verdict in verdicts.items() if verdict is False], readings
    assert len([name for name, verdict in verdicts.items() if verdict is None]) <= 2, readings


def test_glasses_on_the_corpus(frontal: dict) -> None:
    """hopper's and row-glasses's frames are seen; no face without glasses is called bespectacled,
    at most three are undecided (measured: connery 13.6, group-redhead 8.1; takeo's thin frames 9.5)."""
    seen = {name: glasses.glasses_seen(glasses.bridge_edge(rgb, five)) for name, (rgb, _, five) in frontal.items()}
    assert seen["hopper"] is True and seen["row-glasses"] is True, seen
    assert seen["takeo"] is not False, "thin frames: undecided at worst, never 'no glasses'"
    bare = {name: verdict for name, verdict in seen.items() if name not in GLASSES}
    assert not [name for name, verdict in bare.items() if verdict is True], bare
    assert len([name for name, verdict in bare.items() if verdict is None]) <= 3, bare


# -- issue 51, item 3: the background's colour judged against the authority's colours ---------------


def test_a_magenta_background_fails_where_the_authority_allows_white() -> None:
    from app.imaging.compliance import background_checks

    alpha = np.zeros((200, 160), np.uint8)
    alpha[80:, 40:120] = 255
    allowed = get_spec("us-passport").background_colours
    for colour, expected in (((255, 0, 255), False), ((255, 255, 255), True), ((245, 245, 240), True)):
        rgb = np.zeros((200, 160, 3), np.uint8)
        rgb[:] = colour
        line = {c.name: c for c in background_checks(rgb, alpha, colour=colour, gradient=False, allowed=allowed)}
        assert line["background_colour"].passed is expected, (colour, line["background_colour"])
    # without an authority (a custom size), the chosen colour is the aim
    rgb = np.zeros((200, 160, 3), np.uint8)
    rgb[:] = (255, 0, 255)
    line = {c.name: c for c in background_checks(rgb, alpha, colour=(255, 0, 255), gradient=False)}
    assert line["background_colour"].passed is True


def test_hopper_on_a_us_passport_in_magenta_through_the_api(client) -> None:
    """The page's answer for hopper (navy cap, glasses) on us-passport with a magenta background: the
    covering, glasses and colour lines fail with the authority's words, and the photo is not compliant."""
    corpus.fetch(None)
    path = next(iter(glob.glob(str(corpus.default_dir() / "hopper.*"))))
    with open(path, "rb") as handle:
        data = handle.read()
    response = client.post("/api/v1/idphoto", data={"image": (__import__("io").BytesIO(data), "hopper.jpg"),
                                                     "spec": "us-passport", "background": "#ff00ff"},
                           headers={"Accept": "application/json"}, content_type="multipart/form-data")
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.get_json()
    lines = {check["name"]: check for check in body["compliance"]["checks"]}
    assert lines["head_covering"]["pass"] is False and "religious" in lines["head_covering"]["allowed"]
    assert lines["eyeglasses"]["pass"] is False and "November 1, 2016" in lines["eyeglasses"]["allowed"]
    assert lines["background_colour"]["pass"] is False and "white" in lines["background_colour"]["allowed"]
    assert body["compliance"]["compliant"] is False
