"""Exact statistics on counts: a share's interval and the tests that compare shares.

A map's cell holds a few seeds, so its shares are read with exact methods, never a normal
approximation:

* ``share_interval(k, n)``: the Clopper-Pearson interval of a share ``k / n``, the set of
  success probabilities ``p`` that a two-sided exact binomial test at ``1 - level`` does not
  reject: ``lo`` solves ``P(X >= k | n, lo) = (1 - level) / 2`` (``lo = 0`` for ``k = 0``) and
  ``hi`` solves ``P(X <= k | n, hi) = (1 - level) / 2`` (``hi = 1`` for ``k = n``). At 95 %:
  3 of 3 is [0.29, 1.00], 3 of 12 is [0.05, 0.57];
* ``fisher_greater(k1, n1, k2, n2)``: Fisher's exact test, one-sided: the chance, with both
  groups drawn from one success probability and the total of successes ``k1 + k2`` fixed, that
  the first group holds ``k1`` successes or more (the hypergeometric upper tail);
* ``stratified_greater(pairs)``: the exact conditional test over several such pairs (strata):
  each stratum's margins fixed, the statistic ``T = sum of k1`` over strata, its null
  distribution the convolution of the strata's hypergeometric distributions; the one-sided
  ``p = P(T >= t_observed)``. A stratum whose margins leave one possible table (both shares 0
  or both 1: a tie at the floor or the ceiling) adds a constant and changes nothing.

Every figure is computed in exact rational arithmetic where it is a probability of counts
(``fractions.Fraction``), so the p-values carry no rounding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from ..core import check

LEVEL = 0.95  # the coverage of every interval printed beside a share
_BISECTIONS = 60  # halvings of [0, 1]: far below any printed digit


def _count(name: str, value, most: int | None = None) -> int:
    check(isinstance(value, int) and not isinstance(value, bool) and value >= 0
          and (most is None or value <= most), name, value,
          f"a whole number from 0{'' if most is None else f' to {most}'}")
    return value


def _upper_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in logs (a set of thousands of answers
    overflows ``math.comb`` as a float)."""
    if k <= 0:
        return 1.0
    if p <= 0.0 or k > n:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q, whole = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    return min(1.0, sum(math.exp(whole - math.lgamma(j + 1) - math.lgamma(n - j + 1)
                                 + j * log_p + (n - j) * log_q) for j in range(k, n + 1)))


def _solve(f, target: float, rising: bool) -> float:
    """The p in [0, 1] where the monotone ``f(p)`` crosses ``target`` (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2
        if (f(mid) < target) == rising:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def share_interval(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of the share ``k`` of ``n`` at ``level`` (the
    module docstring): ``(lo, hi)``, with ``lo <= k / n <= hi``.

    ``k``: the runs that carry the label (0 to ``n``); ``n``: every run of the cell (at least
    1); ``level``: the coverage, strictly between 0 and 1."""
    n = _count("n", n)
    check(n >= 1, "n", n, "at least one run (a cell without runs has no share)")
    k = _count("k", k, n)
    check(isinstance(level, float) and 0 < level < 1, "level", level, "a float in (0, 1)")
    tail = (1 - level) / 2
    lo = 0.0 if k == 0 else _solve(lambda p: _upper_tail(k, n, p), tail, rising=True)
    hi = 1.0 if k == n else _solve(lambda p: 1 - _upper_tail(k + 1, n, p), tail, rising=False)
    return lo, hi


def interval_text(k: int, n: int, level: float = LEVEL) -> str:
    """``share_interval(k, n)`` as a page prints it: ``[0.29, 1.00]``."""
    lo, hi = share_interval(k, n, level)
    return f"[{lo:.2f}, {hi:.2f}]"


def _hypergeometric(n1: int, n2: int, total: int) -> dict[int, Fraction]:
    """{k1: P(k1)} of the first group's successes when ``total`` successes fall among ``n1 +
    n2`` runs at random (both groups' margins fixed)."""
    whole = math.comb(n1 + n2, total)
    return {a: Fraction(math.comb(n1, a) * math.comb(n2, total - a), whole)
            for a in range(max(0, total - n2), min(n1, total) + 1)}


def _pair(pair: Sequence[int]) -> tuple[int, int, int, int]:
    check(isinstance(pair, (tuple, list)) and len(pair) == 4, "pair", pair,
          "(k1, n1, k2, n2): successes and runs of the group predicted higher, then the other's")
    k1, n1, k2, n2 = pair
    n1, n2 = _count("n1", n1), _count("n2", n2)
    check(n1 >= 1 and n2 >= 1, "pair", pair, "at least one run in each group")
    return _count("k1", k1, n1), n1, _count("k2", k2, n2), n2


def fisher_greater(k1: int, n1: int, k2: int, n2: int) -> float:
    """Fisher's exact one-sided p that the first group's share is larger (the module
    docstring): ``P(K1 >= k1)`` with both margins fixed. ``k1`` of ``n1`` runs in the group
    predicted to hold the label more often, ``k2`` of ``n2`` in the other."""
    return stratified_greater([(k1, n1, k2, n2)])


def stratified_greater(pairs: Sequence[Sequence[int]]) -> float:
    """The exact conditional one-sided p over ``pairs`` (the module docstring): each pair
    ``(k1, n1, k2, n2)`` a stratum with its margins fixed, the statistic the sum of ``k1``;
    ``P(T >= t_observed)`` under one success probability within each stratum."""
    check(isinstance(pairs, (list, tuple)) and len(pairs) >= 1, "pairs", pairs,
          "at least one (k1, n1, k2, n2)")
    law = {0: Fraction(1)}  # the distribution of T over the strata read so far
    observed = 0
    for pair in pairs:
        k1, n1, k2, n2 = _pair(pair)
        observed += k1
        stratum = _hypergeometric(n1, n2, k1 + k2)
        joined: dict[int, Fraction] = {}
        for t, p in law.items():
            for a, q in stratum.items():
                joined[t + a] = joined.get(t + a, Fraction(0)) + p * q
        law = joined
    return float(sum(p for t, p in law.items() if t >= observed))


__all__ = ["LEVEL", "fisher_greater", "interval_text", "share_interval", "stratified_greater"]
