"""Study 2: Birth of a Transformer, a memory viewpoint (Bietti et al. 2023; see docs/sources.md,
study 2).

The study is ``BirthStudy`` (``study.py``), of which this package makes the one instance,
``STUDY``; besides it the package names only what notebook 02 and the benchmarks read (its
other names are read from their modules). Modules: ``study`` (the class), ``design`` (sizes,
freezings, configs, knobs, named experiments, optional runs), ``callbacks`` (the training
callback recording the memory probes), ``measure`` (batches from the run's seed streams, the
main run, the trigger sweep, the freezing comparison, the extremes, the controls), ``tables``
(summaries of what was measured), ``claims`` (the paper's claims), ``over_seeds`` (the main run
over seeds: ``measure_seed``, the null world, the findings), ``dynamics`` (the probe data,
through training), ``causal`` (the learning coefficient and the causal tests through training),
``nulls`` (the null family: every predictor without the in-context mechanism a run is held
against), ``structure`` (the structural measures of one run's memories), ``map_measure`` and
``design_map`` (one run's row and label for a map).
"""

from ..findings import not_run
from .design import SIZES, experiment
from .measure import (
                      attention_table,
                      attention_view,
                      bigram_baseline,
                      controls,
                      example_batch,
                      main_run,
                      sequence_marks,
                      snapshots,
)
from .over_seeds import findings, main_runs, optimizer_table, other_optimizer, seed_table
from .study import BirthStudy
from .tables import (
                      construction_table,
                      dynamics_summary,
                      formation_marks,
                      formation_table,
                      freezing_summary,
                      freezing_view,
                      kcomp_summary,
                      sweep_summary,
                      sweep_table,
)

STUDY = BirthStudy()

# What notebook 02 reads: the study's methods, then its own functions and tables (above).
validate = STUDY.validate
with_knobs = STUDY.with_knobs
optional_runs = STUDY.optional_runs
llc_on = STUDY.llc_on
llc_curve = STUDY.llc_curve
seeds_of = STUDY.seeds_of
describe = STUDY.describe
probe_data = STUDY.probe_data
through_training = STUDY.through_training
measure_seed = STUDY.measure_seed
scorecard = STUDY.scorecard
