"""TEMPLATE for a new study: copy this folder to ``toymech/studies/<your_study>/`` (a name not
starting with '_'), add one line to ``toymech.studies.protocol.STUDIES``, then edit. Every study
exposes the protocol of ``toymech.studies.protocol`` (tests/test_studies.py checks names and
signatures); ``notebook.ipynb`` beside this file is the notebook skeleton (move the copy's to
``notebooks/NN_<study>.ipynb``). See CONTRIBUTING.md, "Add a study", for the ten files.
"""

from .claims import CLAIMS, SOURCE, numbers, scorecard
from .design import (EXPERIMENTS, OPTIONAL_RUNS, SIZES, describe, eval_sets, experiment,
                     experiments, optional_runs, seeds_of, validate)
from .dynamics import DYNAMICS_METRICS, dynamics_metrics, probe_data, through_training
from .measure import findings, load_seeds, measure_seed, untrained_numbers

TITLE = "Template study: a 2-layer transformer on parenthesis balancing"

__all__ = ["untrained_numbers", "CLAIMS", "DYNAMICS_METRICS", "EXPERIMENTS", "SIZES", "SOURCE", "TITLE", "describe",
           "dynamics_metrics", "eval_sets", "experiment", "experiments", "findings", "load_seeds",
           "measure_seed", "numbers", "OPTIONAL_RUNS", "optional_runs", "probe_data", "scorecard",
           "seeds_of", "through_training", "validate"]
