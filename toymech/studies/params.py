"""The parameters every study notebook shares, checked in one place.

``validate_run(size, seed, device, cache_dir, threads)`` checks them (one ValueError each, naming
the parameter), applies the thread policy (``toymech.devices.apply_threads``: ``threads`` if
given, else the free cores shared among the processes of the job) and resolves the device once;
each study's ``validate`` calls it, then checks its own parameters.
"""

from __future__ import annotations

import torch

from ..core import check_path_writable_dir, check_seed, check_size
from ..devices import apply_threads, resolve_device


def validate_run(size: str, seed: int, device: str | torch.device, cache_dir: str | None = None,
                 threads: int | None = None) -> torch.device:
    check_size(size)
    check_seed(seed)
    if cache_dir is not None:
        check_path_writable_dir("cache_dir", cache_dir)
    dev = resolve_device(device)
    if dev.type == "cpu":
        apply_threads(threads)
    return dev
