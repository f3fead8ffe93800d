"""One module per study: the study's presets (registered with ``toymech.presets.register``),
reference numbers from the source, and the table/summary functions its notebook calls."""

import importlib
import pkgutil


def load_all() -> None:
    """Import every study module so their presets are registered."""
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
