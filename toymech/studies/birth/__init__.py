"""Study 2: Birth of a Transformer, a memory viewpoint (Bietti et al. 2023; see docs/sources.md,
study 2).

The study protocol (``toymech.studies.protocol``): ``TITLE``, ``SOURCE``, ``SIZES``,
``EXPERIMENTS``, ``CLAIMS``, ``validate``, ``seeds_of``, ``experiments``, ``eval_sets``,
``measure_seed``, ``numbers``, ``scorecard``, ``probe_data``, ``dynamics_metrics``,
``through_training``, ``describe``; plus the study's runs and tables (``main_run``,
``trigger_sweep``, ``freezing_comparison``, ``extremes_table``, ...). The notebook only calls
these and displays what they return.

Modules: ``design`` (sizes, freezings, configs, named experiments, optional runs),
``callbacks`` (the training callback recording the memory probes), ``measure`` (batches from
the run's seed streams, runs, sweeps), ``tables`` (summaries of what was measured), ``claims``,
``seeds`` (the main run over seeds), ``dynamics`` (through training), ``causal`` (the learning
coefficient and the causal tests through training).
"""

from .callbacks import PROBE_TAG, birth_callback, trigger_sets
from .claims import CLAIMS, HALF, MAIN_CLAIMS, SOURCE, half_and_rise, numbers, scorecard
from .dynamics import (DYNAMICS_METRICS, dynamics_metrics, dynamics_patterns, probe_data,
                       through_training)
from .design import (EXPERIMENTS, FREEZINGS, LLC_ON, MODELS, OPTIONAL_RUNS, SIZES, control_config,
                          experiment, experiments, freeze_patterns, llc_on, optional_runs, seeds_of,
                          simplified_config, truncated, validate)
from . import causal
from .measure import (CONTROL_ROW, EXTREMES, EXTREMES_COLUMNS, FREEZING_LABELS, N_OOD_RANDOM,
                      attention_table, attention_view, bigram_baseline, controls, eval_sets,
                      evaluate_sets, example_batch, extremes_experiments, extremes_rows,
                      extremes_table, freezing_comparison, freezing_experiments, freezing_rows,
                      main_run, sequence_marks, shared_pool, snapshots, sweep_experiments,
                      sweep_rows, trigger_sweep)
from .seeds import (findings, main_runs, measure_seed, optimizer_table, other_optimizer,
                    untrained_numbers,
                    seed_table)
from ..findings import not_run
from .tables import (FORMATION_KEYS, before_step, construction_kcomp, construction_table,
                     describe, dynamics_summary, formation_marks, formation_table,
                     freezing_summary, kcomp_summary, sweep_summary, sweep_table)
from ..trajectory import over_seeds

TITLE = "Birth of a Transformer: a memory viewpoint"

__all__ = ["untrained_numbers", "CLAIMS", "CONTROL_ROW", "DYNAMICS_METRICS", "EXPERIMENTS", "EXTREMES",
           "EXTREMES_COLUMNS", "FORMATION_KEYS", "FREEZINGS", "FREEZING_LABELS", "HALF",
           "LLC_ON", "MAIN_CLAIMS", "MODELS", "N_OOD_RANDOM", "OPTIONAL_RUNS", "PROBE_TAG", "SIZES", "SOURCE",
           "TITLE", "attention_table", "attention_view", "controls", "before_step", "bigram_baseline",
           "birth_callback", "causal", "llc_on", "optional_runs", "construction_kcomp", "construction_table", "control_config",
           "describe", "dynamics_metrics", "dynamics_patterns", "dynamics_summary", "eval_sets",
           "evaluate_sets", "example_batch", "findings", "not_run", "experiment", "experiments", "extremes_experiments",
           "extremes_rows", "extremes_table", "freezing_experiments", "freezing_rows",
           "sweep_experiments", "sweep_rows",
           "formation_marks", "formation_table", "freeze_patterns", "freezing_comparison",
           "freezing_summary", "half_and_rise", "kcomp_summary", "main_run", "main_runs",
           "measure_seed", "numbers", "optimizer_table", "other_optimizer", "over_seeds",
           "probe_data", "scorecard", "seed_table", "seeds_of", "sequence_marks",
           "shared_pool", "simplified_config", "snapshots", "sweep_summary", "sweep_table",
           "through_training", "trigger_sets", "truncated", "validate"]
