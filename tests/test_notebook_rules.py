"""The rules of a study's notebook that can be read without executing it, over every notebook of
``protocol.STUDIES`` and the template's (CONTRIBUTING.md, "Rules the tests enforce",
"Notebooks"): a new study's notebook is covered without an edit here. What needs the notebook
executed (a plotly figure, the step slider, the report's order) is checked on the smoke reports
by tests/test_notebooks.py and tests/test_browser*.py, which take every notebooks/*.ipynb."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from toymech.studies import protocol

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = {**protocol.STUDIES, protocol.TEMPLATE: "toymech/studies/_template/notebook.ipynb"}
# The cell tags the report reads (toymech/report/reader_page.py); a notebook uses no other.
TAGS = {"parameters", "finding", "scorecard", "remove-cell", "remove-input", "remove-output",
        "show-input"}
# What every study's parameters cell defines (the protocol's common parameters, ``variant`` and ``also``).
PARAMETERS = ("size", "device", "seed", "n_seeds", "cache_dir", "threads", "variant", "also")
MAX_CELL_LINES = 12  # thin: a cell calls the study and shows what it returns


def _cells(name):
    return nbformat.read(ROOT / NOTEBOOKS[name], as_version=4).cells


def _code(name):
    return [c for c in _cells(name) if c.cell_type == "code"]


def _tags(cell):
    return list(cell.get("metadata", {}).get("tags", []))


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_stored_without_outputs(name):
    stored = [i for i, c in enumerate(_code(name)) if c.outputs or c.execution_count is not None]
    assert not stored, f"{NOTEBOOKS[name]}: code cells {stored} are stored with outputs"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_parameters_cell_first_with_the_common_parameters(name):
    first = _code(name)[0]
    assert _tags(first) == ["parameters"], _tags(first)
    defined = {t.id for node in ast.parse(first.source).body if isinstance(node, ast.Assign)
               for t in node.targets if isinstance(t, ast.Name)}
    missing = [p for p in PARAMETERS if p not in defined]
    assert not missing, f"{NOTEBOOKS[name]}: the parameters cell lacks {missing}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_tags_the_report_reads(name):
    tags = [t for c in _cells(name) for t in _tags(c)]
    assert set(tags) <= TAGS, sorted(set(tags) - TAGS)
    assert tags.count("parameters") == 1 and tags.count("scorecard") == 1, tags
    assert "finding" in tags, f"{NOTEBOOKS[name]}: no cell tagged finding"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_imports_its_own_study(name):
    text = "\n".join(c.source for c in _code(name))
    assert re.search(rf"^from toymech\.studies import {name}\b", text, re.M), \
        f"{NOTEBOOKS[name]} does not import toymech.studies.{name}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_cells_are_thin(name):
    """No code cell over MAX_CELL_LINES lines, no function, class or lambda defined in a
    notebook: the logic is a tested package function the cell calls."""
    for i, cell in enumerate(_code(name)):
        lines = [line for line in cell.source.strip().splitlines() if line.strip()]
        assert len(lines) <= MAX_CELL_LINES, f"{NOTEBOOKS[name]}, code cell {i}: {len(lines)} lines"
        defined = [type(n).__name__ for n in ast.walk(ast.parse(cell.source))
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                     ast.Lambda))]
        assert not defined, f"{NOTEBOOKS[name]}, code cell {i} defines {defined}"
