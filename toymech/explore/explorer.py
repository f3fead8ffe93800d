"""The explorer's plain Python face: one model, one sequence, the views of ``views`` on it.

Everything the widget draws is read from ``Explorer.state()``, so every view is testable without
a browser. Changes (``set_sequence``, ``sample``, ``set_position``, ``ablate``, ``restore``,
``at_step``) return the new state.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import torch

from ..analysis.patching import logit_diff, patch_heads
from ..core import check, check_int, is_int, seed_for
from ..devices import make_generator
from . import sequence, views
from .snapshot import snapshot_html
from .source import Source, warn_if_not_finite
from .widget import ExplorerWidget

N_MEAN = 64  # reference sequences a mean ablation averages over (the run's 'example' stream)


class Explorer:
    """An interactive view of ``source.model`` on one sequence of ``source.task``."""

    def __init__(self, source: Source):
        self.source = source
        self.task = source.task
        self.model = source.model
        self.step: int | None = None  # None: the final weights
        self.ablated: list[views.Ablation] = []
        self._gen = make_generator(seed_for(source.seed, "example"), torch.device("cpu"))
        self._sets: dict | None = None
        self._next: dict[str, int] = {}
        self._means: dict[int | None, dict] = {}
        self._snapshots: dict[int, Any] = {}
        self._widget = None
        self.sample()

    # --- the sequence ------------------------------------------------------------------------
    @property
    def vocab(self) -> list[str]:
        """The task's tokens as readable strings, by token id."""
        return self.task.vocab

    @property
    def sets(self) -> list[str]:
        """What ``sample`` draws from: ``"sampler"`` (the task's own), then the named sets."""
        return ["sampler", *self.eval_sets()]

    def eval_sets(self) -> dict:
        """The named evaluation sets of the study behind the model ({name: Batch}), built once."""
        if self._sets is None:
            self._sets = self.source.eval_sets()
        return self._sets

    def set_sequence(self, text_or_tokens: Any) -> dict:
        """Explore ``text_or_tokens`` (``sequence.encode``: characters or space-separated tokens
        of the task's vocabulary, token strings or ids); every next token is scored. Returns the new
        ``state()``; raises ``ValueError`` naming a token the task does not have, or a sequence
        longer than the model's context."""
        tokens = sequence.encode(text_or_tokens, self.vocab, self.model.cfg.n_ctx)
        scored = torch.ones_like(tokens, dtype=torch.bool)
        scored[0] = False
        return self._use(tokens, scored)

    def sample(self, set: str = "sampler") -> dict:
        """A fresh sequence from the task's sampler (its own ``example`` stream), or the next one
        of the named evaluation set ``set`` (see ``sets``)."""
        if set == "sampler":
            batch = self.task.sample(1, self._gen)
            return self._use(batch.tokens[0], batch.scored[0])
        named = self.eval_sets()
        check(set in named, "set", set, f"one of {', '.join(self.sets)}")
        i = self._next.get(set, 0) % len(named[set])
        self._next[set] = i + 1
        return self._use(named[set].tokens[i], named[set].scored[i])

    def _use(self, tokens: torch.Tensor, scored: torch.Tensor) -> dict:
        self.tokens, self.scored = tokens.cpu(), scored.cpu()
        positions = torch.nonzero(self.scored).flatten()
        # the prediction of the last scored target (or of the last token, if none is scored)
        self.position = int(positions[-1]) - 1 if len(positions) else len(tokens) - 1
        self.target: int | None = None
        return self.state()

    def text(self) -> str:
        """The current sequence as the text box shows it."""
        sep = "" if all(len(t) == 1 for t in self.vocab) else " "
        return self.task.decode(self.tokens, sep=sep)

    def set_position(self, position: int, target: str | int | None = None) -> dict:
        """Read attention rows and attributions at ``position`` (logits there predict token
        ``position + 1``), for ``target`` (a token or id; None: the true next token, else the
        model's top prediction)."""
        self.position = check_int("position", position, 0, len(self.tokens) - 1)
        if target is not None:
            known = (target in self.vocab if isinstance(target, str)
                     else is_int(target) and 0 <= int(target) < len(self.vocab))
            check(known, "target", target, f"None (the true next token), a token of "
                  f"{sequence.alphabet(self.vocab)} or a token id in 0..{len(self.vocab) - 1}")
            target = self.vocab.index(target) if isinstance(target, str) else int(target)
        self.target = target
        return self.state()

    def _target(self, logits: torch.Tensor) -> int:
        if self.target is not None:
            return self.target
        if self.position + 1 < len(self.tokens):
            return int(self.tokens[self.position + 1])
        return int(logits[self.position].argmax())

    # --- the views ---------------------------------------------------------------------------
    def state(self) -> dict:
        """What every view shows, for the current sequence, position, ablations and step.

        Keys: ``tokens`` (strings), ``position``, ``target`` (its string), ``step`` (None: final
        weights), ``ablated`` ((layer, head, kind) list), ``predictions`` (per position, the top
        (token, probability) pairs), ``top`` / ``top_prob`` (per position), ``target_prob``,
        ``loss`` ({position: nats} over the scored targets), ``attention`` ([L, H, T] rows at
        ``position``), ``attribution`` ([L, H] direct logit attribution to the target), and
        ``patterns`` ([L, H, T, T], for the attention view).
        """
        means = self._head_means() if self._needs_means() else None
        hooks = views.ablation_hooks(self.model, self.ablated, means)
        logits, cache = views.run(self.model, self.tokens, hooks)
        target = self._target(logits)
        preds = views.predictions(logits, self.vocab)
        L = self.model.cfg.n_layers
        return {
            "tokens": self.task.str_tokens(self.tokens), "position": self.position,
            "target": self.vocab[target], "step": self.step, "ablated": list(self.ablated),
            "predictions": preds, "top": [p[0][0] for p in preds],
            "top_prob": [p[0][1] for p in preds],
            "target_prob": float(torch.softmax(logits[self.position], -1)[target]),
            "loss": views.losses(logits, self.tokens, self.scored),
            "attention": views.attention_rows(cache, L, self.position),
            "attribution": views.attribution(cache, self.model, self.position, target),
            "patterns": views.patterns(cache, L),
        }

    # --- ablations ---------------------------------------------------------------------------
    def _needs_means(self) -> bool:
        return any(kind == "mean" for *_, kind in self.ablated)

    def _head_means(self) -> dict:
        if self.step not in self._means:
            gen = make_generator(seed_for(self.source.seed, "probe"), torch.device("cpu"))
            ref = self.task.sample(N_MEAN, gen).tokens
            self._means[self.step] = views.head_means(self.model, ref)
        return self._means[self.step]

    def ablate(self, layer: int, head: int, kind: str = "zero") -> dict:
        """The state with head (layer, head) ablated (``kind``: zero, or its mean output over
        reference sequences), on top of the heads already ablated. Raises ``ValueError`` for a
        head the model does not have or another ``kind``."""
        layer, head = views.check_head(self.model, layer, head)
        check(kind in views.KINDS, "kind", kind, f"one of {', '.join(views.KINDS)}")
        self.ablated = [a for a in self.ablated if a[:2] != (layer, head)] + [(layer, head, kind)]
        return self.state()

    def restore(self, layer: int | None = None, head: int | None = None) -> dict:
        """The state with head (layer, head) back (both None: every head back)."""
        if layer is None and head is None:
            self.ablated = []
        else:
            layer, head = views.check_head(self.model, layer, head)
            self.ablated = [a for a in self.ablated if a[:2] != (layer, head)]
        return self.state()

    # --- patching ----------------------------------------------------------------------------
    def patch(self, source_text: Any) -> pd.DataFrame:
        """Activation patching from ``source_text`` (a sequence of the same length) into the
        current one, per head and position (``analysis.patching.patch_heads``, direction
        ``noise``): each head's output at one position replaced by its output on the source run.

        Metric: the logit difference at ``position`` between the target and the source's own
        next token there (the current runner-up when the two agree). Values: the effect
        ``(m_patched - m_current) / (m_source - m_current)``, 1 = the patch moves the whole gap
        (NaN when the two runs do not differ). Rows ``L{l}H{h}``, columns ``{p}:{token}``.
        Ablations are not applied here.
        """
        src = sequence.encode(source_text, self.vocab, self.model.cfg.n_ctx)
        check(len(src) == len(self.tokens), "source_text", source_text,
              f"a sequence of the current one's length {len(self.tokens)} (it has {len(src)})")
        check(not torch.equal(src, self.tokens), "source_text", source_text,
              "a sequence that differs from the current one somewhere (patching a run with "
              "itself moves nothing: every effect would be 0/0)")
        logits, _ = views.run(self.model, self.tokens)
        good = self._target(logits)
        p = self.position
        bad = _other(good, int(src[p + 1]) if p + 1 < len(src) else None, logits[p])
        mask = torch.zeros(1, len(src), dtype=torch.bool)
        mask[0, p] = True
        metric = logit_diff(torch.full_like(mask, good, dtype=torch.long),
                            torch.full_like(mask, bad, dtype=torch.long), mask)
        result = patch_heads(self.model, self.tokens[None], src[None], metric, direction="noise",
                             per_position=True)
        L, H = self.model.cfg.n_layers, self.model.cfg.n_heads
        tokens = self.task.str_tokens(self.tokens)
        return pd.DataFrame(result.effect.reshape(L * H, -1).numpy(),
                            index=[f"L{l}H{h}" for l in range(L) for h in range(H)],
                            columns=[f"{i}:{t}" for i, t in enumerate(tokens)])

    # --- through training --------------------------------------------------------------------
    @property
    def snapshot_steps(self) -> list[int]:
        """The steps at which the run kept weight snapshots (``at_step`` moves between them);
        empty for a bare model or a run without snapshots."""
        return self.source.snapshot_steps

    def at_step(self, step: int | None) -> dict:
        """The state on the run's weight snapshot nearest ``step`` (None: the final weights,
        on any model), ``step`` at most the run's last training step. Raises ``ValueError`` for a
        step past the run's last, or a step on a run without snapshots."""
        if step is None:
            self.model, self.step = self.source.model, None
            return self.state()
        steps = self.snapshot_steps
        check(bool(steps), "step", step,
              "None (the final weights): this model has no weight snapshots (explore a ZooEntry "
              "or an experiment name whose run recorded them, TrainConfig.snapshots)")
        last = max(steps[-1], self.source.last_step)
        step = check_int("step", step, 0, last)
        nearest = min(steps, key=lambda s: (abs(s - step), s))
        if nearest not in self._snapshots:
            self._snapshots[nearest] = self.source.entry.model_at(nearest)
            warn_if_not_finite(self._snapshots[nearest], f"the snapshot at step {nearest}")
        self.model, self.step = self._snapshots[nearest], nearest
        return self.state()

    # --- display -----------------------------------------------------------------------------
    @property
    def widget(self):
        """The ipywidgets view (built on first use)."""
        if self._widget is None:
            self._widget = ExplorerWidget(self)
        return self._widget

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """The live widget for JupyterLab, with a static HTML snapshot of the first state for
        pages that have no kernel (reports)."""
        bundle = dict(self.widget.box._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["text/html"] = snapshot_html(self)
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        at = "final weights" if self.step is None else f"step {self.step}"
        return (f"Explorer({self.task.name}, {self.model.cfg.n_layers} layers x "
                f"{self.model.cfg.n_heads} heads, {at}: {self.text()!r})")


def _other(good: int, source_next: int | None, logits: torch.Tensor) -> int:
    """The token the logit difference is taken against: the source's next token where it
    differs from ``good``, else the most probable token that is not ``good``."""
    if source_next is not None and source_next != good:
        return source_next
    return next(int(i) for i in logits.argsort(descending=True) if int(i) != good)
