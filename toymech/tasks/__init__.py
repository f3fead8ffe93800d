"""Synthetic tasks, registered by name: ``toymech.tasks.get("repeated_blocks", block_len=6)``."""

from .base import (Batch, Task, check, from_dict, get, masked_accuracy, masked_cross_entropy,
                   names, register)
from . import repeated_blocks  # noqa: F401  (registers the task)
from .repeated_blocks import RepeatedBlocks

__all__ = ["Batch", "Task", "RepeatedBlocks", "check", "from_dict", "get", "masked_accuracy",
           "masked_cross_entropy", "names", "register"]
