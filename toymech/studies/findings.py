""""What this run found": a few sentences computed from a study's scorecard and numbers, for the
top of its report (the notebook cell tagged ``finding``). Nothing here is typed per run: every
figure comes from the scorecard, the per-seed numbers or the size."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import pandas as pd

from ..core import Setting, check
from .claims import BELOW, OURS_FAILS, OURS_HOLDS, is_pipeline
from .settings import Parameters, StudySettings, shortfall

ORDER = ("reproduced", OURS_HOLDS, "consistent", "mixed", "not reproduced", OURS_FAILS,
         "holds on", "holds", "does not hold", "unresolved", "not measured", BELOW,
         "pipeline check")
CONSISTENT = re.compile(r"^(consistent \((\d+) seeds?\))")  # "consistent (2 seeds)"


class Findings:
    """Sentences shown as a Markdown list in notebooks (``_repr_markdown_``), plain text else.

    ``size``: a ``core.Setting`` with knobs (a variant) is named in the first line (its knobs beside the source's
    values). ``setting``: ``at_setting``'s opening of a run below the source's setting. It is said once,
    as the first line ("Every finding below is from our scaled run, at 2,000 of the post's 10,000
    steps ..."), and taken off the lines that start with it (``opening``), so each line reads as
    a finding and the page never presents the smaller run as the source's."""

    def __init__(self, lines: Sequence[str], title: str = "What this run found",
                 setting: str = "", size: Setting | str | None = None):
        lines = [line for line in lines if line]
        if setting:
            lines = [line[len(setting)].upper() + line[len(setting) + 1:]
                     if line.startswith(setting) else line for line in lines]
            lines.insert(0, "Every finding below is from our scaled run, at "
                         f"{setting.removeprefix('At ').removesuffix(', ')}: not the source's "
                         "models, and not its setting.")
        if isinstance(size, Setting) and size.knobs:  # a variant is named first, on every page
            lines.insert(0, f"This run is {size.described or 'a variant'}. Every finding "
                         "below is a property of these runs, never a verdict on the source.")
        self.lines, self.title = lines, title

    def _repr_markdown_(self) -> str:
        # No title: the report puts this under its own "What this run found" heading.
        return "\n".join(f"- {line}" for line in self.lines)

    def __str__(self) -> str:
        return "\n".join(f"- {line}" for line in self.lines)

    __repr__ = __str__


def verdict_word(text: str) -> str:
    """The counted form of one verdict cell's ``text`` (the one rule, for scorecards and for
    reports read back): a known word (also when detail follows it, as in "pipeline check: holds
    0/2"), "consistent (k seeds)", or "other"; a verdict judged at a scaled setting keeps
    " (scaled)" ("reproduced (scaled)"), so it is counted apart."""
    word = " ".join(str(text).lower().split())
    scaled = " (scaled)" if "(scaled:" in word or word.endswith("(scaled)") else ""
    match = CONSISTENT.match(word)
    if match:
        return match.group(1) + scaled
    for known in sorted(ORDER, key=len, reverse=True):  # "holds on" before "holds"
        if known != "consistent" and re.match(rf"{re.escape(known)}(?!\w)", word):
            return known + scaled
    return "other"


def _rank(word: str) -> tuple[int, str]:
    base = word.removesuffix(" (scaled)")
    return next(i for i, w in enumerate((*ORDER, "other")) if base.startswith(w)), word


def scorecard_sentence(card: pd.DataFrame) -> str:
    """One sentence counting the verdicts, with the size and seeds of the title."""
    counts = Counter(verdict_word(v) for v in card["verdict"])
    size = card.attrs.get("size")
    if is_pipeline(size):
        return (f"This is a pipeline check at size {size}: models trained for seconds, so the "
                f"{len(card)} claims were computed but say nothing about the sources.")
    parts = [f"{counts[w]} {_said(w)}" for w in sorted(counts, key=_rank)]
    return f"Of {len(card)} claims: {', '.join(parts)} ({card.attrs.get('title', '')})."


_PLURAL = {"holds": "hold on every seed", "holds on": "hold on some seeds",
           "does not hold": "hold on no seed",  # a variant's properties, counted
           OURS_HOLDS: "hold as tests of ours (the source never ran them)",
           OURS_FAILS: "do not hold as tests of ours (the source never ran them)"}


def _said(word: str) -> str:
    if word in _PLURAL:
        return _PLURAL[word]
    return word.replace(" (scaled)", " at a scaled setting (fewer steps or a smaller model than "
                        "the source's)")


def misses(card: pd.DataFrame, most: int = 3) -> str:
    """The claims that did not reproduce, and our own tests that do not hold, by their
    statements (at most ``most`` of each)."""
    if is_pipeline(card.attrs.get("size")):
        return ""
    said = []
    for word, opening in (("not reproduced", "Not reproduced: "),
                          (OURS_FAILS, "Our tests (the source never ran them) that do not hold: ")):
        rows = [claim + (" (at our scaled setting)" if "(scaled:" in str(v) else "")
                for claim, v in card["verdict"].items() if str(v).startswith(word)]
        if rows:
            more = f" and {len(rows) - most} more" if len(rows) > most else ""
            said.append(opening + "; ".join(rows[:most]) + more + ".")
    return " ".join(said)


def at_setting(settings: StudySettings, size: Setting | str, source: Parameters, whose: str) -> str:
    """The opening of a finding made below the source's setting: "At 2,000 of the post's
    10,000 steps, " (and "width 64 where the paper's is 1,024, " ...); "" at its setting. A
    headline never presents a smaller run as the source's."""
    short = shortfall(source, settings.of(size))
    if not short:
        return ""
    parts = [f"{ours:,} of {whose} {theirs:,} steps" if name == "steps"
             and isinstance(ours, int) else f"{name} {_num(ours)} where {whose} is {_num(theirs)}"
             for name, ours, theirs in short]
    return "At " + ", ".join(parts) + ", "


def _num(v) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


def opening(prefix: str, sentence: str) -> str:
    """``sentence`` after ``at_setting``'s opening (its first letter lowered there)."""
    return prefix + sentence[0].lower() + sentence[1:] if prefix else sentence


class NotRun:
    """What a notebook shows where an optional comparison was not run, in a reader's words: what
    was not run and what runs it (a report made with ``--param also=NAME``, or the command
    ``how`` names), never an instruction to edit the notebook."""

    def __init__(self, name: str, param: str = "also", how: str | None = None):
        check(isinstance(name, str) and name.strip() != "", "name", name, "the comparison's name")
        check(how is None or (isinstance(how, str) and how.strip() != ""), "how", how,
              "None or the command that runs the comparison")
        if how is None:
            self.text = (f"Not run at this size: {name}, an optional comparison; a report made with "
                         f"`--param {param}={name}` on the command line runs it.")
        else:
            self.text = f"Not run for this report: {name}; {how} runs it, and the next report shows it."

    def _repr_markdown_(self) -> str:
        return f"*{self.text}*"

    def __repr__(self) -> str:
        return self.text


def not_run(name: str, param: str = "also", how: str | None = None) -> NotRun:
    """``NotRun`` for the optional comparison ``name``."""
    return NotRun(name, param, how)
