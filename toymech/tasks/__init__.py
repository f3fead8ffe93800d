"""Synthetic tasks, registered by name: ``toymech.tasks.get("repeated_blocks", block_len=6)``.

Every module in this package is imported here, so a new task module registers itself simply by
existing (``@register("name")`` on its dataclass).
"""

import importlib
import pkgutil

from .base import (
    Batch,
    Task,
    check,
    from_dict,
    get,
    masked_accuracy,
    masked_cross_entropy,
    module_of,
    names,
    register,
)

for _mod in pkgutil.iter_modules(__path__):
    if _mod.name != "base":
        importlib.import_module(f"{__name__}.{_mod.name}")

from .repeated_blocks import RepeatedBlocks  # noqa: E402

__all__ = ["Batch", "Task", "RepeatedBlocks", "check", "from_dict", "get", "masked_accuracy",
           "masked_cross_entropy", "module_of", "names", "register"]
