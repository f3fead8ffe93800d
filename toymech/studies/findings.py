""""What this run found": a few sentences computed from a study's scorecard and numbers, for the
top of its report (the notebook cell tagged ``finding``). Nothing here is typed per run: every
figure comes from the scorecard, the per-seed numbers or the size."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import pandas as pd

from .claims import is_pipeline

ORDER = ("reproduced", "consistent", "mixed", "not reproduced", "unresolved", "not measured",
         "pipeline check")


class Findings:
    """Sentences shown as a Markdown list in notebooks (``_repr_markdown_``), plain text else."""

    def __init__(self, lines: Sequence[str], title: str = "What this run found"):
        self.lines, self.title = [line for line in lines if line], title

    def _repr_markdown_(self) -> str:
        # No title: the report puts this under its own "What this run found" heading.
        return "\n".join(f"- {line}" for line in self.lines)

    def __str__(self) -> str:
        return "\n".join(f"- {line}" for line in self.lines)

    __repr__ = __str__


def verdict_counts(card: pd.DataFrame) -> Counter:
    """The scorecard's verdicts counted by their first words ("consistent (1 seed)" counts as
    "consistent")."""
    out: Counter = Counter()
    for v in card["verdict"]:
        out[next((w for w in ORDER if str(v).startswith(w)), "other")] += 1
    return out


def scorecard_sentence(card: pd.DataFrame) -> str:
    """One sentence counting the verdicts, with the size and seeds of the title."""
    counts = verdict_counts(card)
    size = card.attrs.get("size")
    if is_pipeline(size):
        return (f"This is a pipeline check at size {size}: models trained for seconds, so the "
                f"{len(card)} claims were computed but say nothing about the sources.")
    parts = [f"{counts[w]} {w}" for w in ORDER if counts[w]]
    return f"Of {len(card)} claims: {', '.join(parts)} ({card.attrs.get('title', '')})."


def misses(card: pd.DataFrame, most: int = 3) -> str:
    """The claims that did not reproduce, by their statements (at most ``most``)."""
    if is_pipeline(card.attrs.get("size")):
        return ""
    rows = [claim for claim, v in card["verdict"].items() if str(v).startswith("not reproduced")]
    if not rows:
        return ""
    more = f" and {len(rows) - most} more" if len(rows) > most else ""
    return "Not reproduced: " + "; ".join(rows[:most]) + more + "."


class NotRun:
    """What a notebook shows where an optional comparison was not asked for."""

    def __init__(self, name: str, param: str = "also"):
        self.text = (f"Not run: an optional comparison. Add \"{name}\" to `{param}` (or pass "
                     f"it to the report) to train it.")

    def _repr_markdown_(self) -> str:
        return f"*{self.text}*"

    def __repr__(self) -> str:
        return self.text


def not_run(name: str, param: str = "also") -> NotRun:
    """``NotRun`` for the optional comparison ``name``."""
    return NotRun(name, param)
