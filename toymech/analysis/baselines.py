"""Predictors without the mechanism, and the mechanism's own predictor, scored exactly on the
same batch as a model.

A label such as "copies by content" is a claim that a model does something no simpler algorithm
does. These are the simpler algorithms, each a ``Prediction``: its distribution over the
vocabulary at every scored target of a batch (in the row-major order of ``batch.target_mask``,
the order in which ``analysis.scored_log_probs`` gives a model's), so that a model and a
predictor are compared target by target (loss, per-sequence sums for a bootstrap, argmax
agreement). What a predictor learns from data (where it copies from, which letters it
suppresses) is fitted on ``fit_on`` (a model's training distribution, say) when given, else on
the batch itself; its confidence is always the best for the batch it is scored on (its most
favourable calibration), so a model is compared with the strongest member of each family:

* ``frequency_prediction``: the in-context frequency copier, ``p_t(c) = (n_t(c) + a) / (t + V a)``
  (``n_t(c)``: how often ``c`` occurs in ``tokens[:t]``), ``a`` minimising the mean loss. It
  copies *which* letters occur, not *where*: no induction, no position.
* ``position_prediction``: copies the token at one fixed earlier position ``s(t)`` with
  probability ``q_t``, the rest spread evenly: ``s(t)`` the source that most often holds the
  target, ``q_t`` its hit rate. It copies by position alone (an absolute or a relative offset).
* ``recency_prediction``: the frequency copier with the last ``k`` letters before the target
  re-weighted by ``e^(-b)``: ``p_t(c) ∝ (n_t(c) + a) e^(-b r_t(c))``, ``r_t(c) = 1`` when ``c``
  is among ``tokens[t-k:t]``. ``k`` is fitted (``fit_on``); ``b > 0`` suppresses the recent
  letters (the post's "don't repeat any of the ~3 previous letters"), ``b < 0`` favours them
  (the plain 1-layer model's "copy the last ~10 letters"); ``a`` and ``b`` are its calibration.
* ``attention_prediction``: position-only attention with a copying or suppressing read-out,
  ``logit_t(c) = τ Σ_{s<t} W[t, s] [tokens[s] = c]``: the weights ``W`` (one per target and
  source position: any mix of copying and suppressing by absolute or relative position, e.g.
  recency suppression together with copying a fixed distance back) fitted by maximum likelihood
  (``fit_on``), the temperature ``τ >= 0`` on the batch. What a 1-layer attention-only model
  computes when its attention reads positions and its OV circuit copies or suppresses letters.

The mechanism and the algorithms a run's predictions are compared with (``fingerprint``):

* ``induction_prediction``: the letters that followed earlier copies of the current letter,
  ``p_t = q · (their empirical distribution) + (1 - q) / V``: induction by content, the oracle
  of the mechanism (where the current letter was not seen before, induction has nothing to
  copy: the frequency copier's distribution stands in for theirs).
* ``copy_back_prediction``: the letter ``k`` back, ``p_t = q [c = tokens[t-k]] + (1 - q) / V``.

``q`` of the last two (and ``τ``) maximise the likelihood on the batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from jaxtyping import Float

from ..core import check
from ..tasks.base import Batch

# The most letters back the recency predictor may re-weight (its ``k`` is fitted in 0..this, or
# up to the sequence length where that is shorter).
MAX_RECENT = 16
# The penalty on the squared weights of the attention predictor's fit (per weight, against the
# mean loss): it only keeps weights finite where the training data are exactly predictable (a
# fixed block repeats exactly); the temperature fitted on each batch sets their scale.
ATTENTION_L2 = 1e-3


@dataclass(frozen=True)
class Prediction:
    """A predictor's (or a model's) distribution at every scored target of one batch.

    ``log_probs``: [n, V] log-probabilities (row-major over ``batch.target_mask``); ``targets``:
    [n] the tokens to predict; ``rows``: [n] the sequence of each; ``n_rows``: the batch's
    sequences."""

    log_probs: Float[torch.Tensor, "n vocab"]
    targets: torch.Tensor
    rows: torch.Tensor
    n_rows: int

    @property
    def nll(self) -> torch.Tensor:
        """[n] the loss (nats) of each target, float64."""
        return -self.log_probs.gather(1, self.targets[:, None])[:, 0].double()

    @property
    def loss(self) -> float:
        """The mean loss over the scored targets (what ``analysis.set_losses`` gives a model)."""
        return float(self.nll.mean())

    def sequence_totals(self) -> tuple[torch.Tensor, torch.Tensor]:
        """([n_rows] the summed loss of each sequence's targets, [n_rows] how many it has):
        the units a bootstrap over sequences resamples (``analysis.bootstrap``)."""
        sums = torch.zeros(self.n_rows, dtype=torch.float64).index_add_(0, self.rows, self.nll)
        counts = torch.zeros(self.n_rows, dtype=torch.float64).index_add_(
            0, self.rows, torch.ones_like(self.nll))
        return sums, counts

    def top(self, tol: float = 1e-9) -> torch.Tensor:
        """[n, V] bool: the letters of highest probability at each target (ties all kept:
        within ``tol`` of the highest log-probability)."""
        best = self.log_probs.max(1, keepdim=True).values
        return self.log_probs >= best - tol


def agreement(run: Prediction, other: Prediction) -> float:
    """How often ``run``'s most probable letter is ``other``'s, per scored target: the mean of
    ``[argmax run ∈ top(other)] / |top(other)|`` (a tie among ``other``'s letters is broken at
    random, in expectation), over the same batch's targets."""
    check(run.log_probs.shape == other.log_probs.shape, "other", tuple(other.log_probs.shape),
          f"a prediction on the same targets as run {tuple(run.log_probs.shape)}")
    top = other.top()
    pick = run.log_probs.argmax(1)
    hit = top.gather(1, pick[:, None])[:, 0].double()
    return float((hit / top.sum(1).double()).mean())


# --- the targets of a batch and the shared pieces ---------------------------------------------
def _checked(batch: Batch, n_vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    check(isinstance(n_vocab, int) and n_vocab >= 2, "n_vocab", n_vocab, "an integer >= 2")
    tokens, scored = batch.tokens.cpu().long(), batch.scored.cpu().bool()
    check(bool(scored[:, 1:].any()), "batch", tuple(tokens.shape), "a batch with scored targets")
    check(int(tokens.min()) >= 0 and int(tokens.max()) < n_vocab, "batch.tokens",
          f"values {int(tokens.min())}..{int(tokens.max())}", f"token ids in 0..{n_vocab - 1}")
    return tokens, scored


@dataclass(frozen=True)
class _Targets:
    tokens: torch.Tensor   # [B, T]
    rows: torch.Tensor     # [n] the sequence of each scored target
    t: torch.Tensor        # [n] its position
    target: torch.Tensor   # [n] its token
    n_vocab: int

    def at(self, per_position: torch.Tensor) -> torch.Tensor:
        """[n, ...]: ``per_position`` [B, T, ...] read at each target (its row and position)."""
        return per_position[self.rows, self.t]

    def onehot(self) -> torch.Tensor:
        """[B, T, V] float64: the batch's tokens, one-hot."""
        return torch.nn.functional.one_hot(self.tokens, self.n_vocab).double()

    def seen(self) -> torch.Tensor:
        """[n, V]: how often each letter occurs before each target (``n_t(c)``)."""
        onehot = self.onehot()
        return self.at(onehot.cumsum(1) - onehot)

    def recent(self, k: int) -> torch.Tensor:
        """[n, V] float64: 1 where the letter is among the ``k`` letters before the target."""
        before = self.onehot().cumsum(1) - self.onehot()  # counts in tokens[:t]
        shifted = torch.zeros_like(before)
        if k < before.shape[1]:
            shifted[:, k:] = before[:, : before.shape[1] - k]  # counts in tokens[:t - k]
        return (self.at(before - shifted) > 0).double()

    def read_out(self, weights: torch.Tensor) -> torch.Tensor:
        """[n, V]: ``Σ_{s<t} weights[t, s] [tokens[s] = c]`` at each target (``weights``
        [T, T], only its part below the diagonal read)."""
        return self.at(torch.einsum("ts,bsv->btv", torch.tril(weights, -1), self.onehot()))


def _targets(batch: Batch, n_vocab: int) -> _Targets:
    tokens, scored = _checked(batch, n_vocab)
    rows, col = torch.nonzero(scored[:, 1:], as_tuple=True)  # row-major, as target_mask
    t = col + 1
    return _Targets(tokens, rows, t, tokens[rows, t], n_vocab)


def _prediction(log_probs: torch.Tensor, at: _Targets) -> Prediction:
    return Prediction(log_probs, at.target, at.rows, at.tokens.shape[0])


def _golden(f: Callable[[float], float], lo: float, hi: float, steps: int = 60) -> float:
    """The minimiser of a unimodal ``f`` on [lo, hi] (golden-section search; ends included)."""
    ratio = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    for _ in range(steps):
        x1, x2 = b - ratio * (b - a), a + ratio * (b - a)
        if f(x1) <= f(x2):
            b = x2
        else:
            a = x1
    return min((lo, hi, (a + b) / 2), key=f)


def _mixed(evidence: torch.Tensor, at: _Targets) -> Prediction:
    """``q · evidence + (1 - q) / V`` (``evidence``: [n, V], rows summing to 1, or all 0 where a
    predictor has nothing to say: uniform there), ``q`` in [0, 1] maximising the likelihood."""
    V = at.n_vocab
    said = evidence.sum(1, keepdim=True) > 0
    hit = evidence.gather(1, at.target[:, None])[:, 0]

    def nll(q: float) -> float:
        p = torch.where(said[:, 0], q * hit + (1 - q) / V, torch.full_like(hit, 1 / V))
        return float(-torch.log(p).mean())

    q = _golden(nll, 0.0, 1.0 - 1e-9)
    probs = torch.where(said, q * evidence + (1 - q) / V, torch.full_like(evidence, 1 / V))
    return _prediction(torch.log(probs), at)


# --- the in-context frequency copier ----------------------------------------------------------
def _frequency_log_probs(seen: torch.Tensor, t: torch.Tensor, V: int, log_a: float
                         ) -> torch.Tensor:
    a = math.exp(log_a)
    return torch.log(seen + a) - torch.log(t.double() + V * a)[:, None]


def _frequency_fit(at: _Targets) -> float:
    """The log smoothing that minimises the copier's mean loss on ``at``'s targets (a grid over
    log a in [1e-4, 1e4], refined by golden section; the loss is smooth in log a)."""
    count = at.seen().gather(1, at.target[:, None])[:, 0]
    t = at.t.double()

    def loss(log_a: float) -> float:
        a = math.exp(log_a)
        return float(-(torch.log(count + a) - torch.log(t + at.n_vocab * a)).mean())

    grid = [-4 * math.log(10) + i * (8 * math.log(10) / 64) for i in range(65)]
    best = min(range(len(grid)), key=lambda i: loss(grid[i]))
    return _golden(loss, grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)], 40)


def frequency_prediction(batch: Batch, n_vocab: int, fit_on: Batch | None = None) -> Prediction:
    """The in-context frequency copier on ``batch`` (module docstring), its smoothing fitted on
    ``fit_on`` (None: on ``batch``). ``n_vocab``: the vocabulary size V. At the first position
    (nothing seen) it is the uniform 1/V."""
    at = _targets(batch, n_vocab)
    log_a = _frequency_fit(at if fit_on is None else _targets(fit_on, n_vocab))
    return _prediction(_frequency_log_probs(at.seen(), at.t, n_vocab, log_a), at)


def context_frequency_loss(batch: Batch, n_vocab: int, fit_on: Batch | None = None) -> float:
    """The best in-context frequency copier's mean loss (nats) on ``batch``'s scored targets
    (``frequency_prediction(batch, n_vocab, fit_on).loss``)."""
    return frequency_prediction(batch, n_vocab, fit_on).loss


# --- the position-only copier -----------------------------------------------------------------
def position_copy_fit(batch: Batch, n_vocab: int) -> dict[int, tuple[int, float]]:
    """The position-only copier fitted on ``batch``: {target position t: (source s, hit rate q)}
    for every position with scored targets, ``s`` the earlier position whose token equals the
    target most often, the nearest on a tie (so a fixed offset back, which also holds for a
    shifted start, wins over the first block's absolute position), ``q`` that share; ``s = -1``
    where no source beats ``1/V`` (the uniform guess there)."""
    tokens, scored = _checked(batch, n_vocab)
    fit = {}
    for t in range(1, tokens.shape[1]):
        rows = scored[:, t]
        m = int(rows.sum())
        if m == 0:
            continue
        hits = (tokens[rows, :t] == tokens[rows, t][:, None]).sum(0)  # [t]: hits of each source
        k = int(hits.max())
        source = int(torch.nonzero(hits == k).max())  # the nearest of the best sources
        fit[t] = (source, k / m) if k / m > 1 / n_vocab else (-1, 0.0)
    return fit


def position_prediction(batch: Batch, n_vocab: int, fit_on: Batch | None = None) -> Prediction:
    """The position-only copier on ``batch`` (module docstring): for each target position ``t``
    the source ``s(t)`` of ``position_copy_fit`` on ``fit_on`` (None: on ``batch``), then
    ``p(target) = q`` when the token at ``s`` is the target and ``(1 - q) / (V - 1)`` otherwise,
    ``q`` the share of ``batch``'s targets at ``t`` that the source holds (the loss-minimising
    confidence, so a source that stopped working costs no more than a uniform guess); the uniform
    ``1/V`` where that share is no better, or where the fit has no source. ``n_vocab``: V."""
    at = _targets(batch, n_vocab)
    fit = position_copy_fit(batch if fit_on is None else fit_on, n_vocab)
    source = torch.tensor([fit.get(int(t), (-1, 0.0))[0] for t in range(at.tokens.shape[1])])
    s = source[at.t]
    copied = at.tokens[at.rows, s.clamp(min=0)]
    hit = (copied == at.target) & (s >= 0)
    log_probs = torch.full((len(at.t), n_vocab), -math.log(n_vocab), dtype=torch.float64)
    for t in at.t.unique().tolist():
        here = at.t == t
        q = float(hit[here].double().mean())
        if source[t] < 0 or q <= 1 / n_vocab:
            continue
        rest = math.log((1 - q) / (n_vocab - 1)) if q < 1 else -math.inf
        block = torch.full((int(here.sum()), n_vocab), rest, dtype=torch.float64)
        block.scatter_(1, copied[here][:, None], math.log(q))
        log_probs[here] = block
    return _prediction(log_probs, at)


def position_copy_loss(batch: Batch, n_vocab: int, fit_on: Batch | None = None) -> float:
    """The best position-only copier's mean loss (nats) on ``batch``'s scored targets
    (``position_prediction(batch, n_vocab, fit_on).loss``; ``n_vocab``: the vocabulary size)."""
    return position_prediction(batch, n_vocab, fit_on).loss


# --- the recency-weighted frequency copier ----------------------------------------------------
def _recency_log_probs(seen: torch.Tensor, recent: torch.Tensor, params: torch.Tensor
                       ) -> torch.Tensor:
    log_a, b = params[0], params[1]
    return torch.log_softmax(torch.log(seen + log_a.exp()) - b * recent, 1)


def _recency_fit(seen: torch.Tensor, recent: torch.Tensor, target: torch.Tensor
                 ) -> tuple[torch.Tensor, float]:
    """(log a, b) maximising the likelihood of ``target``, and the mean loss there: the best
    point of a grid (log a in [-12, 4], b in [-10, 20]) refined by L-BFGS (kept only where it
    improves). The normaliser needs only four sums per target (the counts and the number of
    letters inside and outside the window), so the fit reads those."""
    count, hit = seen.gather(1, target[:, None])[:, 0], recent.gather(1, target[:, None])[:, 0]
    inside, n_inside = (seen * recent).sum(1), recent.sum(1)
    outside, n_outside = (seen * (1 - recent)).sum(1), seen.shape[1] - n_inside

    def nll(params: torch.Tensor) -> torch.Tensor:
        a, b = params[0].exp(), params[1]
        norm = torch.logaddexp(torch.log(inside + a * n_inside) - b,
                               torch.log(outside + a * n_outside))
        return -(torch.log(count + a) - b * hit - norm).mean()

    grid = [torch.tensor([la, b], dtype=torch.float64) for la in range(-12, 5, 2)
            for b in range(-10, 21, 2)]
    start = min(grid, key=lambda p: float(nll(p)))
    params = start.clone().requires_grad_(True)
    opt = torch.optim.LBFGS([params], max_iter=100, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = nll(params)
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        refined = params.detach().clamp(-30.0, 50.0)
        best = refined if bool(torch.isfinite(nll(refined))) and nll(refined) < nll(start) \
            else start
        return best, float(nll(best))


def recency_window(fit_on: Batch, n_vocab: int) -> int:
    """The recency predictor's ``k`` fitted on ``fit_on``: the number of letters before the
    target (0 to ``MAX_RECENT``) whose re-weighting, with its best ``a`` and ``b``, gives the
    lowest mean loss there (the smallest on a tie)."""
    at = _targets(fit_on, n_vocab)
    seen = at.seen()
    losses = [_recency_fit(seen, at.recent(k), at.target)[1]
              for k in range(min(MAX_RECENT, at.tokens.shape[1] - 1) + 1)]
    return min(range(len(losses)), key=lambda k: (round(losses[k], 9), k))


def recency_prediction(batch: Batch, n_vocab: int, fit_on: Batch | None = None,
                       k: int | None = None) -> Prediction:
    """The recency-weighted frequency copier on ``batch`` (module docstring): ``k`` given, or
    fitted on ``fit_on`` (None: on ``batch``) by ``recency_window``; ``a`` and ``b`` fitted on
    ``batch`` (its most favourable calibration). ``n_vocab``: the vocabulary size V."""
    window = k if k is not None else recency_window(batch if fit_on is None else fit_on, n_vocab)
    check(isinstance(window, int) and window >= 0, "k", window, "an integer >= 0")
    at = _targets(batch, n_vocab)
    seen, recent = at.seen(), at.recent(window)
    params, _ = _recency_fit(seen, recent, at.target)
    return _prediction(_recency_log_probs(seen, recent, params).detach(), at)


# --- position-only attention ------------------------------------------------------------------
def attention_weights(fit_on: Batch, n_vocab: int) -> torch.Tensor:
    """[T, T] the attention predictor's weights ``W[t, s]`` (s < t) fitted on ``fit_on`` by
    maximum likelihood with the penalty ``ATTENTION_L2`` on their squares (L-BFGS from 0);
    rows of positions with no scored target stay 0."""
    at = _targets(fit_on, n_vocab)
    T = at.tokens.shape[1]
    weights = torch.zeros(T, T, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([weights], max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = -torch.log_softmax(at.read_out(weights), 1).gather(1, at.target[:, None]).mean()
        loss = loss + ATTENTION_L2 * (weights ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return torch.tril(weights.detach(), diagonal=-1)


def attention_prediction(batch: Batch, n_vocab: int, fit_on: Batch | None = None,
                         weights: torch.Tensor | None = None) -> Prediction:
    """Position-only attention on ``batch`` (module docstring): ``weights`` given, or fitted on
    ``fit_on`` (None: on ``batch``) by ``attention_weights``; the temperature ``τ`` in [0, 8]
    fitted on ``batch`` (0: the uniform guess). ``n_vocab``: the vocabulary size V."""
    W = weights if weights is not None else attention_weights(
        batch if fit_on is None else fit_on, n_vocab)
    at = _targets(batch, n_vocab)
    check(tuple(W.shape) == (at.tokens.shape[1],) * 2, "weights", tuple(W.shape),
          f"[{at.tokens.shape[1]}, {at.tokens.shape[1]}] (the batch's sequence length)")
    logits = at.read_out(W.double())

    def nll(tau: float) -> float:
        return float(-torch.log_softmax(tau * logits, 1).gather(1, at.target[:, None]).mean())

    tau = _golden(nll, 0.0, 8.0)
    return _prediction(torch.log_softmax(tau * logits, 1), at)


# --- the mechanism and the fingerprint's algorithms ------------------------------------------
def induction_prediction(batch: Batch, n_vocab: int) -> Prediction:
    """Induction by content on ``batch`` (module docstring): at each target, the letters that
    followed every earlier copy of the current letter (``tokens[t - 1]``; the frequency copier's
    distribution where there is none), mixed with a uniform guess by the weight ``q`` that
    maximises the likelihood. ``n_vocab``: V."""
    at = _targets(batch, n_vocab)
    tokens, T = at.tokens, at.tokens.shape[1]
    same = tokens[:, :, None] == tokens[:, None, :]  # [B, p, s]: the letter at s is the one at p
    earlier = same & torch.tril(torch.ones(T, T, dtype=torch.bool), -1)  # s < p
    followers = torch.nn.functional.one_hot(tokens[:, 1:], n_vocab).double()  # [B, s, V]: s + 1
    counts = at.at(torch.nn.functional.pad(
        torch.einsum("bps,bsv->bpv", earlier[:, :, :-1].double(), followers), (0, 0, 1, 0)))
    total = counts.sum(1, keepdim=True)  # read at p = t - 1 (the pad shifts p by one)
    frequency = _frequency_log_probs(at.seen(), at.t, n_vocab, _frequency_fit(at)).exp()
    return _mixed(torch.where(total > 0, counts / total.clamp(min=1), frequency), at)


def copy_back_prediction(batch: Batch, n_vocab: int, k: int) -> Prediction:
    """Copy the letter ``k`` back on ``batch`` (module docstring; uniform where there is none).
    ``n_vocab``: V."""
    check(isinstance(k, int) and k >= 1, "k", k, "an integer >= 1")
    at = _targets(batch, n_vocab)
    source = at.t - k
    evidence = torch.nn.functional.one_hot(at.tokens[at.rows, source.clamp(min=0)],
                                           n_vocab).double() * (source >= 0)[:, None]
    return _mixed(evidence, at)


def baseline_losses(batch: Batch, n_vocab: int, fit_on: Batch | None = None) -> dict[str, float]:
    """The frequency and the position-only copiers on one batch (fitted on it, or on
    ``fit_on``): ``{"copier": ..., "position": ...}``, and ``"best"``, the lower of the two.

    ``n_vocab``: the vocabulary size V."""
    out = {"copier": context_frequency_loss(batch, n_vocab, fit_on),
           "position": position_copy_loss(batch, n_vocab, fit_on)}
    out["best"] = min(out.values())
    return out
