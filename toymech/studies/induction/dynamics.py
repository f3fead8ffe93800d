"""Study 1 through training: the numbers and the attention patterns of one model at one snapshot.

``probe_data`` draws the fixed evaluation data once (the run's ``eval`` stream for the sets and
the pattern scores, its ``example`` stream for the sequence shown); ``dynamics_metrics`` and
``dynamics_patterns`` are then pure functions of a model, called at every training snapshot
(``metric_curves(entry, lambda m: dynamics_metrics(m, data))``). At the last snapshot the
numbers are those of ``measure`` (same sets, same functions).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformer_lens import HookedTransformer

from ... import analysis
from ...core import Setting, check, seed_for
from ...devices import make_generator
from ...tasks import Batch
from ...tasks.repeated_blocks import RepeatedBlocks
from ..protocol import ProbeData
from .causal import CausalData, causal_data, causal_metrics
from .design import eval_sets
from .measure import POST_SETS

# Whose transition steps the notebook compares ("which circuit forms first"). ``kcomp_max``
# exists for 2-layer models only: keep the names a model's curves have.
DYNAMICS_METRICS = ("direct_copy", "prev_token_max", "kcomp_max", "qcomp_max", "induction_max",
                    "repeat_loss", "option1_loss")
# The patching effects through training (``causal.causal_metrics``), drawn in the scrubber with
# their transition steps beside DYNAMICS_METRICS.
CAUSAL_SHOWN = ("causal_k_drop", "causal_q_drop", "causal_v_drop", "causal_layer1_restored")
PATTERN_KINDS = {"prev_token_max": "previous_token", "induction_max": "induction"}


@dataclass(frozen=True)
class InductionProbeData(ProbeData):
    """What every snapshot is measured on.

    sets: the study's ``eval_sets`` (the post's sets ``POST_SETS`` and the mechanism sets), so
        the final snapshot matches the loss table; the snapshots' losses read the post's sets.
    pattern_tokens: [n_pattern, seq] test sequences for the head pattern scores (as
        ``measure_all``).
    example: [seq] one training-distribution sequence whose block has distinct letters (the
        induction pattern is then unambiguous), from the ``example`` stream.
    seed: the run's seed; causal: the causal tests' batches of that seed (``probe`` stream,
        ``n_causal`` of each kind).
    """

    task: RepeatedBlocks
    sets: dict[str, Batch]
    pattern_tokens: torch.Tensor
    example: torch.Tensor
    seed: int = 0
    causal: CausalData | None = None  # the causal tests' batches (``causal.causal_data``)


def probe_data(task: RepeatedBlocks, size: Setting | str, seed: int,
               device: str | torch.device = "cpu", *, n_pattern: int = 64,
               eval_n: int | None = None, n_causal: int = 256) -> InductionProbeData:
    """The fixed data of ``task``'s run with seed ``seed`` at ``size``, on ``device`` (see
    ``InductionProbeData``). ``eval_n`` keeps the first ``eval_n`` sequences of each set (None:
    all of the size's ``eval_n``; the losses are most of the cost of a snapshot); ``n_pattern``:
    the sequences the attention-pattern scores read; ``n_causal``: the pairs of the causal
    (patching) measurements."""
    check(isinstance(n_pattern, int) and n_pattern >= 1, "n_pattern", n_pattern,
          "an integer >= 1")
    check(eval_n is None or (isinstance(eval_n, int) and eval_n >= 1), "eval_n", eval_n,
          "None or an integer >= 1")
    dev = torch.device(device)
    sets = eval_sets(task, size, seed, dev)
    candidates = task.sample(16, make_generator(seed_for(seed, "example"), dev)).tokens
    shortest = min(task.block_lens)
    block = candidates[:, :shortest]
    distinct = torch.tensor([len(set(row.tolist())) == shortest for row in block])
    row = int(distinct.float().argmax())  # the first with distinct letters (else row 0)
    keep = slice(None, eval_n)
    return InductionProbeData(task, {k: Batch(sets[k].tokens[keep], sets[k].scored[keep],
                                  {e: v[keep] for e, v in sets[k].extras.items()})
                            for k in sets},
                     sets["test"].tokens[:n_pattern], candidates[row], seed,
                     causal_data(task, seed, n_causal, dev))


@torch.no_grad()
def dynamics_metrics(model: HookedTransformer, data: InductionProbeData) -> dict[str, float]:
    """One snapshot's numbers, ``model`` measured on the probe data ``data``.

    The study's numbers for one snapshot (all floats, keyed by short stable names)::

        ``{set}_loss``         cross-entropy (nats) on each of ``data.sets``;
        ``direct_copy``        copy metric Re(Σλ)/Σ|λ| of the direct path W_E W_U;
        ``copy_max_L{l}``, ``copy_min_L{l}``   max / min over layer l's heads of the copy metric
                               of the full OV circuit W_E W_V W_O W_U;
        ``prev_token_max``, ``induction_max``  max over all heads of the previous-token and
                               induction pattern scores Σ(A ⊙ D)/ΣA on ``data.pattern_tokens``;
        ``kcomp_max``, ``kcomp_baseline``      (2-layer models only) the largest layer-0 -> layer-1
                               K-composition score and the mean score of random matrices of the
                               same shapes (constant through training: the reference line);
        ``qcomp_max``, ``qcomp_baseline``      the same for Q-composition;
        ``first_block_loss``, ``repeat_loss``  the test loss per position, averaged over the first
                               block's targets (guesses: ln 26 at best) and over the repeats (what
                               copying can predict).
    """
    post = {k: data.sets[k] for k in POST_SETS if k in data.sets}
    out = {f"{name}_loss": v for name, v in analysis.set_losses(model, post).items()}
    out["direct_copy"] = analysis.direct_path_copy_score(model)
    heads = analysis.ov_copy_scores(model)  # [L, H]
    for layer in range(heads.shape[0]):
        out[f"copy_max_L{layer}"] = float(heads[layer].max())
        out[f"copy_min_L{layer}"] = float(heads[layer].min())
    scores = analysis.head_pattern_scores(model, data.pattern_tokens,
                                          kinds=tuple(PATTERN_KINDS.values()))
    for key, kind in PATTERN_KINDS.items():
        out[key] = float(scores[kind].max())
    if model.cfg.n_layers == 2:
        out["kcomp_max"] = float(analysis.composition_scores(model, "K").max())
        out["kcomp_baseline"] = analysis.composition_baseline(model, "K")[0]
        out["qcomp_max"] = float(analysis.composition_scores(model, "Q").max())
        out["qcomp_baseline"] = analysis.composition_baseline(model, "Q")[0]
    if data.causal is not None:  # the patching effects, in logits (``causal.causal_metrics``)
        out.update({f"causal_{k.replace('pref_clean', 'pref')}": v
                    for k, v in causal_metrics(model, data.causal).items()})
    per_position = analysis.per_position_loss(model, data.sets["test"])  # target t = 1..seq-1
    first = min(data.task.offsets) + min(data.task.block_lens) - 1  # surely guesses
    out["first_block_loss"] = float(per_position[:first].mean())
    out["repeat_loss"] = float(per_position[first:].mean())
    return out

