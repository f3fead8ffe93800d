"""Study 3 through training: task accuracy, subspace concentration and attention of one snapshot.

``probe_data`` draws the fixed data once, from the run's streams as ``measure`` does: the
evaluation sets from ``eval`` (``eval_sets``), the concentration probe's sequences from ``probe``
(``concentration_rows``), the sequence shown from ``example``. ``dynamics_metrics`` and
``dynamics_patterns`` are then pure functions of a model, called at every training snapshot. For a
random transformer only the embeddings and the unembedding move; its hidden states change through
what the embeddings feed the frozen layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from transformer_lens import HookedTransformer

from ...analysis.subspace import concentration
from ...core import Setting, check, seed_for
from ...devices import make_generator
from ...tasks.base import Batch, Task
from ...training import evaluate
from ...zoo import Zoo
from ..protocol import ProbeData
from ..trajectory import Trajectory, example_patterns, over_seeds, trajectory
from .design import Plan, eval_sets, size_spec
from .measure import plan_seeds, top_k
from .recipes import table_experiment

# Task accuracy and loss against concentration: does the subspace concentrate before or after
# the task is solved?
DYNAMICS_METRICS = ("test_acc", "test_loss", "ev_principal_mean")
WINDOW = 64  # most positions shown by ``dynamics_patterns``


@dataclass(frozen=True)
class RandomTransformersProbeData(ProbeData):
    """What every snapshot is measured on.

    sets: the task's evaluation sets (``design.eval_sets``: ``test``, and e.g. ``train`` for
        modular addition, ``all`` for memorization). probe_tokens: [probe_n, seq] the test
        sequences whose hidden states the concentration reads. example: [<= WINDOW] one sequence
        shown by ``dynamics_patterns``.
    """

    task: Task
    sets: dict[str, Batch]
    probe_tokens: torch.Tensor
    example: torch.Tensor


def probe_data(task: Task, size: Setting | str, seed: int, device: str | torch.device = "cpu", *,
               eval_n: int | None = None, probe_n: int | None = None,
               window: int = WINDOW) -> RandomTransformersProbeData:
    """The fixed data of ``task``'s run with seed ``seed`` at ``size``, on ``device``
    (``eval_n`` / ``probe_n``: None = the size's ``eval_n`` / ``probe_n``).

    The example: of 8 sequences from the ``example`` stream, the first with the latest scored
    target (e.g. the needle sequence with the most pairs), cut after that target (padding is not
    shown) and to at most ``window`` positions from the start (so every query row keeps all of
    its attention).
    """
    spec = size_spec(size)
    eval_n = spec.eval_n if eval_n is None else eval_n
    probe_n = spec.probe_n if probe_n is None else probe_n
    for name, v in (("eval_n", eval_n), ("probe_n", probe_n)):
        check(isinstance(v, int) and v >= 2, name, v, "None or an integer >= 2")
    check(isinstance(window, int) and window >= 2, "window", window, "an integer >= 2")
    dev = torch.device(device)
    sets = eval_sets(task, size, seed, dev, n=eval_n)
    probe = task.eval_sets(probe_n, make_generator(seed_for(seed, "probe"), dev))["test"]
    ex = task.sample(8, make_generator(seed_for(seed, "example"), dev))
    pos = torch.arange(task.seq_len, device=ex.scored.device)
    last = torch.where(ex.scored, pos, -1).max(1).values  # [8] last scored target, -1: none
    row = int(last.argmax())
    end = int(last[row]) + 1 if int(last[row]) >= 0 else task.seq_len
    return RandomTransformersProbeData(task, sets, probe.tokens[:probe_n], ex.tokens[row, :min(end, window)])


def _layer_key(layer: str) -> str:
    return layer.replace(" ", "")  # "layer 1" -> "layer1"


@torch.no_grad()
def dynamics_metrics(model: HookedTransformer, data: RandomTransformersProbeData) -> dict[str, float]:
    """The study's numbers for one snapshot of ``model``, measured on the probe data ``data``
    (all floats):

    ``{set}_{metric}``   the task's metrics on each evaluation set (``training.evaluate``, as
        ``measure.run``): always ``test_loss`` and ``test_acc``; task-specific extras such as
        ``test_kl`` (circuit imitation) or ``all_memorized_bits`` (memorization);
    ``ev_{basis}_{layer}``  EV_k (k = ``measure.top_k``, an eighth of the width) of the hidden states (every position of the probe sequences)
        after the embedding (``embedding``) and after each layer (``layer1``, ...), in the
        principal and the neuron basis (``analysis.subspace.concentration``): the share of
        variance in the top k directions;
    ``ev_principal_mean``   EV_k in the principal basis averaged over the layers after the
        embedding (what ``tables.concentration_gap`` compares).
    """
    out = {}
    for name, batch in data.sets.items():
        batch = batch.to(model.cfg.device)
        out.update({f"{name}_{k}": float(v)
                    for k, v in evaluate(model, data.task, batch).items()})
    ev = concentration(model, data.probe_tokens.to(model.cfg.device), top_k(model.cfg.d_model))
    for (layer, basis), value in ev.items():
        out[f"ev_{basis}_{_layer_key(layer)}"] = value
    after = [v for (layer, basis), v in ev.items() if basis == "principal" and layer != "embedding"]
    out["ev_principal_mean"] = float(np.mean(after))
    return out


def dynamics_grid(plan: Plan, size: Setting | str, zoo: Zoo, device: str | torch.device = "cpu",
                  seed: int = 0, task_name: str | None = None, eval_n: int = 512,
                  n_seeds: int | None = None) -> dict[str, list[Trajectory]]:
    """Through training, over the sweep's seeds: ``{mode: [Trajectory per seed]}`` for the
    first sweep task, random at the table's large width and normal at the widest width the plan
    trains normal models (the sweep's runs: nothing new is trained where the sweep ran). The
    metrics are measured on ``eval_n`` test sequences of the notebook's ``eval`` stream."""
    task_name = task_name or plan.sweep_tasks[0]
    seeds = plan_seeds(size, seed, "sweep", n_seeds)
    widths = {"random": plan.widths[-1],
              "normal": plan.widths[-1] if plan.normal_large else max(plan.sweep_widths)}
    out: dict[str, list[Trajectory]] = {}
    for mode, width in widths.items():
        exps = [table_experiment(task_name, width, mode, size, s) for s in seeds]
        entries = zoo.get_or_train_many(exps, device=device)
        data = probe_data(exps[0].task, size, seed, device, eval_n=eval_n,
                          probe_n=min(eval_n, size_spec(size).probe_n))
        out[mode] = [trajectory(e, f"{task_name} {mode} w{width} seed {s}", dynamics_metrics,
                                example_patterns, data, DYNAMICS_METRICS)
                     for e, s in zip(entries, seeds)]
    return out


def dynamics_table(grid: dict[str, list[Trajectory]]) -> pd.DataFrame:
    """``over_seeds`` of each mode of ``dynamics_grid``, one block of rows per mode."""
    return pd.concat({mode: over_seeds(runs) for mode, runs in grid.items()},
                     names=["mode", "row"]).reset_index(level="row", drop=True)
