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

Argmax recall saturates: once the right target wins every row it reads 1.0 however clearly it
wins, so two memories at 1.0 can differ in structure. The recall margins (``row_margins``) read
the same score matrices continuously: how far the right target stands above its best competitor,
in units of the competitors' spread. ``memory_reading`` puts each memory's margin beside two
references read through the same parts (a random memory: the null; the hand-built construction),
and its cosine with that construction.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from transformer_lens import HookedTransformer

from ..core import check


def _dense(m) -> torch.Tensor:
    return (m.AB if hasattr(m, "AB") else m).detach().float().cpu()


def previous_token_scores(qk: Float[torch.Tensor, "d d"], pos: Float[torch.Tensor, "T d"]
                          ) -> Float[torch.Tensor, "T T"]:
    """p_t QK p_sᵀ [query position t, key position s], -inf where s > t (not causal)."""
    qk, pos = _dense(qk), _dense(pos)
    check(qk.ndim == 2 and qk.shape[0] == qk.shape[1] == pos.shape[-1], "qk", tuple(qk.shape),
          f"[d, d] with d = pos.shape[-1] = {pos.shape[-1]}")
    T = pos.shape[0]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    return (pos @ qk @ pos.T).masked_fill(~causal, float("-inf"))


def induction_key_scores(qk2: Float[torch.Tensor, "d d"], W_E: Float[torch.Tensor, "N d"],
                         ov1: Float[torch.Tensor, "d d"]) -> Float[torch.Tensor, "N N"]:
    """w_E(k) QK₂ (w_E(k') OV₁)ᵀ [query token k, key token k']."""
    W_E = _dense(W_E)
    return W_E @ _dense(qk2) @ (W_E @ _dense(ov1)).T


def output_copy_scores(ov2: Float[torch.Tensor, "d d"], W_E: Float[torch.Tensor, "N d"],
                       W_U: Float[torch.Tensor, "d N"]) -> Float[torch.Tensor, "N N"]:
    """(w_E(k) OV₂ W_U)_j [token k, output j]."""
    return _dense(W_E) @ _dense(ov2) @ _dense(W_U)


def previous_token_probe(qk: Float[torch.Tensor, "d d"], pos: Float[torch.Tensor, "T d"]) -> float:
    """Fraction of positions t >= 1 whose best causal key under p_t QK p_sᵀ (s <= t) is t - 1."""
    best = previous_token_scores(qk, pos).argmax(-1)
    return float((best[1:] == torch.arange(best.shape[0] - 1)).float().mean())


def induction_key_probe(qk2: Float[torch.Tensor, "d d"], W_E: Float[torch.Tensor, "N d"],
                        ov1: Float[torch.Tensor, "d d"], tokens: torch.Tensor | None = None) -> float:
    """Fraction of tokens k (default: all) with argmax_{k'} w_E(k) QK₂ (w_E(k') OV₁)ᵀ == k."""
    return _recall(induction_key_scores(qk2, W_E, ov1), tokens)


def output_copy_probe(ov2: Float[torch.Tensor, "d d"], W_E: Float[torch.Tensor, "N d"],
                      W_U: Float[torch.Tensor, "d N"], tokens: torch.Tensor | None = None) -> float:
    """Fraction of tokens k (default: all) with argmax_j (w_E(k) OV₂ W_U)_j == k."""
    return _recall(output_copy_scores(ov2, W_E, W_U), tokens)


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


# --- recall margins ----------------------------------------------------------------------------
MIN_WRONG = 2  # a row's margin needs the spread of at least this many wrong candidates


def row_margins(scores: Float[torch.Tensor, "R C"], target: torch.Tensor) -> torch.Tensor:
    """Per row r of ``scores`` (a -inf entry is no candidate: a causal mask), the recall margin
    of its right candidate ``target[r]``:

        m_r = (s[r, y_r] - max_{j != y_r} s[r, j]) / sd_{j != y_r}(s[r, j])

    with sd the population standard deviation over the wrong candidates. m_r > 0 exactly when
    y_r wins the argmax (argmax recall is the share of rows with m_r > 0), and it keeps growing
    after every row wins, where argmax recall stops at 1. Dividing by the wrong candidates'
    spread makes m_r invariant under s[r] -> a s[r] + b (a > 0): memories read through parts of
    different norms compare (trained against frozen embeddings), as softmax attention and logits
    are invariant to a shift per row. For a random memory the right score is one more draw among
    the n - 1 competitors, so m_r is about -E[max of n - 1 standard normals] (-2.4 at n = 65).
    A row with fewer than ``MIN_WRONG`` wrong candidates is NaN; a row whose wrong candidates
    all score the same gives +inf (right above them), -inf (below) or NaN (tied). Returns [R]."""
    s = _dense(scores).double()
    check(s.ndim == 2 and s.shape[1] >= 1, "scores", tuple(s.shape), "[rows, candidates]")
    R = s.shape[0]
    y = torch.as_tensor(target).long().cpu().flatten()
    check(y.shape == (R,) and (R == 0 or (int(y.min()) >= 0 and int(y.max()) < s.shape[1])),
          "target", tuple(y.shape), f"[{R}] candidate indices below {s.shape[1]}")
    rows = torch.arange(R)
    wrong = torch.isfinite(s)
    wrong[rows, y] = False
    n = wrong.sum(1)
    mean = s.masked_fill(~wrong, 0.0).sum(1) / n.clamp(min=1)
    sd = ((s - mean[:, None]) ** 2).masked_fill(~wrong, 0.0).sum(1).div(n.clamp(min=1)).sqrt()
    gap = s[rows, y] - s.masked_fill(~wrong, float("-inf")).max(1).values
    scale = s.masked_fill(~torch.isfinite(s), 0.0).abs().amax(1)
    flat = sd <= 1e-12 * scale  # identical competitors up to rounding
    m = gap / torch.where(flat, torch.zeros_like(sd), sd)
    m[~torch.isfinite(s[rows, y]) | (n < MIN_WRONG) | (flat & (gap == 0))] = float("nan")
    return m.float()


def recall_margin(scores: Float[torch.Tensor, "R C"], target: torch.Tensor) -> float:
    """The median over rows of ``row_margins`` (NaN rows left out; NaN when every row is): the
    median, so a few rows whose competitors happen to be close together do not carry it."""
    m = row_margins(scores, target)
    m = m[~torch.isnan(m)]
    return float(m.median()) if len(m) else float("nan")


def previous_token_margin(qk: Float[torch.Tensor, "d d"], pos: Float[torch.Tensor, "T d"]
                          ) -> float:
    """``recall_margin`` of the previous-token memory: for each position t (with at least
    ``MIN_WRONG`` other causal keys, t >= 2), key t - 1 among the keys s <= t."""
    scores = previous_token_scores(qk, pos)
    return recall_margin(scores[1:], torch.arange(scores.shape[0] - 1))


def induction_key_margin(qk2: Float[torch.Tensor, "d d"], W_E: Float[torch.Tensor, "N d"],
                         ov1: Float[torch.Tensor, "d d"], tokens: torch.Tensor | None = None
                         ) -> float:
    """``recall_margin`` of the induction key: for each query token k of ``tokens`` (default:
    all), key token k among all key tokens k'."""
    scores = induction_key_scores(qk2, W_E, ov1)
    idx = _token_index(tokens, scores.shape[0])
    return recall_margin(scores[idx], idx)


def output_copy_margin(ov2: Float[torch.Tensor, "d d"], W_E: Float[torch.Tensor, "N d"],
                       W_U: Float[torch.Tensor, "d N"], tokens: torch.Tensor | None = None
                       ) -> float:
    """``recall_margin`` of the output copy: for each token k of ``tokens`` (default: all),
    output k among all outputs j."""
    scores = output_copy_scores(ov2, W_E, W_U)
    idx = _token_index(tokens, scores.shape[0])
    return recall_margin(scores[idx], idx)


# --- the hand-built construction -------------------------------------------------------------------
MEMORIES = {"W_K1": "W_K1 (previous token)", "W_K2": "W_K2 (induction key)",
            "W_O2": "W_O2 (output copy)", "W_F": "W_F (bigram)"}


@torch.no_grad()
def memory_parts(model: HookedTransformer) -> dict[str, torch.Tensor | None]:
    """What a 2-layer model's memories are read through: the token embeddings and positions as
    they enter the residual stream (``W_E`` [N, d], ``W_pos`` [T, d]: the embedding modules'
    outputs, so a concatenated join's halves are what the model sees; ``W_pos`` None without a
    positional table), the unembedding ``W_U`` [d, N] and layer 0's head-0 value-output map
    ``OV1`` [d, d]."""
    check(model.cfg.n_layers >= 2, "model", model.cfg.n_layers, "at least 2 layers")
    dev = model.W_E.device
    E = model.embed(torch.arange(model.cfg.d_vocab, device=dev)[None])[0]
    P = None
    if model.cfg.positional_embedding_type in ("standard", "shortformer"):
        P = model.pos_embed(torch.zeros(1, model.cfg.n_ctx, dtype=torch.long, device=dev))[0]
    return {"W_E": _dense(E), "W_pos": None if P is None else _dense(P),
            "W_U": _dense(model.W_U), "OV1": _dense(model.OV[0, 0])}


def construction_from(parts: dict[str, torch.Tensor | None], pi_b: torch.Tensor | None = None,
                      triggers: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """The paper's associative memories built from ``parts`` (``memory_parts``), row
    convention, e_k = rows of W_E, p_t = rows of W_pos, u_j = column j of W_U:
    QK1 = Σ_t p_tᵀ p_{t-1} (only with W_pos); QK2 = Σ_k e_kᵀ (e_k OV1) (k over ``triggers``,
    default all); OV2 = Σ_k e_kᵀ u_kᵀ; W_F = Σ_k e_kᵀ Σ_j π_b(j|k) u_jᵀ (k over non-triggers;
    only with ``pi_b``). Keys: ``MEMORIES``' values."""
    E, P, U, ov1 = parts["W_E"], parts["W_pos"], parts["W_U"], parts["OV1"]
    Et = E if triggers is None else E[_token_index(triggers, E.shape[0])]
    out = {}
    if P is not None:
        out[MEMORIES["W_K1"]] = P[1:].T @ P[:-1]
    out[MEMORIES["W_K2"]] = Et.T @ (Et @ ov1)
    out[MEMORIES["W_O2"]] = E.T @ U.T
    if pi_b is not None:
        pi = pi_b.detach().float().cpu().clone()
        if triggers is not None:
            pi[_token_index(triggers, E.shape[0])] = 0.0
        out[MEMORIES["W_F"]] = E.T @ (pi @ U.T)
    return out


def construction(model: HookedTransformer, pi_b: torch.Tensor,
                 triggers: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """``construction_from`` the model's own parts (``memory_parts``); W_F only when the model
    has one."""
    with torch.no_grad():
        built = construction_from(memory_parts(model), pi_b, triggers)
    if feed_forward_matrix(model) is None:
        built.pop(MEMORIES["W_F"], None)
    return built


def trained_matrices(model: HookedTransformer) -> dict[str, torch.Tensor]:
    """The model's counterparts of ``construction``: QK1, QK2, OV2 (head 0) and W_F."""
    out = {MEMORIES["W_K1"]: _dense(model.QK[0, 0]),
           MEMORIES["W_K2"]: _dense(model.QK[1, 0]),
           MEMORIES["W_O2"]: _dense(model.OV[1, 0])}
    W_F = feed_forward_matrix(model)
    if W_F is not None:
        out[MEMORIES["W_F"]] = _dense(W_F)
    return out


def _memory_margin(short: str, M: torch.Tensor, parts: dict[str, torch.Tensor | None],
                   triggers: torch.Tensor | None) -> float:
    if short == "W_K1":
        return previous_token_margin(M, parts["W_pos"])
    if short == "W_K2":
        return induction_key_margin(M, parts["W_E"], parts["OV1"], triggers)
    return output_copy_margin(M, parts["W_E"], parts["W_U"])


@torch.no_grad()
def memory_reading(model: HookedTransformer, parts: dict[str, torch.Tensor | None] | None = None,
                   pi_b: torch.Tensor | None = None, triggers: torch.Tensor | None = None,
                   non_triggers: torch.Tensor | None = None, n_null: int = 8,
                   null_seed: int = 0) -> dict[str, dict[str, float]]:
    """Each memory of a 2-layer model (``trained_matrices``: QK¹, QK², OV² of head 0, W_F) read
    through ``parts`` (``memory_parts`` of some model; default: the model's own), so that two
    models can be read through the same embeddings. Per memory (``W_K1``, ``W_K2``, ``W_O2``):

    * ``margin``: its recall margin (W_K¹ over positions, W_K² over ``triggers``, default all
      tokens, W_O² over all tokens);
    * ``built``: the margin of the hand-built construction (``construction_from(parts)``);
    * ``null``: the mean margin of ``n_null`` random memories (i.i.d. Gaussian [d, d] from a
      generator seeded ``null_seed``), all read through the same parts;
    * ``share``: (margin - null) / (built - null), the way from a random memory (0) to the
      construction (1): comparable across runs whose parts differ in norm or shape (NaN where
      the construction is no better than the null);
    * ``cosine``: ``matrix_cosine(memory, construction)``.

    W_F (where the model has one and ``pi_b`` is given): ``kl`` (``bigram_kl_probe`` through the
    parts, over ``non_triggers``) and ``cosine``. W_K¹ is NaN without positions."""
    parts = memory_parts(model) if parts is None else parts
    mats = trained_matrices(model)
    built = construction_from(parts, pi_b if MEMORIES["W_F"] in mats else None, triggers)
    gen = torch.Generator().manual_seed(null_seed)
    d = parts["W_E"].shape[1]
    nulls = [torch.randn(d, d, generator=gen) for _ in range(n_null)]
    nan = float("nan")
    out: dict[str, dict[str, float]] = {}
    for short in ("W_K1", "W_K2", "W_O2"):
        name = MEMORIES[short]
        if name not in built:
            out[short] = {k: nan for k in ("margin", "built", "null", "share", "cosine")}
            continue
        M, B = mats[name], built[name]
        row = {"margin": _memory_margin(short, M, parts, triggers),
               "built": _memory_margin(short, B, parts, triggers),
               "null": sum(_memory_margin(short, R, parts, triggers) for R in nulls) / n_null,
               "cosine": matrix_cosine(M, B)}
        reach = row["built"] - row["null"]
        row["share"] = (row["margin"] - row["null"]) / reach if reach > 0 else nan
        out[short] = row
    if MEMORIES["W_F"] in built:
        M = mats[MEMORIES["W_F"]]
        out["W_F"] = {"kl": bigram_kl_probe(M, parts["W_E"], parts["W_U"], pi_b, non_triggers),
                      "cosine": matrix_cosine(M, built[MEMORIES["W_F"]])}
    return out


def matrix_cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """⟨A, B⟩_F / (‖A‖_F ‖B‖_F): 1 = the same matrix up to a positive scale, ~0 = unrelated."""
    a, b = _dense(a), _dense(b)
    return float((a * b).sum() / (a.norm() * b.norm()).clamp(min=1e-30))


# --- attention on trigger data -------------------------------------------------------------------
def previous_token_attention(pattern: Float[torch.Tensor, "B H T T"]) -> Float[torch.Tensor, "H"]:  # noqa: F821 (jaxtyping)
    """Mean attention from position t to t - 1 (t >= 1), per head."""
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).mean((0, -1)).cpu()


def trigger_induction_attention(pattern: Float[torch.Tensor, "B H T T"], tokens: torch.Tensor,
                                in_context: torch.Tensor) -> Float[torch.Tensor, "H"]:  # noqa: F821 (jaxtyping)
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
