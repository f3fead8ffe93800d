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
    "toymech.core",
    "toymech.devices",
    "toymech.files",
    "toymech.models",
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
    "toymech.sweep",
    "toymech.report",
    "toymech.display",
    "toymech.plugins",
    "toymech.listing",
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


# --- parameters in the parameter list --------------------------------------------------------
# toymech's docstrings say what each parameter means in their prose ("``device``: where it
# trains ..."). ``param_fields`` moves each such labelled clause into a ``:param name:`` field
# (which autodoc joins to the parameter's type in the entry's parameter list) and gives a
# parameter that the prose only mentions the sentence that mentions it, so the list describes
# every parameter the docstring names.

_LABEL = re.compile(r"``(\w+)``:\s|^(\w+):\s")  # "``name``: ..." or, opening a paragraph, "name: ..."
_PLAIN = re.compile(r"^(?![*+-]\s|\d+\.\s|\.\.\s|:|>>>|\|)")  # not a list, directive, field


def _sentence_ends(text: str) -> list[int]:
    """Where the sentences of ``text`` end: a full stop (or ``;``-less end) followed by a space
    and a capital, a backtick or a quote, outside parentheses and inline literals."""
    ends, depth, literal, i = [], 0, False, 0
    while i < len(text):
        if text.startswith("``", i):
            literal, i = not literal, i + 2
            continue
        c = text[i]
        if not literal:
            depth += (c == "(") - (c == ")")
            if (c == "." and depth <= 0 and re.match(r"\s+[A-Z`\"(]", text[i + 1:])
                    and not re.search(r"(?:e\.g|i\.e|etc|vs)$", text[:i])):
                ends.append(i + 1)
        i += 1
    return ends + [len(text)]


def _depth(text: str, at: int) -> int:
    """How many parentheses are open at ``at`` in ``text`` (inline literals not counted)."""
    plain = re.sub(r"``.*?``", lambda m: " " * len(m.group(0)), text[:at])
    return plain.count("(") - plain.count(")")


def _chunks(text: str, params: set[str]) -> tuple[dict[str, str], list[tuple[int, int]]]:
    """The labelled clauses of a paragraph: {parameter: its text}, and their spans (label
    included) to take out of the paragraph."""
    ends = _sentence_ends(text)
    labels = [m for m in _LABEL.finditer(text) if (m.group(1) or m.group(2)) in params
              and (m.group(2) is None or m.start() == 0 or text[m.start() - 2:m.start()] == ". ")
              and _depth(text, m.start()) == 0]  # not a label inside parentheses
    found, spans = {}, []
    for k, m in enumerate(labels):
        name = m.group(1) or m.group(2)
        stop = min([e for e in ends if e > m.end()] + [len(text)])
        if k + 1 < len(labels):
            stop = min(stop, labels[k + 1].start())
        body = text[m.end():stop].strip()
        body = re.sub(r"[;,]\s*(and\s*)?$", "", body).strip()
        if name not in found and body:
            found[name] = body.rstrip(".") if not body.endswith("..") else body
            spans.append((m.start(), stop))
    return found, spans


def _take_items(para: list[str], params: set[str], described: dict[str, str]) -> list[str]:
    """The lines of ``para`` left once its items of the form ``name: text`` (at the margin,
    continued on indented lines) for a parameter ``name`` are moved into ``described``."""
    kept, item = [], None
    for line in para:
        m = re.match(r"^(\w+):\s+(.*)$", line)
        if m and m.group(1) in params and m.group(1) not in described:
            item = m.group(1)
            described[item] = m.group(2).strip()
        elif item is not None and line.startswith(" "):
            described[item] += " " + line.strip()
        else:
            item = None
            kept.append(line)
    for name in described:
        described[name] = described[name].rstrip(".")
    return kept


def param_fields(lines: list[str], params: list[str]) -> list[str]:
    """``lines`` of a docstring with each labelled parameter clause moved into a ``:param:``
    field, and a field for each other parameter its prose mentions (the sentence that does);
    paragraphs other than plain prose (lists, literal blocks, directives, fields) are kept as
    they are. A docstring that has ``:param`` fields already is returned unchanged."""
    if not params or any(line.lstrip().startswith(":param") for line in lines):
        return lines
    wanted, out, described = set(params), [], {}
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    literal_next = False
    mentions: dict[str, str] = {}
    for para in (p for p in paragraphs if p):
        para = _take_items(para, wanted - set(described), described)  # "name: ..." + indented
        if not para:
            continue
        plain = (not literal_next and not para[0].startswith(" ") and _PLAIN.match(para[0])
                 and not any(line.startswith(" ") for line in para))
        literal_next = para[-1].rstrip().endswith("::")
        if not plain:
            out += [*para, ""]
            continue
        text = " ".join(line.strip() for line in para)
        for name in wanted - set(mentions):  # the sentence that names it, for an unlabelled one
            named = re.search(rf"``{re.escape(name)}(?!\w)", text)
            if named:
                ends = _sentence_ends(text)
                begin = max([e for e in ends if e <= named.start()] + [0])
                sentence = text[begin:min(e for e in ends if e > named.start())].strip()
                at = named.start() - begin
                cut = next((m.start() for m in _LABEL.finditer(sentence) if m.start() > at
                            and (m.group(1) or m.group(2)) in wanted), None)
                mentions[name] = re.sub(r"[;,]\s*(and\s*)?$", "",
                                        (sentence[:cut] if cut else sentence).strip()).rstrip(".")
        found, spans = _chunks(text, wanted - set(described))
        described.update(found)
        for start, stop in reversed(spans):
            before = re.sub(r"[;,]\s*(and\s+)?$", "", text[:start].rstrip())
            ended = text[start:stop].rstrip().endswith(".") and before and not before.endswith(".")
            text = before + ("." if ended else "") + " " + text[stop:].lstrip()
        text = re.sub(r"\s+", " ", text).strip()
        text = re.sub(r"^[;,.]\s*", "", text)
        if text:
            out += [text, ""]
    fields = {**mentions, **described}
    if fields:
        out += [f":param {name}: {fields[name]}" for name in params if name in fields]
    while out and not out[-1].strip():
        out.pop()
    return out


def _fields_hook(app, what, name, obj, options, lines) -> None:
    """``autodoc-process-docstring``: ``param_fields`` on every documented callable."""
    if what not in ("function", "method", "class", "exception"):
        return
    target = obj
    if what in ("class", "exception") and dataclasses.is_dataclass(obj):
        target = obj
    elif what in ("class", "exception"):
        target = obj.__init__ if "__init__" in vars(obj) else None
    params = _parameters(target) if target is not None else []
    lines[:] = param_fields(list(lines), params)


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


class CostTable(Directive):
    """``toymech-costs``: the cost table shipped with the package
    (``toymech/data/report_costs.json``, what ``toymech report`` estimates a first run from), one
    row per notebook and size: the wall time of its measured run and the machine that ran it
    (its reference steps per second, the notebooks that ran at once and the free cores), so
    every report timing on the site is read from the table, never typed."""

    def run(self):
        from toymech.display import duration_text
        from toymech.models.reference import SHIPPED_STEPS_PER_S
        from toymech.report.costs import shipped_costs

        columns = [("notebook", 30), ("run", 16), ("wall time", 12), ("measured on", 42)]
        table = nodes.table(classes=["toymech-costs"])
        group = nodes.tgroup(cols=len(columns))
        table += group
        for _, width in columns:
            group += nodes.colspec(colwidth=width)
        head, body = nodes.thead(), nodes.tbody()
        group += head
        group += body
        head += KnobTable._row([c for c, _ in columns], literal=())
        for stem, runs in sorted(shipped_costs().items()):
            for key, row in sorted(runs.items()):
                step_s = row.get("reference_step_s") or 1.0 / SHIPPED_STEPS_PER_S
                where = (f"a CPU at {1.0 / step_s:.1f} reference steps/s, "
                         f"{row.get('jobs', 1)} notebook(s) at once on {row.get('cores', '?')} "
                         "free cores, an empty zoo")
                body += KnobTable._row([f"{stem}.ipynb", key.replace(",", ", "),
                                        duration_text(row["total_s"]), where], literal=(0, 1))
        return [table]


class CommandLine(Directive):
    """``toymech-cli``: the command-line reference, read from the ``toymech`` parser
    (``toymech.cli.parser.build_parser``) when the site is built: the program's own options,
    then every subcommand (and ``zoo``'s actions) as a section of its own (anchor
    ``toymech-<command>``) with its description, its usage and each argument with its help,
    choices and default. A new option is in the reference without an edit here."""

    WIDTH = 92  # the usage lines' width, whatever the terminal that builds the site

    def run(self):
        from toymech.cli.parser import build_parser

        parser = build_parser()
        return self._section(parser, "toymech", top=True)

    def _section(self, parser, prog: str, top: bool = False) -> list:
        import argparse

        section = nodes.section(ids=[nodes.make_id(prog)], names=[nodes.fully_normalize_name(prog)])
        section += nodes.title(text=prog)
        if parser.description:
            section += self._paragraph(parser.description)
        formatter = argparse.HelpFormatter(prog, width=self.WIDTH)
        formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
        section += nodes.literal_block(text=formatter.format_help().strip(), language="text")
        items = nodes.definition_list(classes=["toymech-cli"])
        subparsers = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                subparsers.append(action)
                continue
            if isinstance(action, argparse._HelpAction):
                continue
            items += self._item(formatter, action)
        if len(items):
            section += items
        out = [section]
        for action in subparsers:
            helps = {a.dest: a.help for a in action._choices_actions}
            if top:
                section += nodes.paragraph(text="Commands: " + ", ".join(action.choices) + ".")
            for name, sub in action.choices.items():
                child = self._section(sub, f"{prog} {name}")
                if not sub.description and helps.get(name):
                    child[0].insert(1, self._paragraph(helps[name]))
                section += child
        return out

    @staticmethod
    def _item(formatter, action) -> nodes.definition_list_item:
        import argparse

        item = nodes.definition_list_item()
        term = nodes.term()
        term += nodes.literal(text=formatter._format_action_invocation(action))
        item += term
        text = action.help or ""
        if action.choices and action.metavar is not None:  # else the invocation lists them
            listed = ", ".join(map(str, action.choices))
            if listed not in text:
                text += f" (one of: {listed})"
        quiet = (None, False, [], argparse.SUPPRESS)
        if action.option_strings and action.default not in quiet and "default" not in text:
            text += f" (default: {action.default})"
        definition = nodes.definition()
        definition += CommandLine._paragraph(text.strip() or "(no help text)")
        item += definition
        return item

    # options, environment variables and quoted commands in a help text: set as code, so the
    # site neither turns "--" into a dash nor quotes into curly ones
    _CODE = re.compile(r"(?<![\w])(--?[A-Za-z][\w-]*|\$[A-Z_]+)|'(toymech [^']+)'")

    @staticmethod
    def _paragraph(text: str) -> nodes.paragraph:
        para, at = nodes.paragraph(), 0
        for m in CommandLine._CODE.finditer(text):
            para += nodes.Text(text[at:m.start()])
            para += nodes.literal(text=m.group(1) or m.group(2))
            at = m.end()
        para += nodes.Text(text[at:])
        return para


def setup(app):
    app.add_directive("toymech-knobs", KnobTable)
    app.add_directive("toymech-api", ModuleApi)
    app.add_directive("toymech-studies", StudiesApi)
    app.add_directive("toymech-cli", CommandLine)
    app.add_directive("toymech-costs", CostTable)
    app.connect("env-check-consistency", check_surface)
    app.connect("autodoc-process-docstring", _fields_hook)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

