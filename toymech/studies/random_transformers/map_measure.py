"""Study 3's measurement for maps (``toymech.maps``): one run's row and its label."""

from __future__ import annotations

import torch

from ...core import check
from ...training import Experiment
from .measure import row_for
from .over_seeds import solved_label

MAP_LABEL = "solved"  # the label of a map row that says the run solved its task


@torch.no_grad()
def map_row(run, size: str, seed: int) -> dict[str, object]:
    """One map run's row (``toymech.maps``): its task and freezing mode, its accuracy and loss on
    its own held-out test set beside the task's trivial predictor (``chance``: ``row_for``, as
    the study's tables measure it), whether it is solved (yes / no) and its ``solved_label``.
    ``run``: a zoo entry (its own experiment: the task and the mode are the run's), or a model
    with ``meta`` (e.g. an untrained ``ZooEntry``: the null); ``size``: the map's size (its
    evaluation sets' sizes); ``seed``: the run's seed (its evaluation sets are its ``eval``
    stream's, as ``row_for`` draws them)."""
    check(hasattr(run, "meta") and hasattr(run, "model"), "run", type(run).__name__,
          "a zoo entry (a bare model does not say the task it was trained on)")
    exp = Experiment.from_dict({k: run.meta[k] for k in ("name", "task", "model", "train")
                                if k in run.meta})
    got = row_for(exp, run.model.eval(), size)
    task, mode = got["task"], got["mode"]
    numbers_ = {f"acc.{task}.{mode}.run": got["acc"], f"chance.{task}": got["chance"]}
    label = solved_label(numbers_, task, mode, "run")
    row: dict[str, object] = {"task": task, "mode": mode, "width": got["width"]}
    row.update({k: round(float(got[k]), 4) for k in ("acc", "loss", "chance", "chance_loss",
                                                     "digit_acc") if k in got})
    row["solved"] = "yes" if label == "solved" else "no"
    row["label"] = label
    return row
