"""Subspace concentration of hidden states (Zhong & Andreas 2024;
see docs/sources.md, study 3).

For hidden states X [n, d] (one row per token position), centred as Xc = X - mean(X):

* principal basis: with lambda_1 >= ... >= lambda_d the eigenvalues of the covariance
  C = Xc^T Xc / (n - 1), the explained variance of the top-k principal directions is
      EV_k = (lambda_1 + ... + lambda_k) / (lambda_1 + ... + lambda_d);
* neuron basis: with v_1 >= ... >= v_d the per-coordinate variances (the diagonal of C),
      EV_k = (v_1 + ... + v_k) / (v_1 + ... + v_d).

EV_k near 1 means the states live in (close to) a k-dimensional subspace. The paper reports
EV_10 of the hidden states after the embedding and after each layer, normal vs random.

``subspace_overlap`` compares two sets of directions instead (Birth, study 2: do trained token
embeddings and positions share a subspace?), with its random-subspace null ``overlap_null``.
"""

from __future__ import annotations

import torch

from ..core import check

BASES = ("principal", "neuron")


def explained_variance(states: torch.Tensor, k: int = 10, basis: str = "principal") -> float:
    """EV_k of ``states`` [n, d] in the principal or the neuron basis (see the module doc).

    k >= d gives 1.0. Constant states (zero total variance) raise ValueError.
    """
    if basis not in BASES:
        raise ValueError(f"basis={basis!r} is not allowed: one of {', '.join(BASES)}")
    if states.ndim != 2 or states.shape[0] < 2:
        raise ValueError(f"states must be [n >= 2, d], got shape {tuple(states.shape)}")
    if not (isinstance(k, int) and k >= 1):
        raise ValueError(f"k={k!r} is not allowed: an integer >= 1")
    x = states.detach().double()
    xc = x - x.mean(0, keepdim=True)
    if basis == "principal":
        # Squared singular values of the centred data = (n - 1) * covariance eigenvalues.
        var = torch.linalg.svdvals(xc) ** 2
    else:
        var = (xc ** 2).sum(0)
    var = var.sort(descending=True).values
    total = var.sum()
    if total <= 0:
        raise ValueError("states have zero variance: explained variance is undefined")
    return float(var[:k].sum() / total)


def subspace_overlap(a: torch.Tensor, b: torch.Tensor, k: int) -> float:
    """How much the spans of the top-``k`` directions of ``a`` [n, d] and ``b`` [m, d] share:
    with V_a, V_b [d, k] the top-k right singular vectors of each (uncentred: the directions the
    rows themselves occupy, e.g. the token embeddings and the positional embeddings as they add
    into the residual stream),

        overlap_k = ‖V_aᵀ V_b‖_F² / k = mean over the k principal angles θ_i of cos² θ_i.

    1: the same k-dimensional subspace; 0: orthogonal subspaces (e.g. tokens and positions in
    separate coordinates). For two independent uniformly random k-dimensional subspaces of R^d
    its expectation is k / d (``overlap_null``): the null. ``k`` must not exceed the rank either
    matrix can have (min(n, m, d))."""
    check(a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[1], "a, b",
          (tuple(a.shape), tuple(b.shape)), "[n, d] and [m, d] with the same d")
    check(isinstance(k, int) and 1 <= k <= min(a.shape[0], b.shape[0], a.shape[1]), "k", k,
          f"an integer in 1..{min(a.shape[0], b.shape[0], a.shape[1])}")
    va = torch.linalg.svd(a.detach().double().cpu(), full_matrices=False).Vh[:k]  # [k, d]
    vb = torch.linalg.svd(b.detach().double().cpu(), full_matrices=False).Vh[:k]
    return float((va @ vb.T).pow(2).sum() / k)


def overlap_null(k: int, d: int) -> float:
    """E[``subspace_overlap``] of two independent uniformly random k-dimensional subspaces of
    R^d: E‖V_aᵀ V_b‖_F² = k · k / d, divided by k."""
    check(isinstance(k, int) and isinstance(d, int) and 1 <= k <= d, "k", k, f"1..d (d = {d})")
    return k / d


@torch.no_grad()
def hidden_states(model, tokens: torch.Tensor, mask: torch.Tensor | None = None
                  ) -> dict[str, torch.Tensor]:
    """Residual-stream states [n, d_model] after the embedding and after each layer.

    Keys ``embedding`` (token + position embedding), ``layer 1``, ..., ``layer L``. ``mask``
    [batch, seq] bool keeps only those positions (default: all).

    ``model`` is run on ``tokens`` [batch, seq].
    """
    names = ["blocks.0.hook_resid_pre"] + [f"blocks.{i}.hook_resid_post"
                                           for i in range(model.cfg.n_layers)]
    _, cache = model.run_with_cache(tokens, names_filter=lambda n: n in names)
    labels = ["embedding"] + [f"layer {i + 1}" for i in range(model.cfg.n_layers)]
    out = {}
    for label, name in zip(labels, names):
        acts = cache[name]  # [batch, seq, d_model]
        out[label] = acts[mask] if mask is not None else acts.reshape(-1, acts.shape[-1])
    return out


def concentration(model, tokens: torch.Tensor, k: int = 10,
                  mask: torch.Tensor | None = None) -> dict[tuple[str, str], float]:
    """(layer, basis) -> EV_k of the model's hidden states on ``tokens`` (Table 4 form).

    ``k``: how many directions EV_k keeps; ``mask`` [batch, seq] bool: only those positions
    (default: all)."""
    states = hidden_states(model, tokens, mask)
    return {(layer, basis): explained_variance(x, k, basis)
            for layer, x in states.items() for basis in BASES}
