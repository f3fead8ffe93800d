"""The study's sizes (the one place they live), knobs, named experiments, evaluation sets and
the line that describes a run.

Copy this folder to ``toymech/studies/<study>/``, set ``NAME`` below to ``<study>``, register it
in ``protocol.STUDIES`` (one line), and edit. The study's class (``study.py``) names the tables
and functions of this module; ``toymech.studies.protocol.Study`` says what each must do.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from toymech import tasks
from toymech.core import Setting, seed_for
from toymech.devices import make_generator
from toymech.models import ModelConfig
from toymech.studies import knobs
from toymech.studies.knobs import Knob
from toymech.studies.protocol import StudySize, judged_seeds, size_of
from toymech.tasks import Batch, Task
from toymech.training import Experiment, Named, TrainConfig


@dataclass(frozen=True)
class TemplateSize(StudySize):
    """What changes with the size; ``n_seeds``: seeds the claims are assessed over."""

    steps: int = 500
    batch: int = 64
    eval_n: int = 1024
    snapshots: int = 8


SIZES = {
    "smoke": TemplateSize(n_seeds=2, steps=20, batch=32, eval_n=128, snapshots=4),
    "default": TemplateSize(n_seeds=3, steps=500, batch=64, eval_n=1024),
    "paper": TemplateSize(n_seeds=10, steps=5000, batch=256, eval_n=4096, snapshots=16),
}
# The source's setting: the parameters its claims are stated at (compared with ``setting``).
SOURCE_SETTING = {"steps": 5000, "batch": 256, "d_model": 32, "max_len": 16}
CALIBRATION: dict[str, tuple[int, ...]] = {}  # size -> seeds thresholds were chosen on
COST = {"smoke": "seconds", "default": "about a minute on a CPU", "paper": "minutes on a CPU"}
# The notebook's ``also``: the optional comparisons, off unless asked for (``"all"``: every one).
# A study with a learning-coefficient curve names "llc" here and adds ``LLC_ON`` (size -> on
# without being asked), and ``LLC_SETTINGS`` and ``LLC_POOL`` in a ``causal.py``, all three
# named by its class (``llc_on_sizes``, ``llc_settings``, ``llc_pool_sizes``).
OPTIONAL_RUNS: tuple[str, ...] = ()


def setting(size: Setting | str) -> dict:
    """What ``size`` trains, in ``SOURCE_SETTING``'s parameters."""
    s, exp = size_of(SIZES, size), experiment(size)
    return {"steps": s.steps, "batch": s.batch, "d_model": exp.model.d_model,
            "max_len": exp.task.max_len}


def experiment(size: Setting | str = "default", seed: int = 0) -> Experiment:
    """The study's model at ``size``, seeded with ``seed`` (snapshots for ``through_training``)."""
    s = size_of(SIZES, size)
    task = tasks.get("parentheses", max_len=16)
    model = ModelConfig(n_layers=2, n_heads=4, d_model=32, d_vocab=task.d_vocab,
                        n_ctx=task.seq_len, attn_only=False, normalization="LN",
                        positions="standard", seed=seed)
    train = TrainConfig(steps=s.steps, batch_size=s.batch, lr=1e-3, weight_decay=0.01,
                        eval_every=max(1, s.steps // 5), eval_size=256, seed=seed,
                        snapshots=s.snapshots)
    exp = Experiment(task, model, train, "template-parentheses")
    return knobs.apply_knobs(KNOBS, exp, knobs.variant_values(KNOBS, size))


# The knobs a variant may change (``toymech list knobs <study>``): a name a researcher would
# use, the dotted fields it writes, the allowed values, the source's value (the experiment
# above must be built with it), one sentence of meaning. Keep every source value equal to what
# ``experiment`` builds: tests/test_knobs.py checks it.
KNOBS = knobs.table(
    Knob("max_len", "int", (2, 256), 16, "the longest bracket sequence", ("task.max_len",)),
    Knob("d_model", "int", (4, 1024), 32, "the residual stream's width (d_head follows)",
         ("model.d_model",)),
    Knob("n_layers", "int", (1, 8), 2, "the number of layers", ("model.n_layers",)),
    Knob("lr", "float", (1e-6, 1.0), 1e-3, "AdamW's learning rate", ("train.lr",)),
    Knob("steps", "int", (1, 10_000_000), 5000, "training steps", ("train.steps",)),
)


def experiments(size: Setting | str, seeds) -> list[Experiment]:
    """What the study trains for ``seeds`` at ``size``."""
    return [experiment(size, s) for s in seeds]


# The study's registered name (``protocol.study(NAME)``; a copy's: its package's name, an
# identifier not starting with '_'). Experiment names are global: prefix them with it (rename
# "template-..." in a copy; the name given to ``experiment``'s Experiment too).
NAME = "_template"
EXPERIMENTS = {"template-parentheses": Named("template-parentheses", "template study's model",
                                             experiment, NAME)}


def eval_sets(task: Task, size: Setting | str, seed: int, device: str | torch.device = "cpu"
              ) -> dict[str, Batch]:
    """The evaluation sets of a run with seed ``seed``: its own ``eval`` stream."""
    gen = make_generator(seed_for(seed, "eval"), torch.device(device))
    return task.eval_sets(size_of(SIZES, size).eval_n, gen)


def describe(size: Setting | str, seed: int, device, *, n_seeds: int | None = None) -> str:
    """The run's settings in words, from the size (never typed into the notebook)."""
    s, seeds = size_of(SIZES, size), judged_seeds(SIZES, CALIBRATION, size, seed, n_seeds)
    return (f"size {size} on {device}: {s.steps:,} steps of batch {s.batch}, "
            f"{len(seeds)} seeds ({', '.join(map(str, seeds))})")
