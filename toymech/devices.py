"""Choose the device once (``auto`` = CUDA, then MPS, then CPU) and pass it down."""

from __future__ import annotations

import os

import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``auto`` picks CUDA, then MPS, then CPU; an explicit device must be available."""
    if isinstance(device, torch.device):
        return device
    device = "auto" if device is None else str(device)
    kind = device.split(":")[0]
    if kind not in DEVICE_CHOICES:
        raise ValueError(f"device={device!r} is not allowed: one of {', '.join(DEVICE_CHOICES)}"
                         " (cuda:N also works)")
    if kind == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} is not available here: no CUDA device; use 'auto'")
    if kind == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device={device!r} is not available here: no MPS device; use 'auto'")
    return torch.device(device)


def make_generator(seed: int, device: torch.device) -> torch.Generator:
    """A generator that lives on ``device``, so batches are drawn where they are used."""
    return torch.Generator(device=device).manual_seed(int(seed))


# --- CPU threads ---------------------------------------------------------------------------
# Tiny models on a shared CPU run fastest on one thread per process: two torch threads per
# process beside another busy process were measured 5-7x slower than one. So the default is the
# cores that are actually free (affinity minus the 1-minute load), divided among the processes
# the job starts, never more than that.
_CHOSEN: dict[str, object] = {}


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform reports it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def free_cores() -> int:
    """Usable cores minus the ones other work keeps busy (1-minute load average), at least 1."""
    cores = usable_cores()
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):
        busy = 0.0
    return max(1, min(cores, int(cores - busy + 0.5)))


def choose_threads(threads: int | None = None, jobs: int = 1) -> int:
    """Torch CPU threads for one of ``jobs`` processes: ``threads`` if given, else
    ``$TOYMECH_THREADS``, else ``free_cores() // jobs`` (at least 1)."""
    from .core import check

    check(isinstance(jobs, int) and not isinstance(jobs, bool) and jobs >= 1, "jobs", jobs,
          "an integer >= 1")
    if threads is None and os.environ.get("TOYMECH_THREADS"):
        raw = os.environ["TOYMECH_THREADS"]
        check(raw.isdigit() and int(raw) >= 1, "TOYMECH_THREADS", raw, "an integer >= 1")
        threads = int(raw)
    if threads is not None:
        check(isinstance(threads, int) and not isinstance(threads, bool)
              and 1 <= threads <= 4096, "threads", threads, "None (automatic) or an integer >= 1")
        return threads
    return max(1, free_cores() // jobs)


def apply_threads(threads: int | None = None, jobs: int = 1, log=print) -> int:
    """Set torch's CPU threads by ``choose_threads`` and say so once per process."""
    n = choose_threads(threads, jobs)
    torch.set_num_threads(n)
    if log and _CHOSEN.get("threads") != n:
        how = "as asked" if threads is not None else (
            f"automatic: {free_cores()} of {usable_cores()} cores free, {jobs} process(es)")
        log(f"[toymech] torch CPU threads: {n} ({how})")
    _CHOSEN["threads"] = n
    return n
