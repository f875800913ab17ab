"""Issue 51, item 5: a cut-out that slices the sitter. Removing another person from a photo (face=
largest) must never cut the sitter's hair or cheek along a straight edge; where it does, a line fails.

Pure tests of `outline.straight_cut` on drawn mattes, then a real group photo of the corpus
(friends.jpg: six people round a table) through the pipeline, read from the output's matte.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.imaging.outline import MAX_STRAIGHT_CUT_IOD, outline_line, straight_cut
from app.imaging.opencv import cv2

BOX = (80.0, 100.0, 160.0, 200.0)  # a face 80 px wide, eyes 40 px apart
IOD = 40.0


def two_heads() -> np.ndarray:
    """The model's matte: the sitter's head and a neighbour's, touching beside the sitter's cheek."""
    raw = np.zeros((320, 320), np.uint8)
    cv2.ellipse(raw, (120, 140), (55, 80), 0, 0, 360, 255, -1)
    cv2.ellipse(raw, (215, 150), (55, 80), 0, 0, 360, 255, -1)
    return raw


def test_a_cut_along_the_people_outlines_is_not_a_straight_cut() -> None:
    raw = two_heads()
    kept = np.zeros_like(raw)
    cv2.ellipse(kept, (120, 140), (55, 80), 0, 0, 360, 255, -1)
    assert straight_cut(kept, raw, BOX, iod=IOD) < 0.75


def test_a_straight_cut_through_the_sitters_cheek_fails_the_line() -> None:
    raw = two_heads()
    kept = raw.copy()
    kept[:, 150:] = 0  # a face box's side, through the sitter's cheek and hair
    run = straight_cut(kept, raw, BOX, iod=IOD)
    assert run > MAX_STRAIGHT_CUT_IOD
    line = outline_line(run)
    assert line["passed"] is False and "alone" in line["advice"]


def test_a_straight_wall_edge_beside_the_head_is_not_someone_taken() -> None:
    raw = np.zeros((320, 320), np.uint8)
    cv2.ellipse(raw, (120, 140), (55, 80), 0, 0, 360, 255, -1)
    kept = raw.copy()
    kept[:, :66] = 0  # a straight side, but nothing the model held as someone was taken there
    raw[:, :66] = 0
    assert straight_cut(kept, raw, BOX, iod=IOD) == 0.0


@pytest.fixture(scope="module")
def group(model_home: Path) -> np.ndarray:
    from tests.support import corpus

    corpus.fetch(None, names=("friends",))
    with Image.open(corpus.default_dir() / "friends.jpg") as image:
        return np.asarray(image.convert("RGB"))


def test_the_largest_face_in_a_group_keeps_its_hair_and_its_outline(group: np.ndarray, model_home: Path) -> None:
    from app.config import Settings
    from app.imaging.head import crown_columns, crown_row, eye_line
    from app.models.registry import Registry
    from app.models.sessions import resolve_providers
    from app.pipelines.idphoto import IdPhotoOptions, make_id_photo
    from app.specs import get_spec
    from app.timings import Timings

    settings = Settings.from_env()
    registry = Registry()
    registry.load(["modnet", "u2net", "centerface"], model_home=model_home, providers=resolve_providers(
        settings.ort_providers, cpu_arena=settings.ort_cpu_arena, mem_pattern=settings.ort_mem_pattern))
    portrait, fallback = registry.portrait_mattes("modnet", "u2net")
    photo = make_id_photo(group, detector=registry.face_detector()[1], segmenter=portrait, fallback=fallback,
                          options=IdPhotoOptions(spec=get_spec("us-passport"), background=(255, 255, 255),
                                                 face="largest"),
                          max_side=settings.working_max_side, timings=Timings())
    # on the output: the detector's face there, and the top of the matte over its columns
    faces = registry.face_detector()[1].detect(photo.pixels) if hasattr(registry.face_detector()[1], "detect") else []
    face = max(faces, key=lambda f: f.width)
    iod = float(np.hypot(*(face.landmarks[1] - face.landmarks[0])))
    top = crown_row(photo.alpha, x_range=crown_columns(face.landmarks, face.box))
    # the hair (dark, beside dark-haired neighbours) is kept: the top of the person sits well above the
    # eyes, as a head's does (the skull alone is about 1.5 eye distances up); it was cut at the forehead
    assert top is not None and (eye_line(face.landmarks) - top) / iod > 1.6, (top, iod)
    lines = {check.name: check for check in photo.checks}
    assert lines["outline_kept"].passed is True, lines["outline_kept"].to_dict()
