from __future__ import annotations

import numpy as np

from app.imaging.compose import cutout, flatten
from app.imaging.resample import resize_alpha, working_size


def test_cutout_keeps_visible_colours_and_zeroes_invisible_ones() -> None:
    rng = np.random.default_rng(3)
    rgb = rng.integers(1, 256, size=(6, 7, 3), dtype=np.uint8)
    alpha = np.array([[0, 1, 128, 255, 0, 7, 0]] * 6, dtype=np.uint8)
    rgba = cutout(rgb, alpha)
    assert rgba.shape == (6, 7, 4) and rgba.dtype == np.uint8
    assert np.array_equal(rgba[..., 3], alpha)
    visible = alpha > 0
    assert np.array_equal(rgba[visible, :3], rgb[visible])  # unpremultiplied, untouched
    assert not rgba[~visible, :3].any()
    assert rgb.min() >= 1  # the input is not modified


def test_flatten_is_a_plain_alpha_blend() -> None:
    rgb = np.full((2, 2, 3), 200, dtype=np.uint8)
    alpha = np.array([[0, 255], [128, 64]], dtype=np.uint8)
    out = flatten(rgb, alpha, (0, 0, 255))
    assert out[0, 0].tolist() == [0, 0, 255] and out[0, 1].tolist() == [200, 200, 200]
    a = 128 / 255
    assert np.allclose(out[1, 0], [200 * a, 200 * a, 200 * a + 255 * (1 - a)], atol=1)


def test_resize_alpha_and_working_size() -> None:
    alpha = np.zeros((10, 20), dtype=np.uint8)
    alpha[:, 10:] = 255
    resized = resize_alpha(alpha, (40, 20))
    assert resized.shape == (20, 40) and resized[:, :18].max() == 0 and resized[:, 22:].min() == 255
    assert working_size(4000, 3000, max_side=2048) == (2048, 1536)
    assert working_size(800, 600, max_side=2048) == (800, 600)
