"""The fewest client addresses that keep another client from being served, on the Kubernetes base's
limits (its ConfigMap as kustomize renders it; small models, since no model runs for a held place).

    .venv/bin/python -m bench.lockout [--quick]

Starts the server as start.sh does (nginx in front of gunicorn), then adds attacker addresses one
at a time (loopback addresses bound as distinct clients, 127.0.0.2 ...), each holding as many POSTs
as the server lets it: slow uploads (1 KiB every 2 s of a declared 8 MiB upload; every third
address instead asks for large cut-outs and never reads them). After each address, a victim address
asks for one small cut-out; the first address count at which it is refused is the figure. It runs
once with the per-client POST cap off (MAX_POSTS_PER_CLIENT=0: only MAX_CONNECTIONS_PER_IP, as
before the cap) and once as the base sets it, and prints both beside the server's POST places.
Writes bench/results/front-lockout.md (docs/BENCHMARKS.md shows it).
"""

from __future__ import annotations

import argparse
import time

from tests.support import kube
from tests.support.harness import Server, free_port
from tests.support.hostile import big_photo
from tests.support.lockout import Holders, address, served
from tests.support.photos import portrait_photo

from .common import RESULTS, WORK, model_home

SMALL = {"MODELS": "u2netp,centerface", "SEGMENTATION_MODEL": "u2netp", "PILOTLIGHT_NO_SETUP": "1"}
PRINTED: list[str] = []


def out(line: str = "") -> None:
    PRINTED.append(line)
    print(line, flush=True)  # noqa: T201


def fewest_addresses(env: dict[str, str], *, each: int, most: int, photo: bytes, log_name: str) -> tuple[int | None, int, str]:
    """(the first address count at which the victim is refused, or None within `most`; POSTs held
    then; the victim's refusal, its status and code)."""
    log = WORK / "lockout" / f"{log_name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with Server(env={**env, "MODEL_HOME": str(model_home())}, log_path=log) as server:
        server.wait_ready(timeout=240)
        holders = Holders(server.port)
        reader_photo = big_photo(1600)
        try:
            for count in range(1, most + 1):
                source = address(count - 1)
                if count % 3 == 0:
                    holders.read_never(source, each, reader_photo, timeout=60)
                else:
                    holders.upload(source, each)
                status, answer = served(server.port, photo)
                if status != 200:
                    code = answer.split(b'"code": "', 1)[1].split(b'"', 1)[0].decode() if b'"code": "' in answer else "?"
                    return count, len(holders.uploads) + len(holders.readers), f"{status} {code}"
            return None, len(holders.uploads) + len(holders.readers), "served"
        finally:
            holders.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="print only; results stay in $BENCH_WORK")
    args = parser.parse_args()
    from app.config import Settings

    base = {**kube.configmap_env(kube.base()), **SMALL}
    base.pop("FRONT_TEMP_DIR", None)  # the pod's volume; here the launcher's own folder
    base["MANAGEMENT_PORT"] = str(free_port())  # the pod's 9000 may be taken on this machine
    photo = portrait_photo().jpeg
    out("| per-client POST cap | POST places (TEMP_BUDGET_MB) | each address holds | addresses that lock everyone else out | POSTs held then | the victim got |")
    out("|---|---|---|---|---|---|")
    for label, cap in (("off (before)", "0"), ("as the base sets it", base.get("MAX_POSTS_PER_CLIENT", ""))):
        env = {**base, "MAX_POSTS_PER_CLIENT": cap}
        settings = Settings.from_env(env)
        places = settings.max_posts_in_progress or 0
        each = min(settings.posts_per_client or settings.max_connections_per_ip, settings.max_connections_per_ip)
        started = time.monotonic()
        found, held, refusal = fewest_addresses(env, each=each, most=places + 2, photo=photo, log_name=f"cap-{cap or 'default'}")
        out(f"| {label}: {settings.posts_per_client or 'none'} | {places} | {each} | {found if found else f'more than {places + 2}'} "
            f"| {held} | {refusal} |")
        print(f"  ({time.monotonic() - started:.0f} s)", flush=True)  # noqa: T201
    settings = Settings.from_env(base)
    out()
    out(f"On the base's limits a lockout takes at least POST places / 2 = {settings.max_posts_in_progress / 2:g} addresses "
        f"(the property of issue 42); the cap makes it {settings.lockout_addresses}.")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = "\n".join([f"<!-- python -m bench.lockout, {when} -->", *PRINTED]) + "\n"
    target = (WORK if args.quick else RESULTS) / "front-lockout.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    if not args.quick:
        from .report import write

        write(RESULTS / "cpu.json")


if __name__ == "__main__":
    main()
