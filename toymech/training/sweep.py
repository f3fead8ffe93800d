"""Moved: sweeps are the ``toymech.sweep`` package (above the training layer). This name stays
only until ``toymech/studies/grids.py`` imports ``toymech.sweep.runner``; nothing else uses it."""

from ..sweep.runner import BACKENDS, run_experiments  # noqa: F401
from ..sweep.table import SweepResult  # noqa: F401
