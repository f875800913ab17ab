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
