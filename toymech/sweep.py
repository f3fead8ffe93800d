"""Sweeps of experiments into the zoo: ``from toymech.sweep import run_sweep`` (see
``toymech.training.sweep``; the command is ``toymech sweep GRID.yaml``)."""

from .training.sweep import *  # noqa: F401,F403
from .training.sweep import __all__  # noqa: F401
