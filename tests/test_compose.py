from __future__ import annotations

import numpy as np

from app.pipelines.compose import cutout, flatten, resize_alpha, working_size
from app.pipelines.synthetic import warmup_portrait


def test_working_size_caps_the_long_side_only() -> None:
    assert working_size(800, 600, max_side=1024) == (800, 600)
    assert working_size(4000, 3000, max_side=1000) == (1000, 750)
    assert working_size(3000, 4000, max_side=1000) == (750, 1000)
    assert working_size(10000, 1, max_side=100) == (100, 1)


def test_flatten_is_alpha_blending() -> None:
    rgb = np.full((2, 2, 3), 200, np.uint8)
    alpha = np.array([[0, 255], [128, 64]], np.uint8)
    out = flatten(rgb, alpha, (0, 0, 100))
    assert out[0, 0].tolist() == [0, 0, 100]
    assert out[0, 1].tolist() == [200, 200, 200]
    a = 128 / 255
    assert out[1, 0].tolist() == [round(200 * a), round(200 * a), round(200 * a + 100 * (1 - a))]


def test_cutout_keeps_colours_unpremultiplied() -> None:
    rgb = np.full((3, 3, 3), 77, np.uint8)
    alpha = np.full((3, 3), 10, np.uint8)
    rgba = cutout(rgb, alpha)
    assert rgba.shape == (3, 3, 4) and (rgba[:, :, :3] == 77).all() and (rgba[:, :, 3] == 10).all()


def test_resize_alpha_to_width_height() -> None:
    alpha = np.zeros((10, 20), np.uint8)
    assert resize_alpha(alpha, (40, 30)).shape == (30, 40)


def test_warmup_portrait_is_deterministic() -> None:
    first, second = warmup_portrait(width=200, height=250), warmup_portrait(width=200, height=250)
    assert first.shape == (250, 200, 3) and first.dtype == np.uint8
    assert np.array_equal(first, second)
