"""A study's knobs: readable names over the dotted overrides of its experiments, declared once.

A **knob** is a name a researcher would use (``block_len``, ``d_model``, ``embeddings``) for
one change to a study's experiments. It writes dotted ``task.``/``model.``/``train.`` overrides
(``toymech.training.experiment.apply_overrides``: the one mechanism sweep grids use too), so a
knob never bypasses a config check. Each study declares its table once (``design.knobs``):

==============  ===============================================================================
field           meaning
==============  ===============================================================================
``name``        the name users type (``--set name=value``, a notebook's ``variant``)
``kind``        how a value is read: ``int``, ``ints`` (one int, a range ``4-8`` or a list: one
                value drawn per sequence), ``float``, ``choice``, ``bool``
``allowed``     (lo, hi) for numbers, the choices for ``choice``
``source``      the source's value: the study's own experiments are built with it
``meaning``     one sentence for ``toymech list knobs``
``fields``      the dotted fields it writes (shown; ``overrides`` may compute them)
``overrides``   ``(value, experiment) -> {dotted: value}`` (default: ``{fields[0]: value}``)
``plan``        ``(value, plan) -> plan``: how it changes the study's plan (what the study
                builds its experiments from: study 3's table widths), for a knob that acts there
                rather than on each built experiment (None: it acts only through overrides)
``applies_to``  the study's experiment names (or patterns) it changes (empty: every one)
``aliases``     other spellings a ``choice`` accepts, as (text, choice) pairs (a knob that was a
                ``bool`` keeps ``true``/``false``)
==============  ===============================================================================

Every knob reaches the config through its declaration, one of two routes: its ``overrides`` on
each experiment it ``applies_to`` (``apply_knobs``, called where the study builds an
experiment), or its ``plan`` on what the study builds its experiments from (``apply_to_plan``,
called where the study makes its plan: study 3's ``width`` sets the table's large width,
``recipe_width`` the named recipes' width). A knob with a ``plan`` and no ``overrides`` writes
no override; a knob counts as changing a study when building the study's experiments with it
gives other zoo keys, whatever the route.

A **variant** is a size with knobs on top: ``with_knobs(size, {"block_len": "4-8"})`` returns a
``toymech.core.Setting`` (the size name, the knobs and their sentence) whose knobs the study
reads through ``variant_values``. Knobs equal to the source's value are dropped, so a variant of
only source values IS the size (``Setting(size)``: the same experiments, the same zoo keys;
tested over the registry). Every value, and every combination (by building each of the study's experiments at
that size), is checked before any work: one ValueError naming the knob, the value and what is
allowed.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core import Setting, check, is_int, value_text
from ..training import Experiment
from ..training.experiment import SECTIONS, apply_overrides

KINDS = ("int", "ints", "float", "choice", "bool")
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")
_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
MAX_CHOICES = 1024  # values an ``ints`` knob may draw from
MAX_DIGITS = 30  # digits of an integer typed as a knob's value (every allowed value has fewer)


@dataclass(frozen=True)
class Knob:
    """One knob of a study (see the module docstring)."""

    name: str
    kind: str
    allowed: tuple
    source: Any
    meaning: str
    fields: tuple[str, ...]
    overrides: Callable[[Any, Experiment], dict[str, Any]] | None = None
    plan: Callable[[Any, Any], Any] | None = None
    applies_to: tuple[str, ...] = ()
    aliases: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        check(isinstance(self.name, str) and self.name.isidentifier(), "knob name", self.name,
              "a Python identifier")
        check(self.kind in KINDS, "kind", self.kind, f"one of {', '.join(KINDS)}")
        check(len(self.fields) >= 1 and all(f.split(".", 1)[0] in SECTIONS and "." in f
                                            for f in self.fields), "fields", self.fields,
              "dotted task./model./train. fields")
        check(self.kind not in ("int", "ints", "float") or len(self.allowed) == 2, "allowed",
              self.allowed, "(lo, hi) for a number")
        check(self.kind != "choice" or len(self.allowed) >= 1, "allowed", self.allowed,
              "the choices")
        check(not self.aliases or (self.kind == "choice" and all(
            len(a) == 2 and a[0] == a[0].lower() and a[1] in self.allowed
            for a in self.aliases)), "aliases", self.aliases,
              "(lower-case text, one of the choices) pairs of a choice knob")
        object.__setattr__(self, "source", self.parse(self.source))

    # --- values ----------------------------------------------------------------------------
    def allowed_text(self) -> str:
        """What the knob allows, in words (``toymech list knobs``, refusals)."""
        if self.kind == "int":
            return f"an integer in {self.allowed[0]}..{self.allowed[1]}"
        if self.kind == "ints":
            lo, hi = self.allowed
            return (f"an integer in {lo}..{hi}, a range such as {lo}-{min(hi, lo + 4)} or a list "
                    "of distinct integers (one drawn per sequence)")
        if self.kind == "float":
            return f"a number in {self.allowed[0]:g}..{self.allowed[1]:g}"
        if self.kind == "bool":
            return "true or false"
        also = "; ".join(f"{text} means {choice}" for text, choice in self.aliases)
        return "one of " + ", ".join(map(str, self.allowed)) + (f" ({also})" if also else "")

    def parse(self, value: Any) -> Any:
        """``value`` (as typed on a command line, or a JSON value) in its canonical form: an
        int, a sorted tuple of ints (``ints`` with several values), a float, a choice, a bool.
        ValueError naming the knob, the value and what is allowed."""
        name, allowed = self.name, self.allowed_text()
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower() if isinstance(value, str) else None
            check(text in _TRUE + _FALSE, name, value, allowed)
            return text in _TRUE
        if self.kind == "choice":
            alias = dict(self.aliases)
            if isinstance(value, (str, bool)) and value not in self.allowed:
                value = alias.get(str(value).strip().lower(), value)
            check(isinstance(value, str) and value in self.allowed, name, value, allowed)
            return value
        if self.kind == "float":
            number = value
            if isinstance(value, str):
                try:
                    number = float(value)
                except ValueError:
                    number = None
            ok = (isinstance(number, (int, float)) and not isinstance(number, bool)
                  and math.isfinite(number) and self.allowed[0] <= number <= self.allowed[1])
            check(ok, name, value, allowed)
            return float(number) + 0.0  # -0.0 is 0.0: one value, one run, one zoo key
        values = self._ints(value)
        check(values is not None and len(values) >= 1, name, value, allowed)
        check(self.kind == "ints" or len(values) == 1, name, value, allowed)
        check(len(values) <= MAX_CHOICES, name, value, f"{allowed}; at most {MAX_CHOICES} values")
        check(len(set(values)) == len(values), name, value, f"{allowed}; each value once")
        lo, hi = self.allowed
        check(all(lo <= v <= hi for v in values), name, value, allowed)
        return values[0] if len(values) == 1 else tuple(sorted(values))

    def _ints(self, value: Any) -> list[int] | None:
        """The integers ``value`` names (None: it names none)."""
        if is_int(value):
            return [int(value)]
        if isinstance(value, (list, tuple)):
            return [int(v) for v in value] if value and all(is_int(v) for v in value) else None
        if not isinstance(value, str):
            return None
        text = value.strip()
        if re.search(rf"[0-9]{{{MAX_DIGITS + 1}}}", text):  # no knob's; Python's int() refuses
            return None                                       # thousands of digits in its words
        if text.isascii() and text.isdigit():
            return [int(text)]
        m = _RANGE.match(text) if text.isascii() else None
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            return list(range(a, b + 1)) if a <= b and b - a < MAX_CHOICES else []
        parts = [p.strip() for p in text.split(",")]
        if len(parts) > 1 and all(p.isascii() and p.isdigit() for p in parts):
            return [int(p) for p in parts]
        return None

    def text(self, value: Any) -> str:
        """A value as a reader writes it, in the one text form that ``parse`` reads back as the
        same value: ``4-8`` for a run of integers, ``4, 6, 8`` for others, a float by
        ``core.float_text`` (``0.0012345678`` stays that), ``yes``/``no``, a choice as itself."""
        return value_text(value)  # the one lossless form (``core.value_text``)

    def applies(self, exp: Experiment) -> bool:
        """Whether this knob changes ``exp``: ``applies_to`` names or shell patterns
        (``modular_addition-*``) of the study's experiment names; empty: every one."""
        return not self.applies_to or any(fnmatch.fnmatchcase(exp.name, p)
                                          for p in self.applies_to)

    def apply(self, exp: Experiment, value: Any) -> Experiment:
        """``exp`` with this knob's overrides at ``value`` (canonical, ``parse``d); a knob that
        acts only through the plan (``plan`` and no ``overrides``) leaves it as it is."""
        if not self.applies(exp) or (self.overrides is None and self.plan is not None):
            return exp
        value = list(value) if isinstance(value, tuple) else value
        changes = self.overrides(value, exp) if self.overrides else {self.fields[0]: value}
        return apply_overrides(exp, changes)


def table(*knobs: Knob) -> dict[str, Knob]:
    """A study's ``KNOBS``: name -> Knob, each name once."""
    out: dict[str, Knob] = {}
    for k in knobs:
        check(k.name not in out, "knob", k.name, "each knob name once in a study")
        out[k.name] = k
    return out


def jsonable_value(value: Any) -> Any:
    """A canonical knob value as JSON (a tuple as a list)."""
    return list(value) if isinstance(value, tuple) else value


def parse_variant(knobs: Mapping[str, Knob], variant: Any, study: str = "",
                  others: Mapping[str, Iterable[str]] | None = None) -> dict[str, Any]:
    """The knobs ``variant`` sets, canonical and in the table's order. ``variant``: None, or a
    mapping of knob names to values. An unknown name is refused with the list of the study's
    knobs (and, where ``others`` names the study that has it, that study)."""
    if variant is None:
        return {}
    check(isinstance(variant, Mapping), "variant", variant,
          "a mapping of knob names to values, e.g. {'block_len': '4-8'}")
    for name in variant:
        if name not in knobs:
            owner = [s for s, names in (others or {}).items() if name in names and s != study]
            where = f" (a knob of study {owner[0]!r}, not of {study!r})" if owner else ""
            listed = (f" (the knobs of study {study!r}: 'toymech list knobs {study}')"
                      if study else "")
            check(False, "knob", name, f"one of {', '.join(knobs) or '(none)'}{where}{listed}")
    return {name: knob.parse(variant[name]) for name, knob in knobs.items() if name in variant}


def apply_knobs(knobs: Mapping[str, Knob], exp: Experiment, values: Mapping[str, Any]
                ) -> Experiment:
    """``exp`` with every knob of ``values`` applied, in the table's order, its name followed by
    the knobs that changed it (``induction-2l [block_len=4-8]``: what ``toymech list`` and the
    live line show; the zoo key never reads the name). A combination the configs refuse is a
    ValueError naming the knob."""
    name, changed = exp.name, []
    for key, knob in knobs.items():
        if key in values and knob.applies(exp):
            before = exp.key()
            try:
                exp = knob.apply(exp, values[key])
            except ValueError as e:
                raise ValueError(f"{key}={knob.text(values[key])} cannot be applied to "
                                 f"{name or 'the experiment'}: {e}") from None
            if exp.key() != before:  # a knob acting through the plan changes no run here
                changed.append(f"{key}={knob.text(values[key])}")
    # Every knob must still hold beside the others: applied again to the result it changes
    # nothing (``seq_len=24`` then ``block_len=30`` would otherwise give 120-letter sequences).
    for key, knob in knobs.items():
        if key in values and knob.applies(exp) and len(values) > 1:
            others = ", ".join(f"{k}={knobs[k].text(v)}" for k, v in values.items() if k != key)
            try:
                again = knob.apply(exp, values[key])
            except ValueError as e:
                raise ValueError(f"{key}={knob.text(values[key])} cannot be applied to "
                                 f"{name or 'the experiment'} beside {others}: {e}") from None
            if again.key() != exp.key():
                raise ValueError(f"{key}={knob.text(values[key])} is not allowed beside {others}: "
                                 f"they contradict each other in {name or 'the experiment'} "
                                 "(give one of them)")
    if changed:
        exp.name = f"{name} [{', '.join(changed)}]"
    return exp


def describe(knobs: Mapping[str, Knob], values: Mapping[str, Any], source: str = "the source"
             ) -> str:
    """The variant's ``values`` of ``knobs`` beside the ``source``'s values, in words: "a
    variant: block_len 4-8 (the post's 6); offset 0-3 (the post's 0)"; "" for none."""
    if not values:
        return ""
    parts = [f"{k} {knobs[k].text(v)} ({source}'s {knobs[k].text(knobs[k].source)})"
             for k, v in values.items()]
    return "a variant: " + "; ".join(parts)


def listing(knobs: Mapping[str, Knob]) -> list[dict[str, str]]:
    """One row per knob: name, source value, allowed values, what it changes and its meaning
    (``toymech list knobs``)."""
    return [{"knob": k.name, "source": k.text(k.source), "allowed": k.allowed_text(),
             "changes": ", ".join(k.fields) + (f" (of {', '.join(k.applies_to)})"
                                               if k.applies_to else ""),
             "meaning": k.meaning} for k in knobs.values()]


def with_knobs_for(knobs: Mapping[str, Knob], study: str, source: str,
                   build: Callable[[Setting], Iterable[Experiment]],
                   others: Callable[[], Mapping[str, Iterable[str]]] | None = None,
                   limit: Callable[[Experiment, Mapping[str, Any]], None] | None = None
                   ) -> Callable[..., Setting]:
    """``with_knobs(size, variant=None)`` over a study's ``KNOBS`` (what ``Study.with_knobs``
    calls), for the study named ``study``, whose source is called ``source`` in its messages
    ("the post"). ``build(setting)``: the study's experiments at a ``Setting`` (every
    combination is checked by building them); ``others()``: every study's knob names, to name
    the study an unknown knob belongs to (``protocol.every_study_knobs``; None: not named);
    ``limit(experiment, values)``: a study's own bounds on a built experiment (ValueError naming
    the knobs)."""

    def with_knobs(size: Any, variant: Any = None) -> Setting:
        """The ``Setting`` of ``size`` (a size name, or a Setting whose knobs are kept) with the
        knobs of ``variant`` (a mapping of knob names to values) on top. A knob at the size's
        own value is dropped (no knob left: ``Setting(size)``, the size itself). Every knob,
        value and combination is checked here, before any work (ValueError naming the knob,
        the value and what is allowed)."""
        start = Setting.of(size)
        check(variant is None or isinstance(variant, Mapping), "variant", variant,
              "a mapping of knob names to values, e.g. {'block_len': '4-8'}")
        given = {**start.knobs, **dict(variant or {})}
        values = parse_variant(knobs, given, study, others() if others else None)
        base = Setting(start.size)
        if not values:
            return base

        def keys(vals: Mapping[str, Any]) -> list[str]:
            at = Setting(base.size, {k: jsonable_value(v) for k, v in vals.items()})
            return [e.key() for e in build(at)]
        # A knob is dropped when the runs are the same without it, judged beside the other
        # knobs given (``seq_len=24`` is the source's alone, but not beside ``n_blocks=8``), so
        # a combination is built, and refused, as the user wrote it.
        every = keys(values)
        changed = {name: value for name, value in values.items()
                   if keys({k: v for k, v in values.items() if k != name}) != every}
        if not changed:
            return base
        out = Setting(base.size, {k: jsonable_value(v) for k, v in changed.items()},
                      describe(knobs, changed, source))
        for exp in build(out):  # every experiment at this variant: a bad combination fails here
            if limit is not None:
                limit(exp, changed)
        return out

    return with_knobs


def _no_studies() -> dict[str, Mapping[str, Knob]]:
    return {}


#: Every registered study's knob table by study name. The studies' protocol (which imports this
#: module) sets it, so a refusal can name the study a knob belongs to.
study_tables: Callable[[], Mapping[str, Mapping[str, Knob]]] = _no_studies


def variant_values(knobs: Mapping[str, Knob], size: Any) -> dict[str, Any]:
    """The canonical values of the study's ``knobs`` that ``size`` carries (a ``Setting``;
    ``{}`` for a plain size name): what a study's experiment builder applies. A Setting with a
    knob the study does not declare (another study's Setting, a typo) is refused in one line
    naming the knob, the study and its knobs: never built as the study's plain runs while its
    sentence calls it a variant."""
    setting = Setting.of(size)
    unknown = [k for k in setting.knobs if k not in knobs]
    if unknown:
        tables = study_tables()
        owner = next((name for name, table in tables.items() if table is knobs), "")
        parse_variant(knobs, {unknown[0]: None}, owner,
                      {name: list(table) for name, table in tables.items()})  # raises
    return {k: knobs[k].parse(v) for k, v in setting.knobs.items()}


def apply_to_plan(knobs: Mapping[str, Knob], plan: Any, size: Any) -> Any:
    """``plan`` (what a study builds its experiments from) with every knob of ``size`` (a
    ``Setting``) that declares a ``plan`` in ``knobs`` (the study's table) applied, in the
    table's order: the route of a knob that acts on the plan rather than on each experiment
    (ValueError naming a knob the plan cannot take)."""
    for key, value in variant_values(knobs, size).items():
        if knobs[key].plan is not None:
            plan = knobs[key].plan(value, plan)
    return plan

