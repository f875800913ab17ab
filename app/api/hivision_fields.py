"""Reading HivisionIDPhotos' form fields (its `deploy_api.py`), for app/api/hivision.py.

Hivision's server takes every field it declares and does what it can: an unknown matting or face
model name runs its default, a beauty strength is applied. Where we do less, the request is still
accepted, the nearest honest thing is done, and what was not done is said in words: each reader
that substitutes or skips something appends a sentence to `not_applied`, which the answer carries
as `pilotlight.not_applied`. A value that is not a value (a height of "tall") is a 400.
"""

from __future__ import annotations

import base64
import binascii

from flask import request

from ..errors import bad_request
from ..specs import MAX_DPI, MIN_DPI

MATTING_MODELS = ("modnet_photographic_portrait_matting", "hivision_modnet")  # both: our portrait matte
FACE_MODELS = ("mtcnn", "retinaface-resnet50")  # both: our face detector (CenterFace)
WHY_NOT = {  # names Hivision knows that run something else here, and why
    "rmbg-1.4": "not shipped here",
    "birefnet-v1-lite": "not shipped here",
    "mnn_hivision_modnet": "not shipped here (an MNN build of the same MODNet)",
    "face_plusplus": "a cloud API, and this server sends no request out",
    "face++ (联网Online API)": "a cloud API, and this server sends no request out",
}
RETOUCH = ("whitening_strength", "brightness_strength", "contrast_strength", "sharpen_strength", "saturation_strength")
RENDER = ("pure_color", "updown_gradient", "center_gradient")


def input_bytes() -> bytes:
    """The photo: the file `input_image`, or `input_image_base64` (plain base64, or a `data:` URL)."""
    encoded = request.form.get("input_image_base64")
    if encoded is not None and encoded.strip():
        text = encoded.strip()
        if text.startswith("data:"):
            text = text.partition(",")[2]
        try:
            return base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            raise bad_request("invalid_base64", "input_image_base64 is not valid base64.") from None
    files = request.files.getlist("input_image") if request.mimetype == "multipart/form-data" else []
    if len(files) > 1:
        raise bad_request("too_many_images", f"Send exactly one file in input_image ({len(files)} were sent).")
    if not files:
        raise bad_request("missing_image", "Send the photo as the multipart file input_image, or as "
                          "input_image_base64.")
    return files[0].read()


def value(name: str, *, query: bool = False) -> str | None:
    """A field's text from the form (the query string first where `query`: /watermark reads its
    styling there, as Hivision declares it; its Form fields it never reads from the query)."""
    found = request.args.get(name) if query else None
    if found is None or not found.strip():
        found = request.form.get(name)
    return None if found is None or not found.strip() else found.strip()


NotApplied = list[dict[str, object]]


def skip(not_applied: NotApplied, field: str, asked: object, why: str, *, instead: str | None = None) -> None:
    """Record a field that was read and not applied: what was asked, why not, and what ran instead."""
    not_applied.append({"field": field, "value": asked, "why": why, **({"instead": instead} if instead else {})})


def model_choice(name: str, default: str, served: tuple[str, ...], runs: str, not_applied: NotApplied) -> str:
    """The model name asked for, as Hivision reads it: a name it does not know runs its default. A
    name we do not serve runs `runs` (what serves `served` here), and `not_applied` says so."""
    asked = value(name) or default
    if asked not in served:
        skip(not_applied, name, asked, WHY_NOT.get(asked, "not a model HivisionIDPhotos or this server knows"),
             instead=f"{runs}, what {default} runs here")
    return asked


def number(name: str, default: float, *, low: float, high: float, whole: bool = False, query: bool = False) -> float:
    text = value(name, query=query)
    if text is None:
        return default
    try:
        found = float(text) if not whole else int(text)
    except ValueError:
        raise bad_request("invalid_field", f"{name} must be {'a whole number' if whole else 'a number'}, "
                          f"not {text!r}.") from None
    if not low <= found <= high:
        raise bad_request("invalid_field", f"{name} must be between {low:g} and {high:g}, not {text}.")
    return found


def hex_colour(name: str, default: str, *, query: bool = False) -> tuple[int, int, int]:
    text = (value(name, query=query) or default).lstrip("#")
    if len(text) != 6 or any(ch not in "0123456789abcdefABCDEF" for ch in text):
        raise bad_request("invalid_field", f"{name} must be a hex colour such as 638cce or #638cce, not {text!r}.")
    return int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16)


def dpi_field() -> int:
    """`dpi`: written into the file, nothing else (Hivision's meaning)."""
    return int(number("dpi", 300, low=MIN_DPI, high=MAX_DPI, whole=True))


def kb_field(*, default: int | None) -> int | None:
    """`kb`: a JPEG of exactly that many KB (1024 bytes). 0, like no kb, is read as Hivision's
    `if kb:` reads it: no size asked (the caller decides what that means on its route)."""
    if value("kb") is None:
        return default
    return int(number("kb", 0, low=0, high=100_000, whole=True))


def retouch_fields(not_applied: NotApplied) -> None:
    """Hivision's beauty strengths: read (a number, as Hivision types them), never applied."""
    for name in RETOUCH:
        strength = number(name, 0, low=-1000, high=1000)
        if strength != 0:
            skip(not_applied, name, strength, "no retouching here: authorities refuse retouched ID photos",
                 instead="the face as photographed")


def render_field() -> str:
    text = value("render") or "0"
    if text not in ("0", "1", "2"):
        raise bad_request("invalid_field", f"render must be one of 0, 1, 2, not {text!r}.")
    return RENDER[int(text)]
