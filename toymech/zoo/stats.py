"""Where the time went: a process-wide count of the zoo entries this process trained (and
stored) and loaded, and the seconds spent training them (``zoo_stats()``).

The zoo counts its own work. Work done in other processes for this one (a sweep's Ray workers)
is added by whoever receives its results (``add_zoo_stats``: the sweep runner adds the trials its
workers ran, from the table's ``loaded`` and ``seconds`` columns), so a report of this process
sees every trial it asked for, once.
"""

from __future__ import annotations

import threading
from typing import Any

from ..core import check_float, check_int

_LOCK = threading.Lock()
_STATS = {"trained": 0, "loaded": 0, "train_seconds": 0.0}


def zoo_stats() -> dict[str, Any]:
    """``{"trained": n, "loaded": n, "train_seconds": s}`` counted since the process started
    (or since ``reset_zoo_stats``)."""
    with _LOCK:
        return dict(_STATS)


def add_zoo_stats(trained: int = 0, loaded: int = 0, train_seconds: float = 0.0) -> None:
    """Count entries trained or loaded on this process's behalf elsewhere (or here)."""
    trained = check_int("trained", trained, 0)
    loaded = check_int("loaded", loaded, 0)
    train_seconds = check_float("train_seconds", train_seconds, 0.0)
    with _LOCK:
        _STATS["trained"] += trained
        _STATS["loaded"] += loaded
        _STATS["train_seconds"] += float(train_seconds)


def reset_zoo_stats() -> dict[str, Any]:
    """Set the counts to zero; returns what they were."""
    with _LOCK:
        before = dict(_STATS)
        _STATS.update(trained=0, loaded=0, train_seconds=0.0)
    return before


__all__ = ["add_zoo_stats", "reset_zoo_stats", "zoo_stats"]
