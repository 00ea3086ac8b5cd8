"""The package's layering (docs/architecture.md): no import cycle, lm/ above the core only,
small modules, and ``import grpo_lab.lm.config`` without transformers."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "grpo_lab"
MAX_LINES = 500
APP = ("grpo_lab.figures", "grpo_lab.__main__", "grpo_lab.exercises",   # may import any layer
       "grpo_lab.translations", "grpo_lab.reading",   # reading: counts notebooks and their exercises
       "grpo_lab.readme_table")                        # the README table: reading, roadmap and the exercises


def _module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _imports(name: str) -> set[str]:
    """Every grpo_lab module ``name`` imports, at module level or inside a function."""
    path = MODULES[name]
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t and t != name and t != "grpo_lab":
                out.add(t)
    return out


GRAPH = {name: _imports(name) for name in MODULES}


def _layer(name: str) -> str:
    if name.startswith(APP):
        return "app"
    if name.startswith("grpo_lab.viz"):
        return "viz"
    if name.startswith("grpo_lab.lm"):
        return "lm"
    return "core"


ALLOWED = {"core": {"core"}, "lm": {"core", "lm"}, "viz": {"core", "lm", "viz"}, "app": {"core", "lm", "viz", "app"}}


def test_no_import_cycle():
    state, stack = {}, []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in sorted(GRAPH[n]):
            if state.get(m) == "open":
                # a package importing its own submodules is how a package is made, not a cycle
                cycle = stack[stack.index(m):] + [m]
                if not all(b.startswith(a + ".") or a.startswith(b + ".") for a, b in zip(cycle, cycle[1:])):
                    pytest.fail("import cycle: " + " -> ".join(cycle))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = "done"

    for n in sorted(GRAPH):
        if n not in state:
            visit(n)


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_imports_only_go_down(name):
    bad = sorted(m for m in GRAPH[name] if _layer(m) not in ALLOWED[_layer(name)])
    assert not bad, f"{name} ({_layer(name)}) imports {bad} from a layer above it"


def test_core_and_lm_are_what_the_docs_say():
    assert "grpo_lab.lm.config" in MODULES and "grpo_lab.methods" in MODULES
    assert GRAPH["grpo_lab.lm.config"] <= {"grpo_lab.methods", "grpo_lab._checks", "grpo_lab.advantages",
                                           "grpo_lab.losses", "grpo_lab.lm.tasks"}
    assert "grpo_lab.lm.handoff" not in GRAPH["grpo_lab.lm.config"]
    assert GRAPH["grpo_lab.methods"] <= {"grpo_lab._checks"}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_over_500_lines(name):
    n = len(MODULES[name].read_text().splitlines())
    assert n <= MAX_LINES, f"{MODULES[name].relative_to(PKG.parent)} has {n} lines (> {MAX_LINES}): split it"


def test_config_does_not_load_transformers():
    code = "import sys, grpo_lab.lm.config; print('transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_design_contract_names():
    # the public API of the design notes (../shared/DESIGN.md) survives the moves
    import grpo_lab.lm as lm
    from grpo_lab import advantages, bandit, guess_number, losses

    for mod, names in ((bandit, ("prob_a", "grad_estimate", "estimator_stats", "optimal_baseline")),
                       (guess_number, ("action_values",)),
                       (advantages, ("group_advantages", "rloo_advantages")),
                       (losses, ("policy_loss_per_token", "kl_penalty", "aggregate", "grpo_loss"))):
        for name in names:
            assert callable(getattr(mod, name)), f"{mod.__name__}.{name}"
    av = guess_number.action_values((9, 10, 11), 2)
    assert av[11].a < 0 < av[10].a                                      # the seed's example
    assert lm.GRPOConfig.preset("dr_grpo").preset == "dr_grpo" and callable(lm.train)
    assert set(lm.GRPOConfig.PRESETS) >= {"grpo", "dr_grpo", "dapo", "gspo"}
