"""Which runs can train as one stacked program, and whether doing so pays on a device.

Runs stack when their models have one shape and their training differs only in the seed
(``stack_key``): seeds of one setting, and also the data knobs of a map (block lengths, offsets,
anything that changes the task but not the model or the sequence length), each run drawing its
own batches from its own task (``train_stacked`` with one task per model).

``stacking_pays`` is decided by measurement. On a CPU the rule is the one
``benchmarks/bench_multiseed.py`` measured (one thread: 1.5x at width 16, none from width 64).
On any other device it times a few steps of one run against the same steps of ``n`` runs
stacked, once per device and model shape in a process (``measure_stacking``), and stacks where
the stacked program trains more runs per second.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import replace

import torch

from ..core import jsonable
from ..devices import resolve_device
from ..models import build_model
from .loop import train, train_stacked

# (device name, stack key, n) -> measured throughput ratio, stacked / one at a time
_MEASURED: dict[tuple[str, str, int], float] = {}


def stack_key(exp) -> str:
    """What must be equal for two runs to train as one stacked program: the model apart from
    its seed, the training apart from its seed, and the task's sequence length (batches stack).
    Runs with equal keys may differ in their task's other fields (a map's data knobs)."""
    d = exp.to_dict()
    model, train = dict(d["model"]), dict(d["train"])
    model.pop("seed", None)
    train.pop("seed", None)
    return json.dumps(jsonable({"model": model, "train": train, "seq_len": exp.task.seq_len}),
                      sort_keys=True)


def stack_groups(exps: Sequence) -> list[list[int]]:
    """The indices of ``exps`` grouped by ``stack_key``, in order of first appearance."""
    groups: dict[str, list[int]] = {}
    for i, e in enumerate(exps):
        groups.setdefault(stack_key(e), []).append(i)
    return list(groups.values())


def _short(exp, steps: int, seed: int):
    cfg = exp.train.replace(steps=steps, eval_every=steps, snapshots=0,
                              warmup_steps=min(exp.train.warmup_steps, steps - 1), seed=seed,
                              stop_metric=None, stop_value=None, checkpoint_every=None)
    return replace(exp, train=cfg)


def measure_stacking(exp, device: str | torch.device, n: int = 8, steps: int = 12) -> float:
    """Runs per second of ``n`` copies of ``exp`` (seeds 0..n-1) stacked, over the same of one
    run trained alone, each timed over ``steps`` steps after an untimed warm-up of each way.
    > 1: stacking is faster on ``device``. Costs about ``(n + 1) * steps`` steps of the model."""
    dev = resolve_device(device)
    exps = [_short(exp, steps, s) for s in range(n)]

    def once(stacked: bool) -> float:
        models = [build_model(e.model) for e in (exps if stacked else exps[:1])]
        _sync(dev)
        t0 = time.perf_counter()
        if stacked:
            train_stacked(models, [e.task for e in exps], [e.train for e in exps], device=dev,
                          progress=False, log=None)
        else:
            train(models[0], exps[0].task, exps[0].train, device=dev, progress=False, log=None)
        _sync(dev)
        return time.perf_counter() - t0

    once(False), once(True)  # warm-up: kernels, allocator, caches
    alone, stacked = once(False), once(True)
    return (n / stacked) / (1 / alone)


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def stacking_pays(exp, device: str | torch.device, n: int = 8) -> bool:
    """Whether ``n`` runs like ``exp`` train faster stacked than one after another on
    ``device`` (see the module docstring: a CPU's measured rule, another device's measurement,
    made once per process, device and shape)."""
    if getattr(exp.model, "kind", None) == "lstm":
        return False  # torch.func has no batching rule for aten::lstm: an LSTM cannot stack
    dev = resolve_device(device)
    if dev.type == "cpu":
        return getattr(exp.model, "d_model", 10**9) <= 16
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else str(dev)
    key = (name, stack_key(exp), n)
    if key not in _MEASURED:
        _MEASURED[key] = measure_stacking(exp, dev, n)
    return _MEASURED[key] > 1.0
