"""Study 1: induction heads on repeated letter blocks (the blog post and its code; see
docs/sources.md, study 1).

The study protocol (``toymech.studies.protocol``): ``TITLE``, ``SOURCE``, ``SIZES``,
``EXPERIMENTS``, ``CLAIMS``, ``validate``, ``seeds_of``, ``experiments``, ``eval_sets``,
``measure_seed``, ``numbers``, ``scorecard``, ``probe_data``, ``dynamics_metrics``,
``through_training``, ``describe``; plus the study's own tables and views. The notebook only calls
these and displays what they return.
"""

from .claims import (CLAIMS, COPYING, POST, POST_PATHS, SOURCE, SUPPRESSING, TOL,
                     floor_and_chance, numbers, scorecard)
from .dynamics import (DYNAMICS_METRICS, dynamics_metrics, dynamics_patterns, probe_data,
                       through_training)
from .design import (EXPERIMENTS, LEARNED, LLC_ON, MAIN, MODELS, OPTIONAL_RUNS, SIZES, TEXTBOOK,
                          eval_sets, experiment, experiments, llc_on, optional_runs, seeds_of, twins, validate)
from . import causal
from .measure import (MECHANISM_SETS, POST_SETS, Model, ablation_table, algorithm_in_words,
                      algorithms_text, attention_view, chance_loss, copy_table, describe,
                      eigenvalue_sets, load_models, loss_table, measure, measure_all,
                      mechanism_table, mechanism_verdict, path_table, training_summary)
from .seeds import (findings, load_seeds, measure_seed, measure_seeds, seed_table,
                    untrained_numbers)
from ..findings import not_run
from ..trajectory import over_seeds

TITLE = "Induction heads on repeated letter blocks"

__all__ = ["untrained_numbers", "CLAIMS", "COPYING", "DYNAMICS_METRICS", "EXPERIMENTS", "LEARNED", "MAIN",
           "LLC_ON", "MECHANISM_SETS", "MODELS", "OPTIONAL_RUNS", "POST", "POST_PATHS", "POST_SETS", "SIZES",
           "SOURCE", "SUPPRESSING", "TEXTBOOK", "TITLE", "TOL", "Model", "ablation_table",
           "algorithm_in_words", "algorithms_text", "attention_view", "chance_loss",
           "causal", "copy_table", "describe", "llc_on", "optional_runs", "dynamics_metrics", "dynamics_patterns",
           "eigenvalue_sets", "eval_sets", "findings", "experiment", "experiments", "floor_and_chance",
           "load_models", "load_seeds", "loss_table", "measure", "measure_all",
           "measure_seed", "measure_seeds", "mechanism_table", "mechanism_verdict", "not_run", "numbers",
           "over_seeds", "path_table", "probe_data", "scorecard", "seed_table", "seeds_of",
           "through_training", "training_summary", "twins", "validate"]
