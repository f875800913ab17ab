"""nginx in front of gunicorn: its configuration, rendered from `Settings` (pure), and where each
worker listens.

nginx owns the clients (gunicorn's deployment guide): it reads every request whole before a worker
sees it, buffers every answer so a slow reader holds nginx's memory or a temporary file and never a
worker thread, and enforces the client limits (HEADER_TIMEOUT, BODY_TIMEOUT, SEND_TIMEOUT,
MAX_UPLOAD_MB, MAX_CONNECTIONS_PER_IP, WORKER_CONNECTIONS, MAX_REQUESTS_IN_PROGRESS within FRONT_MEMORY_MB:
app/front_budget.py). gunicorn owns the processes: every warm
worker listens on a unix socket of its own (`worker_socket`, bound by the `post_worker_init` hook
once its warm-up is done), so nginx chooses the worker, deterministically:

- inference (every POST) goes to an idle worker when there is one, the keepers first (the workers in
  slots 0 .. KEEP_MEMORY_WORKERS-1, which keep their working memory when idle), and once every
  worker is busy to the one with the fewest requests queued (`inference_upstreams`);
- everything else (probes, the page, its files) goes to the workers in turn;
- a worker that is not warm (starting, or replaced after a crash) has no socket: nginx passes the
  request to the next worker before sending it, and answers `503 unavailable` when none is warm.

nginx's own refusals carry the JSON error shape of the API the request was for (`front_errors`,
`API_SHAPES`): rembg's `detail` on its route, HivisionIDPhotos' `status: false` on its routes, the
service's error object elsewhere. With API_KEYS, a request bearing a valid key is counted under the
key (`keyed_clients`), its POSTs against the key's own share; without one, under its address.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2

from .. import front_budget as budget
from ..assets import SECURITY_HEADERS, STATIC_URL, ServedFile, asset_version
from ..config import ConfigError, ReleaseMemory, Settings
from .probes import probe_socket

TEMPLATES = Path(__file__).with_name("templates")
KEEPER_WEIGHT = 1_000_000  # smooth weighted round-robin: a non-keeper wins one tie in a million
NGINX_LEVELS = {"debug": "info", "info": "warn", "warning": "warn", "error": "error", "critical": "crit"}


@dataclass(frozen=True)
class Upstream:
    """One worker as nginx sees it: its socket, and how requests reach it."""

    socket: Path
    max_conns: int | None = None  # requests in progress at once (None: no cap)
    backup: bool = False  # used only while every other (non-backup) worker is busy
    weight: int = 1  # breaks ties between idle workers


@dataclass(frozen=True)
class FrontError:
    """A refusal nginx makes itself: `status` is nginx's code, `answer` the one the client gets."""

    status: int
    answer: int
    code: str
    message: str
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def body(self) -> str:
        return self.body_for("api")

    def body_for(self, shape: str) -> str:
        """The JSON body in `shape` (one of API_SHAPES), as that API's own routes answer an error
        (app/api/rembg_server.py, app/api/hivision.py): the peer's fields first, our code beside."""
        ours = {"code": self.code, "message": self.message}
        body: dict[str, object] = {
            "api": {"error": ours},
            "rembg": {"detail": self.message, "error": ours},
            "hivision": {"status": False, "error": self.message, "code": self.code},
        }[shape]
        text = json.dumps(body)
        if "'" in text or "\\" in text:  # the body sits in a single-quoted nginx string
            raise ValueError(f"front error {self.code}: no quotes or backslashes in its message")
        return text


API_SHAPES = ("api", "rembg", "hivision")
"""The error shapes nginx answers in, chosen by the request's path (`$front_api`): rembg's route,
HivisionIDPhotos' routes, and everything else (the service's own)."""
REMBG_ROUTES = ("/api/remove",)
HIVISION_ROUTES = ("/human_matting", "/idphoto", "/idphoto_crop", "/add_background", "/generate_layout_photos",
                   "/watermark", "/set_kb")
"""The drop-in blueprints' paths (tests/test_front_shapes.py holds them to the app's url_map)."""


ALLOWED_METHODS = ("GET", "HEAD", "POST", "OPTIONS")


def front_errors(settings: Settings) -> tuple[FrontError, ...]:
    """nginx's own refusals. A message written `$name` is the nginx variable of that name: the
    limits that answer 429 say which of them a request met (`limit_messages`)."""
    return (
        FrontError(400, 400, "bad_request", "The request is not valid HTTP/1.1."),
        FrontError(405, 405, "method_not_allowed", f"This server answers {', '.join(ALLOWED_METHODS)} only.",
                   (("Allow", ", ".join(ALLOWED_METHODS)),)),
        FrontError(BODY_NOT_ALLOWED, 413, "body_not_allowed",
                   "Only a POST may carry a body here: send GET, HEAD and OPTIONS without one."),
        FrontError(404, 404, "not_found", "Nothing is served at this path."),
        FrontError(408, 408, "request_timeout", "The request did not arrive in time."),
        FrontError(413, 413, "payload_too_large", f"The upload is larger than the {settings.max_upload_mb:g} MB limit."),
        FrontError(414, 414, "uri_too_long", "The request line is too long."),
        FrontError(494, 431, "headers_too_large", "The request headers are too large."),
        FrontError(429, 429, "too_many_connections", "$too_many_message", (("Retry-After", "1"),)),
        FrontError(RATE_LIMITED, 429, "rate_limited", "$rate_message", (("Retry-After", "$rate_retry_after"),)),
        FrontError(500, 500, "internal_error", "The server failed to process this request."),
        FrontError(501, 501, "not_implemented", "This transfer encoding is not supported."),
        FrontError(502, 503, "unavailable", "No worker can take this request right now (starting or restarting); retry shortly.",
                   (("Retry-After", "2"),)),
        FrontError(504, 504, "gateway_timeout", "The request took longer than the server allows."),
        FrontError(505, 505, "http_version_not_supported", "This server speaks HTTP/1.0 and HTTP/1.1."),
    )


@dataclass(frozen=True)
class LimitMessages:
    """What a 429 says, by method: a POST and any other request meet different limits."""

    too_many_post: str
    too_many_other: str
    too_many_key_post: str  # SHARE stands for the key's share ($key_share)
    too_many_key_other: str
    rate_post: str
    rate_other: str
    retry_post: int
    retry_other: int


def limit_messages(settings: Settings) -> LimitMessages:
    each = settings.max_connections_per_ip
    # every request a worker answers counts against the server's places too (nginx cannot tell which
    # limit refused one: each message names every limit the request met)
    everyone = f"{budget.requests_in_progress(settings)} requests of any kind on this server (MAX_REQUESTS_IN_PROGRESS)"
    retry = ". Retry once an earlier request has been answered."
    others = "Too many requests in progress: " + (f"at most {each} from this address (MAX_CONNECTIONS_PER_IP), " if each else "at most ")
    posts, server = settings.posts_per_client, settings.max_posts_in_progress
    parts = []
    if posts is not None:
        parts.append(f"at most {posts} POSTs from one address (MAX_POSTS_PER_CLIENT)")
    if each:
        parts.append(f"{each} requests of any kind from one address (MAX_CONNECTIONS_PER_IP)")
    if server is not None:
        parts.append(f"{server} POSTs on this server (TEMP_BUDGET_MB)")
    post = "Too many POSTs in progress: " + ", ".join([*parts, everyone]) + retry
    keyed = ["the share of this API key (SHARE: API_KEYS, MAX_POSTS_PER_KEY)"]
    if server is not None:
        keyed.append(f"{server} POSTs on this server (TEMP_BUDGET_MB)")
    key_post = "Too many POSTs in progress: " + ", ".join([*keyed, everyone]) + retry
    return LimitMessages(
        too_many_post=post,
        too_many_other=others + everyone + retry,
        too_many_key_post=key_post,
        too_many_key_other=keyed_message(others + everyone + retry),
        rate_post=f"Too many POSTs from this address: the limit is {settings.rate_limit} a minute, "
                  f"{settings.rate_burst} more at once.",
        rate_other=f"Too many requests from this address: the limit is {settings.get_rate_limit} GET, HEAD and "
                   f"OPTIONS requests a minute, {settings.get_rate_burst} more at once"
                   + ("." if settings.management_port else " (probes are never counted)."),
        retry_post=retry_after(settings.rate_limit),
        retry_other=retry_after(settings.get_rate_limit),
    )


def keyed_message(message: str) -> str:
    """A per-client limit's message for a request counted under its API key."""
    return message.replace("from this address", "with this API key")


@dataclass(frozen=True)
class KeyedClient:
    """One of API_KEYS in nginx's map: `pattern` matches the key alone (a regex: nginx's exact
    map entries ignore case, keys do not), `name` is what it is counted and logged as."""

    name: str
    pattern: str
    posts: int | None


def keyed_clients(settings: Settings) -> list[KeyedClient]:
    """API_KEYS as nginx counts them (Settings.keyed_clients): a key's characters (A-Z a-z 0-9 . _
    ~ + / = -) stand literally in a regex once `.` and `+` are escaped."""
    return [KeyedClient(share.name, re.sub(r"([.+])", r"\\\1", share.key), share.posts) for share in settings.keyed_clients]


def key_groups(clients: list[KeyedClient]) -> list[tuple[int, list[str]]]:
    """(share, the names of the keys with it), by share: one limit_conn zone per share (its number
    is fixed per zone); a key without a cap (MAX_POSTS_PER_KEY=0) is in none."""
    shares = sorted({client.posts for client in clients if client.posts})
    return [(posts, [client.name for client in clients if client.posts == posts]) for posts in shares]


RATE_LIMITED = 430  # limit_req's own status inside nginx, told from limit_conn's 429; clients get 429
BODY_NOT_ALLOWED = 433  # a body on a request other than POST, refused before it is read; clients get 413
PROBES = ("/healthz", "/readyz")  # a GET or HEAD of one is never limited: it counts under no client


def retry_after(per_minute: int) -> int:
    """Whole seconds until the rate limit lets one more request through."""
    return max(1, math.ceil(60 / per_minute)) if per_minute else 1


HEXTET = "[0-9a-f]{1,4}"


def client_buckets() -> list[tuple[str, str]]:
    """nginx `map` rules (regex, key) from `$remote_addr` to the bucket the per-client limits count:
    an IPv6 client's /64 (one subscriber's whole network: a single host may take any address in
    it), written as its first four hextets in full; an IPv4-mapped address as its IPv4 address.
    IPv4 addresses fall through to the map's default, the address itself.

    nginx writes IPv6 addresses as RFC 5952 says (lower case, no leading zeros, the longest run of
    two or more zero hextets as `::`), so one /64 has several spellings, and a rule per place the
    `::` can take within the first four hextets brings them to one key."""
    rules = [
        (r"^::ffff:(\d+\.\d+\.\d+\.\d+)$", "$1"),
        (r"^::\d+\.\d+\.\d+\.\d+$", "0:0:0:0"),  # IPv4-compatible (::/96), which nginx writes so
        (f"^({HEXTET}:{HEXTET}:{HEXTET}:{HEXTET}):", "$1"),
    ]
    for before in range(4):  # hextets written before the `::`
        head = ":".join([f"({HEXTET})"] * before)
        keys = [f"${index + 1}" for index in range(before)]
        # up to four hextets after the `::`: the zeros fill the rest of the first four
        tail = f"(?:{HEXTET}(?::{HEXTET}){{0,3}})?"
        rules.append((f"^{head}::{tail}$", ":".join(keys + ["0"] * (4 - before))))
        for after in range(5, 8 - before):  # more: the first of them reach into the first four
            zeros = 8 - before - after
            shown = 4 - before - zeros
            groups = [f"({HEXTET})"] * shown + [HEXTET] * (after - shown)
            rules.append((f"^{head}::{':'.join(groups)}$", ":".join(keys + ["0"] * zeros + [f"${before + i + 1}" for i in range(shown)])))
    return rules


_TOKEN = re.compile(r"[A-Za-z0-9._/:@%+=,\[\]-]+")


DOCUMENTATION_RANGES = tuple(ipaddress.ip_network(net) for net in
                             ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"))


def placeholder_proxies(settings: Settings) -> list[str]:
    """TRUSTED_PROXIES entries inside a documentation range (RFC 5737, 3849): the Kubernetes base's
    placeholder for the ingress controller's pods, left as it came."""
    found = []
    for entry in settings.trusted_proxies:
        network = ipaddress.ip_network(entry, strict=False)
        if any(network.version == doc.version and network.subnet_of(doc) for doc in DOCUMENTATION_RANGES):  # type: ignore[arg-type]
            found.append(entry)
    return found


def untrusted_proxies(settings: Settings) -> str | None:
    """Why the server must not start (REQUIRE_TRUSTED_PROXIES with TRUSTED_PROXIES empty or a
    placeholder: every client behind the proxy would be one), or None."""
    if not settings.require_trusted_proxies:
        return None
    placeholders = placeholder_proxies(settings)
    if settings.trusted_proxies and not placeholders:
        return None
    held = f"holds {', '.join(placeholders)}, a documentation placeholder" if placeholders else "is empty"
    return (f"TRUSTED_PROXIES {held}, and REQUIRE_TRUSTED_PROXIES=true (this server runs behind a proxy): set "
            "TRUSTED_PROXIES to the proxy's addresses (the ingress controller's pod range), or every client behind "
            "it counts as one (docs/deploy.md, behind an ingress)")


def nginx_token(value: object) -> str:
    """`value` as one unquoted nginx token, or ConfigError: a space, `;`, a brace, a quote, `$`, `#`
    or a newline in a pasted value would end the directive or add one."""
    text = str(value)
    if not _TOKEN.fullmatch(text):
        raise ConfigError(f"{text!r} cannot be written into nginx's configuration (a path or address with a space, "
                          "quote, brace, ';', '$' or '#'); choose one without (TMPDIR, HOST)")
    return text


def nginx_string(value: object, *, quotes: bool = False) -> str:
    """`value` for the inside of a double-quoted nginx string that may also stand inside a JSON
    string (a message): no double quote, backslash, `$` or newline; `quotes`: single quotes allowed
    (a header value such as the Content-Security-Policy), else refused too."""
    text = str(value)
    forbidden = set('"\\$\n\r') | (set() if quotes else {"'"})
    if forbidden & set(text):
        raise ValueError(f"{text!r} cannot stand in a quoted nginx string")
    return text


def worker_socket(folder: Path, slot: int) -> Path:
    """The unix socket the worker in `slot` (0 .. WORKERS-1) listens on once it is warm."""
    return folder / f"worker-{slot}.sock"


def inference_upstreams(folder: Path, *, workers: int, keepers: int) -> list[Upstream]:
    """Two tiers of the same workers. First every worker once, capped at one request (`max_conns=1`):
    an idle worker always takes a request before a busy one queues it, and among idle workers the
    keepers (slots 0 .. keepers-1) come first: nginx breaks least_conn's ties by weight, and a
    worker with one request is never compared, so the weight decides nothing else. Then, once every
    worker is busy, the same workers again (nginx `backup` servers), uncapped, by least requests: the
    queued requests spread evenly, and the admission gate refuses the one past QUEUE_DEPTH with a
    fast 503."""
    sockets = [worker_socket(folder, slot) for slot in range(workers)]
    idle = [Upstream(path, max_conns=1, weight=KEEPER_WEIGHT if slot < keepers else 1) for slot, path in enumerate(sockets)]
    return idle + [Upstream(path, backup=True) for path in sockets]


def listen_address(settings: Settings, *, port: int | None = None) -> str:
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    return f"{host}:{settings.port if port is None else port}"


def render(settings: Settings, *, run_dir: Path, sockets: Path, user: str | None, rlimit_nofile: int,
           temp_dir: Path | None = None, served: list[ServedFile] | None = None) -> str:
    """nginx.conf for `settings`. `run_dir`: nginx's pid (and its temporary files unless
    `temp_dir` names their folder: FRONT_TEMP_DIR's); `sockets`: the workers' socket folder; `user`:
    the workers' `user` line when nginx starts as root (else None); `rlimit_nofile`: the open-file
    limit nginx may raise itself to; `served`: the page's files nginx serves from disk
    (app/assets.py: served_files)."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # noqa: S701  (not HTML: an nginx configuration)
    )
    environment.filters["token"] = nginx_token
    environment.filters["nginx_string"] = nginx_string
    environment.filters["keyed"] = keyed_message
    template = environment.get_template("nginx.conf.j2")
    workers, keepers = settings.workers, _keepers(settings)
    return template.render(
        user=user,
        run_dir=run_dir,
        temp_dir=temp_dir or run_dir,
        rlimit_nofile=rlimit_nofile,
        error_level=NGINX_LEVELS[settings.log_level],
        graceful_timeout=settings.graceful_timeout,
        worker_connections=settings.worker_connections,
        connection_pool_bytes=budget.CONNECTION_POOL_BYTES,
        request_pool_kib=budget.REQUEST_POOL_KIB,
        header_buffer_kib=budget.HEADER_BUFFER_KIB,
        large_header_buffers=budget.LARGE_HEADER_BUFFERS[0],
        large_header_kib=budget.LARGE_HEADER_BUFFERS[1],
        head_kib=f"{budget.HEAD_KIB:g}",
        heads_mib=budget.mib(budget.heads_bytes(settings)),
        body_buffer_kib=budget.BODY_BUFFER_KIB,
        upstream_head_kib=budget.UPSTREAM_HEAD_KIB,
        answer_buffers=budget.ANSWER_BUFFERS,
        request_kib=f"{budget.REQUEST_KIB:,}",
        in_progress=budget.requests_in_progress(settings),
        in_progress_mib=budget.mib(budget.in_progress_bytes(settings)),
        buffers_mib=budget.mib(budget.buffer_bytes(settings)),
        budget_mib=budget.mib(budget.budget_bytes(settings)),
        header_timeout=_seconds(settings.header_timeout),
        body_timeout=_seconds(settings.body_timeout),
        send_timeout=_seconds(settings.send_timeout),
        keepalive=settings.keepalive,
        max_body_bytes=settings.max_upload_bytes,
        trusted_proxies=settings.trusted_proxies,
        json_logs=settings.log_format == "json",
        keepers=0 < keepers < workers,
        inference=inference_upstreams(sockets, workers=workers, keepers=keepers),
        light=[Upstream(worker_socket(sockets, slot)) for slot in range(workers)],
        listen=listen_address(settings),
        management_port=settings.management_port,
        management_listen=listen_address(settings, port=settings.management_port),
        probe_sockets=[probe_socket(sockets, slot) for slot in range(workers)],
        max_connections_per_ip=settings.max_connections_per_ip or 65535,  # 0: no limit (the zone still counts)
        client_buckets=client_buckets(),
        probes=() if settings.management_port else PROBES,  # with a management port, none here
        allowed_methods=ALLOWED_METHODS,
        body_not_allowed=BODY_NOT_ALLOWED,
        max_posts=settings.max_posts_in_progress,
        posts_per_client=settings.posts_per_client,
        messages=limit_messages(settings),
        get_rate_limit=settings.get_rate_limit,
        get_rate_burst=settings.get_rate_burst,
        served=served or [],
        ondevice_prefix=f"{STATIC_URL}/ondevice/",
        asset_version=asset_version(),
        security_headers=SECURITY_HEADERS,
        max_answer_bytes=settings.max_answer_bytes,
        rate_limit=settings.rate_limit,
        rate_burst=settings.rate_burst,
        rate_limited=RATE_LIMITED,
        read_timeout=2 * settings.timeout + 10,
        errors=front_errors(settings),
        shapes=API_SHAPES,
        hivision_routes=[route.lstrip("/") for route in HIVISION_ROUTES],
        keyed_clients=(clients := keyed_clients(settings)),
        key_groups=key_groups(clients),
    )


def _keepers(settings: Settings) -> int:
    """Workers that keep their memory when idle: only RELEASE_MEMORY=idle releases at all."""
    return settings.memory_keepers if settings.release_memory is ReleaseMemory.IDLE else 0


def _seconds(value: float) -> str:
    """nginx time: whole seconds where possible, else milliseconds."""
    return f"{int(value)}s" if float(value).is_integer() else f"{int(round(value * 1000))}ms"


def nginx_user(*, euid: int | None = None) -> str | None:
    """The `user` line for nginx's workers when it starts as root (they must not run as root);
    None otherwise: an unprivileged nginx runs every process as its own user."""
    euid = os.geteuid() if euid is None else euid
    if euid != 0:
        return None
    import grp
    import pwd

    for user, group in (("www-data", "www-data"), ("nobody", "nogroup"), ("nobody", "nobody")):
        try:
            pwd.getpwnam(user)
            grp.getgrnam(group)
        except KeyError:
            continue
        return f"{user} {group}"
    raise RuntimeError("nginx starts as root but this system has neither www-data nor nobody to run its workers as")
