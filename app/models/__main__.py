"""`python -m app.models fetch|ensure|list`: install and check model files in MODEL_HOME."""

from __future__ import annotations

import argparse
import logging
import sys

from ..config import ConfigError, Settings
from .fetch import FetchError, fetch, inspect
from .manifest import DEFAULT_FETCH, MANIFEST, get_spec


def _names(requested: list[str], settings: Settings) -> list[str]:
    names = requested or list(dict.fromkeys([*DEFAULT_FETCH, *settings.models]))
    for name in names:
        get_spec(name)  # KeyError with the known names
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.models", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    fetch_parser = sub.add_parser("fetch", help="download, verify (sha256) and install model files")
    fetch_parser.add_argument("names", nargs="*", help=f"models to fetch (default: {', '.join(DEFAULT_FETCH)} and MODELS)")
    fetch_parser.add_argument("--force", action="store_true", help="download again even if the file is right")
    fetch_parser.add_argument("--quiet", action="store_true", help="no progress bars")
    ensure_parser = sub.add_parser("ensure", help="fetch only the models that are missing or the wrong size (no hashing)")
    ensure_parser.add_argument("names", nargs="*", help="models to ensure (default: MODELS)")
    list_parser = sub.add_parser("list", help="show the manifest and the state of each file")
    list_parser.add_argument("--verify", action="store_true", help="also check each present file's sha256")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    log = logging.getLogger("app.models")

    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        return 2
    home = settings.model_home
    try:
        if args.command == "list":
            for spec in MANIFEST.values():
                state = inspect(spec, home, verify_hash=args.verify)
                print(f"{spec.name:12} {spec.role.value:15} {spec.size / 1e6:8.1f} MB  {state.status:26} {spec.licence}")  # noqa: T201 (CLI output)
            return 0
        names = args.names or (list(settings.models) if args.command == "ensure" else _names([], settings))
        names = _names(names, settings)
        for name in names:
            spec = get_spec(name)
            if args.command == "ensure" and inspect(spec, home, verify_hash=False).ok:
                continue
            log.info("%s: %s; licence: %s", name, spec.description, spec.licence)
            fetch(spec, home, force=getattr(args, "force", False), progress=not getattr(args, "quiet", False))
    except KeyError as exc:
        log.error("%s", exc.args[0])
        return 2
    except FetchError as exc:
        log.error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
