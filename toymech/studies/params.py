"""The parameters every study notebook shares, checked in one place.

``validate_run(size, seed, device, n_seeds=None, cache_dir=None, threads=None)`` checks them
(one ValueError each, naming the parameter), applies the thread policy
(``toymech.devices.apply_threads``: ``threads`` if given, else the free cores shared among the
processes of the job) and resolves the device once; each study's ``validate`` calls it, then
checks its own parameters. Under ``checks_only()`` it only checks (``toymech report`` runs
each notebook's ``validate`` before the kernel starts).
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any

import torch

from ..core import Setting, check, check_int, check_path_writable_dir, check_seed, size_name
from ..devices import apply_threads, resolve_device

MAX_SEEDS = 1000  # the most seeds a study's claims are assessed over


def check_n_seeds(n_seeds: Any) -> int | None:
    """``n_seeds`` checked: None (the size's default) or a count of seeds in 1..MAX_SEEDS."""
    return None if n_seeds is None else check_int("n_seeds", n_seeds, 1, MAX_SEEDS)


def validate_run(size: Setting | str, seed: int, device: str | torch.device = "auto",
                 n_seeds: int | None = None, cache_dir: str | None = None,
                 threads: int | None = None) -> torch.device:
    size_name(size)
    check_seed(seed)
    check_n_seeds(n_seeds)
    if cache_dir is not None:
        check_path_writable_dir("cache_dir", cache_dir)
    if threads is not None:
        check_int("threads", threads, 1, 1024)
    dev = resolve_device(device)
    if dev.type == "cpu" and not _CHECKS_ONLY.get():
        apply_threads(threads)
    return dev


_CHECKS_ONLY = contextvars.ContextVar("checks_only", default=False)


@contextlib.contextmanager
def checks_only():
    """Within it, a study's ``validate`` only checks: it sets no threads for this process (how
    ``toymech report`` checks a notebook's parameters before it starts the kernel)."""
    token = _CHECKS_ONLY.set(True)
    try:
        yield
    finally:
        _CHECKS_ONLY.reset(token)


ALL = "all"  # every option (``also="all"``: the one switch for every optional comparison)


def check_options(name: str, values, allowed) -> tuple[str, ...]:
    """A list of option names, each one of ``allowed`` (e.g. a notebook's ``also``), or
    ``"all"``: every one of ``allowed`` (a study with none gives ())."""
    if values == ALL:
        return tuple(allowed)
    check(isinstance(values, (list, tuple)), name, values,
          f"\"{ALL}\" or a list of names among {', '.join(allowed) or '(none)'}")
    for i, v in enumerate(values):
        check(isinstance(v, str) and v in allowed, f"{name}[{i}]", v,
              f"one of {', '.join(allowed) or '(none)'}")
    return tuple(values)
