"""TEMPLATE for a new study: copy this folder to ``toymech/studies/<your_study>/`` (a name not
starting with '_'), add one line to ``toymech.studies.protocol.STUDIES``, then edit. Every study
exposes the protocol of ``toymech.studies.protocol`` (tests/test_studies.py checks names and
signatures) and what its notebook calls, nothing else (``__all__``, checked against the
notebook); ``notebook.ipynb`` beside this file is the notebook skeleton (move the copy's to
``notebooks/NN_<study>.ipynb``). Modules: ``design`` (sizes, experiments, parameter checks),
``measure`` (train/load, ``measure_seed``, the null world, the findings), ``claims`` (the
source's claims), ``dynamics`` (the probe data, through training). See CONTRIBUTING.md, "Add a
study", for the ten files and the rules the tests enforce.
"""

from .claims import CLAIMS, SOURCE, numbers, scorecard
from .design import (EXPERIMENTS, KNOBS, OPTIONAL_RUNS, SIZES, describe, eval_sets, experiment,
                     experiments, optional_runs, seeds_of, validate, with_knobs)
from .dynamics import dynamics_metrics, probe_data, through_training
from .measure import findings, load_seeds, measure_seed, untrained_numbers

TITLE = "Template study: a 2-layer transformer on parenthesis balancing"

__all__ = [
    # the protocol
    "TITLE", "SOURCE", "SIZES", "EXPERIMENTS", "CLAIMS", "OPTIONAL_RUNS", "validate", "seeds_of",
    "experiments", "eval_sets", "measure_seed", "untrained_numbers", "numbers", "scorecard",
    "probe_data", "dynamics_metrics", "through_training", "describe", "optional_runs",
    "KNOBS", "with_knobs",
    # what the notebook calls
    "experiment", "findings", "load_seeds",
]
