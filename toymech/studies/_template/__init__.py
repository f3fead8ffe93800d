"""TEMPLATE for a new study: copy this folder to ``toymech/studies/<your_study>/`` (a name not
starting with '_'), set ``design.NAME`` to that name, add one line to
``toymech.studies.protocol.STUDIES``, then edit. Every study builds its ``Study`` once, below
(``STUDY``: what the CLI, maps and reports ask; tests/test_studies.py checks its functions'
signatures), and exports the protocol's names and what its notebook calls, nothing else
(``__all__``, checked against the notebook); ``notebook.ipynb`` beside this file is the notebook skeleton (move the copy's to
``notebooks/NN_<study>.ipynb``). Modules: ``design`` (sizes, experiments, parameter checks),
``measure`` (train/load, ``measure_seed``, the null world, the findings), ``claims`` (the
source's claims), ``dynamics`` (the probe data, through training). See CONTRIBUTING.md, "Add a
study", for the ten files and the rules the tests enforce.
"""

from .. import protocol
from . import claims
from .claims import CLAIMS, SOURCE, numbers, scorecard
from . import design
from .design import (EXPERIMENTS, KNOBS, OPTIONAL_RUNS, SIZES, describe, eval_sets, experiment,
                     experiments, optional_runs, seeds_of, validate, with_knobs)
from .dynamics import dynamics_metrics, probe_data, through_training
from .measure import findings, load_seeds, measure_seed, untrained_numbers

TITLE = "Template study: a 2-layer transformer on parenthesis balancing"

STUDY = protocol.Study(
    name=design.NAME, title=TITLE, source=SOURCE, sizes=SIZES, named_experiments=EXPERIMENTS,
    claims=CLAIMS, settings=claims.SETTINGS, knobs=KNOBS,
    notebook="toymech/studies/_template/notebook.ipynb",
    notebook_options=protocol.COMMON_OPTIONS, module=__name__,
    validate=validate, seeds_of=seeds_of, experiments=experiments, eval_sets=eval_sets,
    measure_seed=measure_seed, untrained_numbers=untrained_numbers, numbers=numbers,
    scorecard=scorecard, probe_data=probe_data, dynamics_metrics=dynamics_metrics,
    through_training=through_training, describe=describe, with_knobs=with_knobs,
    optional_runs=optional_runs, optional_run_names=OPTIONAL_RUNS)

__all__ = [
    # the study (``toymech.studies.protocol.Study``) and the protocol's names, for the notebook
    "STUDY",
    "TITLE", "SOURCE", "SIZES", "EXPERIMENTS", "CLAIMS", "OPTIONAL_RUNS", "validate", "seeds_of",
    "experiments", "eval_sets", "measure_seed", "untrained_numbers", "numbers", "scorecard",
    "probe_data", "dynamics_metrics", "through_training", "describe", "optional_runs",
    "KNOBS", "with_knobs",
    # what the notebook calls
    "experiment", "findings", "load_seeds",
]
