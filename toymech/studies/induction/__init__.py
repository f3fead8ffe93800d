"""Study 1: induction heads on repeated letter blocks (the blog post and its code; see
docs/sources.md, study 1).

The package exports the study protocol (``toymech.studies.protocol``) and what notebook 01 and
the benchmarks call, nothing else (tests/test_studies.py checks it); everything else is read from
its module. Modules: ``design`` (sizes, the post's models and their twins, named experiments,
optional runs), ``measure`` (train/load the models, measure them, the tables), ``claims`` (the
post's claims), ``over_seeds`` (the models over seeds: ``measure_seed``, the null world, the
findings), ``dynamics`` (the probe data, through training), ``causal`` (the post's algorithms as
activation and path patching), ``predictions`` (other works' predictions judged on its maps),
``panel`` (a map's one test panel, the predictors without induction and the rule that labels a
run), ``own_sets`` (that rule on a run's own sets: the notebook's labels and the claims),
``map_measure`` (one run's row and label for a map).
"""

from .. import protocol
from . import claims
from ..findings import not_run
from . import causal
from .claims import CLAIMS, POST, SOURCE, numbers, scorecard
from .design import (EXPERIMENTS, KNOBS, LLC_ON, OPTIONAL_RUNS, SIZES, eval_sets, experiment,
                     experiments, llc_on, optional_runs, seeds_of, twins, validate, with_knobs)
from .dynamics import dynamics_metrics, probe_data, through_training
from .predictions import MAP_PREDICTIONS
from .measure import (MECHANISM_SETS, POST_SETS, ablation_table, algorithms_text, attention_view,
                      chance_loss, copy_table, describe, eigenvalue_sets, load_models,
                      loss_table, measure_all, mechanism_bars, mechanism_baselines,
                      mechanism_table, path_table, training_summary)
from .map_measure import MAP_LABEL, map_check, map_evidence, map_panel, map_row
from .over_seeds import (findings, load_seeds, measure_seed, measure_seeds, seed_table,
                    untrained_numbers)

TITLE = "Induction heads on repeated letter blocks"

STUDY = protocol.Study(
    name="induction", title=TITLE, source=SOURCE, sizes=SIZES, named_experiments=EXPERIMENTS,
    claims=CLAIMS, settings=claims.SETTINGS, knobs=KNOBS,
    notebook="notebooks/01_induction_repeated_blocks.ipynb",
    notebook_options=protocol.COMMON_OPTIONS, module=__name__,
    validate=validate, seeds_of=seeds_of, experiments=experiments, eval_sets=eval_sets,
    measure_seed=measure_seed, untrained_numbers=untrained_numbers, numbers=numbers,
    scorecard=scorecard, probe_data=probe_data, dynamics_metrics=dynamics_metrics,
    through_training=through_training, describe=describe, with_knobs=with_knobs,
    optional_runs=optional_runs, optional_run_names=OPTIONAL_RUNS,
    llc_on=llc_on, map_row=map_row, map_label=MAP_LABEL, map_check=map_check,
    map_panel=map_panel, map_evidence=map_evidence, map_predictions=MAP_PREDICTIONS,
    # the maps its results page shows first (docs/results/), the first as its figure
    results_maps=("s1-capacity", "s1-smeared"))

__all__ = [
    # the study (``toymech.studies.protocol.Study``) and the protocol's names, for the notebook
    "STUDY",
    "TITLE", "SOURCE", "SIZES", "EXPERIMENTS", "CLAIMS", "OPTIONAL_RUNS", "LLC_ON", "validate",
    "seeds_of", "experiments", "eval_sets", "measure_seed", "untrained_numbers", "numbers",
    "scorecard", "probe_data", "dynamics_metrics", "through_training", "describe",
    "optional_runs", "llc_on", "KNOBS", "with_knobs",
    # what notebook 01 calls (and the benchmarks: ``experiment``)
    "MECHANISM_SETS", "POST", "POST_SETS", "ablation_table", "algorithms_text", "attention_view",
    "causal", "chance_loss", "copy_table", "eigenvalue_sets", "experiment", "findings",
    "load_models", "load_seeds", "loss_table", "measure_all", "measure_seeds", "mechanism_bars",
    "mechanism_baselines", "mechanism_table",
    "not_run", "path_table", "seed_table", "training_summary", "twins",
    # what a map measures each run with (toymech.maps), and other works' predictions judged on it
    "MAP_LABEL", "map_row", "map_check", "map_panel", "map_evidence", "MAP_PREDICTIONS",
]
