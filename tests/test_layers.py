"""Imports go one way: core -> tasks/models -> training -> analysis -> studies -> sweep/report ->
cli (CONTRIBUTING.md, "Architecture"). Read from the source with ``ast``: a module that imports a
higher layer, deferred inside a function or not, fails here."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "toymech"

# Module prefix -> layer. A module may import its own layer or a lower one; ``toymech`` itself
# (the package root, only ``__version__``) may be read from anywhere.
LAYERS = {
    "core": 0, "devices": 1, "tasks": 2, "models": 2, "training": 3, "analysis": 3,
    "sweep.runner": 4, "sweep.backends": 4, "sweep.table": 4, "plots": 5, "display": 5, "studies": 6, "experiments": 7,
    "sweep": 7, "report": 8, "report_scorecards": 8, "explore": 8, "listing": 8, "cli": 9, "cli_zoo": 9, "__main__": 9,
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


def test_no_module_is_over_450_lines():
    long = [f"{p.relative_to(ROOT.parent)}: {n}" for p in ROOT.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 450]
    assert not long, long
