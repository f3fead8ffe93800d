"""What every layer shares: input checks, config (de)serialisation, sizes and seed streams.

This module imports nothing of toymech, so tasks, models, training, analysis and studies can all
use it without reaching into each other.

Seeds: one number per run derives every random stream of it (``seed_for``). A run with seed s
initialises its model from s, draws its training batches from a generator seeded with s, and
everything a notebook evaluates or shows is drawn from streams derived from s:

=============  ===================  =================================================
stream         seed                 used for
=============  ===================  =================================================
``init``       s                    the model's initial weights (``ModelConfig.seed``)
``data``       s                    training batches (``TrainConfig.seed``)
``train_eval`` s + 1,000,003        the fixed held-out batch logged during training
``eval``       s + 2,000,003        evaluation sets of the notebooks and tables
``probe``      s + 3,000,003        batches read by probes and training callbacks
``example``    s + 4,000,003        sequences drawn for figures and attention views
=============  ===================  =================================================

The offsets keep the streams apart for every seed a user types (they are far larger than any
seed sweep) and keep ``init``/``data``/``train_eval`` where they were, so trained models in an
existing zoo stay valid.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

SIZES = ("smoke", "default", "paper")
STREAMS = {"init": 0, "data": 0, "train_eval": 1_000_003, "eval": 2_000_003,
           "probe": 3_000_003, "example": 4_000_003}


def check(condition: bool, name: str, value: Any, allowed: str) -> None:
    """Raise ``ValueError`` naming the parameter, the value given and what is allowed."""
    if not condition:
        raise ValueError(f"{name}={value!r} is not allowed: {allowed}")


def check_size(size: Any) -> str:
    """``size`` is one of smoke/default/paper (ValueError otherwise); returns it."""
    check(isinstance(size, str) and size in SIZES, "size", size, f"one of {', '.join(SIZES)}")
    return size


def check_seed(seed: Any, name: str = "seed") -> int:
    """A seed is a non-negative integer (bool is not; numpy integers are)."""
    ok = not isinstance(seed, bool) and hasattr(seed, "__index__") and int(seed) >= 0
    check(ok and int(seed) < 2**62, name, seed, "an integer in 0..2**62")
    return int(seed)


def seed_for(seed: int, stream: str) -> int:
    """The seed of ``stream`` (see the module docstring) for a run with seed ``seed``."""
    check(stream in STREAMS, "stream", stream, f"one of {', '.join(STREAMS)}")
    return check_seed(seed) + STREAMS[stream]


def dataclass_from_dict(cls: type, d: dict[str, Any], what: str) -> Any:
    """``cls(**d)`` for a config dataclass, with unknown keys refused by name."""
    check(isinstance(d, dict), what, type(d).__name__, "a JSON object (dict)")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - known)
    check(not unknown, f"{what} key", unknown[0] if unknown else None,
          f"one of {', '.join(sorted(known))}")
    return cls(**d)


def jsonable(obj: Any) -> Any:
    """Convert config values (numpy scalars, torch dtypes/devices, tuples) into JSON types."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "item") and getattr(obj, "ndim", None) == 0:  # numpy / torch scalars
        return obj.item()
    if type(obj).__module__ == "torch" and type(obj).__name__ in ("dtype", "device"):
        return str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return repr(obj)
