"""toymech: train toy transformers on synthetic tasks and look inside them.

Data flows one way: task -> config -> model -> training -> zoo -> analysis -> plots -> notebook.

``import toymech`` loads nothing else (the command line answers at once); ``toymech.explore``
is loaded on first use (a lazy attribute), so ``import toymech; toymech.explore(model, task)``
works as documented.
"""

import importlib

__version__ = "0.1.0"
_LAZY = ("explore",)  # subpackages reached as attributes of the package, loaded on first use


def __getattr__(name: str):
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
