"""Choose the device once (``auto`` = CUDA, then MPS, then CPU) and pass it down."""

from __future__ import annotations

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
