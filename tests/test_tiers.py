"""The two test tiers (``tests/conftest.py``): ``./run.sh test`` runs every test, ``./run.sh test
--quick`` leaves out the slow tier. A test that executes a notebook, opens a browser, builds the
site, kills a process or starts Ray is in the slow tier, whichever way it does it."""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import conftest
import pytest

ROOT = Path(__file__).resolve().parents[1]
# What a test calls that puts it in the slow tier (a call inside ``pytest.raises`` is refused
# before it runs anything): a notebook executed, a browser, a process killed, the site built.
HEAVY_CALLS = {"build_reports", "execute_notebook", "Chrome", "killpg"}
HEAVY_NAMES = {"SIGKILL"}


def _called(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    return getattr(func, "attr", getattr(func, "id", ""))


def _heavy_source(source: str) -> list[str]:
    """The heavy calls and names in ``source`` (a function's), outside ``pytest.raises``."""
    tree = ast.parse(textwrap.dedent(source))
    refused = {id(n) for w in ast.walk(tree) if isinstance(w, ast.With)
               and any(_called(i.context_expr) == "raises" for i in w.items)
               for statement in w.body for n in ast.walk(statement)}
    found = []
    for node in ast.walk(tree):
        if id(node) in refused:
            continue
        if isinstance(node, ast.Call) and _called(node) in HEAVY_CALLS:
            found.append(_called(node))
        elif isinstance(node, (ast.Name, ast.Attribute)) and \
                getattr(node, "attr", getattr(node, "id", "")) in HEAVY_NAMES:
            found.append(getattr(node, "attr", getattr(node, "id", "")))
        elif isinstance(node, ast.List) and [getattr(e, "value", None) for e in node.elts[1:3]] \
                == ["-m", "sphinx"]:
            found.append("sphinx")
    return found


def _heavy(item, seen: dict) -> list[str]:
    """What ``item``'s function, or a fixture of the tests' own that it uses, calls that is
    heavy."""
    functions = [getattr(item, "function", None)]
    for found in item._fixtureinfo.name2fixturedefs.values():
        functions += [d.func for d in found if str(ROOT / "tests") in inspect.getfile(d.func)]
    out = []
    for function in filter(None, functions):
        if function not in seen:
            try:
                seen[function] = _heavy_source(inspect.getsource(function))
            except (OSError, TypeError):
                seen[function] = []
        out += seen[function]
    return out


def test_every_test_that_runs_something_heavy_is_in_the_slow_tier(request):
    """Over the tests of this session (every test in CI's full run)."""
    seen: dict = {}
    quick = [i for i in request.session.items if not i.get_closest_marker("slow")]
    assert {i.nodeid: _heavy(i, seen) for i in quick if _heavy(i, seen)} == {}


def test_the_heavy_rule_sees_a_new_report_test_and_not_a_refusal():
    """The null: a new test that executes a notebook is seen; one that only sees the same call
    refused, and a test that calls nothing heavy, are not."""
    run = "def test_new(tmp_path):\n    build_reports(['x.ipynb'], out_dir=tmp_path)\n"
    refused = ("def test_refused(tmp_path):\n    with pytest.raises(ValueError):\n"
               "        build_reports(['x.ipynb'], out_dir=tmp_path, jobs=0)\n")
    killed = "def test_killed(p):\n    os.killpg(p.pid, signal.SIGKILL)\n"
    assert _heavy_source(run) == ["build_reports"] and _heavy_source(refused) == []
    assert sorted(_heavy_source(killed)) == ["SIGKILL", "killpg"]
    assert _heavy_source(inspect.getsource(test_a_stale_entry_stops_collection)) == []


def test_a_stale_entry_stops_collection(request, monkeypatch):
    items = request.session.items  # this session's, after --quick or -k left some out
    monkeypatch.setattr(conftest, "SLOW_FIXTURES", {})
    here = {request.node.originalname: "slow"}
    monkeypatch.setattr(conftest, "SLOW_TESTS", {"test_tiers": here})
    conftest._check_slow_lists(items)  # names a test that is there
    here["test_gone"] = "slow"
    with pytest.raises(pytest.UsageError, match="test_tiers::test_gone"):
        conftest._check_slow_lists(items)


def test_quick_leaves_out_the_slow_tier_and_keeps_the_rest():
    """Collected with ``--quick``: a module in the slow tier as a whole (a kill-and-resume test)
    and a test listed by name (a real Ray) are left out, their neighbours kept."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "--quick",
                           "-p", "no:cacheprovider", "tests/test_report_resume.py",
                           "tests/test_sweep_backends.py"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    quick = {line.split("::")[1].split("[")[0] for line in done.stdout.splitlines() if "::" in line}
    assert "test_a_bad_start_budget_is_refused" in quick
    assert "test_a_real_embedded_ray_records_its_start" not in quick
    assert "test_a_killed_report_trains_only_what_is_missing_on_rerun" not in quick
