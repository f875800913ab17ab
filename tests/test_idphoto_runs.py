"""An ID photo in a few detector runs, each of a shape the warm-up ran (issue 25).

The real CenterFace model and the real small segmenter, on the real astronaut; the detector's
session is wrapped so every run's input shape is recorded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime
import pytest

from app.models.centerface import CLOSE_UP_BATCH, CLOSE_UP_SIZE, CenterFace, make_dims_dynamic
from app.models.registry import Registry
from app.pipelines.idphoto import IdPhotoOptions, make_id_photo
from app.specs import get_spec
from app.timings import Timings

# detect the photo (1), its close-ups (1), the levelled close-ups (1, where the spec levels), the
# draft output and its close-ups (2); and when the draft still leans, the written output and its
# close-ups again (2)
MOST_RUNS = 7


class CountingSession:
    """An InferenceSession that records the shape of every input it runs."""

    def __init__(self, session: onnxruntime.InferenceSession) -> None:
        self.session = session
        self.shapes: list[tuple[int, ...]] = []

    def get_inputs(self):  # noqa: ANN201
        return self.session.get_inputs()

    def get_outputs(self):  # noqa: ANN201
        return self.session.get_outputs()

    def run(self, names: list[str], feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        (tensor,) = feed.values()
        self.shapes.append(tuple(tensor.shape))
        return self.session.run(names, feed)


@pytest.fixture(scope="module")
def counted(model_home: Path) -> tuple[CenterFace, CountingSession]:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    raw = make_dims_dynamic((model_home / "centerface.onnx").read_bytes())
    session = CountingSession(onnxruntime.InferenceSession(raw, options, providers=["CPUExecutionProvider"]))
    return CenterFace(session), session  # type: ignore[arg-type]


@pytest.mark.parametrize("spec_id", ["us-passport", "icao", "cn-passport"])
def test_an_id_photo_runs_the_detector_a_few_times_on_warmed_shapes(
    counted: tuple[CenterFace, CountingSession], small_registry: Registry, astronaut: np.ndarray, spec_id: str
) -> None:
    detector, session = counted
    session.shapes.clear()
    detector.warmup()
    warmed = set(session.shapes)
    assert warmed == {(1, 3, detector.input_size, detector.input_size), (CLOSE_UP_BATCH, 3, CLOSE_UP_SIZE, CLOSE_UP_SIZE)}
    session.shapes.clear()
    photo = make_id_photo(
        astronaut,
        detector=detector,
        segmenter=small_registry.segmenter("u2netp"),
        options=IdPhotoOptions(spec=get_spec(spec_id), background=(255, 255, 255)),
        max_side=1024,
        timings=Timings(),
    )
    spec = get_spec(spec_id)
    assert photo.pixels.shape == (spec.height_px, spec.width_px, 3)
    assert any(check.name == "head_height" for check in photo.checks)  # measured on the output
    fewest = 5 if spec.edit("level").apply else 4  # issue 33: no levelling where the authority refuses edits
    assert fewest <= len(session.shapes) <= MOST_RUNS, session.shapes
    assert set(session.shapes) <= warmed, session.shapes
