"""Studies: one package per study, each with the same public surface, the protocol of
``toymech.studies.protocol`` (names, signatures and roles, checked by a test), registered in
``protocol.STUDIES``; ``toymech/studies/_template`` is the one to copy.

Studies import tasks, models, training, analysis and plots; nothing below imports them.
"""

from __future__ import annotations

from .protocol import STUDIES, all_studies, study

__all__ = ["STUDIES", "all_studies", "study"]
