"""The states a map's run is in besides carrying a mechanism label, written by a study's
``map_row`` in its row's ``state`` column (``toymech.maps.summary.run_state`` reads them).

* ``LEARNED``: the run beat the study's best predictor without the mechanism on its own training
  distribution, and had stopped learning: it may carry a mechanism label.
* ``UNTRAINED``: it did not beat that predictor by the study's margin: not having learned is
  never evidence that a mechanism is absent, so it carries no label.
* ``STILL_LEARNING``: its loss was still falling when it stopped: train it longer.
* ``UNDECIDED``: it learned, but its measurements cannot decide its label (a margin whose
  interval straddles the study's cut, or too few sets that can tell).
* ``BUDGET_EXHAUSTED``: still learning at the map's cap of steps.

``BEYOND`` names the row's column saying how far beyond the best predictor without the
mechanism the run got (positive: better than it, in the study's own units).
"""

LEARNED, UNTRAINED, STILL_LEARNING = "learned", "untrained", "still learning"
UNDECIDED = "undecided"
BUDGET_EXHAUSTED = "budget exhausted"
BEYOND = "beyond_baseline"

__all__ = ["BEYOND", "BUDGET_EXHAUSTED", "LEARNED", "STILL_LEARNING", "UNDECIDED", "UNTRAINED"]
