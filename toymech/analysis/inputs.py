"""The checks every analysis entry point shares: what it is given (a model of the right kind
with finite weights, token ids the model can read, a non-empty batch, a callable metric or
loss) and what it computes (a number that is finite). Each refusal is one ValueError line
naming the parameter, the value and what is allowed (``toymech.core.check``)."""

from __future__ import annotations

import math
from typing import Any

import torch

from ..core import check


def check_module(model: Any, name: str = "model", kind: type = torch.nn.Module) -> Any:
    """A ``kind`` (default any torch module) whose parameters are all finite."""
    what = "a HookedTransformer (toymech.models.build_model)" if kind is not torch.nn.Module \
        else "a torch.nn.Module"
    check(isinstance(model, kind), name, model if isinstance(model, str) else type(model).__name__,
          what)
    for pname, p in model.named_parameters():
        if p.is_floating_point() and not bool(torch.isfinite(p).all()):
            check(False, name, type(model).__name__,
                  f"a model with finite weights ({pname} holds NaN or inf)")
    return model


def check_transformer(model: Any, name: str = "model"):
    """A ``HookedTransformer`` with finite weights (patching reads its hooks and its cfg)."""
    from transformer_lens import HookedTransformer

    return check_module(model, name, HookedTransformer)


def vocab_of(model: torch.nn.Module) -> int | None:
    """The model's vocabulary size, where it states one."""
    cfg = getattr(model, "cfg", None) or getattr(model, "toymech_config", None)
    d_vocab = getattr(cfg, "d_vocab", None)
    return d_vocab if isinstance(d_vocab, int) else None


def check_tokens(tokens: Any, name: str, d_vocab: int | None, n_ctx: int | None = None
                 ) -> torch.Tensor:
    """Integer token ids [batch, pos], at least one sequence of at least one position, each id in
    ``0..d_vocab - 1`` (a negative id would wrap around, a large one index past the embedding)."""
    check(isinstance(tokens, torch.Tensor) and tokens.ndim == 2 and not tokens.is_floating_point()
          and tokens.dtype != torch.bool, name, tuple(getattr(tokens, "shape", ())) if
          isinstance(tokens, torch.Tensor) else type(tokens).__name__, "integer token ids [batch, pos]")
    check(tokens.shape[0] >= 1 and tokens.shape[1] >= 1, name, tuple(tokens.shape),
          "at least one sequence of at least one token")
    if n_ctx is not None:
        check(tokens.shape[1] <= n_ctx, name, tuple(tokens.shape), f"at most n_ctx={n_ctx} positions")
    if d_vocab is not None:
        lo, hi = int(tokens.min()), int(tokens.max())
        check(lo >= 0 and hi < d_vocab, name, f"ids {lo}..{hi}",
              f"token ids in 0..{d_vocab - 1} (the model's d_vocab={d_vocab})")
    return tokens


def check_callable(fn: Any, name: str, what: str) -> Any:
    check(callable(fn), name, fn, f"a callable {what}")
    return fn


def finite(value: Any, name: str, what: str) -> float:
    """``value`` as a float; a NaN or inf is a ValueError naming where it came from."""
    number = float(value)
    check(math.isfinite(number), name, number, f"a function that gives a finite number ({what})")
    return number
