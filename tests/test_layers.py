"""Imports go one way: core -> tasks/models -> training/analysis -> zoo -> sweep -> plots/display
-> studies -> experiments/grid -> report -> cli (CONTRIBUTING.md, "Architecture"). Read from the source with ``ast``: a module that imports a
higher layer, deferred inside a function or not, fails here."""

import ast
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "toymech"

# Module prefix -> layer. A module may import its own layer or a lower one; ``toymech`` itself
# (the package root, only ``__version__``) may be read from anywhere.
LAYERS = {
    "core": 0, "files": 0, "plugins": 0, "devices": 1, "tasks": 2, "models": 2, "training": 3, "analysis": 3, "zoo": 4,
    "sweep": 5, "plots": 6, "display": 6, "studies": 7, "experiments": 8, "grid": 8, "maps": 8,
    "maps.page": 9, "report": 9, "listing": 9, "explore": 9, "cli": 10, "__main__": 10,
}
FORBIDDEN = {("analysis", "training"), ("training", "analysis")}  # same layer, kept apart


def _layer(module: str) -> tuple[str, int]:
    parts = module.split(".")[1:]
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in LAYERS:
            return key, LAYERS[key]
    raise AssertionError(f"{module}: no layer in tests/test_layers.py")


def _imports(path: Path) -> list[tuple[str, int]]:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                names = [target] if node.module else [f"{target}.{a.name}" for a in node.names]
            else:
                names = [node.module or ""]
            out += [(n, node.lineno) for n in names if n.startswith("toymech")]
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.startswith("toymech")]
    return out


def test_no_module_imports_a_higher_layer():
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(
            ".__init__")
        if rel == "toymech":
            continue
        here, level = _layer(rel)
        for target, line in _imports(path):
            if target == "toymech":
                continue
            there, other = _layer(target)
            if other > level or (here.split(".")[0], there.split(".")[0]) in FORBIDDEN:
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line} imports {target} "
                             f"(layer {there}={other} above {here}={level})")
    assert not wrong, "\n".join(wrong)


# Size is a symptom, not the rule (a file holds one concept; one idea is never cut in two to meet
# a count): past LONG lines a module is named in a warning, to be read for a second concept;
# past TOO_LONG it surely holds two, and fails.
LONG, TOO_LONG = 450, 800


def test_no_module_is_far_too_long():
    sizes = {f"{p.relative_to(ROOT.parent)}": len(p.read_text().splitlines())
             for p in ROOT.rglob("*.py")}
    long = sorted(f"{name}: {n}" for name, n in sizes.items() if n > LONG)
    if long:
        warnings.warn(f"modules over {LONG} lines (one concept each?): {', '.join(long)}",
                      stacklevel=1)
    assert not [x for x in long if int(x.rsplit(": ", 1)[1]) > TOO_LONG], long


def _modules() -> dict[str, list[str]]:
    """Every module of toymech by its layer key (``__main__`` left out: importing it runs the
    command)."""
    by_key: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(
            ".__init__")
        if rel == "toymech" or rel.endswith("__main__"):
            continue
        by_key.setdefault(_layer(rel)[0], []).append(rel)
    return by_key


@pytest.mark.parametrize("key", sorted(_modules()))
def test_importing_a_layer_loads_nothing_above_it(key):
    """The ``ast`` rule above sees only import statements; this one imports the modules of one
    layer key alone in a fresh interpreter and reads ``sys.modules``: a package ``__init__`` that
    pulls in a higher layer at import time (``sweep/__init__`` once imported ``grid`` ->
    ``experiments`` -> every study) fails here."""
    modules = _modules()[key]
    code = ("import importlib, json, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('toymech.'))))")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT.parent)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=ROOT.parent)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    level = LAYERS[key]
    above = [m for m in loaded
             if (there := _layer(m))[1] > level or (key.split(".")[0], there[0]) in FORBIDDEN]
    assert not above, f"importing {key} (layer {level}) loads {above}"


def _import_graph() -> dict[str, set[str]]:
    """{module: the toymech modules it imports} (every import statement, deferred or not; a
    package and its own submodules are one room, so their links are left out)."""
    modules = {".".join(p.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(".__init__")
               for p in ROOT.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        here = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(
            ".__init__")
        targets = {resolve(t) for t, _ in _imports(path)}
        graph[here] = {t for t in targets if t and t != here and not t.startswith(here + ".")
                       and not here.startswith(t + ".")}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one
    module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_import_cycles_are_counted():
    """The counter itself: a circle of three, a chain and a self-contained pair."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}, "g": set()}
    assert sorted(import_cycles(graph)) == [["a", "b", "c"], ["e", "f"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    """No toymech modules import each other, directly or round a circle (deferred imports too)."""
    cycles = import_cycles(_import_graph())
    assert not cycles, f"{len(cycles)} import circle(s): {cycles}"


# The generic layers ask the study registry (``studies.protocol``) and never name a study: a
# study's package imported by name from maps, report, cli, sweep, grid or listing would make a
# study-specific block of generic code (study 3's width ladder was one in report/results.py).
GENERIC = ("maps", "report", "cli", "sweep", "grid", "listing", "explore")


def test_generic_code_imports_no_study_by_name():
    studies = {p.name for p in (ROOT / "studies").iterdir() if (p / "__init__.py").is_file()}
    assert {"induction", "birth", "random_transformers"} <= studies  # the rule has studies to see
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(".__init__")
        if rel == "toymech" or rel.split(".")[1] not in GENERIC:
            continue
        for target, line in _imported_names(path):
            parts = target.split(".")
            if parts[:2] == ["toymech", "studies"] and len(parts) > 2 and parts[2] in studies:
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line} imports {target}")
    assert not wrong, "\n".join(wrong)


def _imported_names(path: Path) -> list[tuple[str, int]]:
    """``_imports`` and, for ``from X import a, b``, ``X.a`` and ``X.b`` too (a study imported
    as a name of ``toymech.studies``)."""
    out = list(_imports(path))
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    package = parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            base = (".".join(package[:len(package) - node.level + 1] + [node.module])
                    if node.level else node.module)
            out += [(f"{base}.{a.name}", node.lineno) for a in node.names]
    return out


def test_the_generic_rule_sees_a_study_imported_as_a_name(tmp_path, monkeypatch):
    """The rule above on a module made to break it: ``from ..studies import random_transformers``."""
    fake = ROOT / "report" / "results.py"
    text = fake.read_text() + "\nfrom ..studies import random_transformers  # noqa\n"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: text if self == fake
                        else Path.read_bytes(self).decode())
    with pytest.raises(AssertionError, match="report/results.py.*toymech.studies.random_transformers"):
        test_generic_code_imports_no_study_by_name()
