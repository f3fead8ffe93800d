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
"""

from __future__ import annotations

import torch

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
