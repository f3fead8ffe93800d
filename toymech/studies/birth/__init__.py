"""Study 2: Birth of a Transformer, a memory viewpoint (Bietti et al. 2023; see docs/sources.md,
study 2).

The public surface every study has: ``TITLE``, ``SOURCE``, ``SIZES``, ``EXPERIMENTS``,
``validate``, the functions that train and measure (``main_run``, ``trigger_sweep``,
``freezing_comparison``, ``extremes_table``, ...), tables, ``CLAIMS``, ``numbers`` and
``scorecard``. The notebook only calls these and displays what they return.

Modules: ``experiments`` (sizes, freezings, configs, named experiments), ``callbacks`` (the
training callback recording the memory probes), ``measure`` (batches from the run's seed
streams, runs, sweeps), ``tables`` (summaries of what was measured), ``claims``.
"""

from .dynamics import (DYNAMICS_METRICS, dynamics_metrics, dynamics_patterns, probe_data,
                       through_training)
from ..trajectory import over_seeds
from .callbacks import PROBE_TAG, birth_callback, trigger_sets
from .claims import CLAIMS, SOURCE, numbers, scorecard
from .experiments import (CONTROL_SIZES, EXPERIMENTS, FREEZINGS, MODELS, SIZES, control_config,
                          experiment, freeze_patterns, simplified_config, truncated, validate)
from .measure import (CONTROL_ROW, EXTREMES_COLUMNS, FREEZING_ROW, N_OOD_RANDOM, attention_table,
                      attention_view, bigram_baseline, eval_batches, evaluate_sets,
                      example_batch, extremes_table, freezing_comparison, main_run, run_row,
                      sequence_marks, shared_pool, snapshots, trigger_sweep)
from .seeds import (MAIN_CLAIMS, agreement_lines, main_runs, optimizer_table, other_optimizer,
                    seed_numbers, seed_table, seeds_of)
from .tables import (FORMATION_KEYS, before_step, construction_kcomp, construction_table, describe,
                     dynamics_summary, formation_marks, formation_table, freezing_summary,
                     half_step, kcomp_summary, sweep_summary, sweep_table)

TITLE = "Birth of a Transformer: a memory viewpoint"

__all__ = ["MAIN_CLAIMS", "agreement_lines", "main_runs", "optimizer_table", "other_optimizer",
           "seed_numbers", "seed_table", "seeds_of",
           "DYNAMICS_METRICS", "dynamics_metrics", "dynamics_patterns", "over_seeds", "probe_data",
           "through_training", "describe", "CLAIMS", "CONTROL_ROW", "CONTROL_SIZES", "EXPERIMENTS", "EXTREMES_COLUMNS",
           "FORMATION_KEYS", "FREEZINGS", "FREEZING_ROW", "MODELS", "N_OOD_RANDOM", "PROBE_TAG",
           "SIZES", "SOURCE", "TITLE", "attention_table", "attention_view", "before_step",
           "bigram_baseline", "birth_callback", "construction_kcomp", "construction_table",
           "control_config", "dynamics_summary", "eval_batches", "evaluate_sets",
           "example_batch", "experiment", "extremes_table", "formation_marks", "formation_table",
           "freeze_patterns", "freezing_comparison", "freezing_summary", "half_step",
           "kcomp_summary", "main_run", "numbers", "run_row", "scorecard", "sequence_marks",
           "shared_pool", "simplified_config", "snapshots", "sweep_summary", "sweep_table",
           "trigger_sets", "truncated", "validate"]
