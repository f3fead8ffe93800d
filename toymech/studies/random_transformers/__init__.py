"""Study 3: algorithmic capabilities of random transformers (Zhong & Andreas 2024; see
docs/sources.md, study 3).

The study is ``RandomTransformersStudy`` (``study.py``), of which this package makes the one
instance, ``STUDY``; besides it the package names only what notebook 03 and the benchmarks read
(its other names are read from their modules). Modules: ``study`` (the class), ``design``
(sizes, freezing modes, configs, knobs, the plans), ``recipes`` (the calibrated CPU recipes and
the named experiments), ``calibration`` (the calibration sweeps read back), ``ladder`` (the
width ladder), ``measure`` (train/load a grid, one row per run), ``tables`` (what the notebook
shows), ``claims`` (the paper's claims; ``numbers``: one seed's tables -> named numbers),
``over_seeds`` (one seed's runs -> ``measure_seed``, the null world, the findings), ``dynamics``
(through training), ``causal`` (the causal tests), ``map_measure`` (one run's row and label for
a map, judged against the null family declared there).
"""

from ..findings import not_run
from . import calibration, causal, ladder
from .design import experiment, plan, task_for
from .dynamics import dynamics_grid, dynamics_table
from .measure import (
                      BASELINE_KINDS,
                      ablation_grid,
                      baseline_grid,
                      circuit_grid,
                      concentration_grid,
                      load,
                      needle_example,
                      plan_seeds,
                      run_grid,
                      run_table,
                      summarize,
                      sweep_grid,
)
from .over_seeds import findings, label_table, measure_seeds
from .recipes import recipe_table, table_experiment
from .study import RandomTransformersStudy
from .tables import (
                      ablation_summary,
                      ablation_table,
                      accuracy_table,
                      baseline_table,
                      circuit_table,
                      concentration_gap,
                      concentration_table,
                      lm_table,
                      memorization_note,
                      memorization_summary,
                      memorization_table,
                      needle_attention,
                      needle_caption,
                      paper_ablations,
                      sweep_table,
                      task_examples,
                      trivial_notes,
                      zoo_note,
)

STUDY = RandomTransformersStudy()

# What notebook 03 reads: the study's methods, then its own functions and tables (above).
validate = STUDY.validate
with_knobs = STUDY.with_knobs
seeds_of = STUDY.seeds_of
describe = STUDY.describe
scorecard = STUDY.scorecard
