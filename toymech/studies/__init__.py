"""Studies: one package per study, each a subclass of the abstract ``protocol.Study`` (what it
declares as class attributes, what it computes as methods, what every study shares inherited)
whose one instance its package makes, registered in ``protocol.STUDIES``; ``study(name)``
returns it; ``toymech/studies/_template`` is the one to copy.

Studies import tasks, models, training, analysis and plots; nothing below imports them.
"""

from __future__ import annotations

from .protocol import STUDIES, Study, all_studies, study

__all__ = ["STUDIES", "Study", "all_studies", "study"]
