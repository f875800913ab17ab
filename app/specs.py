"""Photo specifications for passport, visa, ID and résumé photos, kept as data.

Every entry in `SPECS` names its source (authority and document or page title) in a comment
above it. Where an authority gives no head-height or eye-line rule, the comment says so and
the band used instead is called a loose band.

Conventions used by every spec:

* `head_height` is the allowed chin-to-crown height as a fraction of the photo height
  (min, max). Where an authority gives millimetres, the fraction is mm / photo height.
* `eye_line` is the allowed height of the eye line above the bottom edge, as a fraction of the
  photo height, or None when the authority gives no rule.
* `width_px`/`height_px` always equal round(mm / 25.4 * dpi), so a print and a file share one
  geometry and a print never gets stretched. Where an authority states exact pixels, the dpi
  is picked so its numbers come out exactly: US 600x600 at 300 dpi, China ID card 358x441 at
  350 dpi, Singapore 400x514 at 290 dpi, Chinese 1-inch/2-inch at 300 dpi. Where it states a
  window or a minimum, the size falls inside it (China visa online 354-420 x 472-560 ->
  377x548 at 290 dpi; UK >= 600x750; NZ >= 900x1200; India e-Visa 350-1000 square).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BACKGROUND_COLOURS",
    "MAX_DPI",
    "MAX_SIDE_PX",
    "MIN_DPI",
    "PhotoSpec",
    "SPECS",
    "custom_spec",
    "get_spec",
    "mm_to_px",
    "parse_colour",
]

MM_PER_INCH = 25.4
MIN_DPI = 72
MAX_DPI = 1200
MAX_SIDE_PX = 4000
HEAD_RATIO_LIMITS = (0.2, 0.9)  # custom head ratios must lie strictly inside this

RGB = tuple[int, int, int]

# Named background colours. Names are lowercase with '-'; parse_colour also accepts '_' or
# spaces instead of '-', any case, and "gray" for "grey".
BACKGROUND_COLOURS: dict[str, RGB] = {
    "white": (255, 255, 255),
    "off-white": (245, 245, 240),
    "cream": (243, 237, 220),  # UK "plain cream" (printed passport photos)
    "light-grey": (220, 220, 220),
    "light-blue": (173, 216, 230),  # CSS "lightblue"; France's "bleu clair"
    # Chinese ID-photo blue (蓝底), #438EDB, the value Chinese photo tools commonly use.
    "blue": (67, 142, 219),
    # Chinese ID-photo red (红底): we use pure #FF0000 (255, 0, 0), the most common value;
    # some studios use a deeper (214, 0, 0).
    "red": (255, 0, 0),
}

_SLUG_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_HEX_RE = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})")
_COUNTRY_RE = re.compile(r"[A-Z]{2}|INT")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_band(name: str, band: tuple[float, float]) -> None:
    if not (isinstance(band, tuple) and len(band) == 2 and all(_is_number(v) for v in band)):
        raise ValueError(f"{name} must be a (min, max) pair of numbers")
    low, high = band
    if not 0.0 < low < high < 1.0:
        raise ValueError(f"{name} must satisfy 0 < min < max < 1, got ({low}, {high})")


@dataclass(frozen=True)
class PhotoSpec:
    """One photo format: print size, exact pixel size, head and eye placement, backgrounds."""

    id: str
    name: str  # "US passport"
    country: str  # ISO 3166 alpha-2 ("EU" is ISO's reserved code), "INT" for ICAO/none, "XX" custom
    width_mm: float
    height_mm: float
    dpi: int  # the print resolution the pixel size comes from
    width_px: int  # exact output pixel size
    height_px: int
    head_height: tuple[float, float]  # chin-to-crown as a fraction of photo height (min, max)
    eye_line: tuple[float, float] | None  # eye height above the BOTTOM edge, fraction of height
    backgrounds: tuple[str, ...]  # allowed names from BACKGROUND_COLOURS, first is the default
    max_kb: int | None  # upload cap where the authority sets one
    source: str  # short citation

    def __post_init__(self) -> None:
        if not (isinstance(self.id, str) and _SLUG_RE.fullmatch(self.id)):
            raise ValueError("spec id must be a lowercase slug such as 'us-passport'")
        if not (isinstance(self.country, str) and (_COUNTRY_RE.fullmatch(self.country))):
            raise ValueError(f"{self.id}: country must be an ISO 3166 alpha-2 code or 'INT'")
        for label in ("width_mm", "height_mm"):
            value = getattr(self, label)
            if not (_is_number(value) and value > 0):
                raise ValueError(f"{self.id}: {label} must be a positive number")
        if not (isinstance(self.dpi, int) and not isinstance(self.dpi, bool) and MIN_DPI <= self.dpi <= MAX_DPI):
            raise ValueError(f"{self.id}: dpi must be an integer between {MIN_DPI} and {MAX_DPI}")
        for label in ("width_px", "height_px"):
            value = getattr(self, label)
            if not (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_SIDE_PX):
                raise ValueError(f"{self.id}: {label} must be an integer between 1 and {MAX_SIDE_PX}")
        _check_band(f"{self.id}: head_height", self.head_height)
        if self.eye_line is not None:
            _check_band(f"{self.id}: eye_line", self.eye_line)
        if not (isinstance(self.backgrounds, tuple) and self.backgrounds):
            raise ValueError(f"{self.id}: backgrounds must be a non-empty tuple of colour names")
        unknown = [name for name in self.backgrounds if name not in BACKGROUND_COLOURS]
        if unknown:
            raise ValueError(f"{self.id}: unknown background name(s): {', '.join(map(str, unknown))}")
        if len(set(self.backgrounds)) != len(self.backgrounds):
            raise ValueError(f"{self.id}: backgrounds must not repeat")
        if self.max_kb is not None and not (
            isinstance(self.max_kb, int) and not isinstance(self.max_kb, bool) and self.max_kb > 0
        ):
            raise ValueError(f"{self.id}: max_kb must be a positive integer or None")

    @property
    def default_background(self) -> str:
        return self.backgrounds[0]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (plain dicts, lists, numbers, strings and None)."""
        return {
            "id": self.id,
            "name": self.name,
            "country": self.country,
            "width_mm": self.width_mm,
            "height_mm": self.height_mm,
            "width_px": self.width_px,
            "height_px": self.height_px,
            "dpi": self.dpi,
            "head_height": {"min": self.head_height[0], "max": self.head_height[1]},
            "eye_line": None if self.eye_line is None else {"min": self.eye_line[0], "max": self.eye_line[1]},
            "backgrounds": list(self.backgrounds),
            "default_background": self.default_background,
            "max_kb": self.max_kb,
            "source": self.source,
        }


def mm_to_px(mm: float, dpi: int) -> int:
    """Pixels covering `mm` millimetres at `dpi` (rounded to the nearest pixel)."""
    return round(mm / MM_PER_INCH * dpi)


def _band(low_mm: float, high_mm: float, *, of_mm: float) -> tuple[float, float]:
    """A (min, max) millimetre band as fractions of `of_mm`, rounded to 4 places."""
    return (round(low_mm / of_mm, 4), round(high_mm / of_mm, 4))


def _spec(
    *,
    id: str,
    name: str,
    country: str,
    width_mm: float,
    height_mm: float,
    dpi: int,
    head: tuple[float, float],
    eye: tuple[float, float] | None,
    backgrounds: tuple[str, ...],
    source: str,
    max_kb: int | None = None,
) -> PhotoSpec:
    return PhotoSpec(
        id=id,
        name=name,
        country=country,
        width_mm=width_mm,
        height_mm=height_mm,
        dpi=dpi,
        width_px=mm_to_px(width_mm, dpi),
        height_px=mm_to_px(height_mm, dpi),
        head_height=head,
        eye_line=eye,
        backgrounds=backgrounds,
        max_kb=max_kb,
        source=source,
    )


TWO_INCH_MM = 2 * MM_PER_INCH  # 50.8 mm
# ISO/IEC 19794-5 "Full Frontal" image geometry (the face-image standard ICAO Doc 9303 refers to):
# the eye line lies 50-70 % of the image height above the bottom edge. Doc 9303's own photo
# guidelines give no eye line, so ICAO-style specs that lack a national rule borrow this one.
_ISO_19794_5_EYES = (0.50, 0.70)

_SPEC_LIST: tuple[PhotoSpec, ...] = (
    # U.S. Department of State, travel.state.gov "Passport Photos" and its "Photo Composition
    # Template": 2 x 2 in (51 x 51 mm); head 1 to 1 3/8 in (25-35 mm) from the bottom of the chin
    # to the top of the head; eyes 1 1/8 to 1 3/8 in (28-35 mm) above the bottom; plain white or
    # off-white background. Digital copies: square, at least 600 x 600 px (= 2 in at 300 dpi).
    _spec(
        id="us-passport",
        name="US passport",
        country="US",
        width_mm=TWO_INCH_MM,
        height_mm=TWO_INCH_MM,
        dpi=300,
        head=(1 / 2, 1.375 / 2),  # 1 in and 1 3/8 in of 2 in
        eye=(1.125 / 2, 1.375 / 2),  # 1 1/8 in and 1 3/8 in of 2 in
        backgrounds=("white", "off-white"),
        source="U.S. Dept. of State, travel.state.gov 'Passport Photos' / Photo Composition Template",
    ),
    # U.S. Department of State, travel.state.gov "Photo Requirements" (U.S. visas) / "Digital Image
    # Requirements" for the DS-160: square, 600 x 600 to 1200 x 1200 px, JPEG <= 240 kB; head
    # (top of hair to chin) 50-69 % of the image height; eye height 56-69 % from the bottom;
    # plain white or off-white background; printed copies 2 x 2 in.
    _spec(
        id="us-visa",
        name="US visa",
        country="US",
        width_mm=TWO_INCH_MM,
        height_mm=TWO_INCH_MM,
        dpi=300,
        head=(0.50, 0.69),
        eye=(0.56, 0.69),
        backgrounds=("white", "off-white"),
        max_kb=240,
        source="U.S. Dept. of State, travel.state.gov 'Photo Requirements' (visas) / DS-160 digital image requirements",
    ),
    # ICAO Doc 9303 "Machine Readable Travel Documents", photograph guidelines (Part 1 Vol. 1
    # Appendix 5 in the 6th ed., Part 3 in later editions): 35-40 mm wide x 45-50 mm high; chin to
    # crown 70-80 % of the picture height (32-36 mm on a 45 mm photo, the EU/Schengen reading);
    # plain light-coloured background. Eye line: Doc 9303 gives none; ISO/IEC 19794-5 full-frontal
    # geometry (50-70 % from the bottom) is used.
    _spec(
        id="icao",
        name="ICAO standard (35 x 45 mm)",
        country="INT",
        width_mm=35,
        height_mm=45,
        dpi=600,
        head=_band(32, 36, of_mm=45),
        eye=_ISO_19794_5_EYES,
        backgrounds=("white", "light-grey", "off-white", "light-blue"),
        source="ICAO Doc 9303 photograph guidelines; eye line from ISO/IEC 19794-5 full frontal",
    ),
    # EU Visa Code, Regulation (EC) No 810/2009 Art. 10(3)(c): the photograph must meet the ICAO
    # standards (Regulation (EC) No 1683/95 / ICAO Doc 9303). Schengen missions publish 35 x 45 mm,
    # face 32-36 mm chin to crown (70-80 %), plain light background. Eye line: none in the Visa
    # Code; the ICAO/ISO/IEC 19794-5 band is used.
    _spec(
        id="schengen-visa",
        name="Schengen visa",
        country="EU",
        width_mm=35,
        height_mm=45,
        dpi=600,
        head=_band(32, 36, of_mm=45),
        eye=_ISO_19794_5_EYES,
        backgrounds=("white", "light-grey", "off-white"),
        source="EU Visa Code, Reg. (EC) 810/2009 Art. 10(3)(c) (ICAO Doc 9303 photo standard)",
    ),
    # HM Passport Office, gov.uk "Photos for passports": printed photos 45 mm high x 35 mm wide,
    # crown to chin 29-34 mm, plain cream or light grey background (digital: plain light-coloured);
    # digital photos at least 600 x 750 px and 50 KB - 10 MB. No eye-line rule.
    _spec(
        id="uk-passport",
        name="UK passport",
        country="GB",
        width_mm=35,
        height_mm=45,
        dpi=600,
        head=_band(29, 34, of_mm=45),
        eye=None,
        backgrounds=("light-grey", "cream", "off-white"),
        max_kb=10 * 1024,
        source="HM Passport Office, gov.uk 'Photos for passports'",
    ),
    # Immigration, Refugees and Citizenship Canada, canada.ca "Passport photos" (Canadian
    # passports): 50 mm wide x 70 mm high; face 31-36 mm from chin to crown (natural top of head);
    # plain white or light-coloured background. No eye-line rule.
    _spec(
        id="ca-passport",
        name="Canadian passport",
        country="CA",
        width_mm=50,
        height_mm=70,
        dpi=600,
        head=_band(31, 36, of_mm=70),
        eye=None,
        backgrounds=("white", "off-white", "light-grey"),
        source="IRCC, canada.ca 'Passport photos' (Canadian passports)",
    ),
    # Australian Passport Office, passports.gov.au "Photo guidelines": 35-40 mm wide x 45-50 mm
    # high (35 x 45 used here); chin to crown 32-36 mm; plain white or light grey background.
    # No eye-line rule.
    _spec(
        id="au-passport",
        name="Australian passport",
        country="AU",
        width_mm=35,
        height_mm=45,
        dpi=600,
        head=_band(32, 36, of_mm=45),
        eye=None,
        backgrounds=("white", "light-grey"),
        source="Australian Passport Office, passports.gov.au 'Photo guidelines'",
    ),
    # Department of Internal Affairs, passports.govt.nz "Passport photos" and the DIA photo standard
    # (from 1 June 2005): 35 x 45 mm; head 70-80 % of the photo (32-36 mm); plain light-coloured
    # background, not white. Online uploads: JPEG 500 KB-10 MB, 900 x 1200 to 4500 x 6000 px, 3:4
    # aspect. We keep the 35:45 print geometry at 700 dpi (965 x 1240, above the 900 x 1200
    # minimum); an online upload must be cropped to 3:4. No eye-line rule.
    _spec(
        id="nz-passport",
        name="New Zealand passport",
        country="NZ",
        width_mm=35,
        height_mm=45,
        dpi=700,
        head=_band(32, 36, of_mm=45),
        eye=None,
        backgrounds=("light-grey", "off-white", "light-blue"),
        max_kb=10 * 1024,
        source="NZ Dept. of Internal Affairs, passports.govt.nz 'Passport photos' / DIA photo standard",
    ),
    # Bundesministerium des Innern / Bundesdruckerei "Fotomustertafel" and "Passbild-Schablone"
    # (biometric passport photo): 35 x 45 mm; face chin to crown 32-36 mm (70-80 %); plain light
    # background, neutral grey preferred; print at >= 600 dpi. The Schablone marks an eye zone;
    # the ISO/IEC 19794-5 band (50-70 % from the bottom) is used for it.
    _spec(
        id="de-passport",
        name="German passport / ID card (biometric)",
        country="DE",
        width_mm=35,
        height_mm=45,
        dpi=600,
        head=_band(32, 36, of_mm=45),
        eye=_ISO_19794_5_EYES,
        backgrounds=("light-grey", "white", "light-blue"),
        source="BMI / Bundesdruckerei 'Fotomustertafel' and 'Passbild-Schablone'",
    ),
    # ANTS, passeport.ants.gouv.fr "La photographie d'identité": 35 mm wide x 45 mm high; face
    # 32-36 mm from the bottom of the chin to the top of the skull (hair excluded); plain light
    # background (light blue, light grey); white is forbidden. No eye-line rule.
    _spec(
        id="fr-passport",
        name="French passport / ID card",
        country="FR",
        width_mm=35,
        height_mm=45,
        dpi=600,
        head=_band(32, 36, of_mm=45),
        eye=None,
        backgrounds=("light-grey", "light-blue"),
        source="ANTS, passeport.ants.gouv.fr 'La photographie d'identité'",
    ),
    # Ministry of Foreign Affairs of Japan, mofa.go.jp "パスポート申請用写真の規格" (旅券用提出写真に
    # ついてのお知らせ): 45 x 35 mm, crown to chin 32-36 mm, 2-6 mm margin above the head; plain
    # pale background. No eye-line rule.
    _spec(
        id="jp-passport",
        name="Japanese passport",
        country="JP",
        width_mm=35,
        height_mm=45,
        dpi=600,
        head=_band(32, 36, of_mm=45),
        eye=None,
        backgrounds=("white", "light-grey", "light-blue"),
        source="MOFA Japan, mofa.go.jp 'パスポート申請用写真の規格'",
    ),
    # Ministry of Foreign Affairs, Republic of Korea, passport.go.kr "여권사진 규격 안내":
    # 3.5 x 4.5 cm, crown to chin 3.2-3.6 cm, uniform white background. No eye-line rule.
    _spec(
        id="kr-passport",
        name="South Korean passport",
        country="KR",
        width_mm=35,
        height_mm=45,
        dpi=600,
        head=_band(32, 36, of_mm=45),
        eye=None,
        backgrounds=("white",),
        source="MOFA Korea, passport.go.kr '여권사진 규격 안내'",
    ),
    # Immigration & Checkpoints Authority, ica.gov.sg "Passport photo guidelines": 35 mm wide x
    # 45 mm high, plain white background; digital 400 x 514 px (exactly 35 x 45 mm at 290 dpi),
    # <= 2 MB. ICA gives no head-height number (it cites ISO/ICAO): loose band 0.60-0.80
    # (27-36 mm). No eye-line rule.
    _spec(
        id="sg-passport",
        name="Singapore passport",
        country="SG",
        width_mm=35,
        height_mm=45,
        dpi=290,
        head=(0.60, 0.80),
        eye=None,
        backgrounds=("white",),
        max_kb=2 * 1024,
        source="ICA Singapore, ica.gov.sg 'Passport photo guidelines'",
    ),
    # Ministry of External Affairs, Passport Seva "Photo Specifications" (Indian missions, e.g.
    # indianembassy.nl / indianembassyrabat.gov.in, point to passport.gov.in Photo-Spec-FINAL.pdf):
    # 2 x 2 in (51 x 51 mm); head 25-35 mm; plain white or off-white background. The eye
    # position is only "within the indicated area" of a template we could not read: no eye line.
    _spec(
        id="in-passport",
        name="Indian passport",
        country="IN",
        width_mm=TWO_INCH_MM,
        height_mm=TWO_INCH_MM,
        dpi=300,
        head=(1 / 2, 1.375 / 2),  # 25-35 mm = 1 to 1 3/8 in of 2 in
        eye=None,
        backgrounds=("white", "off-white"),
        source="MEA India, Passport Seva 'Photo Specifications'",
    ),
    # Government of India, indianvisaonline.gov.in (e-Visa) photo specifications: JPEG, square,
    # 350 x 350 to 1000 x 1000 px, 10 KB minimum, maximum 1 MB (older pages: 300 KB; the lower
    # cap is kept); head 1 to 1 3/8 in (25-35 mm); eye height 1 1/8 to 1 3/8 in from the bottom;
    # plain light-coloured or white background. Paper visa photos are 2 x 2 in.
    _spec(
        id="in-visa",
        name="Indian visa",
        country="IN",
        width_mm=TWO_INCH_MM,
        height_mm=TWO_INCH_MM,
        dpi=300,
        head=(1 / 2, 1.375 / 2),
        eye=(1.125 / 2, 1.375 / 2),
        backgrounds=("white", "off-white"),
        max_kb=300,
        source="Govt. of India, indianvisaonline.gov.in e-Visa photo specifications",
    ),
    # PRC consular service (Chinese embassies/consulates, cs.mfa.gov.cn) "护照、旅行证照片要求":
    # 33 mm wide x 48 mm high; head width 15-22 mm; head height (chin to crown) 28-33 mm; crown
    # 3-5 mm below the top edge; >= 7 mm from chin to bottom edge; white background. (The
    # mainland entry-exit photo rule gives head width 21-24 mm, same 28-33 mm height.) No eye line.
    _spec(
        id="cn-passport",
        name="Chinese passport",
        country="CN",
        width_mm=33,
        height_mm=48,
        dpi=300,
        head=_band(28, 33, of_mm=48),
        eye=None,
        backgrounds=("white",),
        source="PRC consular service (cs.mfa.gov.cn) '护照、旅行证照片要求'",
    ),
    # PRC embassies / Chinese Visa Application Service Center "Photo requirements" (from 15 Dec
    # 2016, e.g. fmcoprc.gov.hk "Photo of visa application must satisfy requirements"): 33 x 48 mm;
    # head width 15-22 mm; head height 28-33 mm; crown 3-5 mm below the top; >= 7 mm below the
    # chin; white or near-white background. Online (COVA) uploads: 354-420 px wide x 472-560 px
    # high, JPEG 40-120 KB; 33 x 48 mm at 290 dpi is 377 x 548 px, inside that window. No eye line.
    _spec(
        id="cn-visa",
        name="Chinese visa",
        country="CN",
        width_mm=33,
        height_mm=48,
        dpi=290,
        head=_band(28, 33, of_mm=48),
        eye=None,
        backgrounds=("white", "off-white"),
        max_kb=120,
        source="PRC embassies / Chinese Visa Application Service Center 'Photo requirements' (2016)",
    ),
    # Ministry of Public Security, GA 461-2004 "居民身份证制证用数字相片技术要求": 358 x 441 px at
    # 350 dpi (26 x 32 mm), 24-bit RGB, JPEG quality 70 (files typically 14-20 KB, not a cap);
    # pure white background; face width 207 +/- 14 px (about 15 +/- 1 mm); hairline top 7-21 px
    # below the top edge; eyes at least 207 px above the bottom edge; head about 2/3 of the photo.
    # GA 461 gives no chin-to-crown range: loose band 0.62-0.78 (about 20-25 mm) around its 2/3.
    # Eye line: min 207/441 is GA 461's; the max 0.72 is ours (GA 461 sets none).
    _spec(
        id="cn-id-card",
        name="China resident ID card",
        country="CN",
        width_mm=26,
        height_mm=32,
        dpi=350,
        head=(0.62, 0.78),
        eye=(round(207 / 441, 4), 0.72),
        backgrounds=("white",),
        source="MPS China, GA 461-2004 '居民身份证制证用数字相片技术要求'",
    ),
    # Chinese 1-inch (一寸) photo: 25 x 35 mm, 295 x 413 px at 300 dpi. A trade convention (photo
    # studios, exam and registration sites), not a national standard: no official head rule, loose
    # band 0.58-0.75 around the customary "head about 2/3 of the photo". No eye line.
    _spec(
        id="cn-1inch",
        name="Chinese 1-inch photo",
        country="CN",
        width_mm=25,
        height_mm=35,
        dpi=300,
        head=(0.58, 0.75),
        eye=None,
        backgrounds=("white", "blue", "red"),
        source="Chinese trade convention for 一寸 photos (no official standard)",
    ),
    # Chinese 2-inch (二寸) photo: 35 x 49 mm, 413 x 579 px at 300 dpi (chosen here; the 'large
    # 2-inch' 大二寸 of 35 x 53 mm / 413 x 626 px also circulates). A trade convention: no official
    # head rule, same loose band 0.58-0.75. No eye line.
    _spec(
        id="cn-2inch",
        name="Chinese 2-inch photo",
        country="CN",
        width_mm=35,
        height_mm=49,
        dpi=300,
        head=(0.58, 0.75),
        eye=None,
        backgrounds=("white", "blue", "red"),
        source="Chinese trade convention for 二寸 photos (no official standard)",
    ),
    # Résumé / CV photo: no authority. 35 x 45 mm at 300 dpi (413 x 531 px), the common European
    # CV size (for the Chinese 1-inch use cn-1inch). Loose band 0.50-0.70: more shoulders than a
    # passport photo. No eye line.
    _spec(
        id="resume",
        name="Résumé / CV photo",
        country="INT",
        width_mm=35,
        height_mm=45,
        dpi=300,
        head=(0.50, 0.70),
        eye=None,
        backgrounds=("light-grey", "white", "off-white", "light-blue"),
        source="No authority: common CV photo format (35 x 45 mm), loose head band",
    ),
)

SPECS: dict[str, PhotoSpec] = {spec.id: spec for spec in _SPEC_LIST}
if len(SPECS) != len(_SPEC_LIST):  # pragma: no cover - guards the table above
    raise RuntimeError("duplicate photo spec id in app.specs")


def get_spec(spec_id: str) -> PhotoSpec:
    """The spec with this id (case-insensitive, '_' accepted for '-').

    Raises KeyError listing the known ids; the requested value is not echoed back.
    """
    if isinstance(spec_id, str):
        key = spec_id.strip().lower().replace("_", "-")
        spec = SPECS.get(key)
        if spec is not None:
            return spec
    raise KeyError(f"unknown photo spec; known specs: {', '.join(SPECS)}")


def _normalise_colour_name(text: str) -> str:
    name = re.sub(r"[\s_-]+", "-", text.strip().lower()).strip("-")
    return name.replace("gray", "grey")


def _preview(value: str, limit: int = 32) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def parse_colour(value: str) -> RGB:
    """An (r, g, b) tuple from a colour name or a hex code.

    Accepts the names in BACKGROUND_COLOURS (any case; '-', '_' or spaces between words;
    "gray" for "grey") and '#rrggbb' or '#rgb'. Anything else raises ValueError.
    """
    if not isinstance(value, str):
        raise ValueError("colour must be a string: a colour name or a hex code like #rrggbb or #rgb")
    text = value.strip()
    if _HEX_RE.fullmatch(text):
        digits = text[1:]
        if len(digits) == 3:
            digits = "".join(ch * 2 for ch in digits)
        return (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))
    name = _normalise_colour_name(text)
    if name in BACKGROUND_COLOURS:
        return BACKGROUND_COLOURS[name]
    shown = "an empty value" if not text else _preview(text)
    raise ValueError(
        f"unknown colour {shown}: use one of {', '.join(BACKGROUND_COLOURS)} or a hex code like #rrggbb or #rgb"
    )


def _positive_size(label: str, value: object) -> float:
    if not (_is_number(value) and value > 0):  # type: ignore[operator]
        raise ValueError(f"{label} must be a number greater than 0")
    return float(value)  # type: ignore[arg-type]


def _whole_pixels(label: str, value: object) -> int:
    if isinstance(value, float) and _is_number(value) and value.is_integer():
        value = int(value)
    if not (isinstance(value, int) and not isinstance(value, bool)):
        raise ValueError(f"{label} must be a whole number of pixels")
    if value <= 0:
        raise ValueError(f"{label} must be greater than 0")
    return value


def custom_spec(
    *,
    width_mm: float | None = None,
    height_mm: float | None = None,
    dpi: int = 300,
    width_px: int | None = None,
    height_px: int | None = None,
    head_ratio: tuple[float, float] = (0.6, 0.7),
) -> PhotoSpec:
    """A spec for a user-chosen size: either width_mm + height_mm (at `dpi`) or width_px + height_px.

    With millimetres the pixel size is round(mm / 25.4 * dpi); with pixels the print size is
    px / dpi inches. If both are given, both are used as given. Validation: sizes > 0, dpi an
    integer in [72, 1200], at most 4000 px per side, head_ratio (min, max) with
    0.2 < min < max < 0.9. Raises ValueError with a message fit to show a user.
    """
    if isinstance(dpi, float) and _is_number(dpi) and dpi.is_integer():
        dpi = int(dpi)
    if not (isinstance(dpi, int) and not isinstance(dpi, bool)) or not MIN_DPI <= dpi <= MAX_DPI:
        raise ValueError(f"dpi must be a whole number between {MIN_DPI} and {MAX_DPI}")

    have_mm = width_mm is not None or height_mm is not None
    have_px = width_px is not None or height_px is not None
    if not have_mm and not have_px:
        raise ValueError("give either width_mm and height_mm (with dpi) or width_px and height_px")
    if have_mm and (width_mm is None or height_mm is None):
        raise ValueError("width_mm and height_mm must be given together")
    if have_px and (width_px is None or height_px is None):
        raise ValueError("width_px and height_px must be given together")

    w_px = h_px = 0
    w_mm = h_mm = 0.0
    if have_px:
        w_px = _whole_pixels("width_px", width_px)
        h_px = _whole_pixels("height_px", height_px)
    if have_mm:
        w_mm = _positive_size("width_mm", width_mm)
        h_mm = _positive_size("height_mm", height_mm)
    if not have_px:
        w_px, h_px = mm_to_px(w_mm, dpi), mm_to_px(h_mm, dpi)
        if w_px < 1 or h_px < 1:
            raise ValueError("the size is under one pixel at this dpi; use larger millimetres or a higher dpi")
    if not have_mm:
        w_mm = round(w_px / dpi * MM_PER_INCH, 2)
        h_mm = round(h_px / dpi * MM_PER_INCH, 2)
    if w_px > MAX_SIDE_PX or h_px > MAX_SIDE_PX:
        raise ValueError(
            f"the photo would be {w_px} x {h_px} px; at most {MAX_SIDE_PX} px per side (lower the size or the dpi)"
        )

    if isinstance(head_ratio, list):
        head_ratio = tuple(head_ratio)  # type: ignore[assignment]
    if not (isinstance(head_ratio, tuple) and len(head_ratio) == 2 and all(_is_number(v) for v in head_ratio)):
        raise ValueError("head_ratio must be a pair of numbers (min, max)")
    low, high = float(head_ratio[0]), float(head_ratio[1])
    lo_limit, hi_limit = HEAD_RATIO_LIMITS
    if not lo_limit < low < high < hi_limit:
        raise ValueError(
            f"head_ratio must satisfy {lo_limit} < min < max < {hi_limit} (fractions of the photo height)"
        )

    return PhotoSpec(
        id="custom",
        name=f"Custom {w_mm:g} x {h_mm:g} mm",
        country="XX",
        width_mm=w_mm,
        height_mm=h_mm,
        dpi=dpi,
        width_px=w_px,
        height_px=h_px,
        head_height=(low, high),
        eye_line=None,
        backgrounds=tuple(BACKGROUND_COLOURS),
        max_kb=None,
        source="custom size chosen by the user",
    )
