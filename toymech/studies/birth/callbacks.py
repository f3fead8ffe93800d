"""Study 2's training callback: the memory probes and attention scores, recorded through training.

The callback reads one fixed batch drawn from the run's ``probe`` stream (``seed_for(seed,
'probe')``), so what it records depends only on the run's seed, never on the training data.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from transformer_lens import HookedTransformer

from ...analysis.circuits import composition_baseline, composition_scores
from ...analysis.probes import (
    linear_probe,
    model_probes,
    previous_token_attention,
    trigger_induction_attention,
)
from ...core import check, seed_for
from ...tasks.base import Task

# Zoo tag of runs whose history holds the callback's keys. v2: the probe batch and the linear
# probe's split come from the 'probe' stream (v1: seed + 7,777 and seed).
PROBE_TAG = "birth-probes-v2"


def trigger_sets(task: Task) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(triggers, non-triggers) token ids of a fixed-trigger mixed task; (None, None) otherwise
    (random triggers: every token can be one, so the probes run over all tokens)."""
    if getattr(task, "trigger_mode", None) != "fixed" or getattr(task, "variant", "") != "mixed":
        return None, None
    triggers = task.fixed_triggers
    mask = torch.ones(task.d_vocab, dtype=torch.bool)
    mask[triggers] = False
    return triggers, torch.arange(task.d_vocab)[mask]


def birth_callback(task: Task, n_sequences: int = 64, seed: int = 0, every: int = 1,
                   linear_probes: bool = True
                   ) -> Callable[[int, HookedTransformer], dict[str, float]]:
    """A ``train`` callback recording, at every ``every``-th evaluation, on a fixed batch of
    ``n_sequences`` task sequences from the run's 'probe' stream: the memory probes,
    in-context/bigram loss and accuracy (``cb_*``), previous-token attention of layer 0
    (``attn_prev``) and trigger-induction attention of layer 1 (``attn_induction``, with the
    value uniform causal attention gives), the best layer-0 -> layer-1 K-composition score with
    its random baseline, and (optionally) a linear probe for the previous token on layer 1's
    input residual (held-out accuracy, ``linprobe_prev``)."""
    check(isinstance(every, int) and every >= 1, "every", every, "an integer >= 1")
    probe_seed = seed_for(seed, "probe")
    # A CPU generator: the batch is drawn before the callback sees the model's device, and the
    # recorded history then does not depend on the device either.
    batch = task.sample(n_sequences, torch.Generator().manual_seed(probe_seed))
    pi_b = getattr(task, "pi_b", None)
    triggers, non_triggers = trigger_sets(task)
    state = {"calls": 0, "baseline": None}
    T = batch.tokens.shape[1]
    uniform = torch.ones(T, T).tril()
    uniform = (uniform / uniform.sum(-1, keepdim=True))[None, None].expand(len(batch), 1, T, T)
    uniform_induction = (float(trigger_induction_attention(uniform, batch.tokens,
                                                           batch.extras["in_context"])[0])
                         if "in_context" in batch.extras else None)

    @torch.no_grad()
    def callback(step: int, model: HookedTransformer) -> dict[str, float]:
        state["calls"] += 1
        if (state["calls"] - 1) % every:
            return {}
        b = batch.to(model.cfg.device)
        logits, cache = model.run_with_cache(
            b.tokens, names_filter=lambda n: (n.endswith("hook_pattern")
                                              or n == "blocks.0.hook_resid_post"))
        row = {f"cb_{k}": v for k, v in task.metrics(logits, b).items()}
        row.update(model_probes(model, pi_b, triggers, non_triggers))
        row["attn_prev"] = float(previous_token_attention(cache["pattern", 0]).max())
        if "in_context" in b.extras:
            row["attn_induction"] = float(trigger_induction_attention(
                cache["pattern", 1], b.tokens, b.extras["in_context"]).max())
            row["attn_induction_uniform"] = uniform_induction
        row["kcomp"] = float(composition_scores(model, "K")[0, :, 1, :].max())
        if state["baseline"] is None:
            state["baseline"] = composition_baseline(model, "K", n_samples=50)[0]
        row["kcomp_baseline"] = state["baseline"]
        if linear_probes:
            # the same train/held-out split at every step, so the curve shows the model change
            acts = cache["blocks.0.hook_resid_post"][:, 1:]
            labels = b.tokens[:, :-1]
            res = linear_probe(acts.reshape(-1, acts.shape[-1]), labels.reshape(-1),
                               model.cfg.d_vocab, torch.Generator().manual_seed(probe_seed))
            row["linprobe_prev"] = res["test_acc"]
        return row

    return callback
