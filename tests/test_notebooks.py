"""Every notebook runs top to bottom at the smallest size (executed once per session by the
``smoke_reports`` fixture in conftest.py, through build_reports), and a bad parameter stops it in
its first cells with a clear message."""

from pathlib import Path

import nbformat
import papermill
import pytest

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert any(nb.name.startswith("01_") for nb in NOTEBOOKS)


@pytest.mark.notebook
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_at_smoke(notebook, smoke_reports):
    entry = smoke_reports.entry(notebook)
    assert entry.ok, f"{notebook.name}: {entry.error}"
    assert (entry.size, entry.device) == ("smoke", "cpu")
    nb = nbformat.read(smoke_reports.executed(notebook), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code if c.source.strip())
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors
    # figures were produced and carry an offline HTML rendering
    assert any("application/vnd.plotly.v1+json" in o.get("data", {}) for c in code for o in c.outputs)
    assert smoke_reports.html(notebook).stat().st_size > 0


@pytest.mark.notebook
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_bad_parameter_fails_early_with_a_clear_message(notebook, tmp_path):
    out = tmp_path / notebook.name
    with pytest.raises(papermill.PapermillExecutionError, match="size='huge' is not allowed"):
        papermill.execute_notebook(str(notebook), str(out), kernel_name="python3",
                                   parameters={"size": "huge", "cache_dir": str(tmp_path)},
                                   progress_bar=False)
    nb = nbformat.read(out, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    failed = [i for i, c in enumerate(code) if any(o.output_type == "error" for o in c.outputs)]
    assert failed and failed[0] <= 3  # parameters, injected parameters, setup


def test_notebook_readers_are_grouped_on_one_worker(request):
    """Under ./run.sh test (pytest-xdist, --dist loadgroup) every test that reads the executed
    notebooks carries the group in its node id, so the notebooks execute once per run (a pytest /
    xdist combination that drops the group would execute them once per worker)."""
    readers = [i for i in request.session.items if "smoke_reports" in i.fixturenames]
    if not readers:
        pytest.skip("no notebook-reading test selected in this run")
    assert all(i.get_closest_marker("xdist_group") for i in readers)
    if getattr(request.config.option, "loadgroup", False):  # on an xdist worker with loadgroup
        assert all(i.nodeid.endswith("@smoke_reports") for i in readers), readers[0].nodeid


def test_the_map_notebook_is_a_page_of_its_own_kind():
    """The map page's notebook (``toymech/maps/map.ipynb``, run by ``toymech map --report``)
    is exempt from the rules above and stays out of notebooks/: it draws a table that ``toymech
    map`` already measured, so it has no study, trains nothing and has no step slider; its page is
    tested from hand-made tables in tests/test_map_page.py. What it shares with the study
    notebooks is checked here: stored without outputs, a first cell tagged parameters, a finding
    cell, thin cells calling the package."""
    import ast

    from toymech.maps.page import MAP_NOTEBOOK

    assert MAP_NOTEBOOK.parent.name == "maps" and MAP_NOTEBOOK not in NOTEBOOKS
    nb = nbformat.read(MAP_NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not any(c.outputs or c.execution_count for c in code)
    assert code[0].metadata.get("tags") == ["parameters"]
    assert any("finding" in c.metadata.get("tags", []) for c in code)
    for cell in code:
        assert len(cell.source.strip().splitlines()) <= 12
        assert not [n for n in ast.walk(ast.parse(cell.source))
                    if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Lambda))]
