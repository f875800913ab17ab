"""The layer rules of app/ (docs/architecture.md): each module imports only from its own layer or
the ones below it, and the import graph has no cycle. Read from the source with `ast`, module-level
and function-level imports alike (TYPE_CHECKING imports count too: a cycle in types is a cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Bottom to top. A module belongs to the first layer with a matching prefix.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # settings, errors, metrics, pure data (app.models.manifest: model names and roles, which
    # config checks SEGMENTATION_MODEL against; it imports nothing from app)
    ("core", ("app.native_threads", "app.config", "app.timings", "app.specs", "app.observability", "app.errors",
              "app.cors", "app.models.manifest")),
    ("imaging", ("app.imaging", "app.imageio")),  # pure image math; bytes <-> pixels
    ("models", ("app.models",)),  # sessions, registry, one module per model family
    ("pipelines", ("app.pipelines",)),  # models + pure steps, in order; domain errors, no HTTP
    ("service", ("app.service", "app.warmup")),  # what the app owns: load, warm, readiness
    ("web", ("app.api", "app.web", "app.__main__", "app")),  # blueprints, the page, the factory, the CLI
    ("serving", ("app.serving",)),  # what gunicorn owns: hooks, worker class, admission, memory, watchdog
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in (ROOT / "app").rglob("*.py")}


def layer_of(module: str) -> int:
    """The layer of the longest prefix that holds `module` (so app.serving.hooks is serving, not
    web's catch-all `app`)."""
    found = [(len(prefix), index) for index, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
             if module == prefix or module.startswith(prefix + ".")]
    if not found:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS and docs/architecture.md")
    return max(found)[1]


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The app modules `module` imports (resolved to the longest known module name)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {module: imports(module, path, known) for module, path in known.items()}


def test_every_import_goes_down_or_sideways() -> None:
    upward = [
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in graph().items()
        for target in sorted(targets)
        if layer_of(target) > layer_of(module) and not module.startswith(target + ".")  # a package's own __init__ is fine
    ]
    assert not upward, "imports from a higher layer:\n" + "\n".join(sorted(upward))


def test_no_import_cycle() -> None:
    edges = graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(edges[node]):
            if target not in edges:
                continue
            if state.get(target) == 1:
                cycles.append(path[path.index(target):] + [target] if target in path else [node, target])
            elif target not in state:
                visit(target, [*path, target])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_the_rules_catch_a_violation(tmp_path: Path) -> None:
    """The checker itself: an upward import is reported."""
    source = tmp_path / "probe.py"
    source.write_text("from app.serving import hooks\n")
    known = {**modules(), "app.imaging.probe": source}
    found = imports("app.imaging.probe", source, known)
    assert "app.serving.hooks" in found and layer_of("app.serving.hooks") > layer_of("app.imaging.probe")


def test_each_module_is_in_the_layer_its_longest_prefix_names() -> None:
    assert LAYERS[layer_of("app.serving.hooks")][0] == "serving"
    assert LAYERS[layer_of("app.models.manifest")][0] == "core"
    assert LAYERS[layer_of("app.api.faces")][0] == "web" and LAYERS[layer_of("app")][0] == "web"
