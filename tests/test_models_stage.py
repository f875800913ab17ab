"""The image's `models` stage: it copies a handful of the app's modules only (so a code change does
not invalidate the model layer), then runs the fetch command with them. A module that the command
needs and the stage does not copy breaks the image build; these tests break first."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILES = ("Dockerfile", "Dockerfile.gpu")


def _stage(dockerfile: str) -> str:
    return (ROOT / dockerfile).read_text().split("FROM venv AS models", 1)[1].split("\nFROM ", 1)[0]


def _copied(stage: str) -> list[str]:
    """The app files the stage's COPY lines name, as paths from the repository root."""
    lines = stage.replace("\\\n", " ").splitlines()
    files: list[str] = []
    for line in lines:
        if line.startswith("COPY app/"):
            files += [word for word in line.split()[1:-1] if word.startswith("app/")]
    return files


def _imports(path: Path, *, top_level_only: bool) -> set[str]:
    """The app.models modules `path` imports (relative imports), at module level or anywhere."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module] if node.module else [alias.name for alias in node.names]
            found.update(f"{name.split('.')[0]}.py" for name in names)
    return found


def test_the_models_stage_copies_what_the_fetch_imports() -> None:
    """The fetch command's module-level imports and everything quantised.py (which it runs there
    with --int8-only) imports."""
    stage = _stage("Dockerfile")
    copied = set(re.findall(r"app/models/(\w+\.py)", stage))
    models = ROOT / "app" / "models"
    needed = {"__init__.py", "__main__.py", "quantised.py"}
    pending = [("__main__.py", True), ("quantised.py", False)]
    while pending:
        name, top_only = pending.pop()
        for module in _imports(models / name, top_level_only=top_only) - needed:
            needed.add(module)
            pending.append((module, True))
    assert needed <= copied, f"the models stage lacks {sorted(needed - copied)}"
    assert all(flag in stage for flag in ("--int8-only", "--int8;;", "--no-int8"))  # U2NET_VARIANTS int8, both, fp32


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_the_fetch_command_runs_from_the_files_the_stage_copies(dockerfile: str, tmp_path: Path) -> None:
    """The command starts from those files alone, as in the build: settings read and validated
    (config imports what its checks need), the manifest listed. The static check above follows
    app.models only; this one also catches a module that app/config.py needs."""
    src = tmp_path / "src"
    for name in _copied(_stage(dockerfile)):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env |= {"MODEL_HOME": str(tmp_path / "models"), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "app.models", "list"], cwd=src, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "u2net" in done.stdout
