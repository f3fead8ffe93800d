"""The documentation site's own Sphinx extension.

- ``toymech-knobs``: a directive that writes a study's knob table from its registry (the rows
  ``toymech list knobs STUDY`` prints), so the site never disagrees with the code.
- ``toymech-api``: a directive that writes an autodoc entry for every public name of a module;
  ``toymech-studies``: the same for every registered study's class (a ``Study`` subclass).
- The public surface check: every public function and class of the modules in ``SURFACE`` (and
  every study's class) must be documented on an API page, with a docstring that
  names each of its parameters. A gap is a Sphinx warning, so ``sphinx -W`` (``./run.sh docs``,
  ``tests/test_docs.py``) fails on it.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from typing import Any, Iterator

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.util import logging

logger = logging.getLogger(__name__)

# Modules whose public names (``__all__``) are the reference's surface.
SURFACE = (
    "toymech.explore",
    "toymech.zoo",
    "toymech.training",
    "toymech.tasks",
    "toymech.experiments",
    "toymech.grid",
    "toymech.maps",
    "toymech.studies",
    "toymech.studies.protocol",
    "toymech.studies.claims",
    "toymech.studies.knobs",
    "toymech.analysis",
    "toymech.plots",
)


def _public_names(module) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_")
                 and getattr(v, "__module__", None) == module.__name__]
    return list(names)


def surface() -> Iterator[tuple[str, Any]]:
    """(dotted name, object) of every public callable the reference must document: the names
    of ``SURFACE`` and each registered study's class (a ``protocol.Study`` subclass)."""
    for name in SURFACE:
        module = importlib.import_module(name)
        if callable(module) and name == "toymech.explore":  # the module is callable; its names
            pass
        for attr in _public_names(module):
            obj = getattr(module, attr)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                yield f"{name}.{attr}", obj
    from toymech.studies import protocol
    for study in protocol.all_studies():  # each study's class, where its module defines it
        yield _where(type(study)), type(study)


def _parameters(fn) -> list[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values() if p.name not in ("self", "cls")
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _names(doc: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", doc) is not None


def _members(cls) -> Iterator[tuple[str, Any, str]]:
    """(name, function, docstring) of the public methods and properties ``cls`` defines; a
    docstring is inherited from the method it overrides, as autodoc shows it."""
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        if isinstance(value, property):
            yield attr, value.fget, inspect.getdoc(value) or ""
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value):
            yield attr, value, inspect.getdoc(getattr(cls, attr)) or ""


def _home(obj) -> str | None:
    """The first module of ``SURFACE`` that exports ``obj``."""
    for name in SURFACE:
        module = importlib.import_module(name)
        if any(getattr(module, attr, None) is obj for attr in _public_names(module)):
            return name
    return None


def problems(name: str, obj: Any) -> list[str]:
    """What the reference lacks for ``obj`` (published as ``name``): a docstring, or a parameter
    its docstring does not name. A class is checked through its public methods and properties
    (a dataclass's fields are its signature, which autodoc prints)."""
    out = []
    if not (inspect.getdoc(obj) or "").strip():
        out.append(f"{name}: no docstring")
    if inspect.isclass(obj):
        for attr, member, doc in _members(obj):
            if not doc.strip():
                out.append(f"{name}.{attr}: no docstring")
                continue
            if isinstance(vars(obj).get(attr), property):
                continue
            out += [f"{name}.{attr}: the docstring does not name the parameter {p!r}"
                    for p in _parameters(member) if not _names(doc, p)]
        if not dataclasses.is_dataclass(obj) and "__init__" in vars(obj):
            doc = inspect.getdoc(obj) or ""
            out += [f"{name}: the docstring does not name the parameter {p!r}"
                    for p in _parameters(obj.__init__) if not _names(doc, p)]
    else:
        doc = inspect.getdoc(obj) or ""
        out += [f"{name}: the docstring does not name the parameter {p!r}"
                for p in _parameters(obj) if not _names(doc, p)]
    return out


def _documented(env) -> set[str]:
    return set(env.domaindata.get("py", {}).get("objects", {}))


def _where(obj) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"


def all_problems() -> list[str]:
    """Every docstring gap of the public surface (``problems`` over ``surface()``)."""
    return [p for name, obj in surface() for p in problems(name, obj)]


def check_surface(app, env) -> None:
    """``env-check-consistency``: every public callable documented, with its parameters."""
    documented = _documented(env)
    names: dict[int, set[str]] = {}
    for name, obj in surface():
        names.setdefault(id(obj), {_where(obj)}).add(name)
    for name, obj in surface():
        if not names[id(obj)] & documented:
            logger.warning(f"undocumented public name: {name} (no autodoc entry on an API page)",
                           type="toymech", subtype="surface")
    for problem in all_problems():
        logger.warning(f"incomplete docstring: {problem}", type="toymech", subtype="surface")


class KnobTable(Directive):
    """``toymech-knobs STUDY``: the study's knobs as a table (knob, the source's value, allowed,
    what it changes, meaning), from ``toymech.listing.knob_rows``."""

    required_arguments = 1

    def run(self):
        from toymech.listing import knob_rows

        rows = knob_rows(self.arguments[0])
        columns = [("knob", 14), ("source", 12), ("allowed", 30), ("changes", 22), ("meaning", 40)]
        table = nodes.table(classes=["toymech-knobs"])
        group = nodes.tgroup(cols=len(columns))
        table += group
        for _, width in columns:
            group += nodes.colspec(colwidth=width)
        head, body = nodes.thead(), nodes.tbody()
        group += head
        group += body
        head += self._row([c for c, _ in columns], literal=())
        for row in rows:
            body += self._row([row[c] for c, _ in columns], literal=(0, 1))
        return [table]

    @staticmethod
    def _row(cells, literal) -> nodes.row:
        row = nodes.row()
        for i, text in enumerate(cells):
            entry = nodes.entry()
            para = nodes.paragraph()
            para += nodes.literal(text=str(text)) if i in literal else nodes.Text(str(text))
            entry += para
            row += entry
        return row


class ModuleApi(Directive):
    """``toymech-api MODULE``: an autodoc entry for every public name of ``MODULE`` (its
    ``__all__``): classes with their public members, functions, in that order. Written in the
    page's own syntax (MyST, an ``eval-rst`` block), so a new public name gets its entry without an edit here."""

    required_arguments = 1

    def run(self):
        from docutils.statemachine import StringList

        name = self.arguments[0]
        module = importlib.import_module(name)
        lines = ["```{eval-rst}"]  # autodoc writes reStructuredText: parse it as such
        for attr in _public_names(module):
            obj = getattr(module, attr)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            # A name re-exported by two public modules is indexed once, under the first module
            # of SURFACE that exports it (its canonical name still points at it).
            index = [] if _home(obj) in (None, name) else ["   :no-index:"]
            kind = "autoclass" if inspect.isclass(obj) else "autofunction"
            lines += [f".. {kind}:: {name}.{attr}", *(["   :members:"] if kind == "autoclass" else []),
                      *index, ""]
        lines.append("```")
        node = nodes.container()
        self.state.nested_parse(StringList(lines, source=f"<toymech-api {name}>"), 0, node)
        return node.children


class StudiesApi(Directive):
    """``toymech-studies``: for every registered study, its class (a subclass of
    ``protocol.Study``) with the methods it defines, so a new study is in the reference without
    an edit."""

    def run(self):
        from docutils.statemachine import StringList
        from toymech.studies import protocol

        lines = ["```{eval-rst}"]
        for study in protocol.all_studies():
            cls = type(study)
            lines += [f".. rubric:: ``{cls.__module__}``: {study.title}", "",
                      f".. autoclass:: {_where(cls)}", "   :members:", ""]
        lines.append("```")
        node = nodes.container()
        self.state.nested_parse(StringList(lines, source="<toymech-studies>"), 0, node)
        return node.children


def setup(app):
    app.add_directive("toymech-knobs", KnobTable)
    app.add_directive("toymech-api", ModuleApi)
    app.add_directive("toymech-studies", StudiesApi)
    app.connect("env-check-consistency", check_surface)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

