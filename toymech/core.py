"""What every layer shares: input checks, config (de)serialisation, sizes and seed streams, a
command line in its public form (``public_command``: no path of the machine that ran it).

This module imports nothing of toymech, so tasks, models, training, analysis and studies can all
use it without reaching into each other.

Seeds: one number per run derives every random stream of it (``seed_for``). A run with seed s
initialises its model from s, draws its training batches from a generator seeded with s, and
everything a notebook evaluates or shows is drawn from streams derived from s:

==============  ===================  =============================================================
stream          seed                 used for
==============  ===================  =============================================================
``init``        s                    the model's initial weights (``ModelConfig.seed``)
``data``        s                    training batches (``TrainConfig.seed``)
``train_eval``  s + 1,000,003        the fixed held-out batch logged during training
``eval``        s + 2,000,003        evaluation sets of the notebooks and tables
``probe``       s + 3,000,003        batches read by probes and training callbacks
``example``     s + 4,000,003        sequences drawn for figures and attention views
``panel``       s + 5,000,003        a map's common test panel (seed 0's, whatever the run's seed)
==============  ===================  =============================================================

The offsets keep the streams apart for every seed a user types (they are far larger than any
seed sweep) and keep ``init``/``data``/``train_eval`` where they were, so trained models in an
existing zoo stay valid.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SIZES = ("smoke", "default", "paper")
STREAMS = {"init": 0, "data": 0, "train_eval": 1_000_003, "eval": 2_000_003,
           "probe": 3_000_003, "example": 4_000_003, "panel": 5_000_003}


def check(condition: bool, name: str, value: Any, allowed: str) -> None:
    """Unless ``condition``, raise ``ValueError`` naming the parameter ``name``, the ``value``
    given and what is ``allowed``, in one line: ``name=value is not allowed: allowed``."""
    if not condition:
        raise ValueError(f"{name}={_quote(value)} is not allowed: {allowed}")


def _quote(value: Any) -> str:
    """One line naming the value, never a dump: a string or path whole up to ``QUOTE_WHOLE``
    characters (a file's name must survive a long temporary folder), anything else through
    ``short_repr``."""
    if isinstance(value, (str, os.PathLike)) and len(str(value)) <= QUOTE_WHOLE:
        return repr(value)
    return short_repr(value)


QUOTE_WHOLE = 1024


class _Enough(Exception):
    pass


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters (``...`` at the end), in work bounded by
    ``limit`` whatever the value: plain containers are walked only until the text is long
    enough, so a YAML alias bomb (a value whose repr would be exponentially long, or a cycle) is
    never formatted whole."""
    parts: list[str] = []
    size = 0

    def emit(text: str) -> None:
        nonlocal size
        parts.append(text)
        size += len(text)
        if size > limit:
            raise _Enough

    def items(seq, open_: str, close: str, pair: bool = False) -> None:
        emit(open_)
        for i, item in enumerate(seq):
            if i:
                emit(", ")
            if pair:
                walk(item[0])
                emit(": ")
                walk(item[1])
            else:
                walk(item)
        emit(close)

    def walk(v: Any) -> None:
        kind = type(v)
        if kind is dict:
            items(v.items(), "{", "}", pair=True)
        elif kind is list:
            items(v, "[", "]")
        elif kind is tuple:
            items(v, "(", ",)" if len(v) == 1 else ")")
        elif kind is str:
            emit(repr(v[: limit + 1]) if len(v) > limit + 1 else repr(v))
        else:
            try:
                emit(repr(v))
            except ValueError:  # an int too long to print
                emit(f"<{kind.__name__}>")

    try:
        walk(value)
    except (_Enough, RecursionError):
        pass
    text = "".join(parts)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def float_text(value: float) -> str:
    """The one text form of a float that reads back exactly: ``:g``'s form at the fewest
    significant digits, 6 or more, whose ``float`` is ``value`` (``0.001``, ``3``, ``1e-05``,
    ``0.0012345678``; ``0.0010000001`` and ``0.0010000002`` stay apart). A value that ``:g``
    writes exactly keeps ``:g``'s text, so tables written before keep reading as written."""
    value = float(value)
    check(math.isfinite(value), "number", value, "a finite number")
    for digits in range(6, 18):
        text = format(value, f".{digits}g")
        if float(text) == value:
            return text
    return repr(value)  # not reached: 17 significant digits always round-trip


def value_text(value: Any) -> str:
    """The one text form of a knob's value (tables, cell keys, cost keys, sentences): a float by
    ``float_text``, a bool as ``yes``/``no``, a list of integers in a run as ``4-8``, another
    list as its values joined by ``, `` (``4, 6, 8``), anything else by ``str``. A study's knob
    reads each of them back as the same value (``studies.knobs.Knob.parse``)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, (list, tuple)):
        items = list(value)
        if len(items) > 1 and all(is_int(v) for v in items) and \
                items == list(range(int(items[0]), int(items[-1]) + 1)):
            return f"{items[0]}-{items[-1]}"
        return ", ".join(value_text(v) for v in items)
    return str(value)


def is_int(value: Any) -> bool:
    """Whether ``value`` is an integer: Python or numpy (anything with ``__index__``), never a
    bool."""
    return (not isinstance(value, bool) and not _is_numpy_bool(value)
            and hasattr(type(value), "__index__"))


def _is_numpy_bool(value: Any) -> bool:
    return type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool")


def _range_text(lo: Any, hi: Any) -> str:
    if lo is not None and hi is not None:
        return f"in {lo:,}..{hi:,}" if isinstance(lo, int) else f"in [{lo}, {hi}]"
    if lo is not None:
        return f">= {lo}"
    return f"<= {hi:,}" if hi is not None else ""


def check_int(name: str, value: Any, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` checked as an integer from ``lo`` to ``hi`` (inclusive; None = unbounded):
    bool is not one, 3.0 is not one, numpy integers are. Returns it as a Python int; a
    ValueError names the parameter ``name`` otherwise. Example:
    ``check_int("steps", steps, 1, 10**8)``."""
    ok = is_int(value) and (lo is None or int(value) >= lo) and (hi is None or int(value) <= hi)
    check(ok, name, value, f"an integer {_range_text(lo, hi)}".rstrip())
    return int(value)


def check_float(name: str, value: Any, lo: float | None = None, hi: float | None = None, *,
                lo_open: bool = False, hi_open: bool = False) -> float:
    """``value`` checked as a finite real number (int or float, numpy too; bool and strings are
    not) in the range ``lo``..``hi`` (``lo_open``/``hi_open`` exclude the ends); a ValueError
    names the parameter ``name`` otherwise. Python numbers are returned as given (so configs
    keep their JSON form), numpy numbers as float."""
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    ok = real and math.isfinite(float(value))
    if ok:
        v = float(value)
        ok = ((lo is None or (v > lo if lo_open else v >= lo))
              and (hi is None or (v < hi if hi_open else v <= hi)))
    lo_s = "" if lo is None else ("(" if lo_open else "[") + f"{lo}, "
    hi_s = "" if hi is None else f"{hi}" + (")" if hi_open else "]")
    where = (f" in {lo_s}{hi_s}" if lo is not None and hi is not None else
             f" {'>' if lo_open else '>='} {lo}" if lo is not None else
             f" {'<' if hi_open else '<='} {hi}" if hi is not None else "")
    check(ok, name, value, f"a finite number{where}")
    return value if type(value) in (int, float) else float(value)


def check_bool(name: str, value: Any) -> bool:
    """``value`` checked as True or False (numpy bools too; 0, 1, "no" and "false" are not
    booleans); a ValueError names the parameter ``name`` otherwise."""
    check(isinstance(value, bool) or _is_numpy_bool(value), name, value,
          "True or False (JSON true/false)")
    return bool(value)


def check_str(name: str, value: Any, choices: Any = None, *, empty: bool = False) -> str:
    """``value`` checked as a string (one of ``choices`` when given; non-empty unless
    ``empty``); a ValueError names the parameter ``name`` otherwise."""
    if choices is not None:
        check(isinstance(value, str) and value in choices, name, value,
              f"one of {', '.join(repr(c) for c in choices)}")
    check(isinstance(value, str) and (empty or value != ""), name, value,
          "a string" if empty else "a non-empty string")
    return value


def check_path_writable_dir(name: str, path: Any) -> Path:
    """``path`` checked as a folder that is or can be made writable: an existing writable
    directory, or a path whose nearest existing parent is a writable directory in which a folder
    can be made (tried: a folder made and removed at once). A file (or a file on the way) is
    refused, in a ValueError naming the parameter ``name``. Leaves nothing behind; returns the
    expanded path."""
    from pathlib import Path

    check(isinstance(path, (str, Path)) and str(path).strip() != "" and "\0" not in str(path),
          name, path, "a folder path (string)")
    p = Path(path).expanduser()
    if p.exists():
        check(p.is_dir(), name, str(path), "a folder, not a file")
        check(os.access(p, os.W_OK | os.X_OK), name, str(path), "a folder you can write to")
        _probe(name, path, p, "a folder toymech can write in")
        return p
    parent = p.absolute().parent
    while not os.path.lexists(parent):
        parent = parent.parent
    check(parent.is_dir(), name, str(path), f"a folder path ({parent} is a file, not a folder)")
    check(os.access(parent, os.W_OK | os.X_OK), name, str(path),
          f"a folder that can be created ({parent} is not writable)")
    _probe(name, path, parent, "a folder that can be created")
    return p


def _probe(name: str, given: Any, folder: Any, allowed: str) -> None:
    """Permissions do not tell everything (root in /proc, a read-only mount): make a folder in
    ``folder`` and remove it again, as the caller's mkdir would."""
    probe = folder / f".toymech-probe-{os.getpid()}-{id(given):x}"
    try:
        probe.mkdir()
    except OSError as exc:
        check(False, name, str(given), f"{allowed} (making a folder in {folder} fails: "
              f"{exc.strerror or exc})")
    probe.rmdir()


def check_path_writable_file(name: str, path: Any) -> Path:
    """``path`` checked as a file path that can be written: not a folder, in a folder that
    exists and is writable (else a ValueError naming the parameter ``name``); returns it
    expanded."""
    from pathlib import Path

    check(isinstance(path, (str, Path)) and str(path).strip() != "" and "\0" not in str(path),
          name, path, "a file path (string)")
    p = Path(path).expanduser()
    check(not p.is_dir(), name, str(path), "a file path, not a folder")
    parent = p.absolute().parent
    check(parent.is_dir() and os.access(parent, os.W_OK | os.X_OK), name, str(path),
          "a file in an existing folder you can write to")
    _probe(name, path, parent, "a file in an existing folder you can write to")
    return p


def set_checked(obj: Any, **values: Any) -> None:
    """Write checked, normalised ``values`` (e.g. numpy ints made ints) back onto ``obj``, a
    frozen dataclass (in its ``__post_init__``)."""
    for key, value in values.items():
        object.__setattr__(obj, key, value)


def check_size(size: Any) -> str:
    """``size`` is one of smoke/default/paper (ValueError otherwise); returns it."""
    check(isinstance(size, str) and size in SIZES, "size", size, f"one of {', '.join(SIZES)}")
    return size


class Knobs(Mapping):
    """A setting's knobs: a read-only, hashable mapping of knob names to JSON values (a list
    is kept as a tuple), in the order given. ``items``: a mapping (or pairs) of knob names to
    values."""

    __slots__ = ("_items",)

    def __init__(self, items: Any = ()) -> None:
        items = dict(items)
        check(all(isinstance(k, str) and k for k in items), "knob", next(iter(items), None),
              "knob names (non-empty strings)")
        self._items = tuple((k, _frozen(v, k)) for k, v in items.items())

    def __getitem__(self, key: str) -> Any:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self):
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __repr__(self) -> str:
        return repr(dict(self._items))

    def __reduce__(self):  # pickled (process pools, Ray) as a plain dict
        return (Knobs, (dict(self._items),))


def _frozen(value: Any, name: str) -> Any:
    """Knob ``name``'s JSON value made hashable: lists (and tuples) as tuples, all the way
    down; a float that is not finite is refused (nan is not even equal to itself, so two equal
    settings would differ)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v, name) for v in value)
    check(value is None or isinstance(value, (bool, int, float, str)) or is_int(value),
          f"knob {name}", value, "a JSON value (a number, text, a bool or a list of them)")
    check(not isinstance(value, float) or math.isfinite(value), f"knob {name}", value,
          "a finite number (nan and inf are no knob's value)")
    return int(value) if is_int(value) and not isinstance(value, bool) else value


@dataclasses.dataclass(frozen=True)
class Setting:
    """A study at a setting: a size name and the knobs a variant sets on top of it. It is what
    a study builds its experiments from, passed explicitly from the CLI, a notebook, a grid or a
    map. Make one with a study's ``with_knobs(size, variant)`` (every knob checked) or, where
    only a size is given, ``Setting.of(size)``.

    ``size``: smoke, default or paper. ``knobs``: knob name -> JSON value (none: the size
    itself, the source's values). ``described``: its sentence ("a variant: block_len 4-8 (the
    post's 6)"; "" for a plain size), never part of its identity.

    Example: ``study("induction").with_knobs("default", {"block_len": "4-8"}).text()``."""

    size: str
    knobs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    described: str = dataclasses.field(default="", compare=False)

    def __post_init__(self) -> None:
        check_size(self.size)
        check(isinstance(self.knobs, Mapping), "knobs", self.knobs,
              "a mapping of knob names to values")
        object.__setattr__(self, "knobs", Knobs(self.knobs))
        check(isinstance(self.described, str), "described", self.described, "a sentence (str)")

    @staticmethod
    def of(size: Any) -> Setting:
        """``size`` as a Setting: a Setting itself, or a size name (smoke/default/paper) with
        no knobs (ValueError for anything else): the one conversion at every boundary a user
        may pass either."""
        return size if isinstance(size, Setting) else Setting(check_size(size))

    def variant(self) -> dict[str, str]:
        """Its knobs as a variant: each value in its one text form (``value_text``), in its
        order; {} for a plain size. A study's ``with_knobs`` keeps only the knobs that change a
        run, so two spellings of one setting give one variant and the source's values none:
        what a report's name, cost key and results record are keyed on."""
        return {k: value_text(v) for k, v in self.knobs.items()}

    def text(self) -> str:
        """The setting in words: its size, and the variant's sentence where it has knobs."""
        if not self.knobs:
            return f"size {self.size}"
        return f"size {self.size}, {self.described or 'a variant'}"

    def __str__(self) -> str:
        return self.size  # in a sentence it reads as its size; ``text()`` says the knobs too


def size_name(size: Any) -> str:
    """The size name of ``size`` (a size name or a ``Setting``), checked."""
    return Setting.of(size).size


def check_seed(seed: Any, name: str = "seed") -> int:
    """``seed`` checked as a seed: a non-negative integer (bool is not; numpy integers are),
    else a ValueError naming the parameter ``name``. Returns it as a Python int."""
    ok = is_int(seed) and 0 <= int(seed) < 2**62
    check(ok, name, seed, "an integer in 0..2**62 - 1")
    return int(seed)


def seed_for(seed: int, stream: str) -> int:
    """The seed of ``stream`` (see the module docstring) for a run with seed ``seed``."""
    check(stream in STREAMS, "stream", stream, f"one of {', '.join(STREAMS)}")
    return check_seed(seed) + STREAMS[stream]


def dataclass_from_dict(cls: type, d: dict[str, Any], what: str) -> Any:
    """``cls(**d)`` for a config dataclass, with unknown keys refused by name; ``what`` names
    the config in the error (e.g. ``"model"``)."""
    check(isinstance(d, dict), what, type(d).__name__, "a JSON object (dict)")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - known)
    check(not unknown, f"{what} key", unknown[0] if unknown else None,
          f"one of {', '.join(sorted(known))}")
    return cls(**d)


def jsonable(obj: Any) -> Any:
    """``obj`` (config values: numpy scalars, torch dtypes/devices, tuples, nested in dicts and
    lists) converted into JSON types."""
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


# Options whose value is a folder of the machine that ran: written as a placeholder.
PLACEHOLDERS = {"--cache": "<zoo>", "--out": "<out>", "--into": "<into>", "--zoo": "<zoo>"}
_PRIVATE_PATH = re.compile(r"^(/|~|[A-Za-z]:\\)")


def public_command(command: str) -> str:
    """``command`` with nothing of the machine that ran it: the value of ``--cache``/``--out``/
    ``--into`` as a placeholder (``<zoo>``, ``<out>``), a path to a file of the toymech checkout
    that ran it as the repository's relative path (``/home/me/toymech/specs/maps/x.yaml`` ->
    ``specs/maps/x.yaml``: a reader's clone has it), any other absolute path as ``<path>``
    (``name=<path>`` where a word gives a name a path);
    the repository's own relative paths (``notebooks/...``) stay."""
    if not command:
        return ""
    checkout = _checkout_root()
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out, after = [], None
    for word in words:
        option, eq, value = word.partition("=")
        if after is not None:
            out.append(after)
            after = None
        elif word in PLACEHOLDERS:
            out.append(word)
            after = PLACEHOLDERS[word]
        elif eq and option in PLACEHOLDERS:
            out.append(f"{option}={PLACEHOLDERS[option]}")
        elif checkout is not None and (inside := _inside(word, checkout)) is not None:
            out.append(inside)
        elif _PRIVATE_PATH.match(word):
            out.append("<path>")
        elif eq and _PRIVATE_PATH.match(value):  # --param x=/home/me/data
            out.append(f"{option}=<path>")
        else:
            out.append(word)
    names = ["path", *(p[1:-1] for p in PLACEHOLDERS.values())]
    placeholder = re.compile("<(?:{})>".format("|".join(names)))
    return " ".join(w if placeholder.search(w) else shlex.quote(w) for w in out)


def _checkout_root():
    """The root of the git checkout this toymech runs from (it holds ``.git``), else None (an
    installed package: its files are no repository path a reader could open)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    return root if (root / ".git").exists() else None


def _inside(word: str, root) -> str | None:
    """``word``, an absolute path to a file of the checkout ``root``, as its path relative to
    ``root`` (POSIX form); None for any other word."""
    from pathlib import Path

    if not word.startswith("/"):
        return None
    try:
        return Path(word).resolve().relative_to(root).as_posix()
    except (ValueError, OSError):
        return None


def source_commit() -> str:
    """The git commit of the toymech source this process runs (``abc123def456``, with
    `` + local changes`` when tracked files differ from it); "" outside a git checkout or without
    git. Recorded beside results so a reader can check out what produced them."""
    import subprocess
    from pathlib import Path

    here = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=30)
        if head.returncode != 0:
            return ""
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return head.stdout.strip() + (" + local changes" if dirty.stdout.strip() else "")


def json_nesting(text: str) -> int:
    """How deep ``[`` and ``{`` nest in ``text`` outside JSON strings: read before
    ``json.loads``, whose recursion a value nested thousands deep exhausts (RecursionError)."""
    depth = most = 0
    in_string = escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif in_string:
            escaped, in_string = ch == "\\", ch != '"'
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            most = max(most, depth)
        elif ch in "]}":
            depth -= 1
    return most
