"""The words a report uses, in a reader's words: the last section of every report ("Words used in
this report"). Each entry says what the word means and what it was in this run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core import SIZES, check

SIZE_SHORT = {"smoke": "a pipeline check in seconds", "default": "minutes on a laptop CPU",
              "paper": "the source's own settings"}
SIZE_WORDS = {
    "smoke": "a pipeline check: a few training steps, so every cell runs in seconds; its numbers are "
             "not evidence for or against the source",
    "default": "a run that fits a laptop CPU in minutes: smaller than the source's setting, so most "
               "claims are read as how far our number is from the source's",
    "paper": "the source's own settings (steps, widths, seeds); a GPU helps",
}


def _options_text(options: Sequence[str], given: str | None) -> str:
    this = "none" if given in (None, "()", "[]", "''", '""') else given
    if not options:
        return ("the optional comparisons a report can add; this study has none, so the "
                f"parameter changes nothing. In this run: {this}.")
    listed = ", ".join(f"“{o}”" for o in options)
    return (f"the optional comparisons a report can add ({listed}); they take longer, so a report "
            f"runs them when it is made with --param also=NAME. In this run: {this}.")


def glossary(size_name: str, seed: int, seeds: str, parameters: Sequence[tuple[str, Any]] = (),
             options: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(word, meaning) rows for a report at size ``size_name`` (the notebook's ``size``
    parameter) with base ``seed``, the ``seeds`` measured (as the header writes them), the
    notebook's other ``parameters`` ((name, value) pairs) and the study's optional comparisons
    ``options``."""
    check(size_name in SIZES, "size", size_name, f"one of {', '.join(SIZES)}")
    others = ", ".join(f"{s} ({w})" for s, w in SIZE_SHORT.items() if s != size_name)
    rows = [
        ("size", f"how large a run is. This report ran at {size_name}: {SIZE_WORDS[size_name]}. "
                 f"The other sizes: {others}."),
        ("seed", f"the number every random draw of a run derives from (initialisation, training "
                 f"data, evaluation data). This report's first seed: {seed}."),
        ("seeds", f"the independent runs a claim is judged over; a claim needs several seeds to "
                  f"read \"reproduced\". Measured here: {seeds or 'one'}."),
        ("zoo", "the store of trained models: a model trained once with the same settings and "
                "seed is loaded from it instead of trained again."),
        ("chance / null", "the reference a number is compared with: chance (a uniform guess), a "
                          "trivial predictor, a ceiling such as the exact bigram model, an untrained "
                          "model, or the run without a patch."),
    ]
    given = dict(parameters)
    if options or "also" in given:
        rows.append(("also", _options_text(options, given.get("also"))))
    return rows
