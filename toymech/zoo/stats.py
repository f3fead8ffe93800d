"""Where the time went: a process-wide count of the zoo entries this process trained (and
stored) and loaded, and the seconds spent training them (``zoo_stats()``).

The zoo counts its own work. Work done in other processes for this one (a sweep's Ray workers)
is added by whoever receives its results (``add_zoo_stats``: the sweep runner adds the trials its
workers ran, from the table's ``loaded`` and ``seconds`` columns; ``train_missing`` the runs its
processes trained), so a report of this process sees every trial it asked for, once. An entry
trained for this process and read back afterwards counts as trained, not also as loaded.
"""

from __future__ import annotations

import threading
from typing import Any

from ..core import check_float, check_int

_LOCK = threading.Lock()
_STATS = {"trained": 0, "loaded": 0, "train_seconds": 0.0}
_TRAINED: set[str] = set()  # the entries trained for this process (here or by its workers)


def zoo_stats() -> dict[str, Any]:
    """``{"trained": n, "loaded": n, "train_seconds": s}`` counted since the process started
    (or since ``reset_zoo_stats``)."""
    with _LOCK:
        return dict(_STATS)


def add_zoo_stats(trained: int = 0, loaded: int = 0, train_seconds: float = 0.0) -> None:
    """Count entries ``trained`` or ``loaded`` on this process's behalf elsewhere (or here), and
    the ``train_seconds`` spent training them (``zoo_stats`` reports the totals)."""
    trained = check_int("trained", trained, 0)
    loaded = check_int("loaded", loaded, 0)
    train_seconds = check_float("train_seconds", train_seconds, 0.0)
    with _LOCK:
        _STATS["trained"] += trained
        _STATS["loaded"] += loaded
        _STATS["train_seconds"] += float(train_seconds)


def mark_trained(path: Any) -> None:
    """``path``'s entry was trained for this process (here, or by a worker it started): reading
    it back is not a model "read from the zoo" (``loaded_from_zoo``)."""
    with _LOCK:
        _TRAINED.add(str(path))


def loaded_from_zoo(path: Any) -> None:
    """Count one entry read from the zoo, unless this process had it trained."""
    with _LOCK:
        if str(path) not in _TRAINED:
            _STATS["loaded"] += 1


def reset_zoo_stats() -> dict[str, Any]:
    """Set the counts to zero; returns what they were."""
    with _LOCK:
        before = dict(_STATS)
        _STATS.update(trained=0, loaded=0, train_seconds=0.0)
        _TRAINED.clear()
    return before


__all__ = ["add_zoo_stats", "loaded_from_zoo", "mark_trained", "reset_zoo_stats", "zoo_stats"]
