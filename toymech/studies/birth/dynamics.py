"""Study 2 through training: the memories, the accuracies and the attention of one snapshot.

``probe_data`` draws the fixed data once: the run's test (and OOD) set from its ``eval`` stream,
as ``evaluate_sets`` does, and the sequence shown from its ``example`` stream. ``dynamics_metrics``
and ``dynamics_patterns`` are then pure functions of a model, called at every training snapshot.
The probes are the training callback's (``callbacks.birth_callback``), read from the same
functions; the accuracies and attention scores here are on the evaluation set rather than the
callback's probe batch, so the last snapshot matches the study's tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformer_lens import HookedTransformer

from ...analysis import composition_scores, probes
from ...core import Setting, check
from ...tasks import Batch
from ...tasks.bigram_triggers import BigramTriggers
from ..protocol import ProbeData, size_of
from .callbacks import trigger_sets
from .causal import BirthCausalData, causal_data, causal_metrics
from .design import SIZES, eval_sets
from .measure import example_batch

# The paper's order of formation (global bigram first, then the induction head top-down: output
# memory W_O², induction key W_K², previous-token key W_K¹), then in-context accuracy.
DYNAMICS_METRICS = ("bigram_acc", "probe_wo2", "probe_wk2", "probe_wk1", "icl_acc")
# The patching effects at each snapshot (``causal.causal_metrics``), drawn in the scrubber with
# their transition steps beside DYNAMICS_METRICS; N_CAUSAL sequences of the probe stream (fewer
# than the seed's causal numbers, 256: 16-24 snapshots of a run).
CAUSAL_SHOWN = ("causal_head_moves", "causal_value_moves", "causal_k_share")
N_CAUSAL = 64
WINDOW = 64  # most positions shown by ``dynamics_patterns``


@dataclass(frozen=True)
class BirthProbeData(ProbeData):
    """What every snapshot is measured on.

    size, seed: the run's size and seed (the probe batch and the baselines derive from them).
    test / ood: the run's evaluation sets (``eval_sets``; ``ood`` None where the task has no
        held-out triggers). triggers / non_triggers: token ids the W_K² and W_F probes run over
        (None: all tokens, for random triggers). example: [<= WINDOW] token ids shown by
        ``dynamics_patterns``. causal: the causal tests' sequences (``causal.causal_data``,
        ``n_causal`` of them; None: no patching at the snapshots).
    """

    task: BigramTriggers
    size: Setting | str
    seed: int
    test: Batch
    ood: Batch | None
    triggers: torch.Tensor | None
    non_triggers: torch.Tensor | None
    example: torch.Tensor
    causal: BirthCausalData | None = None


def probe_data(task: BigramTriggers, size: Setting | str, seed: int,
               device: str | torch.device = "cpu", *, eval_n: int | None = None,
               window: int = WINDOW, n_causal: int | None = N_CAUSAL) -> BirthProbeData:
    """The fixed data of ``task``'s run with seed ``seed`` at ``size``, on ``device``
    (``eval_n`` sequences per set; None: the size's ``eval_n``; ``n_causal``: the sequences of
    the causal (patching) measurements, None: none).

    The example: of 8 sequences from the ``example`` stream, cut to their first ``window``
    positions, the first with the most distinct triggers seen twice in the window, preferring
    sequences where no trigger's output is itself a trigger (a chain such as a -> a repeats
    one token to the end and hides the mechanism). The window starts at position 0, so each
    query row keeps all of its attention (rows sum to 1); ``window`` >= the sequence length
    shows the whole sequence.
    """
    n = size_of(SIZES, size).eval_n if eval_n is None else eval_n
    check(isinstance(n, int) and n >= 1, "eval_n", eval_n, "None or an integer >= 1")
    check(isinstance(window, int) and window >= 2, "window", window, "an integer >= 2")
    sets = eval_sets(task, size, seed, device, n=n)
    ex = example_batch(task, seed, 8, device)
    cut = min(window, task.seq_len)
    row = _example_row(ex, cut)
    triggers, non_triggers = trigger_sets(task)
    patched = (None if n_causal is None or task.variant == "no_triggers"  # nothing to patch
               else causal_data(task, seed, n_causal, device))
    return BirthProbeData(task, size, seed, sets["test"], sets.get("ood"), triggers, non_triggers,
                     ex.tokens[row, :cut], patched)


def _example_row(batch: Batch, cut: int) -> int:
    """Index of the sequence ``probe_data`` shows (see there)."""
    tokens, outputs = batch.tokens[:, :cut], batch.extras["outputs"]  # [B, cut], [B, N]
    # in_context[b, t + 1]: tokens[b, t] is a trigger seen before (its output is in context)
    queried = torch.zeros_like(outputs).scatter_add_(
        1, tokens[:, :-1], batch.extras["in_context"][:, 1:cut].long())  # [B, N]
    nxt = outputs.gather(1, outputs.clamp(min=0))  # output of each trigger's output
    chained = ((outputs >= 0) & (nxt >= 0)).any(1)
    score = (~chained).long() * (outputs.shape[1] + 1) + (queried > 0).sum(1)
    return int(score.argmax())


@torch.no_grad()
def dynamics_metrics(model: HookedTransformer, data: BirthProbeData) -> dict[str, float]:
    """One snapshot's numbers, ``model`` measured on the probe data ``data``.

    The study's numbers for one snapshot (all floats)::

        ``test_loss``, ``test_acc``     over all targets of the test set; ``icl_loss``, ``icl_acc``
            over its in-context targets (a trigger's output read from context), ``bigram_loss``,
            ``bigram_acc`` over the targets after a non-trigger (``split_metrics``; NaN where the
            set has no target of that kind, e.g. ``icl_*`` of the ``no_triggers`` variant);
        ``ood_icl_acc``                 in-context accuracy with triggers never used as triggers in
            training (only where the task has such a set);
        ``probe_wk1``, ``probe_wk2``, ``probe_wo2``   argmax recall of the previous-token key W_K¹,
            the induction key W_K² and the output memory W_O² (1.0 = a perfect associative memory);
            ``probe_wf_kl`` KL(π_b ‖ W_F's bigram) in nats where the model has a W_F
            (``probes.model_probes``);
        ``attn_prev``                   layer 0's attention to the previous token (best head);
        ``attn_induction``              layer 1's attention from an in-context query to the token after
            an earlier copy of it (best head);
        ``kcomp``                       the largest layer-0 -> layer-1 K-composition score.
    """
    dev = model.cfg.device
    test = data.test.to(dev)
    logits, cache = model.run_with_cache(test.tokens,
                                         names_filter=lambda n: n.endswith("hook_pattern"))
    m = data.task.metrics(logits, test)
    out = {"test_loss": m["loss"], "test_acc": m["acc"]}
    out.update({k: m[k] for k in ("icl_loss", "icl_acc", "bigram_loss", "bigram_acc")})
    if data.ood is not None:
        ood = data.ood.to(dev)
        out["ood_icl_acc"] = data.task.metrics(model(ood.tokens), ood)["icl_acc"]
    out.update(probes.model_probes(model, data.task.pi_b, data.triggers, data.non_triggers))
    out["attn_prev"] = float(probes.previous_token_attention(cache["pattern", 0]).max())
    out["attn_induction"] = float(probes.trigger_induction_attention(
        cache["pattern", 1], test.tokens, test.extras["in_context"]).max())
    out["kcomp"] = float(composition_scores(model, "K")[0, :, 1, :].max())
    if data.causal is not None:  # ``causal.causal_metrics``: shares of sequences / of log p(a)
        out.update({f"causal_{k}": v for k, v in causal_metrics(model, data.causal).items()})
    return out

