"""The package's imports point down the layers and never run in a circle (read from the source with `ast`).

Layers, bottom to top: ground (errors, atomic, clock, config, resources, runtime, runs) -> data -> models ->
adversary -> defenses (SAFER, RanMASK, DNE: noise, ensemble, certificate) -> verbs (their shared skeleton) ->
training | attacks | evaluation (side by side, never importing each other) -> report -> bench | results (the
re-check of committed runs) -> cli.
The project's own studies (studies/, beside the package) may import anything of robustft; robustft never imports them.
The report reads run folders and needs nothing of the bench; a bench builds its report when its jobs are done, so
`robustft.bench(cfg)` does what `robustft bench` does. Function-level imports count too: a lazy import is still a
dependency.
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "robustft"
GROUND = {"errors", "atomic", "clock", "config", "resources", "runtime", "runs", "version"}
LAYERS = {
    "data": 1,
    "models": 2,
    "adversary": 3,
    "defenses": 4,  # the ensemble defenses: training, the attacks' victim and the certificate all use them
    "verbs": 4.5,  # the skeleton train, evaluate, attack and probe share (resolve, inherit, digests, open, log)
    "training": 5,
    "attacks": 5,
    "evaluation": 5,
    "report": 6,
    "bench": 7,
    "results": 7,  # results as data: re-checks committed runs against the reports the code builds
    "cli": 8,
    "__init__": 8,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def top_part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer(module: str) -> int:
    part = top_part(module)
    return 0 if part in GROUND else LAYERS[part]


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """robustft modules that `path` imports (`from robustft import x` resolves to robustft.x when it is one)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("robustft")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("robustft"):
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in modules else node.module)
    return {m for m in found if m in modules}


def graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in SRC.rglob("*.py")}
    return {name: imports_of(path, set(paths)) for name, path in paths.items()}


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_every_module_has_a_layer():
    assert all(top_part(m) in GROUND or top_part(m) in LAYERS for m in graph()), "add the new package to LAYERS"


def test_imports_point_down_the_layers():
    upward = []
    for module, targets in graph().items():
        if module == "robustft":
            continue  # the package top re-exports the verbs for users
        for target in targets:
            same_package = top_part(target) == top_part(module)
            if target == "robustft" or (not same_package and layer(target) >= layer(module) and layer(module) > 0):
                upward.append(f"{module} -> {target}")
            elif layer(module) == 0 and layer(target) > 0:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports that run up (or across) the layers:\n" + "\n".join(sorted(upward))


def test_no_import_cycles():
    edges = graph()
    # a module importing its own package's __init__ (re-exports, registries) is not a cycle of design
    edges = {m: {t for t in ts if not within(m, t)} for m, ts in edges.items()}
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in edges.get(node, ()):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_library_never_imports_the_studies():
    """studies/ is this project's notebook, not shipped in the wheel: an import of it from src would fail for users."""
    offenders = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{module_name(path)} -> {n}" for n in names if n.split(".")[0] == "studies"]
    assert not offenders, "the library imports studies/:\n" + "\n".join(offenders)


@pytest.mark.parametrize("bad", ["robustft.training.loop", "robustft.attacks.victim"])
def test_the_checker_catches_an_upward_import(tmp_path, bad):
    source = tmp_path / "x.py"
    source.write_text(f"from {bad} import something\n")
    assert imports_of(source, {bad}) == {bad} and layer(bad) > layer("robustft.models.im")
