"""What nginx in front adds to one request, in ms, measured in one run.

    .venv/bin/python -m bench.front [--requests 40] [--model u2netp]

Starts the server as start.sh does (nginx in front of gunicorn, 1 worker) and sends the same
requests in turn through nginx's port and straight to the worker's own unix socket (what nginx
connects to), a new connection each, as a client without keep-alive does: `GET /healthz` (the
fixed cost) and a cut-out of the astronaut (a 512 x 512 JPEG in, a PNG out). Prints the median of
each and the difference.
"""

from __future__ import annotations

import argparse
import http.client
import socket
import statistics
import time
from pathlib import Path

from tests.support.harness import Server
from tests.support.photos import portrait_photo

BOUNDARY = "pilotlight-bench"


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float = 120.0) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def multipart(photo: bytes) -> bytes:
    return (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\n'
            f"Content-Type: image/jpeg\r\n\r\n").encode() + photo + f"\r\n--{BOUNDARY}--\r\n".encode()


def timed(connection: http.client.HTTPConnection, method: str, path: str, body: bytes | None) -> float:
    headers = {"Host": "localhost"}
    if body is not None:
        headers["Content-Type"] = f"multipart/form-data; boundary={BOUNDARY}"
    started = time.perf_counter()
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    response.read()
    elapsed = time.perf_counter() - started
    connection.close()
    if response.status != 200:
        raise RuntimeError(f"{method} {path}: {response.status}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--model", default="u2netp")
    parser.add_argument("--log", type=Path, default=Path("/tmp/pilotlight-bench-front.log"))
    args = parser.parse_args()
    env = {"WORKERS": "1", "MODELS": f"{args.model},centerface", "SEGMENTATION_MODEL": args.model, "WARMUP_REQUESTS": "1",
           "RELEASE_MEMORY": "off"}
    body = multipart(portrait_photo().jpeg)
    with Server(env=env, log_path=args.log) as server:
        server.wait_ready(timeout=240)
        sockets = next(Path(part).parent for part in _nginx_upstreams(server))
        worker = str(sockets / "worker-0.sock")
        rows = []
        for label, method, path, payload in (("GET /healthz", "GET", "/healthz", None),
                                             ("cut-out", "POST", "/api/v1/remove-background", body)):
            front, direct = [], []
            for _ in range(args.requests):  # in turn, so both see the same machine
                front.append(timed(http.client.HTTPConnection("127.0.0.1", server.port, timeout=120), method, path, payload))
                direct.append(timed(UnixConnection(worker), method, path, payload))
            rows.append((label, statistics.median(front), statistics.median(direct)))
    print(f"{'request':14s} {'through nginx':>14s} {'to the worker':>14s} {'nginx adds':>11s}")  # noqa: T201
    for label, front_s, direct_s in rows:
        print(f"{label:14s} {front_s * 1000:11.2f} ms {direct_s * 1000:11.2f} ms {(front_s - direct_s) * 1000:8.2f} ms")  # noqa: T201


def _nginx_upstreams(server: Server) -> list[str]:
    """The worker sockets named in the running nginx's configuration."""
    import re

    for pid in server.front():
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        match = re.search(r"-c (\S+nginx\.conf)", command)
        if match:
            return re.findall(r"server unix:(\S+\.sock)", Path(match.group(1)).read_text())
    raise RuntimeError("no nginx found beside the server")


if __name__ == "__main__":
    main()
