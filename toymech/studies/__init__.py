"""Studies: one package per study, each with the same public surface (see
``toymech/studies/_template``):

``TITLE``, ``SOURCE`` (a citation; docs/sources.md has them all), ``SIZES`` (smoke/default/paper:
the one place the study's sizes live), ``EXPERIMENTS`` (named experiments), ``validate(...)``
(checks notebook parameters, resolves the device once), the functions that train and measure,
tables, and ``CLAIMS`` (data: statement, source, the source's number, a verdict function) with
``scorecard(...)``.

Studies import tasks, models, training and analysis; nothing below imports them.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def all_studies() -> list[ModuleType]:
    """Every study package (names starting with '_' are templates, not studies)."""
    return [importlib.import_module(f"{__name__}.{m.name}")
            for m in pkgutil.iter_modules(__path__) if m.ispkg and not m.name.startswith("_")]
