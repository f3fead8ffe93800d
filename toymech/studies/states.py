"""The states a map's run is in besides carrying a mechanism label, written by a study's
``map_row`` in its row's ``state`` column (``toymech.maps.summary.run_state`` reads them).

* ``LEARNED``: the run beat the study's best predictor without the mechanism on its own training
  distribution, and had stopped learning: it may carry a mechanism label.
* ``UNTRAINED``: it did not beat that predictor by the study's margin: not having learned is
  never evidence that a mechanism is absent, so it carries no label.
* ``STILL_LEARNING``: its loss was still falling when it stopped: train it longer.

``BEYOND`` names the row's column saying how far beyond the best predictor without the
mechanism the run got (positive: better than it, in the study's own units).
"""

LEARNED, UNTRAINED, STILL_LEARNING = "learned", "untrained", "still learning"
BEYOND = "beyond_baseline"

__all__ = ["BEYOND", "LEARNED", "STILL_LEARNING", "UNTRAINED"]
