"""Study 1: induction heads on repeated letter blocks (the blog post and its code; see
docs/sources.md, study 1).

The public surface every study has: ``TITLE``, ``SOURCE``, ``SIZES``, ``EXPERIMENTS``,
``validate``, the functions that train and measure (``load_models``, ``measure``), tables,
``CLAIMS`` and ``scorecard``. The notebook only calls these and displays what they return.
"""

from .dynamics import (DYNAMICS_METRICS, dynamics_metrics, dynamics_patterns, probe_data,
                       through_training)
from ..trajectory import over_seeds
from .claims import CLAIMS, POST, POST_PATHS, SOURCE, numbers, scorecard
from .seeds import (agreement_lines, load_seeds, measure_claims, measure_seeds, seed_table,
                    seeds_of)
from .experiments import (EXPERIMENTS, LEARNED, MAIN, MODELS, SIZES, TEXTBOOK, eval_sets,
                          experiment, twins, validate)
from .measure import (MECHANISM_SETS, POST_SETS, Model, ablation_table, algorithm_in_words,
                      chance_loss,
                      algorithms_text, attention_view, compare_with_post, copy_table, describe,
                      eigenvalue_sets, load_models, loss_table, measure, measure_all,
                      mechanism_table, mechanism_verdict, path_table, training_summary,
                      verdict_lines)

TITLE = "Induction heads on repeated letter blocks"

__all__ = ["agreement_lines", "load_seeds", "measure_claims", "measure_seeds", "seed_table",
           "seeds_of", "DYNAMICS_METRICS", "dynamics_metrics", "dynamics_patterns", "over_seeds", "probe_data",
           "through_training", "CLAIMS", "EXPERIMENTS", "LEARNED", "MAIN", "MECHANISM_SETS", "MODELS", "POST",
           "POST_PATHS", "POST_SETS", "SIZES", "SOURCE", "TEXTBOOK", "TITLE", "Model", "ablation_table",
           "algorithm_in_words", "algorithms_text", "chance_loss", "attention_view", "describe", "compare_with_post", "copy_table",
           "eigenvalue_sets", "eval_sets", "experiment", "load_models", "loss_table", "measure", "measure_all",
           "mechanism_table", "mechanism_verdict", "numbers", "path_table", "scorecard",
           "training_summary", "twins", "validate", "verdict_lines"]
