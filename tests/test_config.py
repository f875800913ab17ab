from __future__ import annotations

from pathlib import Path

import pytest

from app.config import ConfigError, Settings
from app.models.sessions import CPU, CUDA, ProviderError, resolve_providers


def test_defaults() -> None:
    settings = Settings.from_env({"HOME": "/home/u"})
    assert settings.port == 8000 and settings.host == "127.0.0.1"
    assert settings.models == ("u2net", "centerface") and settings.segmentation_model == "u2net"
    assert settings.preload_models is True and settings.warmup_requests == 2
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

    settings = Settings.from_env({"ORT_CPU_ARENA": "false", "ORT_MEM_PATTERN": "off", "MALLOC_TRIM": "idle", "MALLOC_TRIM_IDLE_S": "2.5"})
    providers = settings.session_providers()
    assert providers.cpu_arena is False and providers.mem_pattern is False
    assert settings.malloc_trim == "idle" and settings.malloc_trim_idle_s == 2.5
    options = session_options(cpu_arena=providers.cpu_arena, mem_pattern=providers.mem_pattern)
    assert options.enable_cpu_mem_arena is False and options.enable_mem_pattern is False
    assert session_options().enable_cpu_mem_arena is True
    with pytest.raises(ConfigError, match="MALLOC_TRIM"):
        Settings.from_env({"MALLOC_TRIM": "always"})


def test_inference_gate_trims_after_a_request_only_when_asked() -> None:
    from app.memory import malloc_trim
    from app.runtime import InferenceGate

    assert malloc_trim() is True  # glibc here
    eager = InferenceGate(queue_depth=1, wait_timeout=1.0, trim_after_request=True)
    lazy = InferenceGate(queue_depth=1, wait_timeout=1.0)
    for gate in (eager, lazy):
        with gate.slot():
            assert gate.idle_for() == 0.0
    assert eager.trimmed is True and lazy.trimmed is False
    assert lazy.idle_for() >= 0.0
    lazy.trim()
    assert lazy.trimmed is True
