from __future__ import annotations

from pathlib import Path

import pytest

from app.config import ConfigError, ReleaseMemory, Settings
from app.models.registry import Registry
from app.models.sessions import CPU, CUDA, ProviderError, resolve_providers
from app.service import Service


def test_defaults() -> None:
    settings = Settings.from_env({"HOME": "/home/u"})
    assert settings.port == 8000 and settings.host == "127.0.0.1"
    assert settings.models == ("u2net", "modnet", "centerface", "landmarks68") and settings.segmentation_model == "u2net"
    assert settings.portrait_matte == "modnet"  # auto: MODNet where MODELS has it
    assert settings.preload_models is True and settings.warmup_requests == 1 and settings.warmup_skip == ("wide",)
    assert settings.model_home == Path("/home/u/.cache/pilotlight/models")
    assert settings.workers >= 1


def test_values_are_parsed() -> None:
    settings = Settings.from_env(
        {"PORT": "9000", "WORKERS": "4", "MODELS": "u2netp, centerface,u2netp", "SEGMENTATION_MODEL": "u2netp",
         "PRELOAD_MODELS": "false", "MAX_UPLOAD_MB": "2.5", "HOST": "::1", "MODEL_HOME": "/m"}
    )
    assert settings.port == 9000 and settings.workers == 4
    assert settings.models == ("u2netp", "centerface")
    assert settings.preload_models is False and settings.max_upload_bytes == int(2.5 * 1024 * 1024)
    assert settings.bind == "[::1]:9000" and settings.model_home == Path("/m")


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"PORT": "eighty"}, "PORT"),
        ({"PORT": "70000"}, "PORT"),
        ({"PRELOAD_MODELS": "maybe"}, "PRELOAD_MODELS"),
        ({"LOG_LEVEL": "loud"}, "LOG_LEVEL"),
        ({"MODELS": "u2netp"}, "SEGMENTATION_MODEL"),
        ({"MODELS": " , "}, "MODELS"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        Settings.from_env(env)


def test_providers() -> None:
    assert resolve_providers("auto", available=[CPU]).names == (CPU,)
    assert resolve_providers("auto", available=[CUDA, CPU]).names == (CUDA, CPU)
    assert resolve_providers("cuda", available=[CUDA, CPU]).accelerated
    assert not resolve_providers("cpu", available=[CUDA, CPU]).accelerated
    with pytest.raises(ProviderError, match="CUDAExecutionProvider"):
        resolve_providers("cuda", available=[CPU])


def test_memory_settings_reach_the_session_factory() -> None:
    from app.models.sessions import session_options

    settings = Settings.from_env({"ORT_CPU_ARENA": "off", "ORT_MEM_PATTERN": "on", "RELEASE_MEMORY": "request", "RELEASE_MEMORY_IDLE_S": "2.5"})
    providers = Service(settings, Registry()).providers
    assert providers.cpu_arena == "off" and providers.mem_pattern is True
    assert settings.release_memory is ReleaseMemory.REQUEST and settings.release_memory_idle_s == 2.5
    options = session_options(cpu_arena=providers.cpu_arena, mem_pattern=providers.mem_pattern)
    assert options.enable_cpu_mem_arena is False and options.enable_mem_pattern is True
    defaults = Settings.from_env({})
    assert (defaults.ort_cpu_arena, defaults.ort_mem_pattern, defaults.release_memory) == ("shared", False, ReleaseMemory.IDLE)
    shared = session_options()
    assert shared.enable_cpu_mem_arena is True and shared.enable_mem_pattern is False
    assert shared.get_session_config_entry("session.use_env_allocators") == "1"
    assert session_options(cpu_arena="session").enable_cpu_mem_arena is True
    with pytest.raises(ConfigError, match="RELEASE_MEMORY"):
        Settings.from_env({"RELEASE_MEMORY": "always"})
    with pytest.raises(ConfigError, match="ORT_CPU_ARENA"):
        Settings.from_env({"ORT_CPU_ARENA": "true"})


def test_memory_keepers_default_to_one_worker_per_usable_core() -> None:
    from app.config import usable_cpus

    cores = usable_cpus()
    assert Settings.from_env({"WORKERS": str(cores + 2)}).memory_keepers == cores  # the extra workers release
    assert Settings.from_env({"WORKERS": "1"}).memory_keepers == 1
    assert Settings.from_env({"WORKERS": "4", "KEEP_MEMORY_WORKERS": "auto"}).memory_keepers == min(4, cores)
    assert Settings.from_env({"WORKERS": "4", "KEEP_MEMORY_WORKERS": "0"}).memory_keepers == 0
    assert Settings.from_env({"WORKERS": "4", "KEEP_MEMORY_WORKERS": "3"}).memory_keepers == 3
    with pytest.raises(ConfigError, match="KEEP_MEMORY_WORKERS"):
        Settings.from_env({"KEEP_MEMORY_WORKERS": "some"})


def test_warmup_skip_names_steps_only() -> None:
    assert Settings.from_env({"WARMUP_SKIP": "wide, shapes"}).warmup_skip == ("wide", "shapes")
    assert Settings.from_env({}).warmup_skip == ("wide",)  # the matrix's choice (config.WARMUP_SKIP_DEFAULT)
    assert Settings.from_env({"WARMUP_SKIP": "none"}).warmup_skip == ()
    with pytest.raises(ConfigError, match="WARMUP_SKIP: narrow not one of requests, shapes, wide"):
        Settings.from_env({"WARMUP_SKIP": "wide,narrow"})


@pytest.mark.parametrize(("threads", "queue_depth", "refused"), [("4", "4", True), ("5", "4", True), ("6", "4", False),
                                                                  ("2", "0", False), (None, "4", False)])
def test_threads_leave_a_spare_for_probes(threads: str | None, queue_depth: str, refused: bool) -> None:
    """Issue 34: one thread inferring, QUEUE_DEPTH waiting and one spare for probes and fast 503s."""
    env = {"QUEUE_DEPTH": queue_depth, **({"THREADS": threads} if threads else {})}
    if refused:
        with pytest.raises(ConfigError, match=r"THREADS=\d+ leaves no thread for probes"):
            Settings.from_env(env)
    else:
        assert Settings.from_env(env).worker_threads >= int(queue_depth) + 2


def test_the_rendered_configmap_keeps_a_spare_thread() -> None:
    """The Kubernetes base as kustomize renders it: its ConfigMap's environment is one the server accepts."""
    from tests.support import kube

    settings = Settings.from_env(kube.configmap_env(kube.base()))
    assert settings.worker_threads >= settings.queue_depth + 2


def test_only_the_ingress_controller_and_the_keepalive_job_may_connect() -> None:
    """The base's NetworkPolicy admits two peers, so only they can name a client in X-Forwarded-For
    (TRUSTED_PROXIES): the ingress controller's pods, by namespace and label, and the keep-alive
    job's pods, whose template carries the label the policy selects and not the one the Service,
    the PDB and the policy itself select."""
    from tests.support import kube

    objects = kube.base()
    policy, service = kube.only(objects, "NetworkPolicy"), kube.only(objects, "Service")
    cronjob = kube.only(objects, "CronJob", "pilotlight-keepalive")
    [rule] = policy["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8000}]
    ingress, keepalive = rule["from"]
    assert ingress["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "ingress-nginx"}
    assert ingress["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "ingress-nginx"}
    assert set(keepalive) == {"podSelector"}, "the keep-alive peer is this namespace's pods only"
    job_labels = cronjob["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]

    def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in selector.items())

    assert selects(keepalive["podSelector"]["matchLabels"], job_labels)
    assert not selects(service["spec"]["selector"], job_labels) and not selects(policy["spec"]["podSelector"]["matchLabels"], job_labels)
    assert policy["spec"]["egress"] == []


def test_nginx_temporary_files_have_a_volume_larger_than_their_budget() -> None:
    """FRONT_TEMP_DIR is a volume of its own in the rendered Deployment, and its sizeLimit holds
    TEMP_BUDGET_MB (the kubelet evicts a pod whose emptyDir outgrows its limit)."""
    from tests.support import kube

    objects = kube.base()
    settings = Settings.from_env(kube.configmap_env(objects))
    pod = kube.only(objects, "Deployment")["spec"]["template"]["spec"]
    [container] = [c for c in pod["containers"] if c["name"] == "pilotlight"]
    [mount] = [m for m in container["volumeMounts"] if m["mountPath"] == str(settings.front_temp_dir)]
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    limit = volume["emptyDir"]["sizeLimit"]
    assert limit.endswith("Mi") and int(limit[:-2]) > settings.temp_budget_mb
    assert settings.max_posts_in_progress is not None and settings.max_posts_in_progress >= settings.workers * (1 + settings.queue_depth)
    assert mount["name"] != "tmp", "nginx's files have a volume of their own, apart from the models in /tmp"


def test_the_base_trusts_no_forwarded_address_until_told_the_ingress_controllers() -> None:
    """TRUSTED_PROXIES in the base is a documentation address, a placeholder the launcher warns
    about, so no pod (nor anything else) can name a client until the operator sets the ingress
    controller's pod range."""
    from app.serving import front
    from tests.support import kube

    settings = Settings.from_env(kube.configmap_env(kube.base()))
    assert settings.trusted_proxies and front.placeholder_proxies(settings) == list(settings.trusted_proxies)
    assert front.placeholder_proxies(Settings.from_env({"TRUSTED_PROXIES": "10.0.0.0/8,2001:db8::1"})) == ["2001:db8::1/128"]


def test_on_the_base_a_lockout_takes_at_least_half_as_many_addresses_as_post_places() -> None:
    from tests.support import kube

    settings = Settings.from_env(kube.configmap_env(kube.base()))
    assert settings.max_posts_in_progress and settings.lockout_addresses
    assert 2 * settings.lockout_addresses >= settings.max_posts_in_progress


def test_the_keepalive_job_and_the_pods_share_the_warmup_key() -> None:
    """POST /warmup always needs a key: the keep-alive job sends the Secret's key, which the pods
    read as WARMUP_KEY."""
    from tests.support import kube

    objects = kube.base()
    [container] = [c for c in kube.only(objects, "Deployment")["spec"]["template"]["spec"]["containers"] if c["name"] == "pilotlight"]
    [job] = kube.only(objects, "CronJob", "pilotlight-keepalive")["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    [pod_key] = [e["valueFrom"]["secretKeyRef"] for e in container["env"] if e["name"] == "WARMUP_KEY"]
    [job_key] = [e["valueFrom"]["secretKeyRef"] for e in job["env"] if e["name"] == "KEEPALIVE_KEY"]
    assert (pod_key["name"], pod_key["key"]) == (job_key["name"], job_key["key"]) and pod_key["name"] == "pilotlight-keepalive"
    assert not pod_key.get("optional"), "without its key the base must not start (issue 49)"
    assert "Bearer" in " ".join(job["command"])


def test_the_ingress_example_matches_the_front() -> None:
    """overlays/ingress-nginx: body size MAX_UPLOAD_MB, buffering both ways, the front's timeouts."""
    from app.serving import front
    from tests.support import kube

    objects = kube.render(kube.BASE.parent / "overlays" / "ingress-nginx")
    settings = Settings.from_env(kube.configmap_env(objects))
    notes = kube.only(objects, "Ingress")["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    assert notes[prefix + "proxy-body-size"] == f"{settings.max_upload_mb:g}m"
    assert notes[prefix + "proxy-request-buffering"] == notes[prefix + "proxy-buffering"] == "on"
    conf = front.render(settings, run_dir=Path("/run/x"), sockets=Path("/run/x/w"), user=None, rlimit_nofile=4096)
    assert f"proxy_read_timeout {notes[prefix + 'proxy-read-timeout']}s;" in conf
    assert int(notes[prefix + "proxy-send-timeout"]) == settings.send_timeout
    # issue 49: the controller's per-client limits are the pod's, and the overlay as shipped refuses to serve
    assert int(notes[prefix + "limit-connections"]) == settings.max_connections_per_ip
    rps, burst = int(notes[prefix + "limit-rps"]), int(notes[prefix + "limit-rps"]) * int(notes[prefix + "limit-burst-multiplier"])
    assert rps * 60 == settings.rate_limit + settings.get_rate_limit and burst <= settings.rate_burst + settings.get_rate_burst
    refusal = front.untrusted_proxies(settings)
    assert refusal is not None and "TRUSTED_PROXIES holds 192.0.2.1/32" in refusal
    assert front.untrusted_proxies(Settings.from_env({"REQUIRE_TRUSTED_PROXIES": "true"})) is not None
    assert front.untrusted_proxies(Settings.from_env({"REQUIRE_TRUSTED_PROXIES": "true", "TRUSTED_PROXIES": "10.8.0.0/24"})) is None
    assert front.untrusted_proxies(kube_base_settings()) is None  # the base alone only warns


def kube_base_settings() -> Settings:
    from tests.support import kube

    return Settings.from_env(kube.configmap_env(kube.base()))


def test_the_kubelet_probes_a_port_the_service_never_routes_users_to() -> None:
    """Issue 49: the probes ask MANAGEMENT_PORT (the container port `management`); the Service (and
    so the Ingress) sends users to `http` only, and the NetworkPolicy admits nobody to it."""
    from tests.support import kube

    objects = kube.base()
    settings = Settings.from_env(kube.configmap_env(objects))
    [container] = [c for c in kube.only(objects, "Deployment")["spec"]["template"]["spec"]["containers"] if c["name"] == "pilotlight"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert settings.management_port and ports["management"] == settings.management_port != settings.port
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["port"] == "management", probe
    assert [port["targetPort"] for port in kube.only(objects, "Service")["spec"]["ports"]] == ["http"]
    [rule] = kube.only(objects, "NetworkPolicy")["spec"]["ingress"]
    assert all(port["port"] != settings.management_port for port in rule["ports"])
    with pytest.raises(ConfigError, match="MANAGEMENT_PORT"):
        Settings.from_env({"PORT": "9000", "MANAGEMENT_PORT": "9000"})
