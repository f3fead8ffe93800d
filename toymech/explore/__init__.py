"""Explore a model by hand: ``toymech.explore(model, task=None, *, size, seed, cache_dir)``.

``model`` is a ``HookedTransformer`` (then ``task`` says what it reads), a zoo entry
(``ZooEntry``, e.g. a study's main run) or an experiment name (``toymech list experiments``:
loaded from the zoo, trained there first when absent). The result is an ``Explorer``: in
JupyterLab an ipywidgets view (type a sequence, sample one, ablate heads, move through the run's
weight snapshots), in plain Python the same views as data (``state()``, ``ablate``, ``restore``,
``patch``, ``at_step``); in a report without a kernel, a static snapshot of its first state.

``import toymech.explore`` makes ``toymech.explore`` callable: the module is its own entry point,
so that ``import toymech`` stays light for the command line.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

from transformer_lens import HookedTransformer

from ..devices import use_thread_policy
from ..tasks import Task
from ..zoo import ZooEntry
from .explorer import Explorer
from .source import Source, resolve


def explore(model: HookedTransformer | ZooEntry | str, task: Task | None = None, *,
            size: Any = "default", seed: int = 0, cache_dir: str | Path | None = None,
            variant: dict | None = None) -> Explorer:
    """An ``Explorer`` of ``model`` on ``task``.

    ``model``: a ``HookedTransformer`` (then ``task`` is required), a ``ZooEntry`` or an
    experiment name (``toymech list experiments``; loaded from the zoo, trained there first when
    absent). ``task``: what the model reads (None: the task the entry or experiment was trained
    on). ``size`` (a size name, or a ``Setting`` from a study's ``with_knobs``) and ``seed``
    name the experiment's run (and where a study is known, the evaluation sets drawn); ``cache_dir`` is the zoo (None: ``$TOYMECH_CACHE`` or
    ``~/.cache/toymech``); ``variant``: the experiment's study's knobs on top of ``size``
    (``{"block_len": "4-8"}``), for an experiment name.

    Returns the ``Explorer``: in JupyterLab it displays as a widget; its methods return the same
    views as data. Raises ``ValueError`` (one line naming the argument) for an unknown
    experiment, a bare model without its task, a task that does not fit the model, or a bad
    size, seed or variant. On a CPU the process's torch threads follow the package's policy
    unless chosen already (``devices.use_thread_policy``). Example:
    ``toymech.explore("induction-2l").set_sequence("QWERTY" * 4)``.
    """
    source = resolve(model, task, size, seed, cache_dir, variant)
    use_thread_policy(next(source.model.parameters()).device, log=None)  # a bare model too
    return Explorer(source)


class _CallableModule(types.ModuleType):
    """``toymech.explore(...)`` calls ``explore``; the module's names stay reachable."""

    def __call__(self, model: Any, task: Any = None, **options: Any) -> Explorer:
        return explore(model, task, **options)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["Explorer", "Source", "explore"]
