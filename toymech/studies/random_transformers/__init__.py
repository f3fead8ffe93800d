"""Study 3: algorithmic capabilities of random transformers (Zhong & Andreas 2024; see
docs/sources.md, study 3).

The package exports the study protocol (``toymech.studies.protocol``) and what notebook 03 and
the benchmarks call, nothing else (tests/test_studies.py checks it); everything else is read from
its module. Modules: ``design`` (sizes, freezing modes, configs, the plans), ``recipes`` (the
calibrated CPU recipes and the named experiments), ``calibration`` (the calibration sweeps read
back), ``ladder`` (the width ladder), ``measure`` (train/load a grid, one row per run),
``tables`` (what the notebook shows), ``named`` (one seed's tables -> named numbers),
``claims`` (the paper's claims), ``over_seeds`` (one seed's runs -> ``measure_seed``, the null world,
the findings), ``dynamics`` (through training), ``causal`` (the causal tests). ``map_measure`` (one run's row and label for a map).
"""

from .. import protocol
from . import claims
from ..findings import not_run
from . import calibration, causal, ladder
from .claims import CLAIMS, SOURCE, numbers, scorecard
from .design import (KNOBS, OPTIONAL_RUNS, SIZES, experiment, experiments,
                     optional_runs, plan, seeds_of, task_for, validate)
from .dynamics import (dynamics_grid, dynamics_metrics, dynamics_table, probe_data,
                       through_training)
from .measure import (BASELINE_KINDS, ablation_grid, baseline_grid, circuit_grid,
                      concentration_grid, eval_sets, load, needle_example, plan_seeds, run_grid,
                      run_table, summarize, sweep_grid)
from .recipes import EXPERIMENTS, recipe_table, table_experiment, with_knobs
from .map_measure import MAP_LABEL, map_row
from .over_seeds import (findings, label_table, measure_seed, measure_seeds,
                    untrained_numbers)
from .tables import (ablation_summary, ablation_table, accuracy_table, baseline_table,
                     circuit_table, concentration_gap, concentration_table, describe, lm_table,
                     memorization_note, memorization_summary, memorization_table,
                     needle_attention, needle_caption, paper_ablations, sweep_table,
                     task_examples, trivial_notes, zoo_note)

TITLE = "Algorithmic capabilities of random transformers"

STUDY = protocol.Study(
    name="random_transformers", title=TITLE, source=SOURCE, sizes=SIZES, named_experiments=EXPERIMENTS,
    claims=CLAIMS, settings=claims.SETTINGS, knobs=KNOBS,
    notebook="notebooks/03_random_transformers.ipynb",
    notebook_options=protocol.COMMON_OPTIONS, module=__name__,
    validate=validate, seeds_of=seeds_of, experiments=experiments, eval_sets=eval_sets,
    measure_seed=measure_seed, untrained_numbers=untrained_numbers, numbers=numbers,
    scorecard=scorecard, probe_data=probe_data, dynamics_metrics=dynamics_metrics,
    through_training=through_training, describe=describe, with_knobs=with_knobs,
    optional_runs=optional_runs, optional_run_names=OPTIONAL_RUNS,
    map_row=map_row, map_label=MAP_LABEL,
    # the maps its results page shows first (docs/results/), the first as its figure
    results_maps=("s3-budget-parentheses", "s3-width-parentheses"))

__all__ = [
    # the study (``toymech.studies.protocol.Study``) and the protocol's names, for the notebook
    "STUDY",
    "TITLE", "SOURCE", "SIZES", "EXPERIMENTS", "CLAIMS", "OPTIONAL_RUNS", "validate", "seeds_of",
    "experiments", "eval_sets", "measure_seed", "numbers", "scorecard", "probe_data",
    "dynamics_metrics", "through_training", "describe", "optional_runs", "untrained_numbers",
    "KNOBS", "with_knobs",
    # what notebook 03 calls (and the benchmarks: ``experiment``)
    "BASELINE_KINDS", "ablation_grid", "ablation_summary", "ablation_table", "accuracy_table",
    "baseline_grid", "baseline_table", "calibration", "causal", "circuit_grid", "circuit_table",
    "concentration_gap", "concentration_grid", "concentration_table", "dynamics_grid",
    "dynamics_table", "experiment", "findings", "label_table", "ladder", "lm_table", "load", "measure_seeds",
    "memorization_note", "memorization_summary", "memorization_table", "needle_attention",
    "needle_caption",
    "needle_example", "not_run", "paper_ablations", "plan", "plan_seeds", "recipe_table",
    "run_grid", "run_table", "summarize", "sweep_grid", "sweep_table", "table_experiment",
    "task_examples", "task_for", "trivial_notes", "zoo_note",
    # what a map measures each run with (toymech.maps)
    "MAP_LABEL", "map_row",
]
