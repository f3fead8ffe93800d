"""Maps: where a study's mechanism holds across a grid of its knobs and seeds, as one tidy table.

The package, one module per part of a map's life:

- ``spec``: the map spec (study, experiments, size, seeds, knob values) checked before any work;
- ``run``: ``run_map`` trains what the zoo lacks, measures each run and writes the table;
- ``refine``: more runs where the map is unsure;
- ``table``: the table on disk (CSV and Parquet, read back as the same frame);
- ``ledger``: which files of a table folder toymech wrote, the lock writers of one map take
  turns under, and the checks every row read back passes;
- ``cost_record``: what building the table cost, beside it (``<name>.cost.json``), per invocation;
- ``summary``: the table per cell (``cells``), and the finding in words;
- ``predictions``: other works' predictions judged on the table;
- ``live``: the live line a running map prints;
- ``figure``: the figure drawn from the per-cell frame;
- ``page``: the reader's page (``map.ipynb`` beside it, built like every report; it sits with the
  report layer, so this package does not import it).
"""

from .refine import refinements
from .run import run_map
from .spec import check_map, load_map
from .summary import cells, finding
from .table import read_table

__all__ = ["cells", "check_map", "finding", "load_map", "read_table", "refinements", "run_map"]
