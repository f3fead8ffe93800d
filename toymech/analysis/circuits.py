"""Weight-based circuit analysis: eigenvalue copy scores and composition scores.

Conventions are TransformerLens' (row vectors): OV = W_V W_O, QK = W_Q W_Kᵀ, the full OV circuit
of a head is W_E W_V W_O W_U and the direct path is W_E W_U. Everything here reads weights only;
note that ``model.QK`` does not see additive sinusoidal positions or smeared keys.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from transformer_lens import FactoredMatrix, HookedTransformer
from transformer_lens.utilities.matrix import composition_scores as _tl_composition_scores

from ..core import check

COMPOSITION_MODES = ("Q", "K", "V")


def eigenvalues(M: torch.Tensor | FactoredMatrix) -> torch.Tensor:
    """Complex eigenvalues of square M, batched over leading dims: [..., n] (a FactoredMatrix
    A·B gives those of B·A, i.e. its non-zero eigenvalues plus fewer zeros)."""
    if isinstance(M, FactoredMatrix):
        check(M.ldim == M.rdim, "M", tuple(M.shape), "a square matrix [..., n, n]")
        return M.eigenvalues.detach()
    check(isinstance(M, torch.Tensor) and M.ndim >= 2 and M.shape[-1] == M.shape[-2], "M",
          tuple(M.shape) if isinstance(M, torch.Tensor) else type(M).__name__,
          "a square tensor [..., n, n] or a FactoredMatrix")
    return torch.linalg.eigvals(M.detach().float())


def copy_score(M: torch.Tensor | FactoredMatrix) -> torch.Tensor:
    """Copy metric Re(Σλᵢ) / Σ|λᵢ| over M's eigenvalues, batched over leading dims.

    +1: every eigenvalue positive (the circuit raises the logit of the token it reads: copying);
    -1: every eigenvalue negative (suppression). A 2-D rotation by θ scores cos θ.
    """
    lam = eigenvalues(M)
    return lam.real.sum(-1) / lam.abs().sum(-1).clamp(min=1e-30)


def direct_path(model: HookedTransformer) -> FactoredMatrix:
    """W_E W_U: [d_vocab, d_vocab], the logit effect of the current token skipping all heads.

    Of ``model`` (a ``FactoredMatrix``, never multiplied out)."""
    return FactoredMatrix(model.W_E, model.W_U)


def full_ov_circuits(model: HookedTransformer) -> FactoredMatrix:
    """W_E W_V W_O W_U for every head: [n_layers, n_heads, d_vocab, d_vocab].

    Of ``model`` (a ``FactoredMatrix``, never multiplied out)."""
    return model.W_E @ model.OV @ model.W_U


def direct_path_copy_score(model: HookedTransformer) -> float:
    """Copy score of the direct path W_E W_U (≈ -1 when the model never repeats a letter)."""
    return float(copy_score(direct_path(model)))


def ov_copy_scores(model: HookedTransformer) -> Float[torch.Tensor, "n_layers n_heads"]:
    """Copy score of each head's full OV circuit W_E W_V W_O W_U.

    [n_layers, n_heads] for ``model``: Re(Σλ)/Σ|λ| of the circuit's eigenvalues (1: copies its
    input token)."""
    return copy_score(full_ov_circuits(model)).cpu()


def composition_scores(model: HookedTransformer, mode: str
                       ) -> Float[torch.Tensor, "n_layers n_heads n_layers n_heads"]:
    """‖L·R‖_F / (‖L‖_F ‖R‖_F) of earlier head (l1, h1) into later head (l2, h2), with
    L = OV(l1, h1) and R = QK(l2, h2) (mode "Q"), QK(l2, h2)ᵀ ("K") or OV(l2, h2) ("V").
    Zero where l2 <= l1. Delegates to ``HookedTransformer.all_composition_scores``.

    ``model``: a ``HookedTransformer``; ``mode``: ``"Q"``, ``"K"`` or ``"V"``."""
    check(mode in COMPOSITION_MODES, "mode", mode, f"one of {COMPOSITION_MODES}")
    with torch.no_grad():
        return model.all_composition_scores(mode).detach().cpu()


def composition_baseline(model: HookedTransformer, mode: str, n_samples: int = 200,
                         generator: torch.Generator | None = None) -> tuple[float, float]:
    """(mean, std) composition score of random Gaussian factors shaped like the model's
    (W_V [d_model, d_head], W_O [d_head, d_model], W_Q, W_K ...): what 'no composition' looks
    like at these shapes. Scores well above it indicate real composition.

    ``model`` gives the shapes; ``mode``: ``"Q"``, ``"K"`` or ``"V"``; ``n_samples`` random
    draws from ``generator`` (None: a fixed seed)."""
    check(mode in COMPOSITION_MODES, "mode", mode, f"one of {COMPOSITION_MODES}")
    check(n_samples >= 2, "n_samples", n_samples, "an integer >= 2")
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    d_model, d_head = model.cfg.d_model, model.cfg.d_head

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(n_samples, *shape, generator=g)

    left = FactoredMatrix(rand(d_model, d_head), rand(d_head, d_model))
    if mode == "V":
        right = FactoredMatrix(rand(d_model, d_head), rand(d_head, d_model))
    else:
        right = FactoredMatrix(rand(d_model, d_head), rand(d_head, d_model))  # W_Q W_Kᵀ
        if mode == "K":
            right = right.T
    scores = _tl_composition_scores(left, right, broadcast_dims=False)
    return float(scores.mean()), float(scores.std())
