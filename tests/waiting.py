"""Waiting in tests on a slow or busy machine: every limit is scaled, never a fixed deadline.

``scale()`` is ``$TOYMECH_TEST_TIMEOUT_SCALE`` when set, else how much slower this machine is now
than the one the limits were written on (the reference step, ``toymech.models.reference``,
measured once per test process: about a second), times 1.5 for headroom, at least 1.5. A limit
is a safety net against a hang, never a speed assertion: ``wait_for`` returns as soon as its
condition holds.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


@functools.lru_cache(maxsize=1)
def scale() -> float:
    raw = os.environ.get("TOYMECH_TEST_TIMEOUT_SCALE")
    if raw:
        value = float(raw)
        if not value > 0:
            raise ValueError(f"TOYMECH_TEST_TIMEOUT_SCALE={raw!r} is not allowed: a number > 0")
        return value
    from toymech.models.reference import reference_step_seconds, speed_ratio

    return min(30.0, 1.5 * max(1.0, speed_ratio(reference_step_seconds(20))))


def limit(seconds: float) -> float:
    """``seconds`` on the machine the limits were written on, scaled to this one."""
    return seconds * scale()


def wait_for(condition: Callable[[], T], seconds: float, what: str, interval: float = 0.5) -> T:
    """Poll ``condition`` until it returns something truthy (returned), for at most
    ``limit(seconds)``; then fail naming ``what`` and the limit."""
    end = time.monotonic() + limit(seconds)
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not after {limit(seconds):.0f} s "
                                 f"({seconds:.0f} s x the machine's scale {scale():.1f})")
        time.sleep(interval)
