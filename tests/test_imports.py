"""Every module imports on its own, in any order: no import cycle, and none hidden behind an
import deferred into a function (only the command line defers its imports, so that ``toymech
--help`` and a mistyped argument answer before torch loads)."""

import ast
import importlib
import pkgutil
import sys
from pathlib import Path

import toymech

ROOT = Path(toymech.__file__).parent
DEFERRED_OK = "cli"  # the command line package: its start-up speed


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages([str(ROOT)], "toymech.")
                  if not m.name.startswith("toymech.studies._template") and m.name != "toymech.__main__")


def test_every_module_imports_first():
    failed = []
    for name in _modules():
        saved = {k: v for k, v in sys.modules.items() if k == "toymech" or k.startswith("toymech.")}
        for k in saved:
            del sys.modules[k]
        try:
            importlib.import_module(name)  # first in a fresh toymech: a cycle shows here
        except Exception as exc:
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
        finally:
            for k in [k for k in sys.modules if k == "toymech" or k.startswith("toymech.")]:
                del sys.modules[k]
            sys.modules.update(saved)
    assert not failed, "\n".join(failed)


def test_no_toymech_import_is_deferred_into_a_function():
    deferred = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.parent.name == DEFERRED_OK:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.ImportFrom) and (inner.level or (inner.module or "").startswith("toymech")):
                        deferred.append(f"{path.relative_to(ROOT.parent)}:{inner.lineno}")
                    elif isinstance(inner, ast.Import) and any(a.name.startswith("toymech") for a in inner.names):
                        deferred.append(f"{path.relative_to(ROOT.parent)}:{inner.lineno}")
    assert not deferred, deferred


def test_import_toymech_is_light_and_explore_is_a_lazy_attribute():
    """``import toymech`` loads no torch; ``toymech.explore(...)`` works without importing
    ``toymech.explore`` first (it failed before), and is the callable module itself."""
    import subprocess

    code = ("import sys, toymech\n"
            "assert 'torch' not in sys.modules and 'toymech.explore' not in sys.modules\n"
            "explore = toymech.explore\n"
            "assert callable(explore) and explore is sys.modules['toymech.explore']\n"
            "assert explore.Explorer.__name__ == 'Explorer'\n"
            "try:\n    toymech.no_such_thing\nexcept AttributeError as e:\n    print('ok', e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT.parent)})
    assert done.returncode == 0 and "ok module 'toymech' has no attribute 'no_such_thing'" in done.stdout, done.stderr


def test_one_name_per_thing_a_public_class_is_defined_once():
    """``Plan`` was defined in two modules and ``ProbeData`` in three: a second class with the
    same name is a defect (CONTRIBUTING's words). Public classes, template copies aside."""
    where: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        if "_template" in path.parts:
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where.setdefault(node.name, []).append(str(path.relative_to(ROOT.parent)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert not twice, twice
