"""Memory-recall probes (Bietti et al. 2023), attention scores on trigger data and linear probes on
the residual stream (the training callback that records them is the study's:
``toymech.studies.birth.birth_callback``).

Row-vector conventions (TransformerLens): a residual x_t is a row; layer l's attention score is
x_t QK_l x_sᵀ with QK = W_Q W_Kᵀ; a head writes x_s OV with OV = W_V W_O; logits are x W_U.
The paper's memories, read as argmax recall over the matrices:

* W_K¹ previous-token: for position t >= 1, argmax_{s <= t} p_t QK₁ p_sᵀ == t - 1;
* W_K² induction key: for trigger k, argmax_{k'} w_E(k) QK₂ (w_E(k') OV₁)ᵀ == k;
* W_O² output copy: for token k, argmax_j (w_E(k) OV₂ W_U)_j == k;
* W_F global bigram: KL(π_b(.|k) ‖ softmax(w_E(k) W_F W_U)), averaged over non-trigger k.

The recall probes are 1.0 for a perfect associative memory and about 1/N (1/t for positions) for
a random one. Multi-head models: each probe is the best head (pair).
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from transformer_lens import HookedTransformer

from ..core import check


def _dense(m) -> torch.Tensor:
    return (m.AB if hasattr(m, "AB") else m).detach().float().cpu()


def previous_token_probe(qk: Float[torch.Tensor, "d d"], pos: Float[torch.Tensor, "T d"]) -> float:
    """Fraction of positions t >= 1 whose best causal key under p_t QK p_sᵀ (s <= t) is t - 1."""
    qk, pos = _dense(qk), _dense(pos)
    check(qk.ndim == 2 and qk.shape[0] == qk.shape[1] == pos.shape[-1], "qk", tuple(qk.shape),
          f"[d, d] with d = pos.shape[-1] = {pos.shape[-1]}")
    scores = pos @ qk @ pos.T  # [t, s]
    T = pos.shape[0]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    best = scores.masked_fill(~causal, float("-inf")).argmax(-1)
    return float((best[1:] == torch.arange(T - 1)).float().mean())


def induction_key_probe(qk2: Float[torch.Tensor, "d d"], W_E: Float[torch.Tensor, "N d"],
                        ov1: Float[torch.Tensor, "d d"], tokens: torch.Tensor | None = None) -> float:
    """Fraction of tokens k (default: all) with argmax_{k'} w_E(k) QK₂ (w_E(k') OV₁)ᵀ == k."""
    qk2, W_E, ov1 = _dense(qk2), _dense(W_E), _dense(ov1)
    scores = W_E @ qk2 @ (W_E @ ov1).T  # [query token k, key token k']
    return _recall(scores, tokens)


def output_copy_probe(ov2: Float[torch.Tensor, "d d"], W_E: Float[torch.Tensor, "N d"],
                      W_U: Float[torch.Tensor, "d N"], tokens: torch.Tensor | None = None) -> float:
    """Fraction of tokens k (default: all) with argmax_j (w_E(k) OV₂ W_U)_j == k."""
    return _recall(_dense(W_E) @ _dense(ov2) @ _dense(W_U), tokens)


def bigram_kl_probe(W_F: Float[torch.Tensor, "d d"], W_E: Float[torch.Tensor, "N d"],
                    W_U: Float[torch.Tensor, "d N"], pi_b: Float[torch.Tensor, "N N"],
                    tokens: torch.Tensor | None = None) -> float:
    """Mean over tokens k (default: all) of KL(π_b(.|k) ‖ softmax(w_E(k) W_F W_U)) in nats."""
    logq = torch.log_softmax(_dense(W_E) @ _dense(W_F) @ _dense(W_U), -1)
    p = pi_b.detach().float().cpu()
    kl = (p * (torch.log(p.clamp(min=1e-30)) - logq)).sum(-1)
    return float(kl[_token_index(tokens, p.shape[0])].mean())


def _token_index(tokens: torch.Tensor | None, n: int) -> torch.Tensor:
    if tokens is None:
        return torch.arange(n)
    tokens = torch.as_tensor(tokens).long().cpu().flatten()
    check(len(tokens) >= 1 and int(tokens.min()) >= 0 and int(tokens.max()) < n, "tokens",
          tokens.tolist()[:8], f"a non-empty set of token ids below {n}")
    return tokens


def _recall(scores: torch.Tensor, tokens: torch.Tensor | None) -> float:
    idx = _token_index(tokens, scores.shape[0])
    return float((scores[idx].argmax(-1) == idx).float().mean())


def feed_forward_matrix(model: HookedTransformer) -> torch.Tensor | None:
    """W_F of the last block (``blocks.-1.mlp.W_F``), or None when the model has none."""
    return getattr(getattr(model.blocks[-1], "mlp", None), "W_F", None)


def model_probes(model: HookedTransformer, pi_b: torch.Tensor | None = None,
                 triggers: torch.Tensor | None = None,
                 non_triggers: torch.Tensor | None = None) -> dict[str, float]:
    """The four probes of a 2-layer model: ``probe_wk1``, ``probe_wk2`` (over ``triggers``),
    ``probe_wo2`` (all tokens), ``probe_wf_kl`` (over ``non_triggers``; only with a W_F and pi_b).
    With several heads each is the best head, or head pair (layer-0 head, layer-1 head)."""
    check(model.cfg.n_layers >= 2, "model", model.cfg.n_layers, "at least 2 layers")
    QK, OV = model.QK, model.OV
    H = model.cfg.n_heads
    pos = model.W_pos if model.cfg.positional_embedding_type in ("standard", "shortformer") else None
    out = {}
    if pos is not None:
        out["probe_wk1"] = max(previous_token_probe(QK[0, h], pos) for h in range(H))
    out["probe_wk2"] = max(induction_key_probe(QK[1, h2], model.W_E, OV[0, h1], triggers)
                           for h1 in range(H) for h2 in range(H))
    out["probe_wo2"] = max(output_copy_probe(OV[1, h], model.W_E, model.W_U) for h in range(H))
    W_F = feed_forward_matrix(model)
    if W_F is not None and pi_b is not None:
        out["probe_wf_kl"] = bigram_kl_probe(W_F, model.W_E, model.W_U, pi_b, non_triggers)
    return out


# --- the hand-built construction -------------------------------------------------------------------
def construction(model: HookedTransformer, pi_b: torch.Tensor,
                 triggers: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """The paper's associative memories built from a 2-layer model's own (frozen random) parts,
    row convention, e_k = rows of W_E, p_t = rows of W_pos, u_j = column j of W_U:
    QK1 = Σ_t p_tᵀ p_{t-1}; QK2 = Σ_k e_kᵀ (e_k OV1) (k over ``triggers``, default all);
    OV2 = Σ_k e_kᵀ u_kᵀ; W_F = Σ_k e_kᵀ Σ_j π_b(j|k) u_jᵀ (k over non-triggers; only when the
    model has a W_F). Head 0 of layer 0 supplies OV1."""
    with torch.no_grad():
        E, P, U = _dense(model.W_E), _dense(model.W_pos), _dense(model.W_U)
        ov1 = _dense(model.OV[0, 0])
        Et = E if triggers is None else E[_token_index(triggers, E.shape[0])]
        out = {"W_K1 (previous token)": P[1:].T @ P[:-1],
               "W_K2 (induction key)": Et.T @ (Et @ ov1),
               "W_O2 (output copy)": E.T @ U.T}
        if feed_forward_matrix(model) is not None:
            pi = pi_b.detach().float().cpu().clone()
            if triggers is not None:
                pi[_token_index(triggers, E.shape[0])] = 0.0
            out["W_F (bigram)"] = E.T @ (pi @ U.T)
    return out


def trained_matrices(model: HookedTransformer) -> dict[str, torch.Tensor]:
    """The model's counterparts of ``construction``: QK1, QK2, OV2 (head 0) and W_F."""
    out = {"W_K1 (previous token)": _dense(model.QK[0, 0]),
           "W_K2 (induction key)": _dense(model.QK[1, 0]),
           "W_O2 (output copy)": _dense(model.OV[1, 0])}
    W_F = feed_forward_matrix(model)
    if W_F is not None:
        out["W_F (bigram)"] = _dense(W_F)
    return out


def matrix_cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """⟨A, B⟩_F / (‖A‖_F ‖B‖_F): 1 = the same matrix up to a positive scale, ~0 = unrelated."""
    a, b = _dense(a), _dense(b)
    return float((a * b).sum() / (a.norm() * b.norm()).clamp(min=1e-30))


# --- attention on trigger data -------------------------------------------------------------------
def previous_token_attention(pattern: Float[torch.Tensor, "B H T T"]) -> Float[torch.Tensor, "H"]:
    """Mean attention from position t to t - 1 (t >= 1), per head."""
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).mean((0, -1)).cpu()


def trigger_induction_attention(pattern: Float[torch.Tensor, "B H T T"], tokens: torch.Tensor,
                                in_context: torch.Tensor) -> Float[torch.Tensor, "H"]:
    """Attention mass, per head, from each query q whose next target is in-context
    (``in_context[:, q + 1]``, i.e. tokens[q] is a trigger seen before) to the positions s <= q
    right after an earlier copy of tokens[q] (tokens[s - 1] == tokens[q]): where its output is."""
    tokens = tokens.to(pattern.device)
    T = tokens.shape[1]
    query = in_context[:, 1:].to(pattern.device)  # [B, T-1] queries 0..T-2
    prev_tok = torch.cat([torch.full_like(tokens[:, :1], -1), tokens[:, :-1]], 1)  # tokens[s-1]
    target = (prev_tok[:, None, :] == tokens[:, :, None]) & torch.ones(
        T, T, dtype=torch.bool, device=tokens.device).tril()  # [B, q, s]
    mass = (pattern * target[:, None]).sum(-1)[:, :, :-1]  # [B, H, T-1]
    q = query[:, None].expand_as(mass)
    return (mass * q).sum((0, 2)).div(q.sum((0, 2)).clamp(min=1)).cpu()


# --- linear probes ---------------------------------------------------------------------------------
def linear_probe(features: Float[torch.Tensor, "n d"], labels: torch.Tensor, n_classes: int,
                 generator: torch.Generator, train_frac: float = 0.8,
                 ridge: float = 1e-2) -> dict[str, float]:
    """Ridge-regression classifier on one-hot labels, fit on a random ``train_frac`` split:
    W = (XᵀX + ridge·n·I)⁻¹ XᵀY with X standardised and a bias column. Returns train and
    held-out accuracy and the held-out majority-class rate (``chance``)."""
    check(0.0 < train_frac < 1.0, "train_frac", train_frac, "a number strictly between 0 and 1")
    X = features.detach().float().cpu()
    y = labels.detach().long().cpu()
    check(X.ndim == 2 and y.shape == (X.shape[0],) and X.shape[0] >= 4, "features",
          tuple(X.shape), f"[n, d] with n >= 4 matching labels {tuple(y.shape)}")
    perm = torch.randperm(X.shape[0], generator=generator, device=generator.device).cpu()
    n_train = int(train_frac * X.shape[0])
    tr, te = perm[:n_train], perm[n_train:]
    mu, sd = X[tr].mean(0), X[tr].std(0).clamp(min=1e-6)
    X = torch.cat([(X - mu) / sd, torch.ones(X.shape[0], 1)], 1)
    Y = torch.nn.functional.one_hot(y, n_classes).float()
    A = X[tr].T @ X[tr] + ridge * n_train * torch.eye(X.shape[1])
    W = torch.linalg.solve(A, X[tr].T @ Y[tr])
    acc = lambda idx: float(((X[idx] @ W).argmax(-1) == y[idx]).float().mean())  # noqa: E731
    chance = float(torch.bincount(y[te], minlength=n_classes).max()) / max(len(te), 1)
    return {"train_acc": acc(tr), "test_acc": acc(te), "chance": chance}
