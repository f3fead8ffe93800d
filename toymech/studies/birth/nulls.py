"""Birth's null family: every predictor without the in-context mechanism that a run is held
against, in one place.

The mechanism is an induction head over triggers: at a trigger z_t it reads which token followed
an earlier copy of z_t in the same sequence. A predictor of this family may know the global
statistics (pi_u, pi_b), the current token, the context's tokens in any order (how often each
occurred), and where tokens occurred relative to the current position (how recently, k back),
but never the association "what followed an earlier copy of the current token": a predictor
that reads it (even "copy the previous occurrence's successor, only at triggers") is the
mechanism itself, or part of it, and is not a null. Each member is an algorithm a model of the
map's family could implement without an in-context head (an embedding and unembedding with one
attention layer over positions or counts, or none at all):

* ``chance``: uniform over the vocabulary;
* ``unigram``: pi_u, nothing of the current token;
* ``bigram``: the exact bigram model pi_b(. | z_t) (``tasks.bigram_triggers``; the claims'
  trivial predictor, the map's ``baseline.*``);
* ``context cache``: pi_b interpolated with the context's token counts, in no order
  (``tasks.bigram_triggers.context_caches``: their frequencies, or their excess over pi_u, which
  picks out the triggers' outputs without knowing which trigger each follows);
* ``recency cache``: the same with counts decaying by lam per position back (a 1-layer
  attention with a positional decay): the excess of recent tokens, order read only as recency;
* ``copy k back``: pi_b interpolated with the token k - 1 positions before the current one
  (k = 1: the current token again), a positional copier.

Each member is a family over its parameter (the mix m in ``BLIND_MIX``, the cache, lam, k); a
member's score is its best parameter's on the very set a run is judged on, and the bar
(``best_null``) is the best member's: the strongest predictor without the mechanism on that set,
never a weak one. Birth's sequences carry no absolute-position structure (triggers recur at
random positions), so no copier by absolute position is listed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from ...core import check
from ...tasks import Batch
from ...tasks.bigram_triggers import BLIND_MIX, BigramTriggers, context_caches, split_metrics

RECENCY = (0.5, 0.7, 0.9, 0.95, 0.99)  # the recency cache's decay per position back
COPY_BACK = tuple(range(1, 9))          # the copier's k


@dataclass(frozen=True)
class BirthNull:
    """One member of the null family: its ``name``, what it reads (``reads``, a phrase), and
    ``members(task, tokens)``: its (parameter text, next-token probabilities [B, T, N]) pairs,
    one per parameter value."""

    name: str
    reads: str
    members: Callable[[BigramTriggers, torch.Tensor], Iterator[tuple[str, torch.Tensor]]]


def _bigram(task: BigramTriggers, tokens: torch.Tensor) -> torch.Tensor:
    return task.pi_b.to(tokens.device).double()[tokens]  # [B, T, N]


def _mixed(task: BigramTriggers, tokens: torch.Tensor, caches: dict[str, torch.Tensor]
           ) -> Iterator[tuple[str, torch.Tensor]]:
    bigram = _bigram(task, tokens)
    for name, cache in caches.items():
        for mix in BLIND_MIX:
            yield f"{name}, m={mix:g}", (1 - mix) * bigram + mix * cache


def _chance(task, tokens):
    n = task.d_vocab
    yield "", torch.full((*tokens.shape, n), 1.0 / n, dtype=torch.double, device=tokens.device)


def _unigram(task, tokens):
    yield "", task.pi_u.to(tokens.device).double().expand(*tokens.shape, -1)


def _bigram_only(task, tokens):
    yield "", _bigram(task, tokens)


def recency_cache(task: BigramTriggers, tokens: torch.Tensor, lam: float) -> torch.Tensor:
    """[B, T, N]: at position t the tokens z_0..z_t weighted by lam^(t - s), in excess of what
    pi_u expects under the same weights, (c_t(j) - w_t pi_u(j))^+ with c_t(j) = sum_s
    lam^(t - s) [z_s = j] and w_t = sum_s lam^(t - s), normalised (uniform where none is in
    excess). ``task``: its pi_u; ``tokens`` [B, T]; ``lam`` in (0, 1)."""
    check(0.0 < lam < 1.0, "lam", lam, "a decay strictly between 0 and 1")
    n = task.d_vocab
    onehot = torch.nn.functional.one_hot(tokens, n).double()
    counts = torch.empty_like(onehot)
    running = torch.zeros_like(onehot[:, 0])
    for t in range(tokens.shape[1]):
        running = lam * running + onehot[:, t]
        counts[:, t] = running
    weight = (1 - lam ** torch.arange(1, tokens.shape[1] + 1, dtype=torch.double,
                                      device=tokens.device)) / (1 - lam)
    excess = (counts - weight[None, :, None] * task.pi_u.to(tokens.device).double()).clamp(min=0)
    total = excess.sum(-1, keepdim=True)
    return torch.where(total > 0, excess / total.clamp(min=1e-30), torch.full_like(excess, 1 / n))


def _context(task, tokens):
    yield from _mixed(task, tokens, context_caches(task, tokens))


def _recency(task, tokens):
    yield from _mixed(task, tokens, {f"lam={lam:g}": recency_cache(task, tokens, lam)
                                     for lam in RECENCY})


def copy_back(task: BigramTriggers, tokens: torch.Tensor, k: int) -> torch.Tensor:
    """[B, T, N]: at position t, all mass on z_{t + 1 - k} (k = 1: the current token; pi_b(. |
    z_t) where t + 1 - k < 0). ``task``: its pi_b; ``tokens`` [B, T]; ``k`` >= 1."""
    check(isinstance(k, int) and k >= 1, "k", k, "an integer >= 1")
    n = task.d_vocab
    out = _bigram(task, tokens).clone()
    if k - 1 < tokens.shape[1]:
        shifted = torch.nn.functional.one_hot(tokens[:, : tokens.shape[1] - (k - 1)], n).double()
        out[:, k - 1:] = shifted
    return out


def _copies(task, tokens):
    yield from _mixed(task, tokens, {f"k={k}": copy_back(task, tokens, k) for k in COPY_BACK})


NULL_FAMILY: tuple[BirthNull, ...] = (
    BirthNull("chance", "nothing", _chance),
    BirthNull("unigram", "pi_u", _unigram),
    BirthNull("bigram", "pi_b and the current token", _bigram_only),
    BirthNull("context cache", "pi_b, the current token and the context's counts in no order",
               _context),
    BirthNull("recency cache", "pi_b, the current token and the context's counts weighted by "
               "recency", _recency),
    BirthNull("copy k back", "pi_b, the current token and the token k - 1 positions back",
               _copies),
)


def _key(metrics: dict[str, float]) -> float:
    """What a member is ranked by: in-context accuracy, or accuracy where the set has no
    in-context target (a plain bigram chain)."""
    icl = metrics["icl_acc"]
    return metrics["acc"] if math.isnan(icl) else icl


@torch.no_grad()
def member_scores(task: BigramTriggers, batch: Batch) -> list[dict[str, Any]]:
    """Each member of ``NULL_FAMILY`` scored on ``batch`` of ``task`` as a run is
    (``split_metrics`` of its log-probabilities): per member its best parameter on that set
    (``param``) and that parameter's metrics (``acc``, ``icl_acc``, ``bigram_acc``, losses)."""
    out = []
    for member in NULL_FAMILY:
        best: dict[str, Any] | None = None
        for param, probs in member.members(task, batch.tokens):
            m = split_metrics(torch.log(probs.clamp(min=1e-12)).float(), batch)
            if best is None or _key(m) > _key(best):
                best = {**m, "param": param}
        assert best is not None
        out.append({"member": member.name, **best})
    return out


def best_null(task: BigramTriggers, batch: Batch) -> dict[str, Any]:
    """The bar: the best member of ``member_scores`` on ``batch`` of ``task`` (its metrics, and
    ``member``: its name with its parameter, e.g. ``context cache (excess, m=0.8)``)."""
    scores = member_scores(task, batch)
    top = max(scores, key=_key)
    return {**top, "member": top["member"] + (f" ({top['param']})" if top["param"] else "")}


__all__ = ["COPY_BACK", "NULL_FAMILY", "RECENCY", "BirthNull", "best_null", "copy_back",
           "member_scores", "recency_cache"]
