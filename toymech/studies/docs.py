"""The claims table of docs/sources.md, generated from the studies' ``CLAIMS`` (one row per claim:
its key, what the source says and where, the source's number and setting, each size's setting
against it, our test, the tolerance's derivation, the seeds judged and calibrated, and the null),
so the documentation cannot drift from the code. ``python -m toymech.studies.docs``
rewrites the table between its markers; ``tests/test_claims_null.py`` checks it is current."""

from __future__ import annotations

import sys
from pathlib import Path

from ..core import SIZES
from .protocol import all_studies
from .settings import describe, setting_text, shortfall

BEGIN, END = "<!-- claims table: begin (generated) -->", "<!-- claims table: end -->"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _sizes(c, settings) -> str:
    """Each size of ours against the claim's setting: met, scaled, or below (and by what)."""
    if settings is None or not c.setting:
        return "no setting stated"
    out = []
    for size in SIZES:
        short = shortfall(c.setting, settings.of(size))
        scaled = c.scaled and settings.scaled_shown(size, c.key)
        word = "meets it" if not short else ("judged scaled: " if scaled else "below: ") + \
            describe(short) + (" (scaled, not yet shown to match the source's setting)"
                               if c.scaled and not scaled else "")
        out.append(f"{size}: {word}")
    return "; ".join(out)


def claims_markdown() -> str:
    """The claims of every registered study as Markdown tables, one per study: per claim the
    source's setting, each size's, the test, the tolerance's derivation, the seeds and the
    null (and why a row cannot be shown to fail untrained, where it cannot)."""
    parts = []
    for study in all_studies():
        settings = study.settings
        parts.append(f"### {study.title}\n")
        if settings is not None:
            parts.append(f"Seeds: {_cell(settings.seeds_text())}.\n")
            if settings.evidence_record:
                parts.append(f"Scaled verdicts: {_cell(settings.evidence_record)}.\n")
        parts.append("| key | claim | where the source says it | the source's number | the "
                     "source's setting | our sizes | our test | the tolerance's derivation | "
                     "seeds | null |")
        parts.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for c in study.claims:
            number = c.source_value + (" (a number of ours, not the source's)" if c.ours else "")
            test = c.test + ("" if c.trained else " (a property of the initialisation)")
            kind = "numeric" if c.numeric else "qualitative" + (
                f", may be judged scaled: {c.scaled}" if c.scaled else "")
            seeds = ("judged on the study's seeds" + (
                f", never seed {', '.join(map(str, c.calibration))} (its calibration)"
                if c.calibration else ""))
            null = ((f"{c.null}: {c.null_detail}" if c.null_detail else c.null)
                    or "none (a comparison of our runs)") + (
                f"; cannot be shown to fail untrained: {c.null_exempt}" if c.null_exempt else "")
            parts.append(f"| `{c.key}` | {_cell(c.statement)} | {_cell(c.source)} | "
                         f"{_cell(number)} | {_cell(setting_text(c.setting))} ({kind}) | "
                         f"{_cell(_sizes(c, settings))} | {_cell(test)} | {_cell(c.why)} | "
                         f"{_cell(seeds)} | {_cell(null)} |")
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def with_table(doc: str) -> str:
    """``doc`` with the generated table between its markers (appended when there are none)."""
    block = f"{BEGIN}\n\n{claims_markdown()}\n{END}"
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        return head + block + rest.split(END, 1)[1]
    return doc.rstrip() + "\n\n" + block + "\n"


def main(path: str = "docs/sources.md") -> int:
    p = Path(path)
    p.write_text(with_table(p.read_text()))
    print(f"claims table written to {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
