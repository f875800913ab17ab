"""Fake-camera scenes for the page's camera tests: a real portrait (scikit-image's astronaut) cut out
by the server's own matte and placed on a plain light wall, at the scale and height the chosen
spec's outline asks for. The geometry is camera.js's: the outline is the largest box of the spec's
shape in the camera's frame, centred (guidance.js `outlineBox`), and the live check reads the head's
height and the eye line as fractions of that box's height. Both are measured by the live check
itself (POST /api/v1/idphoto/check), on the portrait first, then on the placed scene, so the scene
sits where the check's own reading of the head puts it, not where a guess of the face's proportions
would."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from app.specs import PhotoSpec
from tests.support.harness import Server

WALL = (226, 226, 222)  # a plain light grey wall
FRAME_HEIGHT = 320  # guidance.js: the outline's view is sent this many px high
RULER = "icao"  # a spec with an eye line: the live check then reads the eyes' height too (its readings
# of the head, the eyes and the centre do not depend on the spec; only which lines it says does)


def outline_box(width: int, height: int, spec: PhotoSpec) -> tuple[int, int, int, int]:
    """(x, y, w, h): guidance.js `outlineBox`."""
    aspect = spec.width_px / spec.height_px
    if width / height > aspect:
        w = round(height * aspect)
        return (round((width - w) / 2), 0, w, height)
    h = round(width / aspect)
    return (0, round((height - h) / 2), width, h)


def _jpeg(rgb: np.ndarray | Image.Image, quality: int = 90) -> bytes:
    image = rgb if isinstance(rgb, Image.Image) else Image.fromarray(rgb)
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


def matte(server: Server, rgb: np.ndarray) -> np.ndarray:
    """The server's cut-out mask of `rgb`: (H, W) uint8."""
    answer = server.post("/api/v1/remove-background", files={"image": ("portrait.jpg", _jpeg(rgb, 95), "image/jpeg")},
                         data={"only_mask": "true", "format": "png"})
    assert answer.status_code == 200, answer.text[:300]
    return np.asarray(Image.open(io.BytesIO(answer.content)).convert("L"))


def live_check(server: Server, image: np.ndarray, spec: PhotoSpec | None = None) -> dict[str, dict[str, object]]:
    """The live check's lines of `image` (sent whole, as the page sends the outline's view), by name,
    for `spec` (default: RULER)."""
    answer = server.post("/api/v1/idphoto/check", files={"image": ("frame.jpg", _jpeg(image), "image/jpeg")},
                         data={"spec": spec.id if spec is not None else RULER})
    assert answer.status_code == 200, answer.text[:300]
    return {line["name"]: line for line in answer.json()["lines"]}


def outline_view(frame: np.ndarray, spec: PhotoSpec) -> np.ndarray:
    """What guidance.js sends: the outline's box of the frame, FRAME_HEIGHT px high."""
    x, y, w, h = outline_box(frame.shape[1], frame.shape[0], spec)
    view = Image.fromarray(frame).crop((x, y, x + w, y + h))
    return np.asarray(view.resize((round(FRAME_HEIGHT * w / h), FRAME_HEIGHT), Image.BILINEAR))


def _head(lines: dict[str, dict[str, object]], width: int, height: int) -> tuple[float, float, float]:
    """(head height, eye row, face centre x) in px of an image `width` x `height`, from the live check's
    readings (distance: the head over the height; eye_line: the eyes above the bottom edge, of the
    height; centre_x: the eyes' midpoint off the middle, of the width; read with RULER's eye line)."""
    assert "eye_line" in lines and "distance" in lines, lines
    head = float(lines["distance"]["value"]) * height  # type: ignore[arg-type]
    eyes = (1.0 - float(lines["eye_line"]["value"])) * height  # type: ignore[arg-type]
    centre = (0.5 + float(lines["centre_x"]["value"])) * width  # type: ignore[arg-type]
    return head, eyes, centre


def place(rgb: np.ndarray, alpha: np.ndarray, video: tuple[int, int], *, scale: float, anchor: tuple[float, float],
          at: tuple[float, float], wall: tuple[int, int, int] = WALL) -> np.ndarray:
    """The portrait scaled by `scale` on the wall, its point `anchor` (portrait px) at `at` (frame px)."""
    size = (round(rgb.shape[1] * scale), round(rgb.shape[0] * scale))
    person = Image.fromarray(rgb).resize(size, Image.LANCZOS)
    mask = Image.fromarray(alpha).resize(size, Image.LANCZOS)
    canvas = Image.new("RGB", video, wall)
    canvas.paste(person, (round(at[0] - anchor[0] * scale), round(at[1] - anchor[1] * scale)), mask)
    return np.asarray(canvas)


def on_the_outline(server: Server, rgb: np.ndarray, spec: PhotoSpec, video: tuple[int, int], *,
                   head: float | None = None, eyes: float | None = None) -> np.ndarray:
    """A `video`-sized frame with the portrait `rgb` on a plain wall, its head `head` of the outline's
    height (default: the middle of the spec's band) and its eyes `eyes` of it above the outline's
    bottom (default: the middle of the spec's eye band, else where camera.js draws them: 0.1 of
    the height plus 0.47 of the head's below the top), centred. One correction after a first placing, from the live check's reading of the scene."""
    head = head if head is not None else sum(spec.head_height) / 2
    if eyes is None:
        eyes = sum(spec.eye_line) / 2 if spec.eye_line else 1 - (0.1 + 0.47 * head)
    alpha = matte(server, rgb)
    portrait_head, eye_row, centre = _head(live_check(server, rgb), rgb.shape[1], rgb.shape[0])
    x, y, w, h = outline_box(video[0], video[1], spec)
    scale = head * h / portrait_head
    at = (x + w / 2, y + h * (1 - eyes))
    frame = place(rgb, alpha, video, scale=scale, anchor=(centre, eye_row), at=at)
    # the scene as the page will send it: correct the scale and the eyes' height by what the check reads
    view = outline_view(frame, spec)
    seen_head, seen_eyes, _ = _head(live_check(server, view), view.shape[1], view.shape[0])
    scale *= head * FRAME_HEIGHT / seen_head
    at = (at[0], at[1] - (seen_eyes / FRAME_HEIGHT - (1 - eyes)) * h)
    return place(rgb, alpha, video, scale=scale, anchor=(centre, eye_row), at=at)


def side_lit(frame: np.ndarray, *, darkest: float = 0.3, span: tuple[float, float] = (0.25, 0.6)) -> np.ndarray:
    """The scene lit from the right (the camera's view): across the face (centred by `on_the_outline`)
    the light falls off to the left, full from `span[1]` of the frame's width rightwards, down to
    `darkest` of itself at `span[0]` and leftwards."""
    width = frame.shape[1]
    x = np.arange(width) / width
    gain = np.clip(darkest + (1 - darkest) * (x - span[0]) / (span[1] - span[0]), darkest, 1.0).astype(np.float32)
    return np.clip(frame.astype(np.float32) * gain[None, :, None], 0, 255).astype(np.uint8)


def turned(frame: np.ndarray, *, near: float = 0.55, half: float = 0.3) -> np.ndarray:
    """The head seen turned: within `half` of the frame's width either side of the middle (the face,
    centred by `on_the_outline`), the left half foreshortened to `near` of its width and the right half
    widened to fill the rest, as a face turned to the camera's left shows it (the nose moves towards
    the far eye). A warp of the photographed pixels, not a new pose: what the landmarks read of it is
    what a turn looks like to them."""
    image = Image.fromarray(frame)
    width, height = image.size
    left, middle, right = round(width * (0.5 - half)), width // 2, round(width * (0.5 + half))
    split = left + round((middle - left) * near)
    out = image.copy()
    out.paste(image.crop((left, 0, middle, height)).resize((split - left, height), Image.LANCZOS), (left, 0))
    out.paste(image.crop((middle, 0, right, height)).resize((right - split, height), Image.LANCZOS), (split, 0))
    return np.asarray(out)
