"""Settings: the service is configured from environment variables only.

`Settings.from_env()` is the only reader of `os.environ` in the project; every other module gets a
`Settings` passed in. The table in README.md documents each variable; keep the two in step.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path

DEFAULT_MODELS = ("u2net", "modnet", "centerface", "landmarks68")
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
ARENA_MODES = ("shared", "session", "off")  # ORT_CPU_ARENA, see app/models/sessions.py
PRECISIONS = ("auto", "int8", "fp32")  # MODEL_PRECISION, see app/models/precision.py
LOG_FORMATS = ("text", "json")
FRONTS = ("auto", "nginx", "none")  # FRONT, see app/serving/launch.py
# Read by the request intake that nginx replaced; the launcher warns when one is still set.
RETIRED = {"MIN_BODY_RATE": "BODY_TIMEOUT", "MIN_RESPONSE_RATE": "SEND_TIMEOUT"}
_KEY = re.compile(r"^[A-Za-z0-9._~+/=-]+$")  # RFC 6750 b64token
_KEY_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # a key's name: the client nginx counts its requests under
_ORIGIN = re.compile(r"^https?://[a-z0-9.-]+(:[0-9]{1,5})?$|^https?://\[[0-9a-f:.]+\](:[0-9]{1,5})?$")


def key_label(key: str) -> str:
    """A key's public name: 8 hex digits of its SHA-256 (not enough to guess it from). /metrics
    shows it, and nginx counts an unnamed key's requests under it."""
    return hashlib.sha256(key.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class KeyShare:
    """One of API_KEYS as nginx counts it: `name` (the key's own, else `key_label`) and `posts`,
    the POSTs it may have in progress at once (None: MAX_POSTS_PER_KEY's)."""

    name: str
    key: str = field(repr=False)
    posts: int | None = None


class ReleaseMemory(str, Enum):
    """RELEASE_MEMORY: when a worker gives its working memory back (app/serving/memory.py)."""

    OFF = "off"
    REQUEST = "request"  # after every inference
    IDLE = "idle"  # once the worker has been idle for RELEASE_MEMORY_IDLE_S


class ConfigError(ValueError):
    """A setting has a value the service cannot run with; the message names the variable."""


WARMUP_STEPS = ("requests", "shapes", "wide")
"""The warm-up's steps (app/service.py: warm): the requests of each pass (narrow lane), each model's
own `warmup()` for the input shapes the requests did not run (narrow lane), every model once on its
wide lane. WARMUP_SKIP leaves some out ("none": none), to measure what each buys (bench/matte.py
warmup, bench/cold.py)."""
WARMUP_SKIP_DEFAULT = ("wide",)
"""Left out unless WARMUP_SKIP says otherwise: the wide lanes share the narrow ones' arena, and in the
decision run (bench/results/cold-skip-wide.md and cold-small-wide-or-not.md: JPEG, 2 workers) the
step bought no cell back under 1.10, while ready came sooner by its whole cost. The full matrix after
it (cold-matrix.md) still has cells over 1.10, their causes open (issue 43)."""


def default_model_home(env: Mapping[str, str]) -> Path:
    cache = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")) / ".cache")
    return Path(cache).expanduser() / "pilotlight" / "models"


def available_cpus() -> int:
    """CPUs this process may run on (respects affinity masks set by containers and taskset)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def cgroup_cpu_limit(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPU quota of this container in cores (cgroup v2 cpu.max, else v1 cfs quota), or None."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
    except (OSError, ValueError):
        return None


def usable_cpus() -> int:
    """Cores this process may really use: its CPU affinity, capped by the container's CPU quota
    (rounded up: a 1.5-core quota still runs two threads), never the host's core count."""
    limit = cgroup_cpu_limit()
    cpus = available_cpus()
    return cpus if limit is None else max(1, min(cpus, math.ceil(limit)))


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    # the kubelet's probes and /metrics behind nginx, on a port the Service never routes users to (0: none)
    management_port: int = 0
    workers: int = field(default_factory=available_cpus)
    threads: int | None = None  # default: queue_depth + 2 (one inferring, the queue, one spare)
    timeout: int = 120
    graceful_timeout: int = 30
    keepalive: int = 5
    max_requests: int = 0
    max_requests_jitter: int = 0
    queue_depth: int = 4
    live_queue_depth: int = 2  # the camera's live checks waiting per worker beyond the one running (LiveGate)
    model_home: Path = field(default_factory=lambda: default_model_home(os.environ))
    optimised_home: Path | None = None  # None: MODEL_HOME/optimised (see `optimised_dir`)
    lone_request_threads: int = field(default_factory=usable_cpus)  # the wide lane's threads; 1: no wide lane
    models: tuple[str, ...] = DEFAULT_MODELS
    segmentation_model: str = "u2net"
    # the matte of photos with a face (ID photos; cut-outs that name no model): "auto" is modnet where
    # MODELS has it, else SEGMENTATION_MODEL (docs: README, "Which model mattes a photo")
    portrait_model: str = "auto"
    preload_models: bool = True
    warmup_requests: int = 1
    warmup_skip: tuple[str, ...] = WARMUP_SKIP_DEFAULT  # WARMUP_SKIP: warm-up steps left out (of WARMUP_STEPS)
    ort_providers: str = "auto"
    max_upload_mb: float = 20.0
    max_image_pixels: int = 50_000_000
    # a cut-out's answer at most this many px: a larger photo is scaled down to it before any work (a
    # 16 MP cut-out prints 11x14 in at 300 dpi; a 50 MP PNG answer is over 100 MB and no more useful)
    max_cutout_pixels: int = 16_000_000
    max_answer_mb: float = 96.0  # the largest answer sent, base64 JSON included; larger ones: 413 answer_too_large
    temp_budget_mb: float = 0.0  # disk for nginx's temporary files (bodies, answers); 0: no server-wide cap
    front_temp_dir: Path | None = None  # where nginx's run folder and temporary files go (None: the temp dir)
    working_max_side: int = 2048
    log_level: str = "info"
    ort_cpu_arena: str = "shared"  # shared | session | off (app/models/sessions.py)
    ort_mem_pattern: bool = False
    model_precision: str = "auto"  # auto | int8 | fp32: the weights CPU sessions of u2net run (app/models/precision.py)
    release_memory: ReleaseMemory = ReleaseMemory.IDLE
    release_memory_idle_s: float = 2.0
    # workers that keep their working memory when idle (app/serving/memory.py); None: `memory_keepers` decides
    keep_memory_workers: int | None = None
    log_format: str = "text"  # "json": one JSON object per log line, access lines included
    metrics_dir: Path | None = None  # None: a fresh private folder under the temp dir per server start
    cors_origins: tuple[str, ...] = ()  # empty: no CORS headers at all; ("*",): any origin
    # the front (app/serving/front.py): nginx reads requests whole, buffers answers and limits clients
    front: str = "auto"  # auto: nginx when installed, else gunicorn alone on loopback | nginx: required | none
    worker_sockets: Path | None = None  # set by the launcher: each warm worker listens on its own unix socket here
    worker_socket_group: str | None = None  # set by the launcher: nginx's workers' group, the sockets' only other reader
    header_timeout: float = 10.0  # seconds a client may take to send a request's head (nginx client_header_timeout)
    body_timeout: float = 10.0  # seconds between two reads of a request body (nginx client_body_timeout)
    send_timeout: float = 30.0  # seconds between two writes of an answer to a client (nginx send_timeout)
    max_connections_per_ip: int = 16  # requests in progress per client address (nginx limit_conn; 0: no limit)
    # POSTs in progress per client, head to the answer's last byte (nginx limit_conn); None: 2 where
    # TEMP_BUDGET_MB caps the server's POSTs, else 4 (`posts_per_client`); 0: no cap
    max_posts_per_client: int | None = None
    rate_limit: int = 600  # POST requests a minute per client address (nginx limit_req; 0: no limit)
    rate_burst: int = 40  # POST requests a client may send at once beyond the rate (limit_req burst, nodelay)
    get_rate_limit: int = 1200  # GET, HEAD and OPTIONS requests a minute per client, probes excepted (0: no limit)
    get_rate_burst: int = 120  # of those, how many a client may send at once beyond the rate
    worker_connections: int = 16384  # connections nginx holds open at once, idle and kept-alive included
    front_memory_mb: int | None = None  # MiB nginx's buffers take at most (None: app/front_budget.py's default)
    max_requests_in_progress: int | None = None  # proxied requests in progress at once, more get 429 (None: what the above holds)
    trusted_proxies: tuple[str, ...] = ()  # addresses whose X-Forwarded-For names the client (nginx set_real_ip_from)
    # behind a proxy by design (the ingress overlay): refuse to start until TRUSTED_PROXIES names it
    require_trusted_proxies: bool = False
    max_matting_px: int | None = None  # unknown pixels alpha matting may solve for; None: what half of TIMEOUT allows
    api_keys: tuple[str, ...] = field(default=(), repr=False)  # empty: /api/v1 is open (app/auth.py)
    # API_KEYS' names and shares, where its lines give them (`name:key` or `name:key:posts`)
    key_shares: tuple[KeyShare, ...] = field(default=(), repr=False)
    # POSTs in progress at once per API key without a share of its own; None: `posts_per_key` decides
    max_posts_per_key: int | None = None
    # POST /warmup's own key (beside API_KEYS); with neither, /warmup answers 403 to every client
    warmup_key: str | None = field(default=None, repr=False)
    # with API_KEYS: GET /metrics needs a key too (it shows key labels and counts); false opens it to a
    # scraper that cannot send one
    metrics_need_key: bool = True

    @property
    def worker_threads(self) -> int:
        """gthread threads per worker: one runs the inference, `queue_depth` wait for it, and one
        more is always free to answer probes and to turn the next request away with a fast 503."""
        return self.threads if self.threads is not None else self.queue_depth + 2 + self.live_threads

    @property
    def live_threads(self) -> int:
        """The live lane's threads per worker: the check running and LIVE_QUEUE_DEPTH waiting."""
        return 1 + self.live_queue_depth

    @property
    def optimised_dir(self) -> Path:
        """Where the pre-optimised models live (app/models/optimised.py)."""
        return self.optimised_home if self.optimised_home is not None else self.model_home / "optimised"

    @property
    def behind_front(self) -> bool:
        """True when nginx is in front: the workers listen on their own sockets (WORKER_SOCKETS)."""
        return self.worker_sockets is not None

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

    @property
    def max_answer_bytes(self) -> int:
        return int(self.max_answer_mb * 1024 * 1024)

    @property
    def request_disk_mb(self) -> float:
        """The most of nginx's temporary files one request holds: its body and its answer."""
        return self.max_upload_mb + self.max_answer_mb

    @property
    def upload_memory_bytes(self) -> int:
        """The most the workers hold of uploads being parsed: each file part stays in memory
        (app/__init__.py, InMemoryUploads), at most MAX_UPLOAD_MB a request, one request a thread."""
        return self.workers * self.worker_threads * self.max_upload_bytes

    @property
    def max_posts_in_progress(self) -> int | None:
        """POSTs in progress on this server at once (uploading, queued, inferring or being read),
        so that their temporary files fit TEMP_BUDGET_MB; None without a budget."""
        return int(self.temp_budget_mb // self.request_disk_mb) if self.temp_budget_mb else None

    @property
    def posts_per_client(self) -> int | None:
        """POSTs one client may have in progress at once (MAX_POSTS_PER_CLIENT); None: no cap. By
        default 2 where TEMP_BUDGET_MB caps the server's POSTs, so that it takes at least half as
        many addresses as the server has places to hold them all, else 4."""
        if self.max_posts_per_client is not None:
            return self.max_posts_per_client or None
        return 2 if self.max_posts_in_progress is not None else 4

    @property
    def posts_per_key(self) -> int | None:
        """POSTs a valid API key may have in progress at once unless its line gives its own share
        (MAX_POSTS_PER_KEY); None: no cap. By default half the server's places for POSTs where
        TEMP_BUDGET_MB caps them (no one key holds them all), else 16: a backend serving many users
        from one address is one client of the server's, not one user."""
        if self.max_posts_per_key is not None:
            return self.max_posts_per_key or None
        posts = self.max_posts_in_progress
        return max(1, posts // 2) if posts is not None else 16

    @property
    def keyed_clients(self) -> tuple[KeyShare, ...]:
        """Every one of API_KEYS with its name and share (a key without a line of its own: its
        label, and `posts_per_key`), in API_KEYS' order."""
        given = {share.key: share for share in self.key_shares}
        found = []
        for key in self.api_keys:
            share = given.get(key) or KeyShare(key_label(key), key)
            found.append(share if share.posts is not None else replace(share, posts=self.posts_per_key))
        return tuple(found)

    @property
    def lockout_addresses(self) -> int | None:
        """The fewest client addresses whose POSTs, each address at its cap, fill every place the
        server has for POSTs (None: no server-wide cap, or no per-client one)."""
        posts, each = self.max_posts_in_progress, self.posts_per_client
        return None if posts is None or each is None else math.ceil(posts / each)

    @property
    def bind(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def with_overrides(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    @staticmethod
    def retired(env: Mapping[str, str] | None = None) -> dict[str, str]:
        """Settings of the old request intake still set in `env`: {name: what replaced it}."""
        env = os.environ if env is None else env
        return {name: new for name, new in RETIRED.items() if (env.get(name) or "").strip()}

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read every setting from `env` (default `os.environ`); unset or empty means the default."""
        env = os.environ if env is None else env
        reader = _Reader(env)
        defaults = cls(model_home=default_model_home(env))
        key_shares = reader.key_shares("API_KEYS")
        settings = cls(
            host=reader.text("HOST", defaults.host),
            port=reader.integer("PORT", defaults.port, low=1, high=65535),
            management_port=reader.integer("MANAGEMENT_PORT", defaults.management_port, low=0, high=65535),
            workers=reader.integer("WORKERS", defaults.workers, low=1, high=64),
            threads=reader.optional_integer("THREADS", low=2, high=256),
            timeout=reader.integer("TIMEOUT", defaults.timeout, low=5, high=3600),
            graceful_timeout=reader.integer("GRACEFUL_TIMEOUT", defaults.graceful_timeout, low=1, high=3600),
            keepalive=reader.integer("KEEPALIVE", defaults.keepalive, low=0, high=300),
            max_requests=reader.integer("MAX_REQUESTS", defaults.max_requests, low=0, high=10_000_000),
            max_requests_jitter=reader.integer("MAX_REQUESTS_JITTER", defaults.max_requests_jitter, low=0, high=10_000_000),
            queue_depth=reader.integer("QUEUE_DEPTH", defaults.queue_depth, low=0, high=200),
            live_queue_depth=reader.integer("LIVE_QUEUE_DEPTH", defaults.live_queue_depth, low=0, high=50),
            model_home=Path(reader.text("MODEL_HOME", str(defaults.model_home))).expanduser(),
            optimised_home=reader.optional_path("OPTIMISED_HOME"),
            lone_request_threads=reader.integer("LONE_REQUEST_THREADS", defaults.lone_request_threads, low=1, high=256),
            models=reader.names("MODELS", defaults.models),
            segmentation_model=reader.text("SEGMENTATION_MODEL", defaults.segmentation_model),
            portrait_model=reader.text("PORTRAIT_MODEL", defaults.portrait_model),
            preload_models=reader.boolean("PRELOAD_MODELS", defaults.preload_models),
            warmup_requests=reader.integer("WARMUP_REQUESTS", defaults.warmup_requests, low=0, high=100),
            warmup_skip=reader.subset("WARMUP_SKIP", WARMUP_STEPS, defaults.warmup_skip),
            ort_providers=reader.text("ORT_PROVIDERS", defaults.ort_providers),
            max_upload_mb=reader.number("MAX_UPLOAD_MB", defaults.max_upload_mb, low=0.01, high=1024),
            max_image_pixels=reader.integer("MAX_IMAGE_PIXELS", defaults.max_image_pixels, low=64 * 64, high=1_000_000_000),
            max_answer_mb=reader.number("MAX_ANSWER_MB", defaults.max_answer_mb, low=0.01, high=4096),
            temp_budget_mb=reader.number("TEMP_BUDGET_MB", defaults.temp_budget_mb, low=0, high=10_000_000),
            front_temp_dir=reader.optional_path("FRONT_TEMP_DIR"),
            max_cutout_pixels=reader.integer("MAX_CUTOUT_PIXELS", defaults.max_cutout_pixels, low=64 * 64,
                                             high=1_000_000_000),
            working_max_side=reader.integer("WORKING_MAX_SIDE", defaults.working_max_side, low=320, high=16384),
            log_level=reader.choice("LOG_LEVEL", defaults.log_level, LOG_LEVELS),
            ort_cpu_arena=reader.choice("ORT_CPU_ARENA", defaults.ort_cpu_arena, ARENA_MODES),
            ort_mem_pattern=reader.boolean("ORT_MEM_PATTERN", defaults.ort_mem_pattern),
            model_precision=reader.choice("MODEL_PRECISION", defaults.model_precision, PRECISIONS),
            release_memory=ReleaseMemory(reader.choice("RELEASE_MEMORY", defaults.release_memory.value, tuple(m.value for m in ReleaseMemory))),
            release_memory_idle_s=reader.number("RELEASE_MEMORY_IDLE_S", defaults.release_memory_idle_s, low=0.1, high=3600),
            keep_memory_workers=reader.optional_integer("KEEP_MEMORY_WORKERS", low=0, high=64, auto=True),
            log_format=reader.choice("LOG_FORMAT", defaults.log_format, LOG_FORMATS),
            metrics_dir=reader.optional_path("METRICS_DIR"),
            cors_origins=reader.origins("CORS_ORIGINS"),
            front=reader.choice("FRONT", defaults.front, FRONTS),
            worker_sockets=reader.optional_path("WORKER_SOCKETS"),
            worker_socket_group=reader._raw("WORKER_SOCKET_GROUP"),
            header_timeout=reader.number("HEADER_TIMEOUT", defaults.header_timeout, low=1, high=3600),
            body_timeout=reader.number("BODY_TIMEOUT", defaults.body_timeout, low=1, high=3600),
            send_timeout=reader.number("SEND_TIMEOUT", defaults.send_timeout, low=1, high=3600),
            max_connections_per_ip=reader.integer("MAX_CONNECTIONS_PER_IP", defaults.max_connections_per_ip, low=0, high=100_000),
            max_posts_per_client=reader.optional_integer("MAX_POSTS_PER_CLIENT", low=0, high=100_000),
            rate_limit=reader.integer("RATE_LIMIT", defaults.rate_limit, low=0, high=1_000_000),
            rate_burst=reader.integer("RATE_BURST", defaults.rate_burst, low=0, high=100_000),
            get_rate_limit=reader.integer("GET_RATE_LIMIT", defaults.get_rate_limit, low=0, high=1_000_000),
            get_rate_burst=reader.integer("GET_RATE_BURST", defaults.get_rate_burst, low=0, high=100_000),
            worker_connections=reader.integer("WORKER_CONNECTIONS", defaults.worker_connections, low=64, high=1_000_000),
            front_memory_mb=reader.optional_integer("FRONT_MEMORY_MB", low=16, high=1_000_000),
            max_requests_in_progress=reader.optional_integer("MAX_REQUESTS_IN_PROGRESS", low=1, high=65535),
            trusted_proxies=reader.networks("TRUSTED_PROXIES"),
            require_trusted_proxies=reader.boolean("REQUIRE_TRUSTED_PROXIES", defaults.require_trusted_proxies),
            max_matting_px=reader.optional_integer("MAX_MATTING_PIXELS", low=1000, high=100_000_000),
            api_keys=tuple(share.key for share in key_shares),
            key_shares=key_shares,
            max_posts_per_key=reader.optional_integer("MAX_POSTS_PER_KEY", low=0, high=100_000),
            warmup_key=reader.secret_key("WARMUP_KEY"),
            metrics_need_key=reader.boolean("METRICS_NEED_KEY", defaults.metrics_need_key),
        )
        settings.validate()
        return settings

    def validate(self) -> None:
        from .models.manifest import MANIFEST, Role  # pure data

        if self.threads is not None and self.threads < self.queue_depth + 2:
            raise ConfigError(
                f"THREADS={self.threads} leaves no thread for probes and fast 503s: each worker needs one thread "
                f"inferring, QUEUE_DEPTH={self.queue_depth} waiting and one spare, so at least {self.queue_depth + 2} "
                "(or leave THREADS unset)"
            )
        from . import front_budget  # pure: TEMP_BUDGET_MB's and FRONT_MEMORY_MB's bounds
        if (problem := front_budget.problem(self)) is not None:
            raise ConfigError(problem)
        if self.management_port == self.port:
            raise ConfigError(f"MANAGEMENT_PORT={self.management_port} is PORT too: give the probes a port of their own (or 0: none)")
        if not is_host(self.host):
            raise ConfigError(f"HOST={self.host!r} is not an IP address or a host name (letters, digits, dots and hyphens)")
        segmentation = [name for name in self.models if name in MANIFEST and MANIFEST[name].role == Role.SEGMENTATION]
        if segmentation and self.segmentation_model not in self.models:
            raise ConfigError(
                f"SEGMENTATION_MODEL={self.segmentation_model!r} is not in MODELS={','.join(self.models)!r}; "
                "add it to MODELS so it is loaded and warmed"
            )
        if self.portrait_model != "auto" and self.portrait_model not in segmentation:
            raise ConfigError(
                f"PORTRAIT_MODEL={self.portrait_model!r} is not a segmentation model in MODELS={','.join(self.models)!r}; "
                "use auto, or one of: " + (", ".join(segmentation) or "(none loaded)")
            )

    @property
    def memory_keepers(self) -> int:
        """KEEP_MEMORY_WORKERS, or by default as many workers as requests that run at full speed at
        once (one per usable core, at most WORKERS): a pair of requests after a quiet spell lands on
        two keepers (nginx gives a request to an idle keeper first) and pays no regrowth of
        released buffers (docs/BENCHMARKS.md, the cold penalty); workers past the cores release."""
        if self.keep_memory_workers is not None:
            return self.keep_memory_workers
        return min(self.workers, usable_cpus())

    @property
    def portrait_matte(self) -> str:
        """The model that mattes photos with a face: PORTRAIT_MODEL, or for "auto" modnet where
        MODELS has it, else SEGMENTATION_MODEL."""
        if self.portrait_model != "auto":
            return self.portrait_model
        return "modnet" if "modnet" in self.models else self.segmentation_model


def is_host(value: str) -> bool:
    """An IP address (no `%scope`), or a host name of letters, digits, dots and hyphens: nginx's
    `listen` and gunicorn's bind take it as it is."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})", value) is not None
    return "%" not in value


@dataclass(frozen=True)
class _Reader:
    env: Mapping[str, str]

    def _raw(self, name: str) -> str | None:
        value = self.env.get(name)
        if value is None or not value.strip():
            return None
        return value.strip()

    def text(self, name: str, default: str) -> str:
        return self._raw(name) or default

    def integer(self, name: str, default: int, *, low: int, high: int) -> int:
        raw = self._raw(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not a whole number") from None
        if not low <= value <= high:
            raise ConfigError(f"{name}={value} is outside {low}..{high}")
        return value

    def optional_integer(self, name: str, *, low: int, high: int, auto: bool = False) -> int | None:
        """None when unset (or, with `auto`, set to "auto")."""
        raw = self._raw(name)
        if raw is None or (auto and raw.lower() == "auto"):
            return None
        return self.integer(name, 0, low=low, high=high)

    def number(self, name: str, default: float, *, low: float, high: float) -> float:
        raw = self._raw(name)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not a number") from None
        if not low <= value <= high:
            raise ConfigError(f"{name}={value} is outside {low}..{high}")
        return value

    def boolean(self, name: str, default: bool) -> bool:
        raw = self._raw(name)
        if raw is None:
            return default
        lowered = raw.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name}={raw!r} is not a boolean (true/false)")

    def subset(self, name: str, choices: tuple[str, ...], default: tuple[str, ...] = ()) -> tuple[str, ...]:
        """Comma-separated names, each one of `choices`; `default` when unset, () for "none"."""
        raw = self._raw(name)
        if raw is None:
            return default
        if raw.lower() == "none":
            return ()
        names = self.names(name, ())
        unknown = [part for part in names if part not in choices]
        if unknown:
            raise ConfigError(f"{name}: {', '.join(unknown)} not one of {', '.join(choices)} (or none)")
        return names

    def names(self, name: str, default: tuple[str, ...]) -> tuple[str, ...]:
        raw = self._raw(name)
        if raw is None:
            return default
        names = tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))
        if not names:
            raise ConfigError(f"{name} lists no names")
        return names

    def networks(self, name: str) -> tuple[str, ...]:
        """Comma-separated IP addresses or CIDR networks (`10.0.0.0/8, 192.168.1.7`), normalised."""
        raw = self._raw(name)
        if raw is None:
            return ()
        networks = []
        for part in raw.split(","):
            if not part.strip():
                continue
            try:
                networks.append(str(ipaddress.ip_network(part.strip(), strict=False)))
            except ValueError:
                raise ConfigError(f"{name}: {part.strip()!r} is not an IP address or network like 10.0.0.0/8") from None
        return tuple(dict.fromkeys(networks))

    def optional_path(self, name: str) -> Path | None:
        raw = self._raw(name)
        return None if raw is None else Path(raw).expanduser()

    def origins(self, name: str) -> tuple[str, ...]:
        """Comma-separated browser origins (scheme://host[:port], lower case, no path), or `*` alone."""
        raw = self._raw(name)
        if raw is None:
            return ()
        origins = tuple(dict.fromkeys(part.strip().rstrip("/").lower() for part in raw.split(",") if part.strip()))
        if "*" in origins:
            if len(origins) > 1:
                raise ConfigError(f"{name}: '*' allows every origin and cannot be combined with others")
            return origins
        for origin in origins:
            if not _ORIGIN.match(origin):
                raise ConfigError(f"{name}: {origin!r} is not an origin like https://example.com or http://localhost:3000")
        return origins

    def key_shares(self, name: str) -> tuple[KeyShare, ...]:
        """API_KEYS as `api_keys` reads it, each entry `key`, `name:key` or `name:key:posts` (a
        key holds no colon): its name is the client nginx counts it as, `posts` its own share of
        POSTs in progress. Error messages name the variable and the entry's place, never a key."""
        shares: list[KeyShare] = []
        for index, entry in enumerate(self.api_keys(name, entries=True), 1):
            fields = entry.split(":")
            if len(fields) > 3:
                raise ConfigError(f"{name}: entry {index} has {len(fields)} fields; write key, name:key or name:key:posts")
            key = fields[0] if len(fields) == 1 else fields[1]
            self._check_key(name, index, key)
            label = fields[0] if len(fields) > 1 else key_label(key)
            if not _KEY_NAME.match(label):
                raise ConfigError(f"{name}: entry {index}'s name must be 1-64 characters of A-Z a-z 0-9 _ . -")
            posts = None
            if len(fields) == 3:
                if not fields[2].isdigit() or not 1 <= int(fields[2]) <= 100_000:
                    raise ConfigError(f"{name}: entry {index}'s share of POSTs must be a whole number in 1..100000")
                posts = int(fields[2])
            if any(share.key == key for share in shares):
                continue
            if any(share.name == label for share in shares):
                raise ConfigError(f"{name}: entry {index}'s name {label!r} is another key's too: each key its own")
            shares.append(KeyShare(label, key, posts))
        return tuple(shares)

    @staticmethod
    def _check_key(name: str, index: int, key: str) -> None:
        if len(key) < 16 or not _KEY.match(key):
            raise ConfigError(f"{name}: key {index} must be at least 16 characters of A-Z a-z 0-9 . _ ~ + / = -")

    def api_keys(self, name: str, *, entries: bool = False) -> tuple[str, ...]:
        """Comma-separated keys, or the path of a file with one key per line (a mounted secret).
        Error messages name the variable, never a key. `entries`: the entries unchecked, as written
        (`key_shares` reads them)."""
        raw = self._raw(name)
        if raw is None:
            return ()
        if raw.startswith(("/", "./", "~")):
            path = Path(raw).expanduser()
            try:
                raw = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{name}: cannot read the key file {path} ({type(exc).__name__})") from None
            parts = raw.replace(",", "\n").splitlines()
        else:
            parts = raw.split(",")
        keys = tuple(dict.fromkeys(part.strip() for part in parts if part.strip()))
        if not keys:
            raise ConfigError(f"{name} lists no keys")
        if not entries:
            for index, key in enumerate(keys, 1):
                self._check_key(name, index, key)
        return keys

    def secret_key(self, name: str) -> str | None:
        """One key, given as `api_keys` reads them (the value, or a mounted secret's path)."""
        keys = self.api_keys(name)
        if len(keys) > 1:
            raise ConfigError(f"{name} holds one key, not {len(keys)}")
        return keys[0] if keys else None

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        raw = self._raw(name)
        if raw is None:
            return default
        if raw.lower() not in choices:
            raise ConfigError(f"{name}={raw!r} is not one of {', '.join(choices)}")
        return raw.lower()
