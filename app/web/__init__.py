"""The browser page: `GET /` serves one self-contained page (HTML, CSS and vanilla JS from this
package; no build step, no CDN, no external fonts) where a person makes an ID photo, a print sheet
or a cut-out by calling the JSON API with `Accept: application/json`.

Nothing here runs at import beyond the blueprint definition: the template is compiled by the first
request a worker answers (a few milliseconds) and the asset version is computed once, lazily.
Every response of this blueprint (the page and its static files) carries a strict
Content-Security-Policy: scripts, styles and connections only from this origin, images also from
blob: and data: URLs (the results are shown from object URLs), no framing.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

from flask import Blueprint, Response, current_app, render_template, request

from ..imaging.sheet import PAPERS
from ..specs import BACKGROUND_COLOURS, SPECS

STATIC = Path(__file__).resolve().parent / "static"
ASSETS = ("app.css", "app.js")
ONE_YEAR = 365 * 24 * 3600

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' blob: data:",
        "connect-src 'self' blob:",
        "form-action 'self'",
        "base-uri 'none'",
        "object-src 'none'",
        "frame-ancestors 'none'",
    )
)

# Group headings of the spec list: ISO 3166 codes of the specs, plus ICAO's "INT" and "EU".
COUNTRY_NAMES = {
    "INT": "International",
    "EU": "European Union",
    "US": "United States",
    "GB": "United Kingdom",
    "CA": "Canada",
    "AU": "Australia",
    "NZ": "New Zealand",
    "DE": "Germany",
    "FR": "France",
    "JP": "Japan",
    "KR": "South Korea",
    "SG": "Singapore",
    "IN": "India",
    "CN": "China",
}


class _WebBlueprint(Blueprint):
    def get_send_file_max_age(self, filename: str | None) -> int | None:
        # Asset URLs carry ?v=<content hash>: cache them for a year, so a slow connection fetches
        # them once; without the version, revalidate (ETag) as Flask does by default.
        return ONE_YEAR if request.args.get("v") == asset_version() else None


bp = _WebBlueprint("web", __name__, static_folder="static", static_url_path="/ui", template_folder="templates")


@functools.cache
def asset_version() -> str:
    digest = hashlib.sha256()
    for name in ASSETS:
        digest.update((STATIC / name).read_bytes())
    return digest.hexdigest()[:12]


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _colour_label(name: str) -> str:
    return name.replace("-", " ").capitalize()


def _spec_groups() -> list[tuple[str, str, list[dict[str, object]]]]:
    """(country code, country name, specs) with International first, then countries A-Z."""
    groups: dict[str, list[dict[str, object]]] = {}
    for spec in SPECS.values():
        groups.setdefault(spec.country, []).append(spec.to_dict())
    order = sorted(groups, key=lambda code: (code != "INT", COUNTRY_NAMES.get(code, code)))
    return [(code, COUNTRY_NAMES.get(code, code), groups[code]) for code in order]


_SIZE_IN_NAME = re.compile(r"\s*\([\d.,x× ]+mm\)$")


def _short_name(name: str) -> str:
    """"ICAO standard (35 x 45 mm)" -> "ICAO standard": the list shows the size beside it anyway."""
    return _SIZE_IN_NAME.sub("", name)


def _mm(value: float) -> str:
    """51 for 50.8 (2 in), 35 for 35.0, 25.5 for 25.5: what a person reads on a rule."""
    whole = round(value)
    return str(whole) if abs(value - whole) < 0.25 else f"{value:.1f}"


@bp.get("/")
def index() -> str:
    settings = current_app.config["PILOTLIGHT_SETTINGS"]
    groups = _spec_groups()
    colours = {name: _hex(rgb) for name, rgb in BACKGROUND_COLOURS.items()}
    papers = [{"id": paper.id, "name": paper.name} for paper in PAPERS.values()]
    page_data = {
        "specs": [spec for _, _, specs in groups for spec in specs],
        "countries": {code: name for code, name, _ in groups},
        "colours": colours,
        "papers": papers,
        "max_upload_mb": settings.max_upload_mb,
    }
    return render_template(
        "web/index.html",
        groups=groups,
        colours=[(name, _colour_label(name), value) for name, value in colours.items()],
        papers=papers,
        page_data=page_data,
        mm=_mm,
        short_name=_short_name,
        default_spec="icao",
        version=asset_version(),
        max_upload_mb=settings.max_upload_mb,
    )


@bp.after_request
def _security_headers(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Frame-Options"] = "DENY"
    return response
