"""Named experiments at three sizes: ``smoke`` (CI, seconds), ``default`` (a laptop CPU, minutes)
and ``paper`` (the source's full settings; a GPU helps).

``toymech.presets.get("induction-2l", size="default")`` -> ``Experiment``.
"""

from __future__ import annotations

from typing import Callable

from . import tasks
from .models import ModelConfig
from .tasks.base import check
from .training import TrainConfig
from .zoo import Experiment

SIZES = ("smoke", "default", "paper")

# Induction study (reference.md §A): AdamW 1e-3, weight decay 1.0, batch 256, 10k steps.
_INDUCTION_TRAIN = {
    "smoke": TrainConfig(steps=40, batch_size=64, eval_every=20, eval_size=256),
    "default": TrainConfig(steps=2000, batch_size=256, eval_every=100, eval_size=1024),
    "paper": TrainConfig(steps=10_000, batch_size=256, eval_every=250, eval_size=2048),
}

# name -> (n_layers, smeared keys, positions, description)
INDUCTION_MODELS = {
    "induction-1l": (1, False, "sinusoidal_qk", "1 layer, sinusoidal Q/K positions"),
    "induction-1l-smeared": (1, True, "sinusoidal_qk", "1 layer, smeared keys, sinusoidal Q/K"),
    "induction-2l": (2, False, "sinusoidal_qk", "2 layers, sinusoidal Q/K positions"),
    "induction-1l-learned": (1, False, "shortformer", "1 layer, learned Q/K positions"),
    "induction-1l-smeared-learned": (1, True, "shortformer",
                                     "1 layer, smeared keys, learned Q/K positions"),
    "induction-2l-learned": (2, False, "shortformer", "2 layers, learned Q/K positions"),
}


def _induction(name: str) -> Callable[[str, int], Experiment]:
    n_layers, smear, positions, _ = INDUCTION_MODELS[name]

    def make(size: str, seed: int) -> Experiment:
        task = tasks.get("repeated_blocks")
        model = ModelConfig(n_layers=n_layers, n_heads=4, d_model=32, d_vocab=task.d_vocab,
                            n_ctx=task.seq_len, positions=positions, smear_keys=smear, seed=seed)
        return Experiment(task, model, _INDUCTION_TRAIN[size].replace(seed=seed), name)

    return make


_REGISTRY: dict[str, Callable[[str, int], Experiment]] = {
    name: _induction(name) for name in INDUCTION_MODELS
}
DESCRIPTIONS = {name: spec[3] for name, spec in INDUCTION_MODELS.items()}


def register(name: str, description: str) -> Callable:
    """Decorator for ``make(size, seed) -> Experiment`` functions of other studies."""
    def deco(fn: Callable[[str, int], Experiment]) -> Callable[[str, int], Experiment]:
        if name in _REGISTRY:
            raise ValueError(f"preset {name!r} is registered twice")
        _REGISTRY[name] = fn
        DESCRIPTIONS[name] = description
        return fn
    return deco


def names() -> list[str]:
    _load_studies()
    return sorted(_REGISTRY)


def _load_studies() -> None:
    # Study modules register their presets on import; imported lazily to avoid a cycle.
    from . import studies
    studies.load_all()


def check_size(size: str) -> None:
    check(size in SIZES, "preset", size, f"one of {', '.join(SIZES)}")


def get(name: str, size: str = "default", seed: int = 0) -> Experiment:
    _load_studies()
    check(name in _REGISTRY, "preset name", name, f"one of {', '.join(names())}")
    check_size(size)
    check(isinstance(seed, int) and seed >= 0, "seed", seed, "an integer >= 0")
    return _REGISTRY[name](size, seed)
