"""A scorecard's summary figure: for each claim, the share of its seeds that agree with its
verdict, one bar per claim, coloured by verdict, the claim and its numbers on hover."""

from __future__ import annotations

import re
from collections.abc import Sequence

import plotly.graph_objects as go

from ..core import check
from .style import PALETTE, height

SHORT_CLAIM = 70  # characters of a claim shown beside its bar (all of it on hover)
_AGREEING = re.compile(r"^\s*(\d+)\s*/\s*(\d+)")


def agreeing(text: str) -> tuple[int, int] | None:
    """(agreeing, judged) of a scorecard's "seeds agreeing" cell ``text`` ("7/10", "0/0 (3 not
    measured)"), None where it holds no count or none was judged."""
    match = _AGREEING.match(str(text))
    if not match or int(match.group(2)) == 0:
        return None
    return int(match.group(1)), int(match.group(2))


def scorecard_figure(claims: Sequence[str], seeds: Sequence[str], verdicts: Sequence[str],
                     details: Sequence[str] | None = None, title: str = "") -> go.Figure:
    """One horizontal bar per claim: the share of its judged seeds that agree (``seeds``: the
    scorecard's "seeds agreeing" cells, "a/b"), one colour per verdict in the order the verdicts
    first appear (``verdicts``: each row's verdict word, e.g. "reproduced"), the claim in full
    and ``details`` (e.g. our number) on hover. A claim with no seed judged has no bar and says
    so. ``claims``: each row's statement; ``title``: the figure's."""
    check(len(claims) == len(seeds) == len(verdicts), "scorecard rows", len(claims),
          "as many claims as seeds-agreeing cells and verdicts")
    details = list(details) if details is not None else [""] * len(claims)
    fig = go.Figure()
    order = list(dict.fromkeys(verdicts))
    names = [c if len(c) <= SHORT_CLAIM else c[: SHORT_CLAIM - 1] + "…" for c in claims]
    for i, verdict in enumerate(order):
        rows = [j for j, v in enumerate(verdicts) if v == verdict]
        counts = [agreeing(seeds[j]) for j in rows]
        fig.add_trace(go.Bar(
            y=[f"{j + 1}. {names[j]}" for j in rows],
            x=[c[0] / c[1] if c else 0.0 for c in counts],
            text=[f"{c[0]}/{c[1]}" if c else "none judged" for c in counts],
            textposition="outside", orientation="h", name=verdict,
            marker_color=PALETTE[i % len(PALETTE)],
            customdata=[[claims[j], details[j]] for j in rows],
            hovertemplate="%{customdata[0]}<br>%{customdata[1]}<br>seeds agreeing %{text}"
                          "<extra>%{fullData.name}</extra>"))
    fig.update_layout(title=title, barmode="overlay", height=height(90 + 26 * len(claims)),
                      xaxis=dict(title="share of judged seeds agreeing", range=[0, 1.15],
                                 tickformat=".0%"),
                      yaxis=dict(autorange="reversed", automargin=True,
                                 categoryorder="array",
                                 categoryarray=[f"{j + 1}. {n}" for j, n in enumerate(names)]),
                      legend=dict(title="verdict"), margin=dict(l=10, r=10, t=50, b=40))
    return fig
