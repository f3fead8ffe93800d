"""Studies: one package per study, each building one ``protocol.Study`` (its tables, notebook and
functions: the protocol of ``toymech.studies.protocol``, signatures checked by a test),
registered in ``protocol.STUDIES``; ``study(name)`` returns it; ``toymech/studies/_template`` is
the one to copy.

Studies import tasks, models, training, analysis and plots; nothing below imports them.
"""

from __future__ import annotations

from .protocol import STUDIES, Study, all_studies, study

__all__ = ["STUDIES", "Study", "all_studies", "study"]
