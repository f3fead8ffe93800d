"""Prose from the run: sentences whose numbers come from the run (``note``), and the run's facts in
a machine-readable output that the report reads (``facts``).

A sentence typed in markdown goes stale ("a few minutes" for a run of twenty); ``note`` fills the
numbers in when the cell runs:

    display.note("Trained {n_models} models in {seconds:duration} on {device}; {seeds} seeds "
                 "({steps:,} steps each, the source's {source_steps:,}).", n_models=3, ...)

Format specs are Python's (``{x:.3f}``, ``{n:,}``) plus ``duration`` (``20 min 8 s``); a list or
tuple without a spec is written ``0, 1, 2``. A placeholder without a value is an error naming it.
"""

from __future__ import annotations

import math
import string
from typing import Any

from ..core import jsonable
from ..zoo import zoo_stats

# The mimetype of ``facts`` outputs; toymech.report reads it and never shows it.
FACTS_MIME = "application/vnd.toymech.facts+json"
# A generated sentence names the members of a group (cells of a map, pairs of cells) only where
# the group has at most this many; a larger one is counted (the table beside it lists each).
NAMED_AT_MOST = 2


def duration_text(seconds: float) -> str:
    """``seconds`` as a reader says it: 42 s, 3 min 5 s, 1 h 2 min."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
            or seconds < 0:
        raise ValueError(f"seconds={seconds!r} is not allowed: a finite number >= 0")
    s = round(seconds)
    if seconds < 10:
        return f"{seconds:.1f} s"
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


class _Formatter(string.Formatter):
    def get_value(self, key, args, kwargs):
        if isinstance(key, str) and key not in kwargs:
            given = ", ".join(sorted(kwargs)) or "none"
            raise ValueError(f"note template names {{{key}}}, which has no value (values given: {given})")
        return super().get_value(key, args, kwargs)

    def format_field(self, value, format_spec):
        if format_spec == "duration":
            return duration_text(value)
        if isinstance(value, (list, tuple)) and not format_spec:
            return ", ".join(str(v) for v in value)
        return super().format_field(value, format_spec)


class Note:
    """Markdown filled from the run; displays as markdown (JupyterLab and the report alike)."""

    def __init__(self, markdown: str):
        self.markdown = markdown

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/markdown": self.markdown, "text/plain": self.markdown}

    def __str__(self) -> str:
        return self.markdown

    def __repr__(self) -> str:
        return f"Note({self.markdown!r})"


def note(template: str, **values: Any) -> Note:
    """``template`` (markdown) with ``{name}`` placeholders filled from ``values`` (see the module
    docstring for the format specs). Display it as a cell's value or with ``display(...)``."""
    if not isinstance(template, str) or not template.strip():
        raise ValueError(f"template={template!r} is not allowed: a non-empty markdown string")
    try:
        return Note(_Formatter().format(template, **values))
    except (IndexError, KeyError) as exc:  # "{}" or "{0}": positional fields have no value
        raise ValueError(f"note template field {exc} is not allowed: name every field, e.g. {{seeds}}") from None


def _zoo_stats() -> dict | None:
    """``toymech.zoo.zoo_stats()`` (models trained / loaded by this process), or None: the
    report then says "not recorded"."""
    stats = zoo_stats()
    return dict(stats) if stats is not None else None


class Facts:
    """The run's facts as one output: ``FACTS_MIME`` JSON for the report, a line for JupyterLab."""

    def __init__(self, values: dict):
        self.values = values

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        line = "run facts: " + ", ".join(f"{k}={v}" for k, v in self.values.items())
        return {FACTS_MIME: self.values, "text/plain": line}

    def __repr__(self) -> str:
        return f"Facts({self.values!r})"


def core_seconds() -> float | None:
    """The CPU seconds (user + system) this process and its finished child processes (the
    training workers) have used so far, None where the platform does not say."""
    try:
        import resource
    except ImportError:  # not on this platform
        return None
    used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return round(sum(u.ru_utime + u.ru_stime for u in used), 1)


def facts(zoo: bool = True, core_s: bool = True, **values: Any) -> Facts:
    """The run's facts for the report's header and its "Where the time went" table, e.g.
    ``display.facts(device=dev, seeds=list(runs))`` as a notebook's last cell. Values are made
    JSON (a ``torch.device`` becomes ``"cpu"``). With ``zoo`` (the default), the zoo's counts of
    models trained and loaded by this kernel are added under ``"zoo"`` where toymech records them;
    with ``core_s`` (the default), the kernel's CPU seconds so far (``core_seconds``), which
    ``toymech results`` records as the run's core-seconds. Several ``facts`` outputs merge, the
    later ones winning."""

    for name in values:
        if not name.isidentifier():
            raise ValueError(f"facts name {name!r} is not allowed: a Python identifier")
    out = {name: jsonable(value) for name, value in values.items()}
    if core_s and (used := core_seconds()) is not None:
        out["core_s"] = used
    if zoo:
        stats = _zoo_stats()
        if stats is not None:
            out["zoo"] = jsonable(stats)
    return Facts(out)
