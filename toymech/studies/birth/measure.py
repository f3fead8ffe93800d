"""Study 2: train or load the runs and measure them.

Every batch drawn here comes from a stream of the run's seed (``toymech.core.seed_for``):
evaluation sets from 'eval', sequences shown in figures from 'example'; the training callback
reads 'probe' (``callbacks.py``). Training data and initial weights stay on the seed itself.
"""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd
import torch
from transformer_lens import HookedTransformer

from ... import analysis, tasks
from ...analysis import probes
from ...core import seed_for
from ...devices import make_generator, resolve_device
from ...models import build_model
from ...tasks import Batch
from ...tasks.bigram_triggers import bigram_predictor_metrics, held_out_tokens
from ...training import Experiment, Zoo, ZooEntry
from ..grids import train_grid
from .callbacks import PROBE_TAG, birth_callback
from .experiments import SIZES, experiment, truncated
from .tables import before_step

N_OOD_RANDOM = 16  # tokens the random-trigger runs of the sweep hold out of their trigger pool


# --- batches -------------------------------------------------------------------------------------
def eval_batches(task: tasks.Task, n: int, seed: int, device: str | torch.device = "cpu",
                 pools: Mapping[str, torch.Tensor] | None = None) -> dict[str, Batch]:
    """The evaluation sets of a run with seed ``seed``: ``task.eval_sets`` (test, and ood where
    the task has held-out triggers), then one set per ``pools`` entry (random triggers drawn
    from that [N] bool mask), all from one generator of the run's 'eval' stream."""
    gen = make_generator(seed_for(seed, "eval"), resolve_device(device))
    sets = task.eval_sets(n, gen)
    for name, pool in (pools or {}).items():
        sets[name] = task.sample_from_pool(n, gen, pool)
    return sets


def example_batch(task: tasks.Task, seed: int, n: int = 2,
                  device: str | torch.device = "cpu") -> Batch:
    """``n`` sequences to show (figures, attention views), from the run's 'example' stream."""
    return task.sample(n, make_generator(seed_for(seed, "example"), resolve_device(device)))


def sequence_marks(task: tasks.Task, batch: Batch, index: int = 0, length: int = 192
                   ) -> tuple[list[str], torch.Tensor, torch.Tensor]:
    """(token strings, is-trigger [T], in-context target [T]) of sequence ``index`` cut to
    ``length``: what ``plots.birth.sequence_view`` colours."""
    seq = batch.tokens[index][:length]
    is_trigger = torch.zeros_like(seq, dtype=torch.bool)
    is_trigger[:-1] = batch.extras["outputs"][index][seq[:-1]] >= 0
    return task.str_tokens(seq), is_trigger, batch.extras["in_context"][index][:length]


def bigram_baseline(task: tasks.Task, seed: int, n: int = 256,
                    device: str | torch.device = "cpu") -> dict[str, float]:
    """Metrics of the exact bigram model (knows π_b, nothing in context) on the run's test set,
    and the share of targets that are in-context targets (``in_context_share``)."""
    test = eval_batches(task, n, seed, device)["test"]
    out = bigram_predictor_metrics(task, test)
    out["in_context_share"] = float(test.extras["in_context"][:, 1:].float().mean())
    return out


@torch.no_grad()
def evaluate_sets(model: HookedTransformer, task: tasks.Task, n: int = 256, seed: int = 0,
                  pools: Mapping[str, torch.Tensor] | None = None) -> dict[str, dict[str, float]]:
    """Task metrics (loss/acc, icl_*, bigram_*) on each of ``eval_batches`` (test, ood, pools)."""
    sets = eval_batches(task, n, seed, model.cfg.device, pools)
    return {name: task.metrics(model(b.tokens), b) for name, b in sets.items()}


# --- runs -----------------------------------------------------------------------------------------
def main_run(zoo: Zoo, exp: Experiment, device="auto", log=print) -> ZooEntry:
    """Train (or load) ``exp`` with the probe callback recording the dynamics in its history."""
    return zoo.get_or_train(exp, device=device, tag=PROBE_TAG, progress=False, log=log,
                            callbacks=[birth_callback(exp.task, seed=exp.train.seed)])


def _get(zoo: Zoo, exp: Experiment, device, log) -> ZooEntry:
    """Load ``exp`` from the zoo, preferring a run recorded with the probe callback (the
    notebook's main run has the same configuration as one sweep point), else train it."""
    tag = PROBE_TAG if zoo.has(exp, PROBE_TAG) else ""
    return zoo.get_or_train(exp, device=device, tag=tag, progress=False, log=log)


def _train_grid(zoo: Zoo, exps, device, log) -> None:
    """Train the grid's runs that the zoo has under neither tag as one sweep
    (``studies.grids.train_grid``); ``_get`` then reads each back."""
    missing = [e for e in exps if not zoo.has(e, PROBE_TAG) and not zoo.has(e)]
    if missing:
        train_grid(missing, zoo, resolve_device(device), log=log)


def _n_eval(size: str, n_eval: int | None) -> int:
    return SIZES[size]["n_eval"] if n_eval is None else n_eval


def run_row(entry: ZooEntry, task: tasks.Task, n: int = 256, seed: int = 0) -> dict[str, float]:
    """One table row for a trained zoo entry: final in-distribution and OOD metrics, the
    trainable/frozen parameter counts and the training wall time."""
    sets = evaluate_sets(entry.model, task, n, seed)
    row = {k: v for k, v in sets["test"].items() if k in ("icl_acc", "bigram_acc", "loss")}
    if "ood" in sets:
        row["ood_icl_acc"] = sets["ood"]["icl_acc"]
    row.update({k: entry.meta.get(k) for k in ("trainable", "frozen", "seconds")})
    return row


def snapshots(zoo: Zoo, exp: Experiment, main: ZooEntry, device="auto",
              log=print) -> dict[str, HookedTransformer]:
    """The main run at initialisation, at the last step before in-context accuracy rose
    (``before_step``) and at the end. From the run's own weight snapshots when it has them (the
    last snapshot at or before that step); otherwise the same run stopped early, retrained from
    its seed."""
    dev = resolve_device(device)
    step = before_step(main.history)
    if main.snapshot_steps:
        step = max(s for s in main.snapshot_steps if s <= step)
        return {"init": main.model_at(0), f"step {step}": main.model_at(step),
                f"step {exp.train.steps}": main.model}
    early = zoo.get_or_train(truncated(exp, step), device=dev, progress=False, log=log)
    return {"init": build_model(exp.model, dev), f"step {step}": early.model,
            f"step {exp.train.steps}": main.model}


# --- sweeps ---------------------------------------------------------------------------------------
def shared_pool(task: tasks.Task, n_ood_random: int = N_OOD_RANDOM) -> torch.Tensor:
    """[N] bool: tokens that are neither fixed triggers nor held out by the random-trigger runs
    (out of distribution for fixed-trigger models, in distribution for random-trigger ones)."""
    pool = torch.ones(task.d_vocab, dtype=torch.bool)
    pool[task.fixed_triggers] = False
    pool[held_out_tokens(task.pi_u, n_ood_random)] = False
    return pool


def trigger_sweep(zoo: Zoo, size: str, seed: int, ks=(1, 3, 5), modes=("fixed", "random"),
                  steps: int | None = None, n_ood_random: int = N_OOD_RANDOM, device="auto",
                  n_eval: int | None = None, log=print) -> pd.DataFrame:
    """Train the simplified model for each trigger mode and K (random triggers hold
    ``n_ood_random`` tokens out of training) and evaluate in-context accuracy on the training
    distribution ('test'), with triggers never used as triggers in training ('ood'), and on a
    set shared by all models ('non-top-K', ``shared_pool``). One row per (mode, K, set)."""
    exps = {(mode, k): experiment(size, seed, trigger_mode=mode, n_triggers=k, steps=steps,
                                  n_ood=n_ood_random if mode == "random" else 0)
            for mode in modes for k in ks}
    _train_grid(zoo, exps.values(), device, None)
    rows = []
    for (mode, k), exp in exps.items():
        entry = _get(zoo, exp, device, log)
        results = evaluate_sets(entry.model, exp.task, _n_eval(size, n_eval), seed,
                                {"non-top-K": shared_pool(exp.task, n_ood_random)})
        for name, m in results.items():
            rows.append({"triggers": mode, "K": k, "set": name, "icl_acc": m["icl_acc"],
                         "icl_loss": m["icl_loss"], "bigram_acc": m["bigram_acc"]})
    return pd.DataFrame(rows)


FREEZING_ROW = "simplified, freeze={}"  # row names of freezing_comparison
CONTROL_ROW = "control: 4 heads, pre-LN, all trained"


def freezing_comparison(zoo: Zoo, size: str, seed: int, trigger_mode: str = "fixed",
                        n_triggers: int = 3, freezings=("paper", "learned_pos", "none"),
                        tied: bool = False, control: bool = True, steps: int | None = None,
                        device="auto", n_eval: int | None = None, log=print) -> pd.DataFrame:
    """One row per training setup: the paper's freezing and the alternatives (and tied
    embeddings, and the fully trained 4-head control): final metrics, OOD in-context accuracy,
    memory probes, K-composition, trainable/frozen parameter counts and wall time."""
    setups = [(f, False) for f in freezings] + ([("paper", True)] if tied else [])
    exps = {FREEZING_ROW.format(f) + (", tied" if t else ""):
            experiment(size, seed, trigger_mode=trigger_mode, n_triggers=n_triggers,
                       freezing=f, tied=t, steps=steps) for f, t in setups}
    if control:
        exps[CONTROL_ROW] = experiment(size, seed, model="control", freezing="none",
                                       trigger_mode=trigger_mode, n_triggers=n_triggers,
                                       steps=steps)
    _train_grid(zoo, exps.values(), device, None)
    rows = {}
    for name, exp in exps.items():
        entry = _get(zoo, exp, device, log)
        row: dict[str, Any] = run_row(entry, exp.task, _n_eval(size, n_eval), seed)
        trig = exp.task.fixed_triggers if trigger_mode == "fixed" else None
        row.update(probes.model_probes(entry.model, exp.task.pi_b, trig))
        row["kcomp"] = float(analysis.composition_scores(entry.model, "K")[0, :, 1, :].max())
        rows[name] = row
    return pd.DataFrame(rows).T.astype(float)


EXTREMES_COLUMNS = ("icl_acc", "bigram_acc", "loss", "probe_wk1", "probe_wk2", "probe_wo2",
                    "probe_wf_kl")


def extremes_table(zoo: Zoo, size: str, seed: int, steps: int | None = None, device="auto",
                   n_eval: int | None = None, log=print) -> pd.DataFrame:
    """The reviewers' two extremes next to the mixed data (random triggers, K=3): every token a
    trigger ('only_triggers': a random successor function per sequence) and a plain bigram chain
    ('no_triggers'). Final metrics and the memory probes (over all tokens), ``EXTREMES_COLUMNS``."""
    rows = {}
    for variant in ("mixed", "only_triggers", "no_triggers"):
        exp = experiment(size, seed, trigger_mode="random", variant=variant, steps=steps)
        entry = _get(zoo, exp, device, log)
        row = evaluate_sets(entry.model, exp.task, _n_eval(size, n_eval), seed)["test"]
        row.update(probes.model_probes(entry.model, exp.task.pi_b))
        rows[variant] = row
    table = pd.DataFrame(rows).T.astype(float)
    return table[[c for c in EXTREMES_COLUMNS if c in table]]


# --- attention before and after -------------------------------------------------------------------
def attention_view(models: Mapping[str, HookedTransformer], task: tasks.Task,
                   tokens: torch.Tensor):
    """circuitsvis view of head 0 of both layers of each model on one sequence ``tokens``."""
    from ...display import attention_view as view
    pats = {name: analysis.attention_patterns(m, tokens) for name, m in models.items()}
    return view(task.str_tokens(tokens), torch.cat([p[:, 0] for p in pats.values()]),
                head_names=[f"{name} L{layer}" for name, p in pats.items()
                            for layer in range(p.shape[0])])


@torch.no_grad()
def attention_table(models: Mapping[str, HookedTransformer], task: tasks.Task, seed: int,
                    n: int = 64) -> pd.DataFrame:
    """Per model, on the run's test set (``n`` sequences, 'eval' stream): layer 0's attention to
    the previous token, layer 1's attention to the output after an earlier copy of the current
    trigger (head 0 of each), in-context and bigram accuracy."""
    rows = {}
    for name, m in models.items():
        b = eval_batches(task, n, seed, m.cfg.device)["test"]
        logits, cache = m.run_with_cache(b.tokens,
                                         names_filter=lambda k: k.endswith("hook_pattern"))
        metrics = task.metrics(logits, b)
        rows[name] = {
            "layer 0: previous token": float(probes.previous_token_attention(
                cache["pattern", 0])[0]),
            "layer 1: output after earlier trigger": float(probes.trigger_induction_attention(
                cache["pattern", 1], b.tokens, b.extras["in_context"])[0]),
            "in-context acc": metrics["icl_acc"], "bigram acc": metrics["bigram_acc"]}
    return pd.DataFrame(rows).T
