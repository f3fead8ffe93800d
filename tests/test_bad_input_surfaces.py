"""Bad-input catalogue, part 10: the newer surfaces' command-line input (``toymech ladder``,
``toymech report --param``, ``$TOYMECH_CACHE``) and ``display.reader_table``'s odd values.

Each command case: exit code 2, ONE line on stderr naming the option or variable, its value
and what is allowed, no traceback, nothing trained and the zoo folder not created (see
``catalogue``). Each table case: a sensible cell (or one refusal line), never a crash.

Which failed before (toymech at d832c33): ``ladder`` read ``--seeds 1_0`` as 10 and
Arabic-Indic digits as numbers and kept only the last of repeated ``--tasks``; a repeated ``--param`` kept its last value; a
20,000-deep ``--param`` raised RecursionError; an empty ``TOYMECH_CACHE`` trained into
``~/.cache/toymech``; ``reader_table`` printed 1e300 as a 301-digit integer, NaN labels as
"nan", an empty frame as an empty table with no note, and crashed on inf and complex values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from catalogue import refused, run_cli, tree

ROOT = Path(__file__).resolve().parents[1]
OK_NB = ROOT / "tests" / "fixtures" / "report_ok.ipynb"
LADDER = ["ladder", "--tasks", "parentheses", "--modes", "normal", "--backend", "local"]
REPORT = ["report", str(OK_NB), "--size", "smoke", "--device", "cpu"]
DEEP = "[" * 20_000 + "]" * 20_000

# (argv, fragments of the one stderr line[, environment])
CASES = {
    "ladder --seeds 1_0 (read as 10)": ([*LADDER, "--seeds", "1_0"], ["--seeds", "'1_0'", "0-9"]),
    "ladder --seeds Arabic-Indic digit (read as 3)": ([*LADDER, "--seeds", "\u0663"], ["--seeds", "'\u0663'"]),
    "ladder --seeds +3": ([*LADDER, "--seeds", "+3"], ["--seeds", "'+3'"]),
    "ladder --seeds fullwidth digits": ([*LADDER, "--seeds", "\uff13"], ["--seeds"]),
    "ladder --seeds 0": ([*LADDER, "--seeds", "0"], ["--seeds", "1..100"]),
    "ladder --seeds 101": ([*LADDER, "--seeds", "101"], ["--seeds", "1..100"]),
    "ladder --size huge": ([*LADDER, "--size", "huge"], ["--size", "'huge'"]),
    "ladder --tasks sorting (no width map)": (
        ["ladder", "--tasks", "sorting", "--backend", "local"], ["--tasks 'sorting'", "s3-width-<task>.yaml"]),
    "ladder --tasks twice (kept the last)": (
        ["ladder", "--tasks", "parentheses", "--tasks", "modular_addition", "--backend", "local"],
        ["--tasks given twice"]),
    "ladder --modes twice": ([*LADDER, "--modes", "random"], ["--modes given twice"]),
    "ladder --tasks parentheses parentheses": (
        ["ladder", "--tasks", "parentheses", "parentheses", "--backend", "local"], ["tasks=", "distinct"]),
    "ladder --modes normal normal": (
        ["ladder", "--tasks", "parentheses", "--modes", "normal", "normal", "--backend", "local"],
        ["modes=", "distinct"]),
    "report --param x=1 --param x=2 (kept the last)": (
        [*REPORT, "--out", "{tmp}/reports", "--param", "x=1", "--param", "x=2"], ["--param x=", "twice"]),
    "report --param nested 20,000 deep (RecursionError)": (
        [*REPORT, "--out", "{tmp}/reports", "--param", f"x={DEEP}"], ["--param x=", "100 deep", "20,000"]),
    "report --param nested 101 deep in an object": (
        [*REPORT, "--out", "{tmp}/reports", "--param", "x=" + '{"a":' * 101 + "1" + "}" * 101],
        ["--param x=", "100 deep"]),
    "TOYMECH_CACHE empty (train; trained into ~/.cache/toymech)": (
        ["train", "induction-1l", "--size", "smoke", "--steps", "2", "--device", "cpu"],
        ["TOYMECH_CACHE=''", "unset"], {"TOYMECH_CACHE": ""}),
    "TOYMECH_CACHE blank (train)": (
        ["train", "induction-1l", "--size", "smoke", "--steps", "2", "--device", "cpu"],
        ["TOYMECH_CACHE=", "set but empty"], {"TOYMECH_CACHE": "  "}),
    "TOYMECH_CACHE empty (ladder)": (LADDER, ["TOYMECH_CACHE=''"], {"TOYMECH_CACHE": ""}),
    "TOYMECH_CACHE empty (report)": ([*REPORT, "--out", "{tmp}/reports"], ["TOYMECH_CACHE=''"], {"TOYMECH_CACHE": ""}),
    "TOYMECH_CACHE empty (list models)": (["list", "models"], ["TOYMECH_CACHE=''"], {"TOYMECH_CACHE": ""}),
}


@pytest.mark.parametrize("case", list(CASES), ids=[f"surfaces: {c}" for c in CASES])
def test_surfaces_refuse(case, tmp_path, monkeypatch):
    argv, fragments, *environ = CASES[case]
    environ = environ[0] if environ else {}
    zoo = tmp_path / "zoo"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # an empty TOYMECH_CACHE must not reach it
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    before = tree(tmp_path)
    refused(*run_cli(argv, **{"TOYMECH_CACHE": str(zoo), **environ}), fragments)
    assert tree(tmp_path) == before, "something was written, moved or deleted"


def test_catalogue_part_10_size():
    assert len(CASES) >= 20


def test_a_param_nested_100_deep_is_still_a_value():
    from toymech.cli.args import parse_param as _parse_param

    assert _parse_param("x=" + "[" * 100 + "]" * 100)[0] == "x"
    assert _parse_param('x="[[[[" ')[1] == '[[[['  # brackets in a string are no nesting


# --------------------------------------------------------------------------------------------
# reader_table's odd values
# --------------------------------------------------------------------------------------------

def _html(frame: pd.DataFrame) -> str:
    from toymech.display import reader_table

    return reader_table(frame, caption="A table").html()


TABLE_CASES = {
    "1e300 (a 301-digit integer before)": (pd.DataFrame({"x": [1e300, 2.0]}), ["1.00e+300"], ["0000000"]),
    "a whole column of 1e20": (pd.DataFrame({"x": [1e20, 3e20]}), ["1.00e+20", "3.00e+20"], ["000000"]),
    "inf and -inf (OverflowError before)": (pd.DataFrame({"x": [np.inf, -np.inf, 0.5]}), ["∞", "-∞"], ["inf<"]),
    "complex values (TypeError before)": (pd.DataFrame({"x": [1 + 2j, 3 - 0.5j]}), ["1 + 2i", "3 - 0.5i"], []),
    "NaN row and column labels (printed nan before)": (
        pd.DataFrame({np.nan: [1.5]}, index=[np.nan]), ["(no name)"], [">nan<"]),
    "two columns that read the same (duplicate headers before)": (
        pd.DataFrame({"icl_acc": [0.5], "in-context accuracy (fraction correct)": [0.25]}),
        ["[icl_acc]"], []),
    "an empty frame (an empty table with no note before)": (pd.DataFrame(), ["empty", "no rows"], []),
    "a frame with columns and no rows": (pd.DataFrame({"x": []}), ["empty", "no rows"], []),
}


@pytest.mark.parametrize("case", list(TABLE_CASES), ids=[f"reader_table: {c}" for c in TABLE_CASES])
def test_reader_table_reads_odd_values(case):
    frame, present, absent = TABLE_CASES[case]
    page = _html(frame)
    for text in present:
        assert text in page, (text, page)
    for text in absent:
        assert text not in page, (text, page)


def test_reader_table_refuses_a_column_name_given_twice():
    with pytest.raises(ValueError, match=r"^df='a frame with columns x twice' is not allowed"):
        _html(pd.DataFrame([[1, 2]], columns=["x", "x"]))
