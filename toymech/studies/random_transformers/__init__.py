"""Study 3: algorithmic capabilities of random transformers (Zhong & Andreas 2024; see
docs/sources.md, study 3).

The public surface every study has: ``TITLE``, ``SOURCE``, ``SIZES``, ``EXPERIMENTS``,
``validate``, the functions that train and measure (``run_grid``, ``run_table``, ...), tables,
``CLAIMS`` with ``numbers`` and ``scorecard``. The notebook only calls these and displays what
they return. Modules: ``design`` (sizes, freezing modes, configs, plans), ``measure``
(train/load and measure), ``tables`` (what the notebook shows), ``claims`` (the paper's claims),
``recipes`` and ``calibration`` (the calibrated CPU recipes and their sweeps), ``ladder`` (the
width ladder), ``named`` (one seed's named numbers), ``seeds`` (over seeds, and the null world),
``dynamics`` (through training), ``causal`` (the causal tests).
"""

from .dynamics import (DYNAMICS_METRICS, dynamics_grid, dynamics_metrics, dynamics_table, dynamics_patterns, probe_data,
                       through_training)
from ..trajectory import over_seeds
from .claims import (CLAIMS, PAPER_ABLATIONS, PAPER_ACCURACY, PAPER_BITS_PER_PARAM,
                     PAPER_FROZEN_LSTM_NEEDLE, PAPER_LINEARISED_W512, SOURCE, numbers,
                     per_seed_numbers, scorecard)
from .recipes import EXPERIMENTS, RECIPES, calibrated, recipe, recipe_table, table_experiment
from .design import (ALGORITHMIC, FREEZE_MODES, OPTIONAL_RUNS, PLANS, SIDE_TASKS, SIZES, Plan,
                          Size, baseline_experiment, experiment, experiments, freeze_patterns,
                          mode_of, model_config, optional_runs, plan, seeds_of, size_spec, task_for,
                          train_config, validate)
from .measure import (BASELINE_KINDS, ablation_grid, baseline_exp, baseline_grid, baseline_row,
                      circuit_experiments, circuit_grid, circuit_row, concentration_grid,
                      concentration_rows, eval_sets, evaluate_sets, load, needle_example,
                      plan_seeds, row_for, run, run_grid, run_table, short_budget_grid,
                      summarize, sweep_grid, top_k)
from . import calibration, causal, ladder
from .seeds import findings, measure_data, measure_seed, untrained_runs, untrained_numbers
from ..findings import not_run
from .tables import (ablation_summary, ablation_table, accuracy_table, baseline_table,
                     circuit_table, concentration_gap, concentration_table, describe, lm_table,
                     memorization_note, memorization_summary, memorization_table, needle_attention, needle_caption,
                     paper_ablations, short_budget_table, sweep_table, task_examples, trivial_notes,
                     zoo_note)

TITLE = "Algorithmic capabilities of random transformers"

__all__ = ["untrained_numbers", "BASELINE_KINDS", "PAPER_FROZEN_LSTM_NEEDLE", "baseline_exp", "baseline_row",
           "circuit_experiments", "circuit_row", "experiments", "findings", "not_run", "measure_data", "measure_seed",
           "plan_seeds", "row_for", "top_k", "calibration", "causal", "ladder", "untrained_runs", "DYNAMICS_METRICS", "dynamics_grid", "dynamics_table", "dynamics_metrics", "dynamics_patterns", "over_seeds", "probe_data",
           "through_training", "ALGORITHMIC", "CLAIMS", "EXPERIMENTS", "RECIPES", "calibrated", "recipe", "recipe_table", "table_experiment", "FREEZE_MODES", "PAPER_ABLATIONS",
           "PAPER_ACCURACY", "PAPER_BITS_PER_PARAM", "PAPER_LINEARISED_W512", "PLANS", "SIDE_TASKS", "SIZES", "SOURCE", "TITLE", "Plan",
           "Size", "ablation_grid", "ablation_summary", "ablation_table", "accuracy_table",
           "baseline_experiment", "baseline_grid", "baseline_table", "circuit_grid",
           "circuit_table", "concentration_gap", "concentration_grid", "concentration_rows",
           "concentration_table", "describe", "eval_sets", "evaluate_sets", "experiment",
           "freeze_patterns", "load", "lm_table", "memorization_note", "memorization_summary", "memorization_table", "trivial_notes",
           "mode_of", "model_config", "OPTIONAL_RUNS", "optional_runs", "needle_attention", "needle_caption", "needle_example",
           "numbers", "paper_ablations", "per_seed_numbers", "short_budget_grid",
           "short_budget_table", "plan", "run", "run_grid", "run_table", "scorecard",
           "seeds_of", "size_spec", "summarize", "sweep_grid", "sweep_table", "task_examples",
           "task_for", "train_config", "validate", "zoo_note"]
