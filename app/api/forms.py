"""Reading multipart form fields into typed values, with one 400 per bad field."""

from __future__ import annotations

import base64
import json
from typing import TypeVar

from flask import Response, jsonify, request

from .. import observability
from ..errors import ApiError, bad_request
from ..imageio import OUTPUT_FORMATS
from ..service import current_service
from ..timings import Timings

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
N = TypeVar("N", int, float)


def require_multipart() -> None:
    if request.mimetype != "multipart/form-data":
        raise ApiError(
            415,
            "expected_multipart",
            f"Send the image as multipart/form-data (field 'image'), not {request.mimetype or 'an empty body'}.",
        )


def image_bytes(*names: str) -> bytes:
    """The bytes of the one file sent under the first of `names` present (default `image`; the
    others are aliases)."""
    require_multipart()
    names = names or ("image",)
    for name in names:
        files = request.files.getlist(name)
        if len(files) > 1:
            raise bad_request("too_many_images", f"Send exactly one file in the field '{name}' ({len(files)} were sent).")
        if files:
            return files[0].read()
    raise bad_request("missing_image", f"Attach the photo as the multipart file field '{names[0]}'.")


def text(name: str) -> str | None:
    value = request.form.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def boolean(name: str, default: bool = False) -> bool:
    value = text(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise bad_request("invalid_field", f"{name} must be true or false, not {value!r}.")


def integer(name: str, default: int, *, low: int, high: int) -> int:
    return _number(name, default, low=low, high=high, kind=int, words="a whole number")


def decimal(name: str, default: float, *, low: float, high: float) -> float:
    return _number(name, default, low=low, high=high, kind=float, words="a number")


def _number(name: str, default: N, *, low: N, high: N, kind: type[N], words: str) -> N:
    value = text(name)
    if value is None:
        return default
    try:
        number = kind(value)
    except ValueError:
        raise bad_request("invalid_field", f"{name} must be {words}, not {value!r}.") from None
    if not low <= number <= high:
        raise bad_request("invalid_field", f"{name} must be between {low:g} and {high:g}, not {number:g}.")
    return number


def wants_json(content_type: str) -> bool:
    """True when the client prefers JSON over the image type (e.g. `Accept: application/json`)."""
    accept = request.accept_mimetypes
    return accept["application/json"] > accept[content_type]


def image_response(data: bytes, fmt: str, *, timings: Timings, filename: str, extra: dict[str, object]) -> Response:
    """The image bytes, or JSON with base64 when the client asks for JSON. Call it inside the
    request's inference slot: the base64 answer of a large image is the request's largest buffer, and
    it must be made under the slot's one-photo-per-worker bound and the watchdog."""
    observability.observe_inference(timings)  # the stages in timings.models, per model
    content_type = OUTPUT_FORMATS[fmt]
    limit = current_service().settings.max_answer_bytes
    if wants_json(content_type):
        fields = {"content_type": content_type, "bytes": len(data), **extra, "timings": timings.as_dict()}
        refuse_larger_than(limit, base64_size(len(data)), fmt=fmt, as_json=True)
        response = Response(json_with_base64("image", data, fields), mimetype="application/json")
    else:
        refuse_larger_than(limit, len(data), fmt=fmt, as_json=False)
        response = Response(data, mimetype=content_type)
        response.headers["Content-Disposition"] = f'inline; filename="{filename}"'
    response.headers["Server-Timing"] = timings.header()
    return response


def base64_size(length: int) -> int:
    return 4 * ((length + 2) // 3)


def refuse_larger_than(limit: int, size: int, *, fmt: str, as_json: bool) -> None:
    """413 `answer_too_large` for an answer over MAX_ANSWER_MB, before nginx takes any of it: nginx
    buffers every answer whole (its temporary file holds up to MAX_ANSWER_MB), so no answer it could
    not hold is ever sent."""
    if size <= limit:
        return
    ways = ["JPEG (format=jpeg)"] if fmt != "jpeg" else []
    if as_json:
        ways.append("the image itself rather than JSON (base64 adds a third)")
    ways.append("a smaller size or sheet_dpi")
    raise ApiError(
        413,
        "answer_too_large",
        f"The answer would be {size / 2**20:.1f} MB; the limit is {limit / 2**20:g} MB (MAX_ANSWER_MB). Ask for "
        + ", or ".join(ways) + ".",
        details={"answer_bytes": size, "limit_bytes": limit},
    )


def json_with_base64(name: str, data: bytes, fields: dict[str, object]) -> bytes:
    """`{name: base64(data), **fields}` as JSON bytes, the base64 made once: jsonify would hold it
    four times over (bytes, str, the JSON str, its UTF-8 bytes), 5.3x the image; this holds 2.7x."""
    rest = json.dumps(fields, separators=(",", ":"))
    head = json.dumps(name).encode() + b':"'
    return b"".join((b"{", head, base64.b64encode(data), b'"', b"," if fields else b"", rest[1:].encode()))


def json_response(body: dict[str, object], timings: Timings) -> Response:
    """A JSON answer with the stage timings (body, `Server-Timing`, inference metrics)."""
    observability.observe_inference(timings)
    response = jsonify({**body, "timings": timings.as_dict()})
    response.headers["Server-Timing"] = timings.header()
    return response
