"""Study 2: Birth of a Transformer, a memory viewpoint (Bietti et al. 2023; see docs/sources.md,
study 2).

The package exports the study protocol (``toymech.studies.protocol``) and what notebook 02 and
the benchmarks call, nothing else (tests/test_studies.py checks it); everything else is read from
its module. Modules: ``design`` (sizes, freezings, configs, named experiments, optional runs),
``callbacks`` (the training callback recording the memory probes), ``measure`` (batches from
the run's seed streams, the main run, the trigger sweep, the freezing comparison, the extremes,
the controls), ``tables`` (summaries of what was measured), ``claims`` (the paper's claims),
``over_seeds`` (the main run over seeds: ``measure_seed``, the null world, the findings),
``dynamics`` (the probe data, through training), ``causal`` (the learning coefficient and the
causal tests through training). ``map_measure`` (one run's row and label for a map).
"""

from .. import protocol
from . import claims
from ..findings import not_run
from . import causal
from .claims import CLAIMS, SOURCE, numbers, scorecard
from .design import (EXPERIMENTS, KNOBS, LLC_ON, OPTIONAL_RUNS, SIZES, experiment, experiments,
                     llc_on, optional_runs, seeds_of, validate, with_knobs)
from .dynamics import dynamics_metrics, probe_data, through_training
from .measure import (attention_table, attention_view, bigram_baseline, controls, eval_sets,
                      example_batch, main_run, sequence_marks, snapshots)
from .map_measure import MAP_LABEL, map_row
from .over_seeds import (findings, main_runs, measure_seed, optimizer_table, other_optimizer,
                    seed_table, untrained_numbers)
from .tables import (construction_table, describe, dynamics_summary, formation_marks,
                     formation_table, freezing_summary, freezing_view, kcomp_summary, sweep_summary,
                     sweep_table)

TITLE = "Birth of a Transformer: a memory viewpoint"

STUDY = protocol.Study(
    name="birth", title=TITLE, source=SOURCE, sizes=SIZES, named_experiments=EXPERIMENTS,
    claims=CLAIMS, settings=claims.SETTINGS, knobs=KNOBS,
    notebook="notebooks/02_birth_of_a_transformer.ipynb",
    notebook_options=protocol.COMMON_OPTIONS | {"trigger_mode", "n_triggers", "sweep_ks",
                                                "sweep_steps"}, module=__name__,
    validate=validate, seeds_of=seeds_of, experiments=experiments, eval_sets=eval_sets,
    measure_seed=measure_seed, untrained_numbers=untrained_numbers, numbers=numbers,
    scorecard=scorecard, probe_data=probe_data, dynamics_metrics=dynamics_metrics,
    through_training=through_training, describe=describe, with_knobs=with_knobs,
    optional_runs=optional_runs, optional_run_names=OPTIONAL_RUNS,
    llc_on=llc_on, map_row=map_row, map_label=MAP_LABEL,
    # the maps its results page shows first (docs/results/), the first as its figure
    results_maps=("s2-design-calibrated", "s2-design", "s2-positions", "s2-design-calibration"))

__all__ = [
    # the study (``toymech.studies.protocol.Study``) and the protocol's names, for the notebook
    "STUDY",
    "TITLE", "SOURCE", "SIZES", "EXPERIMENTS", "CLAIMS", "OPTIONAL_RUNS", "LLC_ON", "validate",
    "seeds_of", "experiments", "eval_sets", "measure_seed", "untrained_numbers", "numbers",
    "scorecard", "probe_data", "dynamics_metrics", "through_training", "describe",
    "optional_runs", "llc_on", "KNOBS", "with_knobs",
    # what notebook 02 calls (and the benchmarks: ``experiment``)
    "attention_table", "attention_view", "bigram_baseline", "causal", "construction_table",
    "controls", "dynamics_summary", "example_batch", "experiment", "findings", "formation_marks",
    "formation_table", "freezing_summary", "freezing_view", "kcomp_summary", "main_run", "main_runs", "not_run",
    "optimizer_table", "other_optimizer", "seed_table", "sequence_marks", "snapshots",
    "sweep_summary", "sweep_table",
    # what a map measures each run with (toymech.maps)
    "MAP_LABEL", "map_row",
]
