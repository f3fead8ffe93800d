"""The states a map's run is in besides carrying a mechanism label, written by a study's
``map_row`` in its row's ``state`` column (``toymech.maps.summary.run_state`` reads them), and
the one order in which every study decides them (``state_of``).

* ``LEARNED``: the run beat the study's best predictor without the mechanism on its own training
  distribution, had stopped learning, and its label is decided: it may carry a mechanism label.
* ``UNTRAINED``: it did not beat that predictor by the study's margin: not having learned is
  never evidence that a mechanism is absent, so it carries no label.
* ``STILL_LEARNING``: its loss was still falling when it stopped, or its log cannot show that it
  had stopped (``analysis.dynamics.history_still_learning``): train it longer.
* ``BUDGET_EXHAUSTED``: still learning when it reached the map's budget (written by the map,
  ``toymech.maps.summary.budget_state``, never by a study: a study does not know the budget).
* ``UNDECIDED``: it learned and stopped learning, but the interval on what its label rests on
  straddles the label's cut (a study's own interval: study 1 a run's margin, study 3 its
  accuracy): no label.

``BEYOND`` names the row's column saying how far beyond the best predictor without the
mechanism the run got (positive: better than it, in the study's own units).
"""

from __future__ import annotations

LEARNED, UNTRAINED, STILL_LEARNING = "learned", "untrained", "still learning"
UNDECIDED = "undecided"
BUDGET_EXHAUSTED = "budget exhausted"
BEYOND = "beyond_baseline"

# Every state a study or a map writes, in the order ``state_of`` decides them: the learning
# states before the level, the label last.
STATES = (STILL_LEARNING, BUDGET_EXHAUSTED, UNTRAINED, UNDECIDED, LEARNED)


def state_of(*, learned: bool, learning: bool | None, decided: bool = True) -> str:
    """A run's state, in the one order every study uses:

    1. ``still learning`` where its loss was still falling at the end (``learning`` True),
       whatever its level: a run on its way is continued by a map's budget policy, never read
       as one that failed to learn;
    2. ``untrained`` where it did not beat the study's best predictor without the mechanism on
       its own training distribution (``learned`` False): its level alone says so, the log
       adding nothing;
    3. ``still learning`` where the log cannot show that it stopped (``learning`` None: too
       short a log, or a learning-rate schedule that ran down to zero): a label needs a run that
       was seen to stop learning;
    4. ``undecided`` where the interval its label rests on straddles the label's cut
       (``decided`` False);
    5. ``learned`` otherwise: the only state that carries a label.

    ``learned``: beyond the best predictor without the mechanism on its training distribution
    (a study's own test); ``learning``: ``analysis.dynamics.history_still_learning`` of its log
    (True, False, or None: cannot tell; a bare model that never trained is False); ``decided``:
    whether its label's interval lies on one side of the cut (True for a run with no label to
    decide)."""
    if learning is True:
        return STILL_LEARNING
    if not learned:
        return UNTRAINED
    if learning is None:
        return STILL_LEARNING
    if not decided:
        return UNDECIDED
    return LEARNED


__all__ = ["BEYOND", "BUDGET_EXHAUSTED", "LEARNED", "STATES", "STILL_LEARNING", "UNDECIDED",
           "UNTRAINED", "state_of"]
