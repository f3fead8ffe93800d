"""Bigram sequences with in-context triggers (Bietti et al. 2023, "Birth of a Transformer";
see docs/sources.md, study 2).

Character statistics of a corpus (default: Tiny Shakespeare shipped in the package, N = 65):
unigram pi_u(i) and bigram conditionals pi_b(j | i). A sequence of ``seq_len`` tokens:

* K triggers: ``fixed`` = the K most frequent unigram tokens; ``random`` = K tokens drawn from
  pi_u without replacement, new for every sequence;
* each trigger gets an output drawn uniformly from all N tokens (pi_o), new for every sequence;
* z_0 ~ pi_u; z_t = output(z_{t-1}) if z_{t-1} is a trigger, else z_t ~ pi_b(. | z_{t-1}).

Every target is scored (the training loss is over all positions, as in the paper); ``extras``
marks what kind of prediction each target is, so the two parts are reported apart:

* ``in_context[b, t]``: tokens[b, t-1] is a trigger seen before position t-1, so tokens[b, t] (its
  output) can be read from the context (the induction part);
* ``bigram[b, t]``: tokens[b, t-1] is not a trigger (the global bigram part);
* the remaining targets (a trigger's first output) are unpredictable.

``vocab_size`` N keeps only the N most frequent characters: pi_u and pi_b restricted to them and
renormalised (a character whose every successor was dropped gets a uniform row); None keeps them
all. Variants: ``only_triggers`` (every token is a trigger: a random successor function per sequence),
``no_triggers`` (a plain bigram chain). ``n_ood`` holds tokens out of the random trigger pool, and
the ``ood`` evaluation set draws its triggers only from tokens never used as triggers in training.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass

import torch

from .base import Batch, Task, check, check_float, check_int, check_str, register, set_checked
from .corpus import read_corpus

TRIGGER_MODES = ("fixed", "random")
VARIANTS = ("mixed", "only_triggers", "no_triggers")
READABLE = {"\n": "⏎", " ": "␣", "\t": "⇥"}


@functools.lru_cache(maxsize=8)
def corpus_statistics(path: str | None) -> tuple[tuple[str, ...], torch.Tensor, torch.Tensor]:
    """(characters, unigram [N], bigram [N, N]) of a text file, characters sorted.

    Estimated once per corpus and cached. A character never followed by anything (the last one
    of the text, if unique) gets a uniform bigram row.
    """
    text = read_corpus(path)
    chars = tuple(sorted(set(text)))
    check(len(chars) >= 2 and len(text) >= 2, "corpus", path,
          "a text file with at least 2 distinct characters")
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    n = len(chars)
    uni = torch.bincount(ids, minlength=n).double()
    pairs = torch.bincount(ids[:-1] * n + ids[1:], minlength=n * n).double().view(n, n)
    empty = pairs.sum(1) == 0
    pairs[empty] = 1.0
    return chars, (uni / uni.sum()).float(), (pairs / pairs.sum(1, keepdim=True)).float()


def held_out_tokens(unigram: torch.Tensor, n_ood: int) -> torch.Tensor:
    """The ``n_ood`` tokens kept out of the random trigger pool: every second token by frequency
    rank from rank 1 on (ranks 1, 3, 5, ...), so both frequent and rare tokens are held out."""
    rank = torch.argsort(unigram, descending=True, stable=True)
    return rank[1::2][:n_ood]


def restrict_vocabulary(chars: tuple[str, ...], unigram: torch.Tensor, bigram: torch.Tensor,
                        n: int) -> tuple[tuple[str, ...], torch.Tensor, torch.Tensor]:
    """The statistics over the ``n`` most frequent characters (kept in their sorted order):
    unigram and bigram rows restricted and renormalised; a row left empty becomes uniform."""
    rank = torch.argsort(unigram, descending=True, stable=True)
    keep = torch.sort(rank[:n]).values
    uni = unigram[keep].double()
    bi = bigram[keep][:, keep].double()
    empty = bi.sum(1) == 0
    bi[empty] = 1.0
    return (tuple(chars[int(i)] for i in keep), (uni / uni.sum()).float(),
            (bi / bi.sum(1, keepdim=True)).float())


@register("bigram_triggers")
@dataclass(frozen=True)
class BigramTriggers(Task):
    """See the module docstring. ``corpus``: a text file path (None = shipped Tiny Shakespeare);
    or give ``chars`` + ``unigram`` + ``bigram`` (rows summing to 1) for your own distribution."""

    n_triggers: int = 3
    trigger_mode: str = "fixed"
    length: int = 256
    variant: str = "mixed"
    n_ood: int = 0
    corpus: str | None = None
    chars: tuple[str, ...] | None = None
    unigram: tuple[float, ...] | None = None
    bigram: tuple[tuple[float, ...], ...] | None = None
    vocab_size: int | None = None

    def __post_init__(self) -> None:
        check_str("trigger_mode", self.trigger_mode, TRIGGER_MODES)
        check_str("variant", self.variant, VARIANTS)
        set_checked(self, length=check_int("length", self.length, 2, 65_536))
        check(self.corpus is None or isinstance(self.corpus, (str, os.PathLike)), "corpus",
              self.corpus, "None or the path of a text file")
        chars, uni, bi = self._load_statistics()
        if self.vocab_size is not None:
            chars, uni, bi = restrict_vocabulary(chars, uni, bi, check_int(
                "vocab_size", self.vocab_size, 2, len(chars)))
        n = len(chars)
        set_checked(self, n_triggers=check_int("n_triggers", self.n_triggers, 1, n))
        # n_ood: at most the vocabulary minus K
        set_checked(self, n_ood=check_int("n_ood", self.n_ood, 0, n - self.n_triggers))
        check(self.n_ood == 0 or self.trigger_mode == "random", "n_ood", self.n_ood,
              "0 with trigger_mode='fixed' (its OOD triggers are all non-fixed tokens)")
        rank = torch.argsort(uni, descending=True, stable=True)
        held = held_out_tokens(uni, self.n_ood)
        pool = torch.ones(n, dtype=torch.bool)
        if self.trigger_mode == "fixed":
            pool[:] = False
            pool[rank[: self.n_triggers]] = True
        else:
            pool[held] = False
        check(int((pool & (uni > 0)).sum()) >= self.n_triggers, "n_triggers", self.n_triggers,
              "at most the number of tokens left in the trigger pool")
        object.__setattr__(self, "_chars", chars)
        object.__setattr__(self, "_unigram", uni)
        object.__setattr__(self, "_bigram", bi)
        object.__setattr__(self, "_bigram_cdf", bi.cumsum(-1))
        object.__setattr__(self, "_unigram_cdf", uni.cumsum(-1))
        object.__setattr__(self, "_train_pool", pool)
        object.__setattr__(self, "_rank", rank)

    def _load_statistics(self):
        given = (self.chars, self.unigram, self.bigram)
        if all(g is None for g in given):
            return corpus_statistics(None if self.corpus is None else str(self.corpus))
        check(self.corpus is None and all(g is not None for g in given), "chars/unigram/bigram",
              "partly given", "all three (and no corpus) for a user-given distribution")
        for name in ("chars", "unigram", "bigram"):
            check(isinstance(getattr(self, name), (list, tuple)), name, getattr(self, name),
                  "a list")
        chars = tuple(self.chars)
        object.__setattr__(self, "chars", chars)
        n = len(chars)
        check(2 <= n <= 100_000 and len(set(chars)) == n and all(isinstance(c, str) for c in chars),
              "chars", chars, "2..100,000 distinct strings")
        for i, x in enumerate(self.unigram):
            check_float(f"unigram[{i}]", x, 0.0)
        for i, row in enumerate(self.bigram):
            check(isinstance(row, (list, tuple)) and len(row) == n, f"bigram[{i}]", row,
                  f"a list of {n} numbers")
            for j, x in enumerate(row):
                check_float(f"bigram[{i}][{j}]", x, 0.0)
        uni = torch.tensor(self.unigram, dtype=torch.float64)
        check(uni.shape == (n,) and bool((uni >= 0).all()) and float(uni.sum()) > 0, "unigram",
              self.unigram, f"{n} non-negative numbers with a positive sum")
        bi = torch.tensor(self.bigram, dtype=torch.float64)
        check(bi.shape == (n, n) and bool((bi >= 0).all()) and bool((bi.sum(1) > 0).all()),
              "bigram", "matrix", f"an {n}x{n} non-negative matrix, every row with a positive sum")
        object.__setattr__(self, "unigram", tuple(float(x) for x in self.unigram))
        object.__setattr__(self, "bigram", tuple(tuple(float(x) for x in r) for r in self.bigram))
        return chars, (uni / uni.sum()).float(), (bi / bi.sum(1, keepdim=True)).float()

    def to_dict(self) -> dict:
        d = super().to_dict()
        if self.vocab_size is None:  # configs saved before the field keep their keys
            d.pop("vocab_size")
        return d

    # --- the Task protocol ---------------------------------------------------------------------
    @property
    def vocab(self) -> list[str]:
        return [READABLE.get(c, c) for c in self._chars]

    @property
    def seq_len(self) -> int:
        return self.length

    @property
    def pi_u(self) -> torch.Tensor:
        """Unigram distribution [N]."""
        return self._unigram

    @property
    def pi_b(self) -> torch.Tensor:
        """Bigram conditionals [N, N]: row i is pi_b(. | i)."""
        return self._bigram

    @property
    def fixed_triggers(self) -> torch.Tensor:
        """The K most frequent tokens (the triggers of ``trigger_mode='fixed'``)."""
        return self._rank[: self.n_triggers].clone()

    @property
    def train_trigger_pool(self) -> torch.Tensor:
        """[N] bool: tokens that can be triggers in training."""
        return self._train_pool.clone()

    def bigram_accuracy_ceiling(self) -> float:
        """Accuracy of the exact bigram predictor on a bigram chain: sum_i pi_u(i) max_j pi_b(j|i)
        (the stationary law is close to pi_u for text statistics)."""
        return float((self._unigram * self._bigram.max(-1).values).sum())

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        self.check_batch_size(batch_size)
        return self._generate(batch_size, generator, self._train_pool)

    def sample_ood(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Sequences whose triggers are drawn (from pi_u) only among tokens never used as triggers
        in training."""
        return self.sample_from_pool(batch_size, generator, ~self._train_pool)

    def sample_from_pool(self, batch_size: int, generator: torch.Generator,
                         pool: torch.Tensor) -> Batch:
        """Sequences with K random triggers drawn from pi_u restricted to ``pool`` ([N] bool)."""
        self.check_batch_size(batch_size)
        check(self.variant == "mixed", "variant", self.variant, "'mixed' for a trigger pool")
        pool = torch.as_tensor(pool, dtype=torch.bool).cpu()
        check(pool.shape == (self.d_vocab,) and int((pool & (self._unigram > 0)).sum())
              >= self.n_triggers, "pool", f"{int(pool.sum())} tokens",
              f"an [N={self.d_vocab}] bool mask with at least n_triggers={self.n_triggers} tokens")
        return self._generate(batch_size, generator, pool & (self._unigram > 0),
                              force_random=True)

    def eval_sets(self, n: int, generator: torch.Generator) -> dict[str, Batch]:
        """``test`` (the training distribution) and, when there are held-out trigger tokens,
        ``ood`` (triggers never seen as triggers in training)."""
        sets = {"test": self.sample(n, generator)}
        if self.variant == "mixed" and (self.trigger_mode == "fixed" or self.n_ood > 0):
            sets["ood"] = self.sample_ood(n, generator)
        return sets

    def metrics(self, logits: torch.Tensor, batch: Batch) -> dict[str, float]:
        """loss/acc over all targets, and apart: ``icl_*`` (in-context targets), ``bigram_*``
        (targets after a non-trigger). NaN where a batch has no target of that kind."""
        return split_metrics(logits, batch)

    # --- generation ----------------------------------------------------------------------------
    def _draw_triggers(self, batch_size: int, generator: torch.Generator, pool: torch.Tensor,
                       force_random: bool) -> torch.Tensor:
        dev = generator.device
        n, k = len(self._chars), self.n_triggers
        if self.variant == "only_triggers":
            return torch.arange(n, device=dev).expand(batch_size, n)
        if self.trigger_mode == "fixed" and not force_random:
            return self.fixed_triggers.to(dev).expand(batch_size, k)
        weights = (self._unigram * pool).to(dev)
        return torch.multinomial(weights.expand(batch_size, n), k, replacement=False,
                                 generator=generator)

    def _generate(self, batch_size: int, generator: torch.Generator, pool: torch.Tensor,
                  force_random: bool = False) -> Batch:
        dev = generator.device
        n, T, B = len(self._chars), self.length, batch_size
        # out_of[b, i] = output of token i in sequence b, or -1 when i is not a trigger there.
        out_of = torch.full((B, n), -1, dtype=torch.long, device=dev)
        if self.variant != "no_triggers":
            trig = self._draw_triggers(B, generator, pool, force_random)
            outs = torch.randint(0, n, trig.shape, generator=generator, device=dev)
            out_of.scatter_(1, trig, outs)
        # Inverse-CDF sampling from uniforms drawn up front. index_select/gather/scatter only:
        # advanced indexing is far slower on a busy multi-threaded CPU.
        u = torch.rand(T, B, 1, generator=generator, device=dev)
        cdf_b = self._bigram_cdf.to(dev)
        cols = torch.empty(T, B, dtype=torch.long, device=dev)
        cols[0] = torch.searchsorted(self._unigram_cdf.to(dev).expand(B, n).contiguous(),
                                     u[0]).clamp(max=n - 1)[:, 0]
        in_ctx = torch.zeros(T, B, dtype=torch.bool, device=dev)
        trig_prev = torch.zeros(T, B, dtype=torch.bool, device=dev)
        seen = torch.zeros(B, n, dtype=torch.bool, device=dev)
        for t in range(1, T):
            prev = cols[t - 1][:, None]  # [B, 1]
            forced = out_of.gather(1, prev)[:, 0]
            trig = forced >= 0
            drawn = torch.searchsorted(cdf_b.index_select(0, prev[:, 0]), u[t])
            cols[t] = torch.where(trig, forced, drawn[:, 0].clamp(max=n - 1))
            trig_prev[t] = trig
            in_ctx[t] = trig & seen.gather(1, prev)[:, 0]
            seen.scatter_(1, prev, True)
        tokens, in_context, is_trig_prev = cols.T.contiguous(), in_ctx.T, trig_prev.T
        scored = torch.ones(B, T, dtype=torch.bool, device=dev)
        scored[:, 0] = False
        bigram = ~is_trig_prev
        bigram[:, 0] = False
        return Batch(tokens, scored, {"in_context": in_context, "bigram": bigram,
                                      "outputs": out_of})


def split_metrics(logits: torch.Tensor, batch: Batch) -> dict[str, float]:
    """Loss (nats) and accuracy over all scored targets and over the ``in_context`` / ``bigram``
    targets marked in ``batch.extras`` (keys ``icl_*``, ``bigram_*``; NaN if none)."""
    logits = logits[:, :-1].detach().float()
    target = batch.tokens[:, 1:]
    nll = -torch.log_softmax(logits, -1).gather(-1, target[..., None])[..., 0]
    hit = (logits.argmax(-1) == target).float()
    out: dict[str, float] = {}
    masks = {"": batch.target_mask, "icl_": batch.extras["in_context"][:, 1:],
             "bigram_": batch.extras["bigram"][:, 1:]}
    for prefix, mask in masks.items():
        m = mask.float()
        count = float(m.sum())
        out[f"{prefix}loss"] = float((nll * m).sum()) / count if count else math.nan
        out[f"{prefix}acc"] = float((hit * m).sum()) / count if count else math.nan
    return out


def bigram_predictor_metrics(task: BigramTriggers, batch: Batch) -> dict[str, float]:
    """The metrics of the exact bigram model log pi_b(. | previous token): the baseline that knows
    the global statistics and nothing in context."""
    logits = torch.log(task.pi_b.to(batch.tokens.device)[batch.tokens].clamp(min=1e-12))
    return split_metrics(logits, batch)


# The trigger-blind predictor's family: how much of the context's frequencies it mixes into the
# bigram model (0: the bigram model itself, 1: the context's frequencies alone).
BLIND_MIX = tuple(i / 10 for i in range(11))
BLIND_CACHES = ("frequency", "excess")


def context_caches(task: BigramTriggers, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    """[B, T, N] per cache, for ``tokens`` [B, T] of ``task``: at position t, a distribution over the next token from the tokens
    z_0..z_t of the same sequence, in no order: ``frequency`` their counts over t + 1;
    ``excess`` the counts beyond what the unigram law expects, (c_t(j) - (t + 1) pi_u(j))^+,
    normalised (uniform where no token is in excess)."""
    n = task.d_vocab
    counts = torch.nn.functional.one_hot(tokens, n).double().cumsum(1)  # [B, T, N]
    seen = torch.arange(1, tokens.shape[1] + 1, device=tokens.device, dtype=torch.double)
    freq = counts / seen[None, :, None]
    excess = (counts - seen[None, :, None] * task.pi_u.to(tokens.device).double()).clamp(min=0)
    total = excess.sum(-1, keepdim=True)
    excess = torch.where(total > 0, excess / total.clamp(min=1e-30), torch.full_like(excess, 1 / n))
    return {"frequency": freq, "excess": excess}


def trigger_blind_metrics(task: BigramTriggers, batch: Batch) -> dict[str, float]:
    """The best trigger-blind predictor of ``task`` on ``batch`` (``split_metrics``' keys, plus
    ``mix`` and ``cache``, the member chosen: ``BLIND_CACHES[int(cache)]``): the best a model
    without the in-context mechanism does.

    It knows the global statistics (pi_u, pi_b), the current token, and which tokens occurred
    earlier in the sequence and how often, but not in what order: it cannot read which token
    followed an earlier copy of the current trigger, the association the induction head reads.
    The family (a cache language model, the bigram model interpolated with the context's
    unigram frequencies) predicts ``p(j) = (1 - m) pi_b(j | z_t) + m q_t(j)`` with ``q_t`` a
    cache of ``context_caches`` (the context's frequencies, or its excess over pi_u: a
    trigger's output occurs as often as the trigger, more than its unigram share) and ``m`` in
    ``BLIND_MIX`` (``m = 0`` is the exact bigram model, so it never scores below it). The
    member with the highest in-context accuracy on ``batch`` itself is returned: the strongest
    of the family on the very set a model is judged on, never a weak one."""
    tokens = batch.tokens
    bigram = task.pi_b.to(tokens.device).double()[tokens]  # [B, T, N]
    best: dict[str, float] | None = None
    for name, cache in context_caches(task, tokens).items():
        for mix in BLIND_MIX:
            logits = torch.log(((1 - mix) * bigram + mix * cache).clamp(min=1e-12)).float()
            m = split_metrics(logits, batch)
            key = m["icl_acc"] if m["icl_acc"] == m["icl_acc"] else m["acc"]
            if best is None or key > best["_key"]:
                best = {**m, "mix": mix, "cache": float(BLIND_CACHES.index(name)), "_key": key}
    assert best is not None
    best.pop("_key")
    return best
