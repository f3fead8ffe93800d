"""TEMPLATE for a new study: copy this folder to ``toymech/studies/<your_study>/`` (a name not
starting with '_'), set ``design.NAME`` to that name, rename its named experiment, add one line
to ``toymech.studies.protocol.STUDIES``, then edit (CONTRIBUTING.md, "Add a study").

The study is one subclass of ``toymech.studies.protocol.Study`` (``study.py``: what it declares
and computes, each naming the table or function of its modules), of which this package makes
the one instance, ``STUDY``: what the CLI, maps and reports ask. Besides it, the package names
only what its notebook reads. Six modules and the notebook skeleton, the same files in every
study: ``study.py`` (the class), ``design`` (sizes, knobs, experiments, evaluation sets, the
run's description), ``claims`` (the source's claims, one seed's named numbers), ``over_seeds``
(train/load, ``measure_seed``, the null world, the findings), ``dynamics`` (the probe data, the
numbers through training) and ``notebook.ipynb`` (move the copy's to
``notebooks/NN_<study>.ipynb``).
"""

from .design import experiment
from .over_seeds import findings, load_seeds
from .study import TemplateStudy

STUDY = TemplateStudy()

# What the notebook reads: the study's methods, then its own functions (above).
validate = STUDY.validate
with_knobs = STUDY.with_knobs
optional_runs = STUDY.optional_runs
describe = STUDY.describe
probe_data = STUDY.probe_data
through_training = STUDY.through_training
measure_seed = STUDY.measure_seed
scorecard = STUDY.scorecard
