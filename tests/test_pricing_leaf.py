"""bench/pricing is a leaf (issue 65): it prices the plain numbers bench/costs.py describes each job by, from its
rates file, and imports nothing of training, data loading or the runner; the runner, handed a deadline predicate,
imports no pricing. Read from the modules' own import statements, not from their docstrings."""

import ast
from pathlib import Path

import robustft

BENCH = Path(robustft.__file__).parent / "bench"
# what a pricing module may import from robustft: itself, the error types, the core count
PRICING_MAY_IMPORT = ("robustft.bench.pricing", "robustft.errors", "robustft.runtime")


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: a relative import"
            modules |= {f"{node.module}.{alias.name}" for alias in node.names}  # from robustft import runtime
    return modules


def test_pricing_imports_nothing_but_itself_the_errors_and_the_core_count():
    modules = sorted((BENCH / "pricing").glob("*.py"))
    assert {p.name for p in modules} >= {"__init__.py", "rates.py", "work.py", "forecast.py"}
    for path in modules:
        ours = {m for m in imported_modules(path) if m.split(".")[0] == "robustft"}
        strays = {m for m in ours if not m.startswith(PRICING_MAY_IMPORT)}
        assert not strays, f"bench/pricing/{path.name} imports {sorted(strays)}"


def test_the_runner_imports_no_pricing_and_the_rates_file_holds_the_workers_speedup():
    pricing_side = ("robustft.bench.pricing", "robustft.bench.costs", "robustft.bench.run")
    assert not {m for m in imported_modules(BENCH / "runner.py") if m.startswith(pricing_side)}
    for path in sorted((BENCH / "pricing").glob("*.py")):
        assert "1.7" not in path.read_text(encoding="utf-8"), f"a machine rate in bench/pricing/{path.name}"


def test_the_walk_sees_a_stray_import(tmp_path):
    stray = tmp_path / "stray.py"
    stray.write_text("from robustft.training.method import resolve_method\nimport robustft.data.tasks\n")
    assert {"robustft.training.method.resolve_method", "robustft.data.tasks"} <= imported_modules(stray)


def test_each_objective_declares_the_steps_and_copies_its_constructor_defaults_to():
    """The bench prices by the declared costs; an objective whose constructor default drifted from its declaration
    would be priced at the wrong number of ascent steps or ensemble copies."""
    import inspect

    from robustft.training.objectives import OBJECTIVES

    declared = {"pgd": (5, 1), "trades": (5, 1), "infobert": (3, 1), "ascc": (5, 1), "dne": (3, 12)}
    declared |= {"safer": (None, 100), "ranmask": (None, 100), "standard": (None, 1)}  # the papers' counts
    for name, (steps, copies) in declared.items():
        cls = OBJECTIVES[name]
        assert (cls.default_steps, cls.copies) == (steps, copies), name
        defaults = {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()}
        assert defaults.get("steps", steps) == steps and defaults.get("copies", copies) == copies, name
