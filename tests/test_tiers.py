"""The two test tiers (``tests/conftest.py``): ``./run.sh test`` runs every test, ``./run.sh test
--quick`` leaves out the slow tier. A test that executes a notebook, opens a browser, builds the
site, kills a process or starts Ray is in the slow tier, whichever way it does it."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import conftest
import pytest

ROOT = Path(__file__).resolve().parents[1]
# What a test calls that puts it in the slow tier: a notebook executed, a browser, the site, a
# process killed, an embedded Ray.
HEAVY = re.compile(r"build_reports\(|execute_notebook\(|webdriver\.|SIGKILL|killpg\(|"
                   r"\"-m\", \"sphinx\"|backend=\"ray\"|\"--backend\", \"ray\"")


def _source(function, seen: dict) -> str:
    if function not in seen:
        try:
            seen[function] = inspect.getsource(function)
        except (OSError, TypeError):
            seen[function] = ""
    return seen[function]


def _heavy(item, seen: dict) -> bool:
    """Whether ``item``'s function, or a fixture of the tests' own that it uses, calls something
    in ``HEAVY``."""
    functions = [getattr(item, "function", None)]
    for found in getattr(item, "_fixtureinfo").name2fixturedefs.values():
        functions += [d.func for d in found if str(ROOT / "tests") in (inspect.getfile(d.func))]
    return any(HEAVY.search(_source(f, seen)) for f in functions if f is not None)


def test_every_test_that_runs_something_heavy_is_in_the_slow_tier(request):
    seen: dict = {}
    quick = [i for i in request.session.items if not i.get_closest_marker("slow")]
    assert [i.nodeid for i in quick if _heavy(i, seen)] == []


def _a_new_report_test(tmp_path):  # never collected: what the rule above must catch
    from toymech.report import build_reports

    build_reports(["notebooks/x.ipynb"], out_dir=tmp_path)


def test_the_heavy_rule_sees_a_new_report_test():
    assert HEAVY.search(inspect.getsource(_a_new_report_test))
    assert not HEAVY.search(inspect.getsource(test_the_heavy_rule_sees_a_new_report_test)
                            .replace("_a_new_report_test", ""))


def test_a_stale_entry_stops_collection(request, monkeypatch):
    items = request.session.items
    conftest._check_slow_lists(items)  # today's lists name what is there
    monkeypatch.setitem(conftest.SLOW_TESTS, "test_tiers::test_gone", "slow")
    with pytest.raises(pytest.UsageError, match="test_tiers::test_gone"):
        conftest._check_slow_lists(items)


def test_quick_leaves_out_the_slow_tier_and_keeps_the_rest():
    """Collected with and without ``--quick``: the quick tier is the full list without the tests
    marked slow, and a module marked slow as a whole (a kill-and-resume test) leaves nothing."""
    files = ["tests/test_report_resume.py", "tests/test_sweep_backends.py"]

    def collected(*args: str) -> set[str]:
        done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                               "-p", "no:cacheprovider", *args, *files], cwd=ROOT,
                              capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return {line for line in done.stdout.splitlines() if "::" in line}

    every, quick, slow = collected(), collected("--quick"), collected("-m", "slow")
    assert quick and slow and quick | slow == every and not quick & slow
    assert not [t for t in quick if t.startswith("tests/test_report_resume.py")]
    assert "tests/test_sweep_backends.py::test_a_real_embedded_ray_records_its_start" in slow
