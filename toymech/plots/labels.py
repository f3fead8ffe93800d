"""One label map for every figure: raw metric keys (``qcomp_max``, ``probe_wk1``, ``icl_acc``) to
what a reader reads on a legend or an axis, with units.

    label("probe_wk1")       -> "W_K¹ recall: previous token"
    axis_title("eval_loss")  -> "held-out loss (nats)"

Every figure builder in ``toymech.plots`` names its traces and axes through these functions, so a
new metric needs one line here. A key that is not in the map is shown with its underscores
replaced by spaces (``tests/test_plots.py`` checks that the keys the studies record are mapped).
"""

from __future__ import annotations

ACC = "fraction correct"
NATS = "nats"
SCORE = "score, 0 to 1"
COMP = "composition score"
MEMORY_SHARE = "share of the way from a random memory (0) to the construction (1)"

# key -> (label, unit or None)
LABELS: dict[str, tuple[str, str | None]] = {
    # losses
    "loss": ("loss", NATS),
    "eval_loss": ("held-out loss", NATS),
    "train_loss": ("training loss", NATS),
    "test_loss": ("test loss", NATS),
    "icl_loss": ("in-context loss", NATS),
    "bigram_loss": ("loss at the bigram positions", NATS),
    "repeat_loss": ("loss on the repeated blocks", NATS),
    "option1_loss": ("option-1 loss (continue with the first block)", NATS),
    "option2_loss": ("option-2 loss (continue with the latest block)", NATS),
    "kl": ("KL(target ‖ student)", NATS),
    "probe_wf_kl": ("W_F bigram memory: KL(π_b ‖ W_F recall)", NATS),
    # accuracies
    "acc": ("test accuracy", ACC),
    "eval_acc": ("held-out accuracy", ACC),
    "test_acc": ("test accuracy", ACC),
    "train_acc": ("training accuracy", ACC),
    "icl_acc": ("in-context accuracy", ACC),
    "cb_icl_acc": ("in-context accuracy", ACC),
    "ood_icl_acc": ("in-context accuracy, triggers never seen as triggers", ACC),
    "bigram_acc": ("bigram accuracy", ACC),
    "cb_bigram_acc": ("bigram accuracy", ACC),
    # memory-recall probes (Birth of a Transformer)
    "probe_wk1": ("W_K¹ recall: previous token", ACC),
    "probe_wk2": ("W_K² recall: induction key", ACC),
    "probe_wo2": ("W_O² recall: output copy", ACC),
    "probe_share_wk1": ("W_K¹ recall margin: previous token", MEMORY_SHARE),
    "probe_share_wk2": ("W_K² recall margin: induction key", MEMORY_SHARE),
    "probe_share_wo2": ("W_O² recall margin: output copy", MEMORY_SHARE),
    "linprobe_prev": ("linear probe: previous token", ACC),
    # attention and composition
    "attn_prev": ("layer 0: attention to the previous token", "attention weight"),
    "attn_induction": ("layer 1: attention to the output after an earlier trigger", "attention weight"),
    "attn_induction_uniform": ("layer 1: what uniform attention would give", "attention weight"),
    "kcomp": ("K-composition, layer 0 → layer 1", COMP),
    "kcomp_baseline": ("K-composition of random matrices", COMP),
    "kcomp_max": ("largest K-composition score", COMP),
    "qcomp_max": ("largest Q-composition score", COMP),
    "qcomp_baseline": ("Q-composition of random matrices", COMP),
    "prev_token_max": ("best previous-token score of a head", SCORE),
    "induction_max": ("best induction score of a head", SCORE),
    "duplicate_max": ("best duplicate-token score of a head", SCORE),
    "previous_token": ("previous-token score", SCORE),
    "induction": ("induction score", SCORE),
    "duplicate_token": ("duplicate-token score", SCORE),
    # circuits and subspaces
    "causal_q_drop": ("causal: option-1 preference lost with the layer-0 → layer-1 query path noised",
                      "logit difference"),
    "causal_k_drop": ("causal: option-1 preference lost with the layer-0 → layer-1 key path noised",
                      "logit difference"),
    "causal_v_drop": ("causal: option-1 preference lost with the layer-0 → layer-1 value path noised",
                      "logit difference"),
    "causal_layer1_restored": ("causal: preference restored by patching layer 1's output",
                               "logit difference"),
    "causal_head_moves": ("causal: sequences moved to the patched output (induction head)",
                          "fraction of sequences"),
    "causal_value_moves": ("causal: sequences moved to the patched output (W_O² value path)",
                           "fraction of sequences"),
    "causal_k_share": ("causal: share of log p(output) the W_K² key path restores",
                       "fraction restored"),
    # Birth's other causal numbers (birth.causal.output_effects / key_effects)
    "causal_clean_gap": ("causal: logit gap a - b, clean run", "logits"),
    "causal_corrupted_gap": ("causal: logit gap a - b, output-swapped run", "logits"),
    "causal_head_effect": ("causal: share of the gap restored by patching layer 2's head",
                           "fraction restored"),
    "causal_value_effect": ("causal: share of the gap restored by patching layer 2's value "
                            "input (W_O² path)", "fraction restored"),
    "causal_clean_moves": ("causal: clean sequences predicting a, no patch", "fraction of sequences"),
    "causal_corrupted_moves": ("causal: output-swapped sequences predicting a, no patch",
                               "fraction of sequences"),
    "causal_q_share": ("causal: share of log p(output) the layer-1 -> layer-2 query path restores",
                       "fraction restored"),
    "causal_v_share": ("causal: share of log p(output) the layer-1 -> layer-2 value path restores",
                       "fraction restored"),
    "causal_clean_logp": ("causal: log p(output), clean run", "nats"),
    "causal_corrupted_logp": ("causal: log p(output), trigger-swapped run", "nats"),
    "direct_copy": ("direct-path copy metric Σλ/Σ|λ|", "−1 suppresses, +1 copies"),
    "ev": ("explained variance of the top-k principal directions (k: an eighth of the width)",
           "fraction of variance"),
    "ev_principal_mean": ("explained variance of the top-k principal directions (k: an eighth of "
                          "the width), mean over layers", "fraction of variance"),
    # axes
    "step": ("training step", None),
    "width": ("width d_model", None),
    "target_width": ("target width d_model", None),
    "K": ("number of triggers K", None),
    "seed": ("seed", None),
}


def label(key: str) -> str:
    """The readable name of ``key`` (no unit)."""
    if key in LABELS:
        return LABELS[key][0]
    return str(key).replace("_", " ")


def unit(key: str) -> str | None:
    """The unit of ``key`` (None when it has none or is unknown)."""
    return LABELS[key][1] if key in LABELS else None


def axis_title(key: str) -> str:
    """``label (unit)``, for an axis that shows ``key`` alone."""
    u = unit(key)
    return f"{label(key)} ({u})" if u else label(key)


def shared_axis_title(keys, fallback: str = "value") -> str:
    """The axis title of several keys on one axis: their common unit, or ``fallback``."""
    units = {unit(k) for k in keys}
    if len(keys) == 1:
        return axis_title(next(iter(keys)))
    return next(iter(units)) if len(units) == 1 and None not in units else fallback
