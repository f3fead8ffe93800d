"""Your own tasks and studies, outside the package: modules that register them when imported.

A module of yours registers a task with ``@toymech.tasks.register("name")`` (see CONTRIBUTING,
"Add a task") and a study with ``toymech.studies.protocol.register_study(STUDY)`` (its
``protocol.Study``, built as a package study builds its own, e.g. in a copy of the template).
toymech imports such modules, once each, from:

* ``--import MODULE`` on the command line (``toymech --import mylab.tasks train mytask``; a
  module of the current folder needs ``PYTHONPATH=.`` or ``python -m toymech``, as the
  ``toymech`` command does not search the folder it runs in);
* ``$TOYMECH_IMPORT`` (comma-separated module names; the CLI exports what ``--import`` named, so
  the kernels of ``toymech report`` import them too);
* the entry-point groups ``toymech.tasks`` and ``toymech.studies`` of installed packages
  (``[project.entry-points."toymech.tasks"] mytask = "mylab.tasks"``).

Then the CLI, the notebooks, the knobs, sweeps and maps take their names like the package's own.
"""

from __future__ import annotations

import importlib
import os
from importlib import metadata
from pathlib import Path

GROUPS = ("toymech.tasks", "toymech.studies")
ENV = "TOYMECH_IMPORT"
_LOADED: set[str] = set()


def modules_from_env() -> list[str]:
    """The module names of ``$TOYMECH_IMPORT`` (comma-separated; blanks ignored)."""
    return [m.strip() for m in os.environ.get(ENV, "").split(",") if m.strip()]


def load(modules: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Import ``modules`` (module names, e.g. ``["mylab.tasks"]``), those of
    ``$TOYMECH_IMPORT`` and every entry point of ``GROUPS`` (each once per process); returns
    the modules imported now. A module that cannot be imported is a ValueError naming it and
    why. Example: ``plugins.load(["my_tasks"])``, then ``experiments.get("reverse_letters")``."""
    done = []
    for name in [*modules, *modules_from_env()]:
        if not isinstance(name, str) or not name or not all(
                p.isidentifier() for p in name.split(".")):
            raise ValueError(f"--import={name!r} is not allowed: a module name such as mylab.tasks")
        if name in _LOADED:
            continue
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ValueError(f"--import={name!r} is not allowed: a module Python can import "
                             f"({_why(exc)}){_here(name, exc)}") from None
        except Exception as exc:
            raise ValueError(f"--import={name!r} is not allowed: a module that imports without "
                             f"an error ({_why(exc)})") from None
        _LOADED.add(name)
        done.append(name)
    for group in GROUPS:
        for ep in metadata.entry_points(group=group):
            key = f"{group}:{ep.name}={ep.value}"
            if key in _LOADED:
                continue
            _LOADED.add(key)
            try:
                ep.load()
            except Exception as exc:
                raise ValueError(f"entry point {ep.name}={ep.value!r} of {group} is not "
                                 "allowed: a module that imports without an error "
                                 f"({_why(exc)}); fix or uninstall its package") from None
            done.append(ep.value)
    return done


def _here(name: str, exc: ImportError) -> str:
    """A hint when the module that was not found is a file or package of the current folder,
    which the ``toymech`` command (unlike ``python -m toymech``) does not search."""
    top = name.split(".")[0]
    if not isinstance(exc, ModuleNotFoundError) or exc.name != top:
        return ""
    here = Path.cwd()
    if not ((here / f"{top}.py").is_file() or (here / top / "__init__.py").is_file()):
        return ""
    return (f"; {top} is in this folder, which the toymech command does not search: run "
            f"PYTHONPATH=. toymech --import {name} ..., or python -m toymech --import {name} ...")


def _why(exc: BaseException) -> str:
    """A plugin's error in one short line: its type, message, and where (a syntax error's file
    and line, else the deepest frame of the traceback)."""
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename}, line {exc.lineno}"
        text = exc.msg
    else:
        tb, where = exc.__traceback__, ""
        while tb is not None:
            where = f"{tb.tb_frame.f_code.co_filename}, line {tb.tb_lineno}"
            tb = tb.tb_next
        text = str(exc)
    text = " ".join(text.split())
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(exc).__name__}: {text}" + (f" at {where}" if where else "")
