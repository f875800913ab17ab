"""The walk of one ID photo request, counted by a tool: which files of app/ it enters, and how often
it comes back to one it has already left (issue 53).

One POST /api/v1/idphoto (the Flask test client, the default models, one corpus portrait, us-passport)
is traced with `sys.setprofile`. A file is *entered* when a function in it is called from a function
in another file. Two readings:

* `steps`: what a reader follows from the route through the chain: calls made by the route's file
  and the chain's (app/api/idphoto.py, app/pipelines/idphoto.py), one level into what they call;
* `pipeline`: calls made by the route's file and the whole pipeline layer (app/api/idphoto.py,
  app/pipelines/*), one level into whatever they call;
* `all`: calls between any two files of app/, at any depth.

The walk is the entered files in order, consecutive entries to one file counted once; `files` is
how many distinct files it holds, `returns` how many entries go to a file already entered before.
Entries to the infrastructure every request shares (settings, errors, timings, the specs' data,
the service, the form and the response: INFRASTRUCTURE) are not on the way from the pixels to the
bytes and the report, and are left out.

    python -m bench.idphoto_walk [portrait] [spec]
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app") + "/"
INFRASTRUCTURE = ("config.py", "errors.py", "observability.py", "timings.py", "specs/", "cors.py", "native_threads.py",
                  "models/manifest.py", "assets.py", "service.py", "warmup.py", "api/forms.py", "serving/", "auth.py")
READERS = {"steps": ("api/idphoto.py", "pipelines/idphoto.py"), "pipeline": ("api/idphoto.py", "pipelines/")}


def count(walk: list[str]) -> tuple[int, int, list[str]]:
    collapsed: list[str] = []
    for name in walk:
        if not collapsed or collapsed[-1] != name:
            collapsed.append(name)
    seen: set[str] = set()
    returns = 0
    for name in collapsed:
        returns += name in seen
        seen.add(name)
    return len(seen), returns, collapsed


def trace(client: object, form: dict) -> dict[str, list[str]]:
    walks: dict[str, list[str]] = {"steps": [], "pipeline": [], "all": []}
    started = [False]

    def profile(frame, event, _arg):  # noqa: ANN001
        if event != "call":
            return
        callee = frame.f_code.co_filename
        if not callee.startswith(APP):
            return
        name = callee[len(APP):]
        if name == "api/idphoto.py" and frame.f_code.co_name in ("idphoto",):
            started[0] = True
        if not started[0]:
            return
        back = frame.f_back
        while back is not None and not back.f_code.co_filename.startswith(APP):
            back = back.f_back  # through numpy, flask and the standard library to the app's caller
        caller = None if back is None else back.f_code.co_filename[len(APP):]
        if caller == name or name.startswith(INFRASTRUCTURE):
            return
        walks["all"].append(name)
        for reading, callers in READERS.items():
            if caller is None or caller.startswith(callers):
                walks[reading].append(name)

    sys.setprofile(profile)
    try:
        response = client.post("/api/v1/idphoto", data=form)  # type: ignore[attr-defined]
    finally:
        sys.setprofile(None)
    assert response.status_code == 200, response.data[:300]
    return walks


def main() -> None:
    from app import create_app
    from app.config import Settings
    from app.models.registry import Registry
    from app.service import Service
    from tests.support.corpus import default_dir

    portrait = sys.argv[1] if len(sys.argv) > 1 else "obama.jpg"
    spec = sys.argv[2] if len(sys.argv) > 2 else "us-passport"
    app = create_app(Settings.from_env(), Registry())
    Service.of(app).load()
    app.config["TESTING"] = True
    client = app.test_client()
    data = (default_dir() / portrait).read_bytes()
    client.post("/api/v1/idphoto", data={"image": (io.BytesIO(data), portrait), "spec": spec})  # warm
    walks = trace(client, {"image": (io.BytesIO(data), portrait), "spec": spec})
    for reading, walk in walks.items():
        files, returns, collapsed = count(walk)
        print(f"{reading}: {files} files, {returns} returns")
        print("  " + " > ".join(collapsed))


if __name__ == "__main__":
    main()
