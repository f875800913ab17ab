"""The browser page: `GET /` serves one self-contained page (HTML, CSS and vanilla JS from this
package; no build step, no CDN, no external fonts) where a person makes an ID photo, a print sheet
or a cut-out by calling the JSON API with `Accept: application/json`.

Nothing here runs at import beyond the blueprint definition: the template is compiled by the first
request a worker answers (a few milliseconds) and the asset version is computed once, lazily.
Every response of this blueprint (the page and its static files) carries the security headers of
app/assets.py, which also lists the files the page loads: nginx serves those straight from disk
when it is in front (app/serving/front.py), this blueprint when the service runs alone. When one
of the on-device cut-out's files is missing, the page works as before and says the on-device
cut-out is unavailable.
"""

from __future__ import annotations

import re
from pathlib import Path

from flask import Blueprint, Response, abort, current_app, render_template, request, send_file

from ..assets import IMMUTABLE, MODULES, ONE_YEAR, SECURITY_HEADERS, STATIC, asset_version, module_url, ondevice_files
from ..models.manifest import WEB_RUNTIME

from ..imaging.sheet import PAPERS
from ..imaging.wording import LINE_TITLES
from ..specs import BACKGROUND_COLOURS, SPECS, PhotoSpec

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
    "IT": "Italy",
    "ES": "Spain",
    "NL": "Netherlands",
    "BE": "Belgium",
    "CH": "Switzerland",
    "AT": "Austria",
    "PL": "Poland",
    "HK": "Hong Kong",
    "TW": "Taiwan",
    "SA": "Saudi Arabia",
    "BR": "Brazil",
}


class _WebBlueprint(Blueprint):
    def get_send_file_max_age(self, filename: str | None) -> int | None:
        # Asset URLs carry ?v=<content hash>: cache them for a year, so a slow connection fetches
        # them once; without the version, revalidate (ETag) as Flask does by default.
        return ONE_YEAR if request.args.get("v") == asset_version() else None


bp = _WebBlueprint("web", __name__, static_folder="static", static_url_path="/ui", template_folder="templates")


@bp.get("/ui/ondevice/<digest>/<name>")
def ondevice_file(digest: str, name: str) -> Response:
    """One of the on-device cut-out's files, at a URL that names its sha256: cached as immutable."""
    files = ondevice_files(current_app.config["PILOTLIGHT_SETTINGS"].model_home) or {}
    for item in files.values():
        if item.url == request.path:
            response = send_file(item.path, mimetype=item.content_type, max_age=ONE_YEAR, conditional=True, etag=item.sha256)
            response.headers["Cache-Control"] = IMMUTABLE
            return response
    abort(404)


@bp.get("/ui/v/<version>/<name>")
def module_file(version: str, name: str) -> Response:
    """One of the page's modules at its versioned URL (immutable); another version: 404, as nginx."""
    if version != asset_version() or name not in MODULES:
        abort(404)
    response = send_file(STATIC / name, mimetype="text/javascript", max_age=ONE_YEAR, conditional=True)
    response.headers["Cache-Control"] = IMMUTABLE
    return response


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _colour_label(name: str) -> str:
    return name.replace("-", " ").capitalize()


# What the page reads of a spec; the full rules, with their sources' URLs and words, are in
# GET /api/v1/specs (the page itself names no other site).
PAGE_SPEC_FIELDS = ("id", "name", "country", "width_mm", "height_mm", "width_px", "height_px", "dpi", "backgrounds",
                    "default_background", "max_kb", "source", "head_height", "eye_line")


def background_note(spec: PhotoSpec) -> str:
    """One line on why the spec opens on its default background (issue 33)."""
    policy = spec.edit("replace_background")
    if policy.policy == "forbidden":
        return f"{spec.name}: the authority refuses edited photos, so your own background is kept and checked."
    if not policy.apply:
        return (f"{spec.name}: the authority does not say it accepts a new background, so your own is kept and "
                "checked.")
    return f"{spec.name}: no authority rules on editing this format, so the background can be changed."


def _spec_groups() -> list[tuple[str, str, list[dict[str, object]]]]:
    """(country code, country name, specs) with International first, then countries A-Z."""
    groups: dict[str, list[dict[str, object]]] = {}
    for spec in SPECS.values():
        described = spec.to_dict()
        groups.setdefault(spec.country, []).append({**{key: described[key] for key in PAGE_SPEC_FIELDS},
                                                    "background_note": background_note(spec),
                                                    "background_refused": spec.edit("replace_background").allowed is False})
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
        "lines": LINE_TITLES,  # the report's words for its lines: the result and the live guidance say them
        "ondevice": _ondevice_data(settings.model_home, settings.working_max_side),
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
        module_url=module_url,
        modules=MODULES,
        max_upload_mb=settings.max_upload_mb,
    )


def _ondevice_data(model_home: Path, working_max_side: int) -> dict[str, object] | None:
    files = ondevice_files(model_home)
    if files is None:
        return None
    return {
        **{role: item.describe() for role, item in files.items()},
        "module": module_url("ondevice.js"),
        "runtime_version": WEB_RUNTIME.version,
        "working_max_side": working_max_side,
    }


@bp.after_request
def _security_headers(response: Response) -> Response:
    for name, value in SECURITY_HEADERS:
        response.headers[name] = value
    return response
