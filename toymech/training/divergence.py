"""When a run has diverged: a non-finite loss, or one far above chance.

Chance for next-token cross-entropy is ln(d_vocab) nats (a uniform prediction): at most
ln(10**6) = 13.8 for the largest vocabulary a config allows. ``DIVERGED_LOSS`` = 1000 nats is
over 70 times that: no run that learns anything gets there, while an exploding one (e.g.
``init_range=1e6``, measured at a loss of 3e26) passes it at its first evaluation step.
"""

from __future__ import annotations

DIVERGED_LOSS = 1000.0


class TrainingDiverged(ValueError):
    """A run whose loss became non-finite or rose past ``DIVERGED_LOSS``: nothing is stored."""
