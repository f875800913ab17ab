"""The layer rules of app/: each module imports only from its own layer or the ones below it, and
the import graph has no cycle. The layers are read from the table in docs/architecture.md (the
one place they are written), and the table must name every module of app/ and nothing else.
Imports are read from the source with `ast`, module-level and function-level imports alike
(TYPE_CHECKING imports count too: a cycle in types is a cycle). Around app/: nothing outside bench/
imports bench/, and bench/'s modules import each other in no cycle."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def read_layers(text: str) -> list[tuple[str, tuple[str, ...], str]]:
    """(layer, names, may import) per row of the table under '## Layers', bottom to top.

    In the modules column, `x` is the module app.x (`models/manifest`: app.models.manifest,
    `app/__init__`: app itself) and `x/*` the package app.x with all in it, written "app.x.*".
    """
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]  # past header and rule
    layers = []
    for row in rows:
        layer, names, _holds, may_import = (cell.strip() for cell in row.strip("|").split("|"))
        dotted = []
        for name in re.findall(r"`([^`]+)`", names):
            parts = [part for part in name.removeprefix("app/").split("/") if part != "__init__"]
            dotted.append(".".join(["app", *parts]))
        layers.append((layer, tuple(dotted), may_import))
    return layers


LAYERS: list[tuple[str, tuple[str, ...]]] = [(layer, names) for layer, names, _ in read_layers(DOC.read_text())]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in (ROOT / "app").rglob("*.py")}


def _matches(module: str, name: str) -> bool:
    if name.endswith(".*"):
        return module == name[:-2] or module.startswith(name[:-1])
    return module == name


def layer_of(module: str) -> int:
    """The layer of the longest name that holds `module` (app.models.manifest is core, not models)."""
    found = [(len(name), index) for index, (_, names) in enumerate(LAYERS) for name in names if _matches(module, name)]
    if not found:
        raise AssertionError(f"{module} is in no layer: add it to the table in docs/architecture.md")
    return max(found)[1]


def table_problems(layers: list[tuple[str, tuple[str, ...], str]], known: set[str]) -> list[str]:
    """Where the table and app/ disagree: a module in no row, a name that is no module or package,
    a name in two rows, a "may import" that is not the layers below."""
    simple = [(layer, names) for layer, names, _ in layers]
    problems = []
    for module in sorted(known):
        if not any(_matches(module, name) for _, names in simple for name in names):
            problems.append(f"{module} is in no row")
    names = [name for _, row in simple for name in row]
    for name in names:
        package = name.endswith(".*")
        if (name[:-2] if package else name) not in known:
            problems.append(f"{name} names no module of app/")
        elif package and not (ROOT / Path(*name[:-2].split("."))).is_dir():
            problems.append(f"{name} is written as a package (x/*) but is a module")
        if names.count(name) > 1:
            problems.append(f"{name} stands in more than one row")
    for index, (layer, _, may_import) in enumerate(layers):
        below = ", ".join(name for name, _ in simple[:index])
        said = "nothing above" if index == 0 else "the layers below"
        if not (may_import.startswith(said) or may_import == below):
            problems.append(f"{layer}: may import {may_import!r}, but the rule is {said!r} ({below or 'no layer'})")
    return problems


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


def test_the_table_in_the_doc_names_every_module_and_only_modules() -> None:
    layers = read_layers(DOC.read_text())
    assert len(layers) >= 5 and len({layer for layer, _, _ in layers}) == len(layers)
    assert not table_problems(layers, set(modules())), "docs/architecture.md's layer table and app/ disagree"


def test_a_disagreement_between_the_table_and_app_fails() -> None:
    """The table checker itself: a module left out, a stale name, a wrong "may import"."""
    text = DOC.read_text()
    known = set(modules())
    assert "`imageio`" in text and "| core, imaging |" in text
    doctored = text.replace("`imageio`", "`imagio`").replace("| core, imaging |", "| core |")
    problems = table_problems(read_layers(doctored), known)
    assert "app.imageio is in no row" in problems and "app.imagio names no module of app/" in problems
    assert any(problem.startswith("models: may import 'core'") for problem in problems)
    assert table_problems(read_layers(text), known | {"app.newcomer"}) == ["app.newcomer is in no row"]


def test_each_module_is_in_the_layer_its_longest_prefix_names() -> None:
    assert LAYERS[layer_of("app.serving.hooks")][0] == "serving"
    assert LAYERS[layer_of("app.models.manifest")][0] == "core"
    assert LAYERS[layer_of("app.api.faces")][0] == "web" and LAYERS[layer_of("app")][0] == "web"


# -- tests/ and bench/: one direction ---------------------------------------------------------------


def raw_imports(module: str, path: Path) -> set[str]:
    """Every module name `path` imports, relative imports resolved (module-level and in functions)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            found.update([base] + [f"{base}.{alias.name}" for alias in node.names])
    return found


def imports_bench(module: str, path: Path) -> list[str]:
    return sorted(name for name in raw_imports(module, path) if name == "bench" or name.startswith("bench."))


def test_nothing_outside_bench_imports_bench() -> None:
    """tests/ (its support included), app/, scripts/, .ci/ and the root's own modules never import
    bench/: bench/ measures with the test support (tests/support/), not the other way round."""
    paths = [path for folder in ("app", "tests", "scripts", ".ci") for path in (ROOT / folder).rglob("*.py")]
    paths += sorted(ROOT.glob("*.py"))
    offenders = {str(path.relative_to(ROOT)): found for path in paths if (found := imports_bench(module_name(path), path))}
    assert not offenders, f"modules that import bench: {offenders}"


def test_bench_modules_import_each_other_in_no_cycle() -> None:
    known = {module_name(path): path for path in (ROOT / "bench").rglob("*.py")}
    edges = {module: {name for name in raw_imports(module, path) if name in known and name != module} for module, path in known.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                cycles.append([*trail[trail.index(target):], target])
            elif target not in state:
                visit(target, [*trail, target])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert len(known) > 5 and not cycles, "import cycles in bench/:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_bench_checks_catch_a_violation(tmp_path: Path) -> None:
    """The checkers themselves: a test importing bench, relatively or not, is found."""
    probe = tmp_path / "probe.py"
    probe.write_text("import os\n\n\ndef f():\n    from bench.suite import main\n    from bench import report\n")
    assert imports_bench("tests.probe", probe) == ["bench", "bench.report", "bench.suite", "bench.suite.main"]
    probe.write_text("from .. import bench\nfrom ..benchmarks import x\n")
    assert imports_bench("tests.support.probe", probe) == []  # tests.bench is not bench
    probe.write_text("from . import lanes\n")
    assert "bench.lanes" in raw_imports("bench.report", probe)
