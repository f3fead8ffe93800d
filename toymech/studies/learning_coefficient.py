"""A study's learning-coefficient curve through training, written once: the fixed pool of
sequences the LLC's loss L_n is over and the curve over a run's snapshots, driven by the
study's two tables (``LLC_SETTINGS``: size -> ``SGLDSettings``; ``LLC_POOL``: size -> sequences).

``llc_pool, llc_curve = llc_for(LLC_SETTINGS, LLC_POOL)`` in a study's ``causal.py`` (as
``seeds_of = seeds_for(SIZES)``); whether a notebook draws the curve is ``params.llc_on_for``.
"""

from __future__ import annotations

from typing import Callable, Mapping

import torch

from ..analysis.llc import LLCCurve, SGLDSettings, llc_through_training
from ..core import seed_for, size_name
from ..devices import make_generator
from ..tasks import Batch, Task


def llc_for(settings: Mapping[str, SGLDSettings], pool: Mapping[str, int]
            ) -> tuple[Callable[..., Batch], Callable[..., LLCCurve]]:
    """The study's ``llc_pool`` and ``llc_curve`` over its settings and pool sizes."""
    settings, pool = dict(settings), dict(pool)

    def llc_pool(task: Task, size: str, seed: int, device: str | torch.device = "cpu") -> Batch:
        """The fixed training-distribution sequences the LLC's loss L_n is over (the ``probe``
        stream of ``seed``; the study's ``LLC_POOL[size]`` of them)."""
        n = pool[size_name(size)]
        return task.sample(n, make_generator(seed_for(seed, "probe"), torch.device(device)))

    def llc_curve(entry, task: Task, size: str, seed: int,
                  steps: list[int] | None = None) -> LLCCurve:
        """λ̂ at the snapshots of the zoo entry ``entry`` with the size's ``LLC_SETTINGS``."""
        dev = next(entry.model.parameters()).device
        return llc_through_training(entry, llc_pool(task, size, seed, dev), settings[size_name(size)],
                                    steps)

    return llc_pool, llc_curve
