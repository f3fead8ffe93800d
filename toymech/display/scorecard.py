"""A study's scorecard as one notebook output: the table in full (no cell cut at pandas' 50
characters) for readers, and the same rows as ``SCORECARD_MIME`` JSON, which renderers ignore and
``toymech results`` reads back from an executed notebook (``toymech.report.results``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

SCORECARD_MIME = "application/vnd.toymech.scorecard+json"


class ScorecardView:
    """``scorecard(card)``'s output: HTML and plain text of the whole table, plus the JSON."""

    def __init__(self, card: pd.DataFrame):
        if not isinstance(card, pd.DataFrame):
            raise TypeError(f"card={type(card).__name__} is not allowed: a study's scorecard "
                            "(the DataFrame its scorecard() returns)")
        self.card = card

    def data(self) -> dict[str, Any]:
        """{"columns": [the index name, ...], "rows": [[...], ...], "title", "size"}."""
        frame = self.card.reset_index()
        return {"columns": [str(c) for c in frame.columns],
                "rows": [[str(v) for v in row] for row in frame.itertuples(index=False)],
                "title": str(self.card.attrs.get("title", "")),
                "size": str(self.card.attrs.get("size", ""))}

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        with pd.option_context("display.max_colwidth", None, "display.max_rows", None,
                               "display.max_columns", None, "display.width", None):
            return {"text/html": self.card._repr_html_(), "text/plain": repr(self.card),
                    SCORECARD_MIME: self.data()}

    def __repr__(self) -> str:
        return f"ScorecardView({len(self.card)} rows)"


def scorecard(card: pd.DataFrame) -> ScorecardView:
    """Show a study's scorecard ``card`` (``study.scorecard(...)``) as the notebook's scorecard
    output."""
    return ScorecardView(card)
