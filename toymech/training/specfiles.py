"""Reading the files a user hands toymech (an experiment config, a sweep grid): strictly and
boundedly. A file is read only when it is a regular file of at most ``MAX_BYTES`` (a FIFO or a
device is refused at once, never waited on) and parsed only when it holds at most ``MAX_KEYS``
keys (counted as colons, before parsing); a key given twice in one mapping, nesting deeper
than Python's parser allows, or text that is not UTF-8 is an error naming the file, never a
silent "last value wins". An integer is read only in plain decimal digits, at most
``MAX_DIGITS`` of them (``10_000`` groups them): YAML 1.1 reads ``010`` as 8, ``0x10`` as 16 and
``1:30`` as 90, which is refused in one line naming the file, the line and the value rather
than read as another number; a number of thousands of digits is named there too, not in
Python's own words.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from ..core import check, short_repr

MAX_BYTES = 16 * 2**20
MAX_KEYS = 10_000  # a spec file's keys, counted (as its colons) before parsing: YAML's parser
# is slow per key, so a hostile file of many keys would print nothing for minutes
# (benchmarks/README.md)
SUFFIXES = {".json": "json", ".yaml": "yaml", ".yml": "yaml"}


MAX_DIGITS = 100  # an integer in a spec file (a seed needs 19)
_DECIMAL = re.compile(r"[-+]?(0|[1-9][0-9]*(_[0-9]+)*)")  # 10_000 groups digits (read as 10000)


class _Duplicate(ValueError):
    pass


class _Unreadable(ValueError):
    """A value of the file that is refused (its message says where and why)."""


def _integer(text: str, where: str) -> int:
    """``text`` as an integer when it is one in plain decimal digits (at most ``MAX_DIGITS``)."""
    digits = text.lstrip("+-").replace("_", "")
    if len(digits) > MAX_DIGITS:
        raise _Unreadable(f"{where}an integer of {len(digits):,} digits (at most {MAX_DIGITS})")
    if not _DECIMAL.fullmatch(text):
        raise _Unreadable(f"{where}{text!r} is not a plain decimal integer (YAML 1.1 reads a "
                          "leading 0 as octal, 0x as hex and : as base 60, giving another "
                          "number); write it in decimal digits without a leading 0, or quote it "
                          "as text")
    return int(digits) * (-1 if text.startswith("-") else 1)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def read_text(path: Any, what: str) -> str:
    """The UTF-8 text of ``path`` (see the module docstring); ValueError naming ``what``."""
    check(isinstance(path, (str, Path)) and str(path).strip() != "" and "\0" not in str(path),
          what, path, "a file path")
    p = Path(path).expanduser()
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ValueError(f"{what}={str(path)!r} is not allowed: a file that can be read "
                         f"({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        check(stat.S_ISREG(st.st_mode), what, str(path),
              "a regular file (a folder, FIFO or device is not read)")
        check(st.st_size <= MAX_BYTES, what, str(path), f"a file of at most {MAX_BYTES:,} bytes")
        data = os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{what}={str(path)!r} is not allowed: a UTF-8 text file") from None


def _parsed(load, text: str, what: str, path: Any, kind: str, errors, detail) -> Any:
    """``load(text)`` with its failures as one-line ValueErrors naming ``what`` and ``path``."""
    try:
        return load(text)
    except _Duplicate as exc:
        raise ValueError(f"{what}={str(path)!r} is not allowed: each key once per mapping "
                         f"({short_repr(exc.args[0])} is given twice)") from None
    except RecursionError:
        raise ValueError(f"{what}={str(path)!r} is not allowed: {kind} nested at most a few "
                         "hundred levels deep") from None
    except _Unreadable as exc:
        raise ValueError(f"{what}={str(path)!r} is not allowed: {exc}") from None
    except errors as exc:
        raise ValueError(f"{what}={str(path)!r} is not allowed: valid {kind} ({detail(exc)})") from None


def parse_json(text: str, what: str, path: Any) -> Any:
    """JSON with duplicate keys refused (one line naming the file and the key)."""
    return _parsed(lambda t: json.loads(t, object_pairs_hook=_pairs,
                                        parse_int=lambda v: _integer(v, "")),
                   text, what, path, "JSON", json.JSONDecodeError,
                   lambda e: f"line {e.lineno}, column {e.colno}: {e.msg}")


def parse_yaml(text: str, what: str, path: Any) -> Any:
    """YAML (safe: plain data only) with duplicate keys refused."""
    class Strict(yaml.SafeLoader):
        pass

    def mapping(loader, node, deep=False):
        seen: set = set()  # linear in the keys (a list made 700,000 keys take hours)
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            try:
                fresh = key not in seen
                seen.add(key)
            except TypeError:  # an unhashable key: construct_mapping refuses it below
                continue
            if not fresh:
                raise _Duplicate(key)
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    def integer(loader, node):
        return _integer(str(loader.construct_scalar(node)),
                        f"line {node.start_mark.line + 1}: ")

    Strict.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    Strict.add_constructor("tag:yaml.org,2002:int", integer)
    return _parsed(lambda t: yaml.load(t, Loader=Strict), text, what, path, "YAML",
                   yaml.YAMLError, lambda e: " ".join(str(e).split())[:200])


def read_mapping(path: Any, what: str, kinds: tuple[str, ...] = ("json", "yaml")) -> dict[str, Any]:
    """A file holding one mapping: ``.json`` (or ``.yaml``/``.yml`` when ``kinds`` allows it);
    every check of the module docstring, one-line ValueErrors naming ``what``."""
    suffix = Path(str(path)).suffix.lower() if isinstance(path, (str, Path)) else ""
    allowed = [s for s, k in SUFFIXES.items() if k in kinds]
    check(suffix in allowed, what, path if not isinstance(path, Path) else str(path),
          f"a {', '.join(allowed)} file")
    text = read_text(path, what)
    check(text.count(":") <= MAX_KEYS, what, str(path),
          f"a file of at most {MAX_KEYS:,} keys (it holds {text.count(':'):,} colons)")
    parse = parse_json if SUFFIXES[suffix] == "json" else parse_yaml
    data = parse(text, what, path)
    check(isinstance(data, dict), what, str(path),
          f"a file holding one mapping (a JSON object), not a {type(data).__name__}")
    return data
