"""The zoo: the crash-safe store of trained models, one layer above training (it trains what
it does not hold).

``Zoo`` (``store``: ``get_or_train``, ``get_or_train_many``, ``store``, ``load``; the only
writer of models), ``runs`` (how a missing run is trained: continuing the longest shorter run,
stacking seeds), ``inventory`` (which folders are entries, their states and repairs),
``locks`` (one writer per entry), ``stats`` (``zoo_stats()``: what this process trained and
loaded). The folder format itself (``toymech.training.checkpoints``, written atomically by
``toymech.training.atomic``) sits in training, which writes resume checkpoints in it too.
"""

from ..training.stacking import stacking_pays
from .locks import EntryLock, LockTimeout
from .stats import add_zoo_stats, mark_trained, reset_zoo_stats, zoo_stats
from .store import Zoo, ZooEntry, default_cache_dir

__all__ = ["EntryLock", "LockTimeout", "Zoo", "ZooEntry", "add_zoo_stats", "default_cache_dir",
           "mark_trained", "reset_zoo_stats", "stacking_pays", "zoo_stats"]
