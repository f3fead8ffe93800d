"""A report run never replaces the last finished one until it has finished itself.

Each notebook's run writes its executed notebook and page into ``<out>/.unfinished/<name>/``
(``begin``), beside the files the last finished run left; once it has finished (ok or failed:
it finished), ``swap_in`` renames them over the served ones and writes its index row. A run
killed or interrupted midway leaves the last finished run served (its executed notebook, its
page and its row, which ``toymech results`` reads), and the next run into the folder says so
(``say_unfinished``) before it clears what the stopped run left. All of it runs under the
folder's lock (``checks.folder_lock``): no other run is writing there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from .index import ReportEntry, write_index

STAGING = ".unfinished"  # <out>/.unfinished/<notebook>/: one run's files until it has finished
_INDEX_LOCK = threading.Lock()


def begin(out: Path, report: str, date: str) -> Path:
    """The empty staging folder of the run of the report named ``report`` (``report_name``;
    what an earlier one left is removed), with a note of when it started (``date``), for the
    next run into ``out`` to quote if this one never finishes."""
    staging = out / STAGING / report
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / "started.json").write_text(json.dumps({"date": date, "pid": os.getpid()}),
                                          encoding="utf-8")
    return staging


def swap_in(out: Path, staging: Path, executed: Path | None, page: Path, entry: ReportEntry) -> None:
    """The finished run replaces the last one: its executed notebook (none when the kernel never
    started), its page, then its index row (renames and an index rewrite)."""
    served = out / entry.executed
    if executed is not None:
        os.replace(executed, served)
    else:
        served.unlink(missing_ok=True)
    os.replace(page, out / entry.html)
    with _INDEX_LOCK:  # notebooks run side by side (jobs > 1) finish one at a time here
        write_index(out, [entry])
    shutil.rmtree(staging, ignore_errors=True)
    with contextlib.suppress(OSError):
        (out / STAGING).rmdir()  # only once empty


def say_unfinished(out: Path, reports: Sequence[str]) -> list[str]:
    """Say on stderr which reports a previous run into ``out`` left unfinished and that their
    last finished run is still the one served (``reports``: the names this run writes); then
    clear what it left. Returns the lines said."""
    staging = out / STAGING
    if not staging.is_dir():
        return []
    said = []
    for left in sorted(p for p in staging.iterdir() if p.is_dir()):
        try:
            started = json.loads((left / "started.json").read_text(encoding="utf-8")).get("date", "?")
        except (OSError, ValueError, AttributeError):
            started = "at an unknown time"
        served = (out / "executed" / f"{left.name}.ipynb").is_file()
        kept = ("its last finished run is still the one served" if served
                else "no finished run of it is served")
        rerun = "; this run reruns it" if left.name in reports else ""
        said.append(f"[toymech] the run of {left.name} started {started} did not finish (killed "
                    f"or interrupted): {kept}{rerun}")
        print(said[-1], file=sys.stderr, flush=True)
        shutil.rmtree(left, ignore_errors=True)
    with contextlib.suppress(OSError):
        staging.rmdir()
    return said
