import os
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from waiting import limit

from toymech.devices import apply_threads

# Tests never touch the user's cache and never reach the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# An embedded Ray gets the start-up budget of a machine like the one the limits were written on,
# scaled to this one (tests/waiting.py), so a slow or busy machine waits longer instead of failing.
os.environ.setdefault("TOYMECH_RAY_START_S", str(round(limit(240))))
# The test process's threads, chosen explicitly (``apply_threads``: the library's thread policy
# keeps them, and its claim tells the notebook kernels and subprocesses started here).
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Several pytest workers (./run.sh test): each gets its share of the cores, and the notebook
    # kernels and subprocesses it starts see the others' claims through the thread policy.
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    apply_threads(max(1, min(2, torch.get_num_threads() // _workers)), log=None)
else:
    apply_threads(min(2, torch.get_num_threads()), log=None)


# The two tiers. `./run.sh test` runs every test (CI); `./run.sh test --quick` (pytest --quick, or
# -m "not slow") leaves out the slow tier: every test carrying one of SLOW_MARKS, every test using
# one of SLOW_FIXTURES (MODULE.NAME: where the fixture is defined) and every test in SLOW_TESTS
# (a whole module, or its functions, each with all its parametrisations). CONTRIBUTING.md says
# when to run which. `slow` there: a test that starts fresh Python processes (each imports torch
# again: the CLI, plugins, imports checked in a new interpreter) or trains or measures models for
# more than a couple of seconds. An entry naming a fixture or test that a collected module no
# longer has stops collection (tests/test_tiers.py).
SLOW_MARKS = ("notebook", "browser", "sphinx", "kill", "ray", "slow")
SLOW_FIXTURES = {
    "conftest.smoke_reports": "notebook",  # every project notebook executed at smoke
    "conftest.smoke_map_page": "notebook",  # a map trained and its page rendered
    "test_browser.browser": "browser",  # headless Chromium
    "test_docs.site": "sphinx",
    "test_report.built": "notebook",
    "test_report_reader.reader": "notebook",
    "test_sweep.both_backends": "ray",
}
SLOW_TESTS = {
    "test_bad_input": {
        "test_end_to_end_no_traceback": "slow",
    },
    "test_bad_input_reliability": {
        "test_handled_two_writers_of_one_map_at_once_keep_every_row": "slow",
    },
    "test_bad_input_reports": {
        "test_a_killed_rerun_leaves_the_last_finished_run_served": "kill",
        "test_ctrl_c_during_a_report_ends_on_one_line": "kill",
        "test_two_reports_into_one_out": "notebook",
    },
    "test_callbacks_in_processes": {
        "test_birth_probes_in_spawned_processes_equal_a_run_in_this_process": "slow",
    },
    "test_claims_null": {
        "test_null_world": "slow",
    },
    "test_cli": {
        "test_bad_input_is_one_line_exit_2": "slow",
        "test_train_list_and_config_round_trip": "slow",
        "test_report_exit_codes_and_outputs": "slow",
        "test_report_default_notebooks_from_dir": "slow",
        "test_bad_config_file": "slow",
    },
    "test_docs": {
        "test_getting_started_runs": "slow",
        "test_the_readme_example_runs_and_ends_with_a_figure": "slow",
    },
    "test_imports": {
        "test_every_module_imports_first": "slow",
        "test_import_toymech_is_light_and_explore_is_a_lazy_attribute": "slow",
    },
    "test_induction_study": {
        "test_seeds_train_once_and_are_measured_per_seed": "slow",
        "test_measure_returns_a_new_model_and_leaves_its_input_as_it_was": "slow",
    },
    "test_knobs": {
        "test_the_documented_papermill_command_gives_the_notebook_a_mapping": "notebook",
        "test_null_world_at_a_variant": "slow",
        # build_reports with its runs stubbed: light, but the tier rule reads the call
        "test_two_spellings_of_one_setting_are_one_report_and_the_source_value_none": "slow",
    },
    "test_ladder": {
        "test_the_ladder_command_and_the_map_give_the_same_table_from_one_zoo": "slow",
    },
    "test_layers": {
        "test_importing_a_layer_loads_nothing_above_it": "slow",
    },
    "test_map_page": {
        "test_map_page_is_built_and_listed_in_the_index": "slow",
    },
    "test_maps": {
        "test_smoke_map_killed_and_resumed": "kill",
        "test_every_study_maps_at_smoke": "slow",
        "test_report_folder_refused_before_any_training": "slow",
    },
    "test_models": {
        "test_saved_model_loads_in_a_fresh_interpreter": "slow",
    },
    "test_plugins": {
        "test_an_installed_distributions_entry_points_register_its_task_and_study": "slow",
        "test_import_registers_a_task_and_a_study": "slow",
        "test_without_the_import_the_name_is_unknown_and_bad_modules_refused": "slow",
        "test_a_broken_installed_plugin_is_one_line_naming_its_entry_point": "slow",
        "test_a_copy_of_the_template_outside_the_package_is_a_study": "slow",
    },
    "test_random_transformers": {
        "test_measure_seeds_from_the_zoo_equals_the_notebooks_tables": "slow",
    },
    "test_report": {
        "test_parallel_jobs_keep_order_and_results": "notebook",
        "test_a_variant_report_never_replaces_the_plain_one": "notebook",
    },
    "test_report_reader": {
        "test_progress_names_the_section_of_the_running_cell": "notebook",
    },
    "test_report_resume": "kill",
    "test_rt_width16": {
        "test_the_width16_rows_fail_on_untrained_models": "slow",
    },
    "test_sweep": {
        "test_sigkill_of_the_driver_then_rerun_finishes_the_sweep": "kill",
        "test_a_study_grid_runs_on_local_ray_like_in_process": "ray",
    },
    "test_sweep_backends": {
        "test_a_real_embedded_ray_records_its_start": "ray",
        "test_an_automatic_choice_falls_back_to_local_processes": "slow",
    },
    "test_tiers": {
        "test_quick_leaves_out_the_slow_tier_and_keeps_the_rest": "slow",
    },
    "test_train_missing": {
        "test_two_processes_store_what_one_thread_alone_trains": "slow",
        "test_runs_trained_by_the_workers_count_as_trained_not_as_read_from_the_zoo": "slow",
    },
    "test_zoo": {
        "test_a_sweep_adds_the_trials_its_ray_workers_ran": "ray",
    },
    "test_zoo_integrity": {
        "test_kill_at_each_fault_point_loses_and_corrupts_nothing": "kill",
        "test_two_processes_train_one_entry_at_once": "slow",
    },
}


def pytest_addoption(parser):
    parser.addoption("--quick", action="store_true",
                     help="the quick tier: leave out the tests marked slow (notebooks, browsers, "
                          "Sphinx, kill-and-resume, Ray, long training); see CONTRIBUTING.md")


def _module(item) -> str:
    return item.nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")


def _fixtures(item) -> set[str]:
    """MODULE.NAME of every fixture ``item`` uses, directly or through another fixture."""
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return {f"{d.func.__module__.rsplit('.', 1)[-1]}.{name}"
            for name, found in defs.items() for d in found}


def _listed() -> dict[str, str]:
    """SLOW_TESTS as MODULE (a whole module) or MODULE::FUNCTION -> its mark."""
    return {**{m: v for m, v in SLOW_TESTS.items() if isinstance(v, str)},
            **{f"{m}::{f}": mark for m, v in SLOW_TESTS.items() if isinstance(v, dict)
               for f, mark in v.items()}}


def _slow_mark(item) -> str | None:
    """Why ``item`` is in the slow tier (one of SLOW_MARKS), or None for the quick tier."""
    module, listed = _module(item), _listed()
    for key in (f"{module}::{getattr(item, 'originalname', item.name)}", module):
        if key in listed:
            return listed[key]
    used = _fixtures(item)
    for fixture, mark in SLOW_FIXTURES.items():
        if fixture in used:
            return mark
    return next((m for m in SLOW_MARKS if item.get_closest_marker(m)), None)


def _check_slow_lists(items) -> None:
    """Every SLOW_TESTS and SLOW_FIXTURES entry of a collected module names a function that
    module has (however few of its tests were chosen)."""
    modules = {_module(item): item.module for item in items if getattr(item, "module", None)}
    named = [*_listed(), *(k for k in SLOW_FIXTURES if not k.startswith("conftest."))]
    stale = []
    for key in named:
        module, _, name = key.replace("::", ".").partition(".")
        if module in modules and name and not hasattr(modules[module], name):
            stale.append(key)
    if stale:
        raise pytest.UsageError(f"tests/conftest.py names tests or fixtures not there: {stale}")


@pytest.hookimpl(tryfirst=True)  # before xdist's loadgroup reads the groups
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (--dist loadgroup) the tests that read the executed notebooks share one
    worker, so the notebooks still execute once per run (and so do those that read the map's page).
    Marks the slow tier (``_slow_mark``), and with ``--quick`` leaves it out."""
    _check_slow_lists(items)
    for item in items:
        for shared in ("smoke_reports", "smoke_map_page"):  # the map's page: built once too
            if shared in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(shared))
                break
        mark = _slow_mark(item)
        if mark is not None:
            item.add_marker(getattr(pytest.mark, mark))
            item.add_marker(pytest.mark.slow)
    if config.getoption("quick"):
        quick = [item for item in items if not item.get_closest_marker("slow")]
        config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("slow")])
        items[:] = quick


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOYMECH_CACHE", str(tmp_path / "zoo"))


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(1234)


PROJECT_NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@dataclass
class SmokeReports:
    """``build_reports`` output for every project notebook at size smoke (see ``smoke_reports``)."""

    out: Path  # the reports folder: <stem>.html, executed/<stem>.ipynb, index.html, index.json
    entries: list  # one toymech.report.ReportEntry per notebook, in PROJECT_NOTEBOOKS order

    def entry(self, notebook):
        stem = Path(notebook).stem
        return next(e for e in self.entries if Path(e.notebook).stem == stem)

    def executed(self, notebook) -> Path:
        return self.out / self.entry(notebook).executed

    def html(self, notebook) -> Path:
        return self.out / self.entry(notebook).html


@pytest.fixture(scope="session")
def smoke_reports(tmp_path_factory) -> SmokeReports:
    """Every project notebook executed ONCE per test session, at size smoke on the CPU, through
    ``toymech.report.build_reports`` (papermill + HTML), with a zoo of its own. The notebook,
    study and browser tests all read these outputs instead of executing the notebooks again."""
    from toymech.report import build_reports

    out = tmp_path_factory.mktemp("smoke-reports")
    with pytest.MonkeyPatch.context() as mp:
        # Session scope runs outside the per-test cache isolation above; the kernels inherit this.
        mp.setenv("TOYMECH_CACHE", str(tmp_path_factory.mktemp("smoke-zoo")))
        # jobs=2: two kernels at once, each with cores/2 threads; on 2 cores this took 71 s for
        # the three notebooks against 167 s one after another.
        entries = build_reports(PROJECT_NOTEBOOKS, out_dir=out, size="smoke", device="cpu",
                                trust=False, jobs=2)
    return SmokeReports(out, entries)


# A smoke map: 2 knobs x 2 values x 2 seeds of study 1 (8 runs, seconds each at smoke).
SMOKE_MAP = {"study": "induction", "experiment": "induction-2l", "size": "smoke", "seeds": 2,
             "knobs": {"block_len": [6, "4-8"], "offset": [0, "0-3"]}, "name": "smoke-map"}


@pytest.fixture(scope="session")
def smoke_map_page(tmp_path_factory) -> Path:
    """The page of ``SMOKE_MAP``, trained from an empty zoo and rendered ONCE per test session by
    ``toymech map GRID --report`` (the command a reader runs), on the CPU: ``map-smoke-map.html``."""
    import subprocess
    import sys

    import yaml

    root = tmp_path_factory.mktemp("smoke-map")
    grid = root / "smoke-map.yaml"
    grid.write_text(yaml.safe_dump(SMOKE_MAP))
    zoo, reports = root / "zoo", root / "reports"
    env = {**os.environ, "TOYMECH_THREADS": "1", "TOYMECH_CACHE": str(zoo)}
    done = subprocess.run([sys.executable, "-m", "toymech", "map", str(grid), "--cache", str(zoo),
                           "--backend", "local", "--no-progress", "--device", "cpu",
                           "--report", str(reports)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "8 run(s) measured now" in done.stderr, done.stderr[-2000:]  # the zoo was empty
    page = reports / "map-smoke-map.html"
    assert page.is_file(), done.stdout[-2000:]
    return page
