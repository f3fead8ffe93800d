"""Study 1: train or load the models, measure them, and tabulate what was measured."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from transformer_lens import HookedTransformer

from ... import analysis
from ...analysis.dynamics import history_still_learning
from ...core import Setting, check
from ...devices import initial_threads
from ...display import attention_caption, focus_head
from ...display import attention_view as view
from ...sweep import train_missing
from ...tasks import Batch
from ...tasks.repeated_blocks import RepeatedBlocks
from ...zoo import Zoo, ZooEntry
from ..states import LEARNED, STILL_LEARNING, UNDECIDED, UNTRAINED
from .claims import COPYING, POST, POST_PATHS, SUPPRESSING
from .design import experiment
from .own_sets import own_bars, own_judge
from .panel import MARGIN, TELLS, bars, margin_bounds, margin_draws, set_predictions

POST_SETS = ("test", "doubled", "option1", "option2")
MECHANISM_SETS = ("predictable", "shifted", "shorter", "longer")


@dataclass(frozen=True, eq=False)
class Model:
    """A trained model of the study with everything the notebook shows about it: as loaded, only
    ``name`` and ``entry`` (or ``module``); ``measure`` returns a new one with the rest filled in.
    Frozen: nothing measures a model in place (compared by identity: its fields hold tensors)."""

    name: str
    entry: ZooEntry | None
    losses: dict[str, float] = field(default_factory=dict)
    direct_copy: float = float("nan")
    head_copy: torch.Tensor | None = None
    pattern_scores: dict[str, torch.Tensor] = field(default_factory=dict)
    ablations: dict[str, dict[str, float]] = field(default_factory=dict)
    paths: dict[str, float] = field(default_factory=dict)  # 2-layer: composition_path_losses
    module: HookedTransformer | None = None  # a model without a zoo entry (e.g. untrained)

    @property
    def model(self) -> HookedTransformer:
        return self.module if self.module is not None else self.entry.model


def learning(m: Model) -> bool | None:
    """Whether the model ``m``'s logged loss was still falling at its end
    (``analysis.dynamics.history_still_learning``; None: the log cannot tell); False for a
    model without a zoo entry (never trained: judged untrained first)."""
    return False if m.entry is None else history_still_learning(m.entry.history)


def load_models(names, size: Setting | str, seed: int, device: torch.device,
                cache_dir: str | Path | None = None, progress: bool = True) -> dict[str, Model]:
    zoo = Zoo(cache_dir)
    if torch.device(device).type == "cpu":  # what is missing: one process per free core
        train_missing(zoo, [experiment(n, size, seed) for n in names],
                      workers=max(1, initial_threads()), device=device)
    out = {}
    for name in names:
        entry = zoo.get_or_train(experiment(name, size, seed), device=device,
                                 progress=progress)
        out[name] = Model(name, entry)
    return out


def measure(m: Model, sets: dict[str, Batch], pattern_tokens: torch.Tensor) -> Model:
    """``m`` measured (a new ``Model``; ``m`` is left as it is): losses per set, copy scores,
    attention-pattern scores on ``pattern_tokens``, single-head ablations and, for 2 layers, the
    composition path losses."""
    model = m.model
    ablated = {k: sets[k] for k in ("test", "predictable", "shorter", "longer") if k in sets}
    return replace(
        m, losses=analysis.set_losses(model, sets),
        direct_copy=analysis.direct_path_copy_score(model),
        head_copy=analysis.ov_copy_scores(model),
        pattern_scores=analysis.head_pattern_scores(model, pattern_tokens),
        ablations=analysis.ablation_losses(model, ablated),
        paths=analysis.composition_path_losses(model, sets["test"]) if model.cfg.n_layers == 2 else {})


def loss_table(models: dict[str, Model], floor: float) -> pd.DataFrame:
    """Our losses on the post's four sets, the post's figures beside them, and the floor."""
    rows = []
    for name, m in models.items():
        row: dict[str, Any] = {"model": name}
        for s in POST_SETS:
            row[s] = m.losses.get(s)
            row[f"{s} (post)"] = POST.get(name, {}).get(s)
        rows.append(row)
    df = pd.DataFrame(rows).set_index("model")
    df["test floor"] = floor
    return df.round(3)


def copy_table(models: dict[str, Model]) -> pd.DataFrame:
    """Copy metric of the direct path and of every head's full OV circuit."""
    rows = []
    for name, m in models.items():
        row: dict[str, Any] = {"model": name, "direct path": m.direct_copy}
        L, H = m.head_copy.shape
        for layer in range(L):
            for head in range(H):
                row[analysis.head_label(layer, head)] = float(m.head_copy[layer, head])
        rows.append(row)
    return pd.DataFrame(rows).set_index("model").round(3)


def mechanism_predictions(task: RepeatedBlocks, sets: Mapping[str, Batch]
                          ) -> dict[str, dict[str, analysis.Prediction]]:
    """The predictors without induction (``panel.NULL_FAMILY``) and induction itself on the
    mechanism sets of ``sets`` (``MECHANISM_SETS``, as ``eval_sets`` draws them for ``task``):
    ``panel.set_predictions``, the members fitted on the run's own predictable letters
    (``sets["predictable"]``), over ``task``'s ``n_letters``. They do not depend on a model:
    computed once per set of sets, the bar every model measured on them is judged against."""
    check(isinstance(sets, Mapping) and "predictable" in sets, "sets",
          sorted(sets) if isinstance(sets, Mapping) else sets,
          "the study's eval_sets (with 'predictable', the run's own predictable letters)")
    return set_predictions({k: sets[k] for k in MECHANISM_SETS if k in sets}, sets["predictable"],
                           task.n_letters)


def mechanism_baselines(task: RepeatedBlocks, sets: Mapping[str, Batch]
                        ) -> dict[str, dict[str, float]]:
    """The losses of ``mechanism_predictions(task, sets)`` (``panel.bars``): {set: {member, ...,
    "best", "oracle"}}, what ``mechanism_verdict`` and ``mechanism_label`` judge a model's losses
    on the same sets against."""
    return bars(mechanism_predictions(task, sets))


def mechanism_bounds(model: HookedTransformer, sets: Mapping[str, Batch],
                     predictions: Mapping[str, Mapping[str, analysis.Prediction]]
                     ) -> dict[str, dict[str, tuple[float, float]]]:
    """``model``'s margins' 95 % bootstrap intervals on the mechanism sets outside training
    (``panel.margin_bounds``; ``sets``: the study's ``eval_sets``; ``predictions``:
    ``mechanism_predictions`` of them)."""
    outside = [k for k in MECHANISM_SETS[1:] if k in sets and k in predictions]
    run = {k: analysis.model_prediction(model, sets[k]) for k in outside}
    return margin_bounds(margin_draws(run, {k: predictions[k] for k in outside}))


def mechanism_bars(base: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """What each mechanism set's loss is judged against (``base``: ``mechanism_baselines``;
    ``own_sets.OWN_SETS``): the in-context frequency copier on ``predictable`` (learned) and
    ``shifted`` (failed where not below it), the best predictor without induction on ``shorter``
    and ``longer`` (beaten ``MARGIN`` below it)."""
    return own_bars(base)


LABELS = ("content", "partial", "position")  # a learned run's labels; otherwise its state
_VERDICTS = {
    "content": "content-based (induction): beyond every predictor without induction on the "
               "other block lengths, and no set failed",
    "partial": "partial: beyond the predictors without induction on some of the other block "
               "lengths, or on all of them while failing {failed}",
    "position": "position: no better than a predictor without induction on the other block "
                "lengths ({shifted})",
}


def mechanism_verdict(losses: Mapping[str, float], base: Mapping[str, Mapping[str, float]],
                      learning: bool | None = False,
                      bounds: Mapping[str, Mapping[str, tuple[float, float]]] | None = None
                      ) -> str:
    """Which mechanism the losses on the mechanism sets point to, in words, by the maps' rule
    (``own_sets.own_judge``: the same label and states as ``mechanism_label``).

    ``losses``: {set: loss} on ``MECHANISM_SETS``; ``base``: the predictors on the same sets
    (``mechanism_baselines``); ``learning``: whether the run was still learning at its end;
    ``bounds``: its margins' intervals (``mechanism_bounds``; None: point estimates only). An
    induction mechanism (content-based) beats every predictor without induction on other block
    lengths and fails no set; a fixed offset back (relative position) solves a shifted start
    only, absolute position not even that.
    """
    v = own_judge(losses, base, learning, bounds)
    if v["state"] == UNTRAINED:
        return "not solved in distribution yet"
    if v["state"] == STILL_LEARNING:
        return "still learning: its loss was still falling at the end, no label yet"
    if v["state"] == UNDECIDED:
        return f"undecided: {v['undecided_because']}"
    shifted = ("a shifted start fails too: absolute position" if "shifted" in v["failed_on"]
               else "a shifted start is solved: a fixed offset back")
    return _VERDICTS[v["label"]].format(failed=", ".join(v["failed_on"]), shifted=shifted)


def mechanism_label(losses: Mapping[str, float], base: Mapping[str, Mapping[str, float]],
                    learning: bool | None = False,
                    bounds: Mapping[str, Mapping[str, tuple[float, float]]] | None = None
                    ) -> str:
    """The run's label by the maps' rule on its own mechanism sets (``own_sets.own_judge``; the
    sets of ``task.mechanism_sets`` lie outside its training distribution): ``content``,
    ``partial`` or ``position`` for a learned run, else its state (``untrained``, ``still
    learning``, ``undecided``), the one vocabulary of notebook, scorecard and maps.

    ``losses``: {set: loss}; ``base``: ``mechanism_baselines`` of the same sets; ``learning``:
    whether it was still learning at its end (None: the log cannot tell, read as still
    learning); ``bounds``: its margins' intervals (``mechanism_bounds``; None: point estimates
    only)."""
    v = own_judge(losses, base, learning, bounds)
    return v["label"] if v["state"] == LEARNED else str(v["state"])


BAR_ROW = "predictor without induction (the bar)"


def mechanism_table(models: dict[str, Model], base: Mapping[str, Mapping[str, float]]
                    ) -> pd.DataFrame:
    """Each model's loss on the mechanism sets and its ``mechanism_verdict`` (from its losses
    and whether it was still learning; the seed table's labels add the margins' intervals),
    under a last row (``BAR_ROW``) with the bar of each set (``mechanism_bars`` of ``base``, the
    ``mechanism_baselines`` of the sets the models were measured on)."""
    rows = []
    for name, m in models.items():
        row: dict[str, Any] = {"model": name}
        row.update({k: m.losses.get(k) for k in MECHANISM_SETS})
        row["verdict"] = mechanism_verdict(m.losses, base, learning(m))
        rows.append(row)
    rows.append({"model": BAR_ROW, **mechanism_bars(base),
                 "verdict": f"{MARGIN} nats below it: learned (predictable) or not failed "
                            "(shifted) against the in-context frequency copier; shorter, longer: "
                            "beyond the best predictor without induction, where that predictor "
                            f"gets less than {TELLS:.0%} of induction's gain"})
    return pd.DataFrame(rows).set_index("model").round(3)


def ablation_table(m: Model) -> pd.DataFrame:
    """Loss with each head zero-ablated, minus the unablated loss (nats), per set."""
    base = m.ablations["none"]
    rows = [{"head": k, **{s: v[s] - base[s] for s in v}} for k, v in m.ablations.items()
            if k != "none"]
    return pd.DataFrame(rows).set_index("head").round(3)


def _heads(scores: torch.Tensor, pred) -> list[str]:
    L, H = scores.shape
    return [analysis.head_label(l, h) for l in range(L) for h in range(H)
            if pred(float(scores[l, h]))]


def eigenvalue_sets(model: HookedTransformer) -> dict[str, torch.Tensor]:
    """Eigenvalues of the direct path and of each head's full OV circuit (name -> complex [n])."""
    out = {"direct path": analysis.eigenvalues(analysis.direct_path(model))}
    ov = analysis.eigenvalues(analysis.full_ov_circuits(model))
    for layer in range(ov.shape[0]):
        for head in range(ov.shape[1]):
            out[analysis.head_label(layer, head)] = ov[layer, head]
    return out


def attention_view(model: HookedTransformer, task: RepeatedBlocks, tokens: torch.Tensor,
                   scores: dict[str, torch.Tensor] | None = None, open: bool = True,
                   name: str | None = None):
    """circuitsvis view of every head (all layers) on one sequence, with a caption naming the
    model (``name``) and the heads worth looking at from their measured pattern scores
    (``scores``: kind -> [L, H], e.g. ``Model.pattern_scores``); ``open=False`` folds it."""
    check(name is None or (isinstance(name, str) and name.strip() != ""), "name", name,
          "None or the model's name")
    pats = analysis.attention_patterns(model, tokens)  # [L, H, q, k]
    L, H = pats.shape[:2]
    names = analysis.head_labels(L, H)
    caption, focus = None, None
    if scores:
        named = {k.replace("_", "-"): v for k, v in scores.items()}
        # the induction stripe: a query attends to the key one block length minus one back
        stripe = (f"a stripe {task.block_len - 1} positions below the diagonal (one block, "
                  f"{task.block_len} letters, minus one)" if isinstance(task.block_len, int) else
                  "a stripe one block length minus one below the diagonal")
        words = {"induction": "attends to the token after an earlier copy of the current one: "
                              + stripe}
        caption = attention_caption(named, head_names=names, words=words)
        focus = focus_head(named, head_names=names)
        caption += f" The view opens on {focus}."
    if name:
        caption = f"Model: {name}." + (f" {caption}" if caption else "")
    return view(task.str_tokens(tokens), pats.reshape(L * H, *pats.shape[2:]), names,
                caption=caption, open=open, focus=focus)


def path_table(model: HookedTransformer, batch: Batch) -> pd.DataFrame:
    """Loss with layer-1 queries/keys restricted to the direct path, beside the post's code."""
    ours = analysis.composition_path_losses(model, batch)
    return pd.DataFrame({"loss (nats)": ours, "post's code": POST_PATHS}).round(3)


def algorithm_in_words(m: Model, base: Mapping[str, Mapping[str, float]],
                       two_layer_baseline: float | None = None) -> str:
    """A short description of the model ``m``'s algorithm, derived only from the measured
    numbers; ``base``: the predictors without induction on the sets ``m`` was measured on
    (``mechanism_baselines``, for the mechanism check); ``two_layer_baseline``: the
    K-composition score of random matrices (None: computed here for a 2-layer model)."""
    k_comp = k_baseline = None
    if m.model.cfg.n_layers == 2:
        k_comp = float(analysis.composition_scores(m.model, "K").max())
        k_baseline = (two_layer_baseline if two_layer_baseline is not None
                      else analysis.composition_baseline(m.model, "K")[0])
    sents = []
    if m.direct_copy < SUPPRESSING:
        sents.append(f"The direct path suppresses the current letter (copy metric "
                     f"{m.direct_copy:+.2f}): never predict the letter just seen.")
    else:
        sents.append(f"The direct path does not suppress the current letter (copy metric "
                     f"{m.direct_copy:+.2f}).")
    copiers = _heads(m.head_copy, lambda v: v > COPYING)
    suppressors = _heads(m.head_copy, lambda v: v < SUPPRESSING)
    if copiers:
        sents.append(f"Heads {', '.join(copiers)} copy the letter they attend to.")
    if suppressors:
        sents.append(f"Heads {', '.join(suppressors)} suppress the letters they attend to "
                     "(anti-induction / 'rule out recent letters').")
    prev = _heads(m.pattern_scores["previous_token"], lambda v: v > 0.4)
    ind = _heads(m.pattern_scores["induction"], lambda v: v > 0.4)
    if prev:
        sents.append(f"{', '.join(prev)} mostly attend to the previous token.")
    if ind:
        sents.append(f"{', '.join(ind)} attend to the letter after an earlier copy of the current "
                     "letter (the induction pattern; on training sequences attending a fixed "
                     "offset back looks the same, which the mechanism check separates).")
    if k_comp is not None and k_baseline is not None:
        sents.append(f"The strongest layer-0 -> layer-1 K-composition score is {k_comp:.2f}, "
                     f"{k_comp / k_baseline:.1f} times that of random matrices of the same shapes "
                     f"({k_baseline:.2f}).")
    if m.paths:
        sents.append(_path_sentence(m.paths))
    intact = m.ablations.get("none", {}).get("predictable")
    if intact is not None:
        worst = max((k for k in m.ablations if k != "none"),
                    key=lambda k: m.ablations[k]["predictable"] - intact)
        sents.append(f"Ablating {worst} hurts most: predictable-letter loss {intact:.2f} -> "
                     f"{m.ablations[worst]['predictable']:.2f} nats.")
    sents.append(f"Mechanism check: {mechanism_verdict(m.losses, base, learning(m))}.")
    return " ".join(sents)


def _path_sentence(p: Mapping[str, float]) -> str:
    """What cutting layer 0 out of layer-1 keys and queries costs (``composition_path_losses``:
    the test loss with layer-1 keys and/or queries reading only the direct path), and which of the
    two layer 1 leans on more."""
    keys, queries = p["Q-composition"] - p["K and Q"], p["K-composition"] - p["K and Q"]
    both = p["direct only"] - p["K and Q"]
    more = ("its keys (K-composition) more than its queries" if keys > queries else
            "its queries (Q-composition) more than its keys" if queries > keys else
            "its keys and queries alike")
    return (f"With every path the test loss is {p['K and Q']:.2f} nats. Letting layer-1 keys see "
            f"only the direct path (not layer 0's output) raises it by {keys:.2f} nats, doing so "
            f"for the queries by {queries:.2f}, and for both by {both:.2f}: layer 1 reads layer 0 "
            f"through {more}.")


def training_summary(models: dict[str, Model]) -> str:
    """One line per model: loaded or trained, parameters, steps, time, device."""
    lines = []
    for name, m in models.items():
        meta = m.entry.meta
        where = "loaded from the zoo" if m.entry.loaded else "trained now"
        lines.append(f"{name:24s} {where}: {meta['trainable']:,} trainable parameters, "
                     f"{meta['train']['steps']:,} steps, {meta['seconds']:.0f} s on {meta['device']}")
    return "\n".join(lines)


def measure_all(models: dict[str, Model], sets: dict[str, Batch], n_pattern: int = 64
                ) -> dict[str, Model]:
    """``measure`` every model (attention scores on the first ``n_pattern`` test sequences):
    {name: measured Model}, a new dict; ``models`` is left as it is."""
    return {name: measure(m, sets, sets["test"].tokens[:n_pattern]) for name, m in models.items()}


def algorithms_text(models: dict[str, Model], base: Mapping[str, Mapping[str, float]],
                    k_baseline: float | None) -> str:
    """``algorithm_in_words`` for every model of ``models``, one paragraph each (``base``: the
    ``mechanism_baselines`` of their sets; ``k_baseline``: the random K-composition score)."""
    return "\n\n".join(f"{name}:\n  {algorithm_in_words(m, base, k_baseline)}"
                       for name, m in models.items())


def chance_loss(task: RepeatedBlocks) -> float:
    """ln(n_letters): the loss of a uniform guess (``task``'s letters)."""
    return math.log(task.n_letters)
