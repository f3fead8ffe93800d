"""TEMPLATE for a new study: copy this folder to ``toymech/studies/<your_study>/`` (a name not
starting with '_'), then edit. Every study exposes the same surface (tests/test_studies.py
checks it): ``TITLE``, ``SOURCE``, ``SIZES``, ``EXPERIMENTS``, ``validate``, the functions that
train and measure, ``CLAIMS``, ``numbers`` and ``scorecard``. See CONTRIBUTING.md.
"""

from .claims import CLAIMS, SOURCE, numbers, scorecard
from .design import EXPERIMENTS, SIZES, experiment, validate
from .measure import run

TITLE = "Template study: a 2-layer transformer on parenthesis balancing"

__all__ = ["CLAIMS", "EXPERIMENTS", "SIZES", "SOURCE", "TITLE", "experiment", "numbers", "run",
           "scorecard", "validate"]
