"""The one model protocol: every manifest family has one class in the registry's table, each class
builds from a file with the registry's session factory and warms up on the generated card; rembg's
own session class runs on a session from that factory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rembg.sessions.u2netp import U2netpSession

from app.models.base import warmup_card
from app.models.manifest import MANIFEST
from app.models.registry import FAMILIES
from app.models.segmentation import Segmenter, rembg_session
from app.models.sessions import Providers, create_session

CPU = Providers(("CPUExecutionProvider",))


def test_every_family_has_one_class_with_the_protocol() -> None:
    assert {spec.family for spec in MANIFEST.values()} == set(FAMILIES)
    for cls in FAMILIES.values():
        assert callable(getattr(cls, "from_file", None)) and callable(getattr(cls, "warmup", None)), cls


def test_the_warmup_card() -> None:
    card = warmup_card(64)
    assert card.shape == (64, 64, 3) and card.dtype == np.uint8
    assert card[0, 0, 0] == 0 and card[0, -1, 0] == 255 and card[-1, 0, 1] == 255 and np.all(card[..., 2] == 128)
    assert np.array_equal(card, warmup_card(64))


def test_rembg_runs_its_own_class_on_our_session(model_home: Path) -> None:
    made: list[object] = []

    def factory(model: Path | bytes) -> object:
        session = create_session(model, providers=CPU, label="test")
        made.append(session)
        return session

    segmenter = Segmenter.from_file(model_home / "u2netp.onnx", session_factory=factory)  # type: ignore[arg-type]
    assert type(segmenter.session) is U2netpSession, "rembg's class itself, not a subclass"
    assert segmenter.session.inner_session is made[0] and segmenter.session.model_name == "u2netp"
    segmenter.warmup()
    matte = segmenter.matte(warmup_card(96), max_side=64)  # matted at 64 px, scaled back to 96
    assert matte.alpha.shape == (96, 96) and matte.alpha.dtype == np.uint8
    assert type(rembg_session("u2netp", made[0])) is U2netpSession  # type: ignore[arg-type]
