"""Mixed precision: whether bf16 autocast can pay on a device, and the context the training step
runs under.

bf16 autocast (``torch.autocast(device, torch.bfloat16)``: matmuls in bf16, master weights, the
loss and the optimizer in fp32) pays only where the hardware multiplies bf16 natively: CUDA
devices that support it, and CPUs with AMX or AVX-512 BF16 (read from the CPU's flags on Linux).
On a CPU without them (AVX2) PyTorch emulates bf16 and a matmul runs tens of times slower
(``benchmarks/bench_precision.py`` measures it), so there it is never chosen.

``precision`` of a training run: ``"fp32"`` (the default everywhere: no model family was
measured to gain at equal scorecard numbers on the machines toymech was benchmarked on), or
``"bf16"`` (asked for explicitly; refused where the hardware lacks it).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from ..core import check

PRECISIONS = ("fp32", "bf16")
_CPU_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def bf16_support(device: torch.device) -> tuple[bool, str]:
    """(whether bf16 autocast can pay on ``device``, why) from the hardware alone."""
    device = torch.device(device)
    if device.type == "cuda":
        ok = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return ok, "CUDA bf16 supported" if ok else "this CUDA device lacks bf16"
    if device.type == "cpu":
        found = sorted(_CPU_FLAGS & _cpu_flags())
        capability = torch.backends.cpu.get_cpu_capability()
        if found:
            return True, f"CPU flags {', '.join(found)} (torch kernels: {capability})"
        return False, f"no AMX or AVX-512 BF16 on this CPU (torch kernels: {capability})"
    return False, f"device type {device.type!r}: not measured"


def autocast(precision: str, device: torch.device):
    """The context a training step runs under: bf16 autocast, or nothing for fp32."""
    check(precision in PRECISIONS, "precision", precision, f"one of {', '.join(PRECISIONS)}")
    if precision == "fp32":
        return contextlib.nullcontext()
    ok, why = bf16_support(device)
    check(ok, "precision", precision, f"'fp32' on this device ({why})")
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
