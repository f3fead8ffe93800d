"""Execute notebooks with papermill and render them as self-contained, offline HTML reports.

    build_reports(["notebooks/01_induction_repeated_blocks.ipynb"], out_dir="reports", size="smoke")

writes, under ``out_dir``:

* ``executed/<name>.ipynb``: the executed notebook, exactly as papermill wrote it (even when a
  cell failed), signed so that JupyterLab trusts it;
* ``<name>.html``: the report (nbconvert template ``toymech_report`` in ``toymech/templates``:
  JupyterLab's look with nothing fetched from the network; plotly.js and the circuitsvis bundle
  come inline, once, from the outputs, see ``toymech.display``);
* ``index.html`` (and ``index.json``, its data): every report, with whether it ran (ok / failed)
  apart from what its claims came to (verdict counts), its size, seeds, device, wall time, file
  size, date and versions. Entries of earlier runs whose reports still exist are kept;
* ``costs.json``: the seconds of every cell of the last successful run of each notebook at each
  size, from which the next run's live progress estimates the time left.

A report is written for readers (``reader``): a header with the run's parameters (size, seeds,
the device as resolved, seed, wall time, versions), the title, "What this run found" (cells
tagged ``finding``), the scorecard (the cell tagged ``scorecard``: no other table is one, whatever
its columns), then the notebook without its code, logs, warnings or bare
values, and at the end "Where the time went" (seconds per section, models trained and loaded).
``code=True`` (``toymech report --code``) keeps the code. The tags are listed in ``reader``.

A rerun into a folder writes each notebook's executed copy and page under ``.unfinished/`` and
swaps them in (with the index row) once that notebook has finished (``staging``): a run killed
midway leaves the last finished one served, and the next run says so.

A failed notebook still gets a report, with the failing cell and its error at the top; its entry
has ``status == "failed"`` and the caller decides the exit code.
"""

from .build import TEMPLATE_NAME, build_reports, done_line, render_html
from .costs import CostTable
from .index import ReportEntry, external_loads, write_index
from .progress import LiveProgress
from .reader_page import facts_of, looks_like_repr, prepare, time_table
from .scorecards import (
                         find_scorecard,
                         scorecard_counts,
                         scorecard_heading,
                         scorecard_table_html,
                         verdict_counts,
                         verdict_word,
)

__all__ = ["ReportEntry", "build_reports", "write_index", "external_loads", "TEMPLATE_NAME",
           "find_scorecard", "scorecard_counts", "verdict_counts", "verdict_word", "LiveProgress",
           "CostTable", "prepare", "facts_of", "time_table", "looks_like_repr"]
