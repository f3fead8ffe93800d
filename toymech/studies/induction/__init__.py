"""Study 1: induction heads on repeated letter blocks (the blog post and its code; see
docs/sources.md, study 1).

The study is ``InductionStudy`` (``study.py``), of which this package makes the one instance,
``STUDY``; besides it the package names only what notebook 01 and the benchmarks read (its
other names are read from their modules). Modules: ``study`` (the class), ``design`` (sizes,
the post's models and their twins, knobs, named experiments, optional runs), ``measure``
(train/load the models, measure them, the tables), ``claims`` (the post's claims), ``over_seeds``
(the models over seeds: ``measure_seed``, the null world, the findings), ``dynamics`` (the probe
data, through training), ``causal`` (the post's algorithms as activation and path patching),
``panel`` (a map's one test panel, the predictors without induction and the rule that labels a
run), ``own_sets`` (that rule on a run's own sets: the notebook's labels and the claims),
``map_measure`` (one run's row and label for a map), ``predictions`` (other works' predictions
judged on its maps).
"""

from ..findings import not_run
from .claims import POST
from .design import SIZES, experiment, twins
from .measure import (
                      MECHANISM_SETS,
                      POST_SETS,
                      ablation_table,
                      algorithms_text,
                      attention_view,
                      chance_loss,
                      copy_table,
                      eigenvalue_sets,
                      load_models,
                      loss_table,
                      measure_all,
                      mechanism_bars,
                      mechanism_baselines,
                      mechanism_table,
                      path_table,
                      training_summary,
)
from .over_seeds import findings, load_seeds, measure_seeds, seed_table
from .study import InductionStudy

STUDY = InductionStudy()

# What notebook 01 reads: the study's methods, then its own functions and tables (above).
validate = STUDY.validate
with_knobs = STUDY.with_knobs
optional_runs = STUDY.optional_runs
llc_on = STUDY.llc_on
llc_curve = STUDY.llc_curve
seeds_of = STUDY.seeds_of
describe = STUDY.describe
eval_sets = STUDY.eval_sets
probe_data = STUDY.probe_data
through_training = STUDY.through_training
scorecard = STUDY.scorecard
