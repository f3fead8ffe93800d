"""What the ``toymech`` commands share: exit codes, ``UsageError``, the ``--param`` and ``--set``
parsing and the ``--cache`` check. Bad input raises ``UsageError`` (or ValueError), which
``toymech.cli.parser.main`` prints as one line (exit code 2)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from ..core import json_nesting

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
MAX_PARAM_DEPTH = 100  # lists and objects nested deeper in a --param VALUE are refused


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


def parse_params(texts: Sequence[str]) -> dict[str, object]:
    """Every ``--param NAME=VALUE``; a NAME given twice is refused (the last would win)."""
    out: dict[str, object] = {}
    for text in texts:
        name, value = parse_param(text)
        if name in out:
            raise UsageError(f"--param {name}=... given twice is not allowed: one value per "
                             f"parameter ({name}={out[name]!r} and {text!r})")
        out[name] = value
    return out


def parse_param(text: str) -> tuple[str, object]:
    name, sep, raw = text.partition("=")
    if not sep or not name.isidentifier():
        raise UsageError(f"--param {text!r} is not NAME=VALUE")
    if (depth := json_nesting(raw)) > MAX_PARAM_DEPTH:  # json.loads would recurse that deep
        raise UsageError(f"--param {name}={raw[:20]!r}... is not allowed: JSON nested at most "
                         f"{MAX_PARAM_DEPTH} deep (it nests {depth:,} deep)")
    try:  # numbers, true/false, null, lists; anything else is a string
        value = json.loads(raw, parse_int=lambda t: _param_int(name, t))
    except json.JSONDecodeError:
        value = raw
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        raise UsageError(f"--param {name}={raw!r} is not allowed: a finite number, JSON or a string")
    if name in OWN_OPTIONS:
        raise UsageError(f"--param {name}={raw!r} is not allowed: {name!r} has its own option; "
                         f"pass {OWN_OPTIONS[name]} instead")
    return name, value


MAX_DIGITS = 100  # an integer in a --param VALUE (Python refuses to read one of thousands)


def _param_int(name: str, text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise UsageError(f"--param {name}={text[:20]}... is not allowed: an integer of at most "
                         f"{MAX_DIGITS} digits (it has {len(text.lstrip('-')):,})")
    return int(text)


def parse_sets(texts: Sequence[str]) -> dict[str, str]:
    """``--set NAME=VALUE`` options as a variant (knob name -> the value as typed; the study's
    knobs read it: ``4-8``, ``4,6,8``, ``64``, ``true``). A knob given twice is refused."""
    out: dict[str, str] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier() or value.strip() == "":
            raise UsageError(f"--set {text!r} is not KNOB=VALUE (e.g. --set block_len=4-8; "
                             "'toymech list knobs' lists them)")
        if name in out:
            raise UsageError(f"--set {name} is given twice ({out[name]!r} and {value!r}): once each")
        out[name] = value.strip()
    return out


# notebook parameters that `toymech report` sets from its own options (not through --param)
OWN_OPTIONS = {"size": "--size", "device": "--device", "seed": "--seed", "n_seeds": "--seeds",
                "seeds": "--seeds", "variant": "--set KNOB=VALUE"}


def check_cache(cache: str | None) -> None:
    # Before any work: a zoo that cannot be written would otherwise fail after training.
    if cache is not None:
        from toymech.core import check_path_writable_dir

        path = Path(cache).expanduser() if cache.strip() else None
        if path is not None and os.path.lexists(path) and path.is_symlink() and not path.exists():
            raise ValueError(f"--cache={cache!r} is not allowed: a folder (it is a broken symlink "
                             "or a symlink loop)")
        check_path_writable_dir("--cache", cache)


__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "MAX_PARAM_DEPTH",
           "OWN_OPTIONS", "UsageError", "check_cache", "parse_param", "parse_params", "parse_sets"]
