"""The import graph, read from the source (ast, without importing anything):

- the modules of evaluation/ (but the plug-in packages and migrations) import one another without
  a circle, counting imports inside functions too, which would otherwise hide one;
- an import inside a function of the core (evaluation/ outside the plug-in packages, leaderboard/,
  annotation/, config/) says why it is not at the top, in a comment on its line or the line above
  it (or above the run of imports it opens);
- no module of the core (evaluation/ outside the plug-in packages, leaderboard/, annotation/,
  config/) imports a plug-in package: the registry (evaluation/benchmarks/__init__.py) loads them
  by the names in FLOORBOARD_BENCHMARKS."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "evaluation" / "benchmarks"
CORE = ("evaluation", "leaderboard", "annotation", "config")
REGISTRY = BENCHMARKS / "__init__.py"


def plugin_packages() -> list[str]:
    found = [
        ".".join(folder.relative_to(REPO).parts)
        for folder in BENCHMARKS.iterdir()
        if (folder / "__init__.py").exists()
    ]
    return [*found, "tests.toyplugin"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def core_files(tops=CORE) -> list[Path]:
    plugins = [folder for folder in BENCHMARKS.iterdir() if folder.is_dir()]
    return [
        path
        for top in tops
        for path in sorted((REPO / top).rglob("*.py"))
        if "migrations" not in path.parts
        and not any(path.is_relative_to(folder) for folder in plugins)
    ]


def imported(path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement names: for ``from package import name``,
    ``package.name`` (a module or not) and ``package``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    module = node.module or ""
    if node.level:
        package = module_name(path).split(".")
        if path.name != "__init__.py":
            package = package[:-1]
        base = package[: len(package) - (node.level - 1)]
        module = ".".join([*base, module] if module else base)
    return [module, *(f"{module}.{alias.name}" for alias in node.names)]


def targets(path: Path, node: ast.Import | ast.ImportFrom, modules) -> set[str]:
    """The modules among ``modules`` an import statement loads, each the deepest it names:
    ``from package import module`` loads the module, ``from module import name`` the module.
    (A submodule's package runs first, as Python imports it; like other import-graph tools,
    that is not counted as an edge.)"""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        module, *members = imported(path, node)
        names = [member if member in modules else module for member in members]
    found = set()
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name:
            found.add(name)
    return found


def top_level_nodes(tree: ast.Module) -> set[int]:
    """Import statements that run when the module loads: in its body, or in a top-level
    if/try (an ``if TYPE_CHECKING`` block, an optional import)."""
    found = set()
    for statement in tree.body:
        if isinstance(statement, ast.If | ast.Try):
            found.update(id(node) for node in ast.walk(statement))
        found.add(id(statement))
    return found


def import_nodes(tree: ast.Module):
    return [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def evaluation_graph() -> dict[str, set[str]]:
    files = {module_name(path): path for path in core_files(("evaluation",))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        graph[name] = set()
        for node in import_nodes(ast.parse(path.read_text())):
            graph[name] |= targets(path, node, files) - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One path per circle found by a depth-first walk (each back edge closes one)."""
    state: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                found.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return found


def test_cycles_finds_a_circle_of_three_and_none_in_a_chain():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_evaluation_imports_without_a_circle():
    graph = evaluation_graph()
    # The graph sees the modules the pipeline is made of, and their imports inside functions.
    assert "evaluation.services.work" in graph["evaluation.services.pipeline"]
    assert "evaluation.selectors" in graph["evaluation.services.spending"]
    # The services queue tasks by name: none imports the tasks module, which imports them.
    services = [name for name in graph if name.startswith("evaluation.services")]
    assert not [name for name in services if "evaluation.tasks" in graph[name]]
    found = cycles(graph)
    assert not found, "import circles in evaluation/:\n" + "\n".join(" -> ".join(c) for c in found)


def _comment(line: str) -> bool:
    return line.strip().startswith("#") or "  # " in line


def test_every_import_inside_a_function_says_why():
    unexplained = []
    for path in core_files():
        lines = path.read_text().splitlines()
        tree = ast.parse("\n".join(lines))
        top = top_level_nodes(tree)
        for block in ast.walk(tree):
            body = getattr(block, "body", None)
            if not isinstance(body, list) or isinstance(block, ast.Module):
                continue
            run: list[ast.stmt] = []
            for statement in [*body, None]:
                if isinstance(statement, ast.Import | ast.ImportFrom) and id(statement) not in top:
                    run.append(statement)
                    continue
                if run:
                    above = lines[run[0].lineno - 2] if run[0].lineno > 1 else ""
                    own = lines[run[0].lineno - 1 : run[-1].end_lineno]
                    if not _comment(above) and not any(map(_comment, own)):
                        unexplained.append(f"{path.relative_to(REPO)}:{run[0].lineno}")
                run = []
    assert not unexplained, "imports inside a function with no comment saying why:\n" + "\n".join(
        unexplained
    )


def test_the_core_imports_no_plugin_package():
    plugins = plugin_packages()
    assert len(plugins) > 2  # the walk sees the plug-ins
    found = []
    for path in core_files():
        if path == REGISTRY:
            continue
        for node in import_nodes(ast.parse(path.read_text())):
            for target in imported(path, node):
                if any(target == plugin or target.startswith(f"{plugin}.") for plugin in plugins):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: {target}")
    assert not found, "the core imports a plug-in package:\n" + "\n".join(found)
