"""Study 2: train or load the runs and measure them.

Every batch drawn here comes from a stream of the run's seed (``toymech.core.seed_for``):
evaluation sets from 'eval', sequences shown in figures from 'example'; the training callback
reads 'probe' (``callbacks.py``). Training data and initial weights stay on the seed itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import torch
from transformer_lens import HookedTransformer

from ... import analysis, tasks
from ...analysis import probes
from ...core import Setting, check, seed_for
from ...devices import make_generator, resolve_device
from ...display import attention_view as view
from ...models import build_model
from ...tasks import Batch
from ...tasks.bigram_triggers import bigram_predictor_metrics, held_out_tokens
from ...training import Experiment
from ...zoo import Zoo, ZooEntry
from ..grid_training import train_grid
from ..protocol import size_of
from .callbacks import PROBE_TAG, birth_callback
from .design import SIZES, eval_sets, experiment, truncated
from .tables import before_step

N_OOD_RANDOM = 16  # tokens the random-trigger runs of the sweep hold out of their trigger pool


# --- batches -------------------------------------------------------------------------------------
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


def bigram_baseline(task: tasks.Task, size: Setting | str, seed: int,
                    device: str | torch.device = "cpu") -> dict[str, float]:
    """Metrics of the exact bigram model (knows π_b, nothing in context) on the run's test set,
    and the share of targets that are in-context targets (``in_context_share``)."""
    test = eval_sets(task, size, seed, device)["test"]
    out = bigram_predictor_metrics(task, test)
    out["in_context_share"] = float(test.extras["in_context"][:, 1:].float().mean())
    return out


@torch.no_grad()
def evaluate_sets(model: HookedTransformer, task: tasks.Task, size: Setting | str, seed: int,
                  device: str | torch.device | None = None, *,
                  pools: Mapping[str, torch.Tensor] | None = None) -> dict[str, dict[str, float]]:
    """Task metrics (loss/acc, icl_*, bigram_*) on each of ``eval_sets`` (test, ood, pools;
    device: the model's); the signature of study 3's ``evaluate_sets``, plus ``pools``."""
    sets = eval_sets(task, size, seed, model.cfg.device if device is None else device, pools=pools)
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
    (``studies.grid_training.train_grid``); ``_get`` then reads each back."""
    missing = [e for e in exps if not zoo.has(e, PROBE_TAG) and not zoo.has(e)]
    if missing:
        train_grid(missing, zoo, resolve_device(device), log=log)


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


def sweep_experiments(size: Setting | str, seed: int, ks=None, modes=("fixed", "random"),
                      steps: int | None = None, n_ood_random: int = N_OOD_RANDOM
                      ) -> dict[tuple[str, int], Experiment]:
    """The trigger sweep's runs: {(mode, K): Experiment} (``steps``: None, the size's
    ``sweep_steps``; ``ks``: None, the size's ``sweep_ks``; random triggers hold
    ``n_ood_random`` tokens out of training)."""
    spec = size_of(SIZES, size)
    steps = spec.sweep_steps if steps is None else steps
    ks = spec.sweep_ks if ks is None else ks
    return {(mode, k): experiment(size, seed, trigger_mode=mode, n_triggers=k, steps=steps,
                                  n_ood=n_ood_random if mode == "random" else 0, part="sweep")
            for mode in modes for k in ks}


def sweep_rows(models: Mapping[tuple[str, int], HookedTransformer],
               exps: Mapping[tuple[str, int], Experiment], size: Setting | str, seed: int,
               n_ood_random: int = N_OOD_RANDOM) -> pd.DataFrame:
    """The sweep's table from its models (trained, or untrained for a null): in-context accuracy
    on the training distribution ('test'), with triggers never used as triggers in training
    ('ood'), and on a set shared by all models ('non-top-K', ``shared_pool``). One row per
    (mode, K, set)."""
    rows = []
    for (mode, k), exp in exps.items():
        results = evaluate_sets(models[mode, k], exp.task, size, seed,
                                pools={"non-top-K": shared_pool(exp.task, n_ood_random)})
        for name, m in results.items():
            rows.append({"triggers": mode, "K": k, "set": name, "icl_acc": m["icl_acc"],
                         "icl_loss": m["icl_loss"], "bigram_acc": m["bigram_acc"]})
    return pd.DataFrame(rows)


def trigger_sweep(zoo: Zoo, size: Setting | str, seed: int, ks=None, modes=("fixed", "random"),
                  steps: int | None = None, n_ood_random: int = N_OOD_RANDOM, device="auto",
                  log=print) -> pd.DataFrame:
    """Train (or load) the sweep's runs (``sweep_experiments``) and tabulate them
    (``sweep_rows``)."""
    exps = sweep_experiments(size, seed, ks, modes, steps, n_ood_random)
    _train_grid(zoo, exps.values(), device, None)
    models = {key: _get(zoo, exp, device, log).model for key, exp in exps.items()}
    return sweep_rows(models, exps, size, seed, n_ood_random)


CONTROL_ROW = "control: 4 heads, pre-LN, all trained"
FREEZING_LABELS = {"paper": "the paper's freezing", "learned_pos": "learned positions",
                   "learned_embeddings": "learned embeddings", "none": "everything trained"}


def freezing_experiments(size: Setting | str, seed: int, trigger_mode: str = "fixed",
                         n_triggers: int = 3, freezings=("paper", "learned_pos", "none"),
                         tied: bool = False, control: bool = False, steps: int | None = None
                         ) -> dict[tuple[str, str], Experiment]:
    """The freezing comparison's runs: {(row label, freezing): Experiment} (``steps``: None, the
    size's ``sweep_steps``; the freezing of the control row is "control")."""
    spec = size_of(SIZES, size)
    steps = spec.sweep_steps if steps is None else steps
    setups = [(f, False) for f in freezings] + ([("paper", True)] if tied else [])
    exps = {(FREEZING_LABELS[f] + (", tied embeddings" if t else ""), f):
            experiment(size, seed, trigger_mode=trigger_mode, n_triggers=n_triggers,
                       freezing=f, tied=t, steps=steps, optimizer=spec.comparison_optimizer)
            for f, t in setups}
    if control:
        exps[CONTROL_ROW, "control"] = experiment(size, seed, model="control", freezing="none",
                                                  trigger_mode=trigger_mode,
                                                  n_triggers=n_triggers, steps=steps)
    return exps


def freezing_rows(runs: Mapping[tuple[str, str], Any], exps: Mapping[tuple[str, str], Experiment],
                  size: Setting | str, seed: int) -> pd.DataFrame:
    """The freezing table from its runs (zoo entries, or bare models for a null): per row the
    ``freezing`` it used, final metrics, OOD in-context accuracy, memory probes, K-composition,
    trainable/frozen parameter counts and wall time (entries only)."""
    rows = {}
    for (label, freezing), exp in exps.items():
        run = runs[label, freezing]
        model = run if isinstance(run, HookedTransformer) else run.model
        metrics = evaluate_sets(model, exp.task, size, seed)
        row: dict[str, Any] = {k: v for k, v in metrics["test"].items()
                               if k in ("icl_acc", "bigram_acc", "loss")}
        if "ood" in metrics:
            row["ood_icl_acc"] = metrics["ood"]["icl_acc"]
        if not isinstance(run, HookedTransformer):
            row.update({k: run.meta.get(k) for k in ("trainable", "frozen", "seconds")})
        trig = exp.task.fixed_triggers if exp.task.trigger_mode == "fixed" else None
        row.update(probes.model_probes(model, exp.task.pi_b, trig))
        row["kcomp"] = float(analysis.composition_scores(model, "K")[0, :, 1, :].max())
        rows[label] = {"freezing": freezing if freezing != "control" else None,
                       **{k: float(v) for k, v in row.items() if v is not None}}
    return pd.DataFrame.from_dict(rows, orient="index")


def freezing_comparison(zoo: Zoo, size: Setting | str, seed: int, trigger_mode: str = "fixed",
                        n_triggers: int = 3, freezings=("paper", "learned_pos", "none"),
                        tied: bool = False, control: bool = False, steps: int | None = None,
                        device="auto", log=print) -> pd.DataFrame:
    """Train (or load) the freezing comparison's runs (``freezing_experiments``: the paper's
    freezing and the alternatives, tied embeddings, the fully trained 4-head control) and
    tabulate them (``freezing_rows``)."""
    exps = freezing_experiments(size, seed, trigger_mode, n_triggers, freezings, tied, control,
                                steps)
    _train_grid(zoo, exps.values(), device, None)
    runs = {key: _get(zoo, exp, device, log) for key, exp in exps.items()}
    return freezing_rows(runs, exps, size, seed)


EXTREMES_COLUMNS = ("icl_acc", "bigram_acc", "loss", "probe_wk1", "probe_wk2", "probe_wo2",
                    "probe_wf_kl", "probe_share_wk1", "probe_share_wk2", "probe_share_wo2")
EXTREMES = {"mixed": ("mixed", "paper"), "only_triggers": ("only_triggers", "paper"),
            "only_triggers, unfrozen": ("only_triggers", "none"),
            "no_triggers": ("no_triggers", "paper")}


def extremes_experiments(size: Setting | str, seed: int, steps: int | None = None
                         ) -> dict[str, Experiment]:
    """The extremes' runs: {row name: Experiment} (``steps``: None, half the size's
    ``sweep_steps``)."""
    spec = size_of(SIZES, size)
    steps = max(1, spec.sweep_steps // 2) if steps is None else steps
    return {name: experiment(size, seed, trigger_mode="random", variant=variant,
                             freezing=freezing, steps=steps, optimizer=spec.comparison_optimizer,
                             part="extreme")
            for name, (variant, freezing) in EXTREMES.items()}


def extremes_rows(models: Mapping[str, HookedTransformer], exps: Mapping[str, Experiment],
                  size: Setting | str, seed: int) -> pd.DataFrame:
    """The extremes table from its models: final metrics, the argmax memory probes (over all
    tokens) and each memory's recall-margin share (``probe_share_<m>``: the way from a random
    memory to the construction, ``analysis.probes.memory_reading``) read through the matrices the
    run started from, which every run of a seed shares whatever it trains
    (``EXTREMES_COLUMNS``)."""
    rows = {}
    for name, exp in exps.items():
        model = models[name]
        row = evaluate_sets(model, exp.task, size, seed)["test"]
        row.update(probes.model_probes(model, exp.task.pi_b))
        initial = probes.memory_parts(build_model(exp.model, model.cfg.device))
        read = probes.memory_reading(model, initial)
        row.update({f"probe_share_{m.lower().replace('_', '')}": read[m]["share"]
                    for m in ("W_K1", "W_K2", "W_O2")})
        rows[name] = row
    table = pd.DataFrame(rows).T.astype(float)
    return table[[c for c in EXTREMES_COLUMNS if c in table]]


def extremes_table(zoo: Zoo, size: Setting | str, seed: int, steps: int | None = None,
                   device="auto", log=print) -> pd.DataFrame:
    """The reviewers' two extremes next to the mixed data (random triggers, K=3): every token a
    trigger ('only_triggers': a random successor function per sequence; also trained with every
    matrix unfrozen, the setting a reviewer disputes) and a plain bigram chain ('no_triggers')
    (``extremes_experiments``, ``extremes_rows``)."""
    exps = extremes_experiments(size, seed, steps)
    _train_grid(zoo, exps.values(), device, None)
    models = {name: _get(zoo, exp, device, log).model for name, exp in exps.items()}
    return extremes_rows(models, exps, size, seed)


def controls(zoo: Zoo, size: Setting | str, seeds, trigger_mode: str = "fixed", n_triggers: int = 3,
             *, ks=None, tied: bool = False, control: bool = False, extremes: bool = False,
             device="auto", log=print) -> dict[int, dict[str, pd.DataFrame]]:
    """The runs the claims compare the main run with, for EVERY seed they judge: the trigger
    sweep, the freezing comparison and (``extremes``) the extremes, as ``{seed: {"sweep": ...,
    "freezing": ..., "extremes": ...}}`` (``trigger_sweep``, ``freezing_comparison``,
    ``extremes_table``). Every seed's runs are trained as one grid first, so the seeds of a
    setting train together (stacked) instead of one seed after another."""
    seeds = list(seeds)
    grid = []
    for s in seeds:
        grid += sweep_experiments(size, s, ks).values()
        grid += freezing_experiments(size, s, trigger_mode, n_triggers, tied=tied,
                                     control=control).values()
        if extremes:
            grid += extremes_experiments(size, s).values()
    # one grid, each run once (the sweep's fixed-trigger point can be a freezing row's run)
    _train_grid(zoo, list({e.key(): e for e in grid}.values()), device, log)
    out: dict[int, dict[str, pd.DataFrame]] = {}
    for s in seeds:
        out[s] = {"sweep": trigger_sweep(zoo, size, s, ks=ks, device=device, log=log),
                  "freezing": freezing_comparison(zoo, size, s, trigger_mode, n_triggers,
                                                  tied=tied, control=control, device=device,
                                                  log=log)}
        if extremes:
            out[s]["extremes"] = extremes_table(zoo, size, s, device=device, log=log)
    return out


# --- attention before and after -------------------------------------------------------------------
def attention_view(models: Mapping[str, HookedTransformer], task: tasks.Task,
                   tokens: torch.Tensor, name: str | None = None):
    """circuitsvis view of head 0 of both layers of each model (snapshots of one run, in training
    order) on one sequence ``tokens``, opened on the last model's layer 1 (the induction head the
    caption describes first); ``name`` (the run's) is named in the caption."""
    check(isinstance(models, Mapping) and len(models) >= 1, "models", models,
          "a non-empty {name: model} of the run's snapshots")
    check(name is None or (isinstance(name, str) and name.strip() != ""), "name", name,
          "None or the run's name")
    pats = {label: analysis.attention_patterns(m, tokens) for label, m in models.items()}
    labels = list(pats)
    first, last = labels[0], labels[-1]
    focus = f"{last} L1"
    caption = (f"The view opens on {focus}, layer 1 of the {last} snapshot: on a trigger's "
               "second occurrence it should attend to the token right after the trigger's first "
               f"occurrence (its output). {last} L0: a stripe just below the diagonal (each token "
               f"attends to the previous one). At {first} both layers are diffuse; the table "
               "below scores them.")
    if name:
        caption = (f"Model: {name}, the notebook's seed, at its snapshots {', '.join(labels)}. "
                   + caption)
    return view(task.str_tokens(tokens), torch.cat([p[:, 0] for p in pats.values()]),
                head_names=[f"{label} L{layer}" for label, p in pats.items()
                            for layer in range(p.shape[0])], caption=caption, focus=focus)


@torch.no_grad()
def attention_table(models: Mapping[str, HookedTransformer], task: tasks.Task, size: Setting | str,
                    seed: int, n: int = 64) -> pd.DataFrame:
    """Per model, on the run's test set (``n`` sequences, 'eval' stream): layer 0's attention to
    the previous token, layer 1's attention to the output after an earlier copy of the current
    trigger (head 0 of each), in-context and bigram accuracy."""
    rows = {}
    for name, m in models.items():
        b = eval_sets(task, size, seed, m.cfg.device, n=n)["test"]
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
