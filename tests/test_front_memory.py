"""The memory nginx's buffers may take, by phase (app/front_budget.py, issue 49): every connection
at most 37.5 KiB whatever its phase, a request in progress at most 2,354 KiB more, and
WORKER_CONNECTIONS and MAX_REQUESTS_IN_PROGRESS together within FRONT_MEMORY_MB. Pure: the
arithmetic, the settings it refuses, the rendered configuration (checked by `nginx -t`) and the
Kubernetes base's figures against its pod's memory limit. The real server refusing past the cap is
in tests/test_fair_share.py (the `limited` server)."""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

import pytest

from app import front_budget as budget
from app.config import ConfigError, Settings
from app.serving import front, launch

KIB, MIB = 1024, 2**20


def rendered(settings: Settings, run_dir: Path = Path("/run/x")) -> str:
    return front.render(settings, run_dir=run_dir, sockets=run_dir / "w", user=None, rlimit_nofile=4096)


def test_every_buffer_of_each_phase_is_counted() -> None:
    """A connection: its pool, its request's pool and the head's buffers. A request in progress: the
    body buffer, its head re-sent to the worker, the answer's buffers. Each figure is a directive
    of the rendered configuration."""
    assert budget.HEAD_BYTES == 512 + (4 + 1 + 4 * 8) * KIB == 38_400  # 37.5 KiB
    assert budget.REQUEST_BYTES == (256 + 34 + 16 + 32 * 64) * KIB  # 2,354 KiB
    conf = rendered(Settings.from_env({"WORKERS": "2"}))
    for directive in ("connection_pool_size 512;", "request_pool_size 4k;", "client_header_buffer_size 1k;",
                      "large_client_header_buffers 4 8k;", "client_body_buffer_size 256k;", "proxy_buffer_size 16k;",
                      "proxy_buffers 32 64k;"):
        assert directive in conf, directive
    assert "at most 37.5 KiB" in conf and "at most 2,354 KiB more" in conf


def test_the_defaults_hold_ten_thousand_idle_connections_within_a_gib() -> None:
    """16,384 connections (600 MiB) and what the rest of 1 GiB holds in progress: 184 requests (423
    MiB). Sized by the in-progress figure alone, 1 GiB would hold 438 connections."""
    settings = Settings.from_env({"WORKERS": "2", "QUEUE_DEPTH": "4"})
    assert budget.heads_bytes(settings) == 16_384 * 38_400 == 600 * MIB
    assert budget.budget_bytes(settings) == 1024 * MIB
    assert budget.requests_in_progress(settings) == (424 * MIB) // budget.REQUEST_BYTES == 184
    assert budget.buffer_bytes(settings) <= budget.budget_bytes(settings)
    # each request in progress holds a second connection, to its worker: the rest may all be idle
    assert settings.worker_connections - budget.requests_in_progress(settings) >= 10_000
    assert 1024 * MIB // (budget.HEAD_BYTES + budget.REQUEST_BYTES) == 438
    conf = rendered(settings)
    assert "limit_conn in_progress 184;" in conf and "worker_connections 16384;" in conf
    assert "Together 1,023 MiB of 1,024 MiB." in conf


def test_the_default_budget_grows_with_the_workers_so_the_defaults_always_start() -> None:
    """Unset, FRONT_MEMORY_MB is 1 GiB, or the heads and two places per request the workers admit
    where that is more (64 workers admit 320)."""
    settings = Settings.from_env({"WORKERS": "64", "QUEUE_DEPTH": "4"})
    needed = 600 * MIB + 2 * 320 * budget.REQUEST_BYTES
    assert budget.budget_bytes(settings) == math.ceil(needed / MIB) * MIB > 1024 * MIB
    assert budget.requests_in_progress(settings) >= 2 * 320
    small = Settings.from_env({"WORKERS": "1", "WORKER_CONNECTIONS": "64"})
    assert budget.requests_in_progress(small) == (1024 * MIB - 64 * 38_400) // budget.REQUEST_BYTES


def test_connections_past_the_budget_are_refused_at_start_naming_what_fits() -> None:
    """FRONT_MEMORY_MB=512 beside 50 requests in progress (115 MiB) holds 10,842 connections."""
    fits = (512 * MIB - 50 * budget.REQUEST_BYTES) // budget.HEAD_BYTES
    assert fits == 10_842
    env = {"WORKERS": "2", "QUEUE_DEPTH": "4", "FRONT_MEMORY_MB": "512", "MAX_REQUESTS_IN_PROGRESS": "50"}
    assert budget.buffer_bytes(Settings.from_env({**env, "WORKER_CONNECTIONS": str(fits)})) <= 512 * MIB
    with pytest.raises(ConfigError, match=r"more than FRONT_MEMORY_MB=512: WORKER_CONNECTIONS=10843 x 37.5 KiB .* "
                                          r"MAX_REQUESTS_IN_PROGRESS=50 x 2,354 KiB .* At most 10842 connections fit"):
        Settings.from_env({**env, "WORKER_CONNECTIONS": str(fits + 1)})
    with pytest.raises(ConfigError, match="At most 13981 connections fit beside 0 requests"):  # heads alone past it
        Settings.from_env({"WORKERS": "1", "FRONT_MEMORY_MB": "512"})


def test_fewer_places_than_the_workers_admit_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"MAX_REQUESTS_IN_PROGRESS=19 is fewer than the 20 requests the workers admit"):
        Settings.from_env({"WORKERS": "4", "QUEUE_DEPTH": "4", "MAX_REQUESTS_IN_PROGRESS": "19"})
    # derived: 640 MiB leaves 40 MiB beside the heads, 17 requests; 20 need 646 MiB
    with pytest.raises(ConfigError, match=r"MAX_REQUESTS_IN_PROGRESS=17 \(what FRONT_MEMORY_MB=640 leaves .*\) is fewer "
                                          r"than the 20 .* FRONT_MEMORY_MB at least 646"):
        Settings.from_env({"WORKERS": "4", "QUEUE_DEPTH": "4", "FRONT_MEMORY_MB": "640"})
    assert budget.requests_in_progress(Settings.from_env({"WORKERS": "4", "QUEUE_DEPTH": "4", "FRONT_MEMORY_MB": "646"})) == 20
    for name, value in (("FRONT_MEMORY_MB", "8"), ("MAX_REQUESTS_IN_PROGRESS", "0"), ("MAX_REQUESTS_IN_PROGRESS", "70000")):
        with pytest.raises(ConfigError, match=name):
            Settings.from_env({name: value})


def test_only_requests_a_worker_answers_are_counted_and_every_refusal_names_the_cap() -> None:
    """The constant key is set by the locations that proxy, a probe excepted; the page's files,
    nginx's own answers and the management port are not counted. A 429 names the cap in each
    message, for POSTs and the rest, with a key or without."""
    settings = Settings.from_env({"WORKERS": "2", "MAX_REQUESTS_IN_PROGRESS": "40", "MAX_CONNECTIONS_PER_IP": "8"})
    conf = rendered(settings)
    assert 'map $probe $proxied { 1 ""; default server; }' in conf
    assert "limit_conn_zone $in_progress zone=in_progress:1m;" in conf and "limit_conn in_progress 40;" in conf
    server = conf.index("    server {")
    assert conf.index('set $in_progress "";', server) < conf.index("if ($gate = http09)", server)
    location, inference = conf.index("        location / {", server), conf.index("        location @inference {")
    assert conf.index("set $in_progress $proxied;", location) < conf.index("proxy_pass http://light;", location)
    assert conf.index("set $in_progress server;", inference) < conf.index("proxy_pass http://inference;", inference)
    assert conf.count("set $in_progress") == 3 and conf.count("limit_conn in_progress") == 1
    management = rendered(settings.with_overrides(management_port=9000))
    assert "limit_conn" not in management[management.index("listen 127.0.0.1:9000"):]
    messages = front.limit_messages(settings)
    cap = "40 requests of any kind on this server (MAX_REQUESTS_IN_PROGRESS)"
    for message in (messages.too_many_post, messages.too_many_other, messages.too_many_key_post, messages.too_many_key_other):
        assert cap in message, message
    assert messages.too_many_other == ("Too many requests in progress: at most 8 from this address (MAX_CONNECTIONS_PER_IP), "
                                       f"{cap}. Retry once an earlier request has been answered.")
    assert "with this API key" in messages.too_many_key_other


def test_the_rendered_configuration_with_the_cap_is_valid_nginx(tmp_path: Path) -> None:
    settings = Settings.from_env({"WORKERS": "2", "MANAGEMENT_PORT": "9000", "TEMP_BUDGET_MB": "3072",
                                  "MAX_REQUESTS_IN_PROGRESS": "30", "FRONT_MEMORY_MB": "700"})
    for each in (settings, Settings.from_env({"WORKERS": "1"})):  # and without a management port: probes exempt
        conf = tmp_path / "nginx.conf"
        conf.write_text(front.render(each, run_dir=tmp_path, sockets=tmp_path, user=front.nginx_user(), rlimit_nofile=4096))
        check = subprocess.run(["nginx", "-t", "-e", "stderr", "-p", str(tmp_path), "-c", str(conf)],
                               capture_output=True, text=True, timeout=30, check=False)
        assert check.returncode == 0, check.stderr


def test_the_launcher_states_the_figures_and_reads_the_containers_limit(tmp_path: Path) -> None:
    figures = launch.memory_figures(Settings.from_env({"WORKERS": "2", "QUEUE_DEPTH": "4"}))
    assert "WORKER_CONNECTIONS=16384 x 37.5 KiB" in figures and "= 600 MiB" in figures
    assert "MAX_REQUESTS_IN_PROGRESS=184 x 2,354 KiB" in figures and "= 423 MiB" in figures
    assert "at most 1,023 MiB of FRONT_MEMORY_MB's 1,024 MiB" in figures
    assert launch.cgroup_memory_limit(tmp_path) is None
    (tmp_path / "memory.max").write_text("max\n")
    assert launch.cgroup_memory_limit(tmp_path) is None
    (tmp_path / "memory.max").write_text("3758096384\n")
    assert launch.cgroup_memory_limit(tmp_path) == 3584 * MIB
    (tmp_path / "memory.max").unlink()
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # cgroup v1: no limit
    assert launch.cgroup_memory_limit(tmp_path) is None


def mebibytes(quantity: str) -> int:
    assert quantity.endswith("Mi"), quantity
    return int(quantity[:-2])


def test_the_kubernetes_base_fits_its_pods_memory_limit() -> None:
    """The base's ConfigMap: 16,384 connections and 128 requests in progress within FRONT_MEMORY_MB
    (896 MiB), which the pod's limit holds beside the workers' busy figure (docs/deploy.md) and the
    uploads they parse; filling the 128 takes more addresses than filling the POST places."""
    from tests.support import kube

    objects = kube.base()
    settings = Settings.from_env(kube.configmap_env(objects))
    assert (settings.worker_connections, settings.max_requests_in_progress, settings.front_memory_mb) == (16_384, 128, 896)
    assert budget.buffer_bytes(settings) <= budget.budget_bytes(settings) == 896 * MIB
    assert settings.worker_connections - 128 >= 10_000
    [container] = [c for c in kube.only(objects, "Deployment")["spec"]["template"]["spec"]["containers"] if c["name"] == "pilotlight"]
    limit = mebibytes(container["resources"]["limits"]["memory"])
    deploy = (Path(__file__).parents[1] / "docs" / "deploy.md").read_text()
    [busy] = re.findall(r"\| memory a pod really holds, 2 workers \| [\d,]+ MiB idle, ([\d,]+) MiB busy", deploy)
    assert settings.workers == 2 and settings.upload_memory_bytes == 360 * MIB
    assert int(busy.replace(",", "")) + 360 + 896 <= limit == 3584
    places, per_address = settings.max_posts_in_progress, settings.max_connections_per_ip
    assert places and math.ceil(128 / per_address) > math.ceil(places / 2)
