"""Birth of a Transformer (Bietti et al. 2023; reference.md §B): models, freezing, presets, tables.

Two models on ``bigram_triggers`` data:

* the paper's **simplified** model (variant ``birth_simplified``): 2 layers, 1 head each, no
  LayerNorm, W_Q fixed to the identity, random token and positional embeddings, value/output map
  of layer 1 random, unembedding random, and an optional linear feed-forward W_F after layer 2
  (``blocks.1.mlp.W_F``: h <- h + h W_F). In TransformerLens terms W_V = I in both layers, so
  the paper's W_O^1 (random) and W_O^2 (trained) are ``blocks.{0,1}.attn.W_O``.
* the fully trained **control**: 2 layers, 4 heads, d = 128, pre-LayerNorm, learned positions.

What trains is data, not code: ``FREEZINGS`` maps a name to parameter-name patterns for
``TrainConfig.freeze`` ("paper": only W_K^1, W_K^2, W_O^2, W_F train).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import torch
from torch import nn
from transformer_lens import HookedTransformer
from transformer_lens.hook_points import HookPoint

from .. import presets, tasks
from ..models import ModelConfig, register_variant
from ..tasks.base import check
from ..tasks.bigram_triggers import held_out_tokens
from ..training import TrainConfig
from ..zoo import Experiment

VARIANT = "birth_simplified"
SIMPLIFIED_DEFAULTS: dict[str, Any] = {
    "emb_std": None,    # std of the entries of W_E, W_pos (None: 1/sqrt(d), unit-norm rows)
    "init_std": None,   # std of trained matrices at init (None: 1/sqrt(d); 0: zero init)
    "ff": True,         # linear feed-forward W_F after layer 2
    "tied": False,      # unembedding = W_E^T
    "attn_scale": 1.0,  # scores x_t W_Q W_K^T x_s / attn_scale (the paper: no scaling)
}


class LinearFF(nn.Module):
    """h -> h W_F (a linear feed-forward layer, added to the residual by the block)."""

    def __init__(self, d_model: int):
        super().__init__()
        self.W_F = nn.Parameter(torch.zeros(d_model, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.W_F


class ZeroFF(nn.Module):
    """No feed-forward layer (a block whose MLP adds nothing)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)


class TiedUnembed(nn.Module):
    """Unembedding with W_U = W_E^T (the embedding is referenced, not registered twice)."""

    def __init__(self, embed: nn.Module, d_vocab: int):
        super().__init__()
        self._embed = (embed,)  # a tuple: not a submodule, so its weights are saved once
        self.b_U = nn.Parameter(torch.zeros(d_vocab), requires_grad=False)
        self.hook_in = HookPoint()
        self.hook_out = HookPoint()

    @property
    def W_U(self) -> torch.Tensor:
        return self._embed[0].W_E.T

    def forward(self, residual: torch.Tensor) -> torch.Tensor:
        return self.hook_out(self.hook_in(residual) @ self.W_U + self.b_U)


def simplified_options(cfg: ModelConfig) -> dict[str, Any]:
    """The variant options with defaults filled in; unknown keys raise ValueError."""
    unknown = sorted(set(cfg.variant_options) - set(SIMPLIFIED_DEFAULTS))
    check(not unknown, "variant_options", unknown,
          f"keys among {', '.join(SIMPLIFIED_DEFAULTS)}")
    return {**SIMPLIFIED_DEFAULTS, **cfg.variant_options}


@register_variant(VARIANT)
def _build_simplified(model: HookedTransformer, cfg: ModelConfig) -> None:
    opts = simplified_options(cfg)
    d = cfg.d_model
    check(cfg.n_layers == 2 and cfg.n_heads == 1 and cfg.d_head == d and not cfg.attn_only
          and cfg.normalization is None and cfg.positions == "standard", "model",
          "config", f"{VARIANT}: 2 layers, 1 head, d_head = d_model, attn_only=False, "
          "normalization None, positions 'standard' (use simplified_config)")
    emb_std = opts["emb_std"] if opts["emb_std"] is not None else 1.0 / math.sqrt(d)
    init_std = opts["init_std"] if opts["init_std"] is not None else 1.0 / math.sqrt(d)
    g = torch.Generator().manual_seed(cfg.seed + 12345)  # never the global generator

    def randn(*shape: int, std: float) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * std

    eye = torch.eye(d)
    with torch.no_grad():
        model.embed.W_E.copy_(randn(cfg.d_vocab, d, std=emb_std))
        model.pos_embed.W_pos.copy_(randn(cfg.n_ctx, d, std=emb_std))
        model.unembed.W_U.copy_(randn(d, cfg.d_vocab, std=1.0 / math.sqrt(d)))
        for layer, block in enumerate(model.blocks):
            block.attn.W_Q.copy_(eye[None])
            block.attn.W_V.copy_(eye[None])
            block.attn.W_K.copy_(randn(1, d, d, std=init_std))
            std_o = 1.0 / math.sqrt(d) if layer == 0 else init_std
            block.attn.W_O.copy_(randn(1, d, d, std=std_o))
            block.attn.attn_scale = float(opts["attn_scale"])
    model.blocks[0].mlp = ZeroFF()
    if opts["ff"]:
        ff = LinearFF(d)
        with torch.no_grad():
            ff.W_F.copy_(randn(d, d, std=init_std))
        model.blocks[1].mlp = ff
    else:
        model.blocks[1].mlp = ZeroFF()
    if opts["tied"]:
        model.unembed = TiedUnembed(model.embed, cfg.d_vocab)


# --- freezing as data ------------------------------------------------------------------------
FREEZINGS: dict[str, tuple[str, ...]] = {
    # the paper: only W_K^1, W_K^2, W_O^2 (and W_F) train
    "paper": ("embed.W_E", "pos_embed.W_pos", "blocks.*.attn.W_Q", "blocks.*.attn.W_V",
              "blocks.0.attn.W_O", "unembed.W_U"),
    # the paper's freezing, but positional embeddings are learned
    "learned_pos": ("embed.W_E", "blocks.*.attn.W_Q", "blocks.*.attn.W_V", "blocks.0.attn.W_O",
                    "unembed.W_U"),
    # the paper's freezing, but embeddings (token, position, unembedding) are learned
    "learned_embeddings": ("blocks.*.attn.W_Q", "blocks.*.attn.W_V", "blocks.0.attn.W_O"),
    "none": (),  # everything trains
}


def freeze_patterns(freezing: str, tied: bool = False) -> tuple[str, ...]:
    """``TrainConfig.freeze`` patterns of a named freezing (tied models have no unembed.W_U)."""
    check(freezing in FREEZINGS, "freezing", freezing, f"one of {', '.join(FREEZINGS)}")
    return tuple(p for p in FREEZINGS[freezing] if not (tied and p == "unembed.W_U"))


# --- model configs -----------------------------------------------------------------------------
def simplified_config(task: tasks.Task, d_model: int = 64, seed: int = 0,
                      **options: Any) -> ModelConfig:
    """The paper's simplified model for ``task`` (options: see ``SIMPLIFIED_DEFAULTS``)."""
    cfg = ModelConfig(n_layers=2, n_heads=1, d_model=d_model, d_head=d_model,
                      d_vocab=task.d_vocab, n_ctx=task.seq_len, attn_only=False, d_mlp=d_model,
                      normalization=None, positions="standard", use_bias=False, variant=VARIANT,
                      variant_options=dict(options), seed=seed)
    simplified_options(cfg)  # unknown options fail here, before any model is built
    return cfg


def control_config(task: tasks.Task, d_model: int = 128, n_heads: int = 4,
                   seed: int = 0) -> ModelConfig:
    """The fully trained control: 2 layers, 4 heads, pre-LN, learned positions, attention-only."""
    return ModelConfig(n_layers=2, n_heads=n_heads, d_model=d_model, d_vocab=task.d_vocab,
                       n_ctx=task.seq_len, attn_only=True, normalization="LN",
                       positions="standard", use_bias=False, seed=seed)


# --- experiments and presets -------------------------------------------------------------------
# size -> (seq_len, batch, d_model, steps, eval_every, eval_size, optimizer, lr)
SIZES: dict[str, dict[str, Any]] = {
    "smoke": dict(length=16, batch=8, d_model=16, steps=6, eval_every=3, eval_size=16,
                  optimizer="adam", lr=1e-2),
    "default": dict(length=64, batch=64, d_model=128, steps=400, eval_every=20, eval_size=256,
                    optimizer="adam", lr=1e-2),
    "paper": dict(length=256, batch=512, d_model=128, steps=10_000, eval_every=100,
                  eval_size=1024, optimizer="sgd", lr=0.2),
}
CONTROL_SIZES: dict[str, dict[str, Any]] = {
    "smoke": dict(length=16, batch=8, d_model=16, steps=6, eval_every=3, eval_size=16, lr=3e-3),
    "default": dict(length=64, batch=64, d_model=128, steps=400, eval_every=50, eval_size=256,
                    lr=3e-3),
    "paper": dict(length=256, batch=512, d_model=128, steps=10_000, eval_every=100,
                  eval_size=1024, lr=1e-2),
}
MODELS = ("simplified", "control")


def experiment(size: str = "default", seed: int = 0, *, model: str = "simplified",
               trigger_mode: str = "fixed", n_triggers: int = 3, variant: str = "mixed",
               n_ood: int = 0, freezing: str = "paper", tied: bool = False, ff: bool = True,
               steps: int | None = None, lr: float | None = None, name: str = "",
               **options: Any) -> Experiment:
    """One Birth experiment at a preset size. ``model``: "simplified" (the paper's, frozen as
    ``freezing`` says) or "control" (fully trained 2-layer 4-head pre-LN, AdamW, no freezing).
    ``options`` go to the simplified model's variant options (emb_std, init_std, attn_scale)."""
    presets.check_size(size)
    check(model in MODELS, "model", model, f"one of {MODELS}")
    table = SIZES if model == "simplified" else CONTROL_SIZES
    s = table[size]
    steps = s["steps"] if steps is None else steps
    task = tasks.get("bigram_triggers", n_triggers=n_triggers, trigger_mode=trigger_mode,
                     length=s["length"], variant=variant, n_ood=n_ood)
    if model == "simplified":
        cfg = simplified_config(task, s["d_model"], seed, tied=tied, ff=ff, **options)
        train = TrainConfig(steps=steps, batch_size=s["batch"], lr=lr or s["lr"],
                            optimizer=s["optimizer"], weight_decay=1e-4, momentum=0.9,
                            freeze=freeze_patterns(freezing, tied), seed=seed,
                            eval_every=min(s["eval_every"], steps), eval_size=s["eval_size"])
    else:
        check(freezing == "none" and not options and not tied, "freezing", freezing,
              "'none' (and no simplified-model options) for the fully trained control")
        cfg = control_config(task, s["d_model"], seed=seed)
        train = TrainConfig(steps=steps, batch_size=s["batch"], lr=lr or s["lr"],
                            optimizer="adamw", weight_decay=1e-4, seed=seed,
                            eval_every=min(s["eval_every"], steps), eval_size=s["eval_size"])
    data = f"{trigger_mode}-K{n_triggers}" if variant == "mixed" else variant
    return Experiment(task, cfg, train, name or f"birth-{model}-{data}-{freezing}"
                      f"{'-tied' if tied else ''}")


@presets.register("birth-simplified", "Birth: the paper's frozen 2-layer 1-head model, "
                  "fixed triggers K=3")
def _preset_simplified(size: str, seed: int) -> Experiment:
    return experiment(size, seed, name="birth-simplified")


@presets.register("birth-simplified-random", "Birth: the paper's frozen model, random triggers "
                  "K=3")
def _preset_simplified_random(size: str, seed: int) -> Experiment:
    return experiment(size, seed, trigger_mode="random", name="birth-simplified-random")


@presets.register("birth-control", "Birth: fully trained 2-layer 4-head d=128 pre-LN control")
def _preset_control(size: str, seed: int) -> Experiment:
    return experiment(size, seed, model="control", freezing="none", name="birth-control")


def truncated(exp: Experiment, steps: int) -> Experiment:
    """The same run stopped after ``steps`` steps. Training is deterministic given the seed and
    the schedule is constant, so its weights are the full run's weights at that step (used for
    'before/after' views of a run whose intermediate weights were not saved)."""
    check(1 <= steps <= exp.train.steps and exp.train.schedule == "constant", "steps", steps,
          f"an integer in 1..{exp.train.steps} (constant schedule only)")
    train = exp.train.replace(steps=steps, eval_every=min(exp.train.eval_every, steps))
    return Experiment(exp.task, exp.model, train, f"{exp.name}@{steps}")


# --- the hand-built construction ---------------------------------------------------------------
def construction_table(trained: HookedTransformer, initial: HookedTransformer,
                       task: tasks.Task) -> pd.DataFrame:
    """Per memory: cosine of the trained matrix and of the initial one with the construction,
    and the recall probe of the trained weights and of the construction itself."""
    from ..analysis import probes
    trig = task.fixed_triggers if getattr(task, "trigger_mode", "") == "fixed" else None
    ideal = probes.construction(trained, task.pi_b, trig)
    now, before = probes.trained_matrices(trained), probes.trained_matrices(initial)
    E, P, U = trained.W_E, trained.W_pos, trained.W_U
    ov1 = trained.OV[0, 0]
    others = None
    if trig is not None:
        keep = torch.ones(task.d_vocab, dtype=torch.bool)
        keep[trig] = False
        others = torch.arange(task.d_vocab)[keep]

    def probe(name: str, M: torch.Tensor) -> float:
        if name.startswith("W_K1"):
            return probes.previous_token_probe(M, P)
        if name.startswith("W_K2"):
            return probes.induction_key_probe(M, E, ov1, trig)
        if name.startswith("W_O2"):
            return probes.output_copy_probe(M, E, U)
        return probes.bigram_kl_probe(M, E, U, task.pi_b, others)

    rows = []
    for name, M in ideal.items():
        rows.append({"memory": name,
                     "cosine(trained, construction)": probes.matrix_cosine(now[name], M),
                     "cosine(init, construction)": probes.matrix_cosine(before[name], M),
                     "probe (trained)": probe(name, now[name]),
                     "probe (construction)": probe(name, M)})
    return pd.DataFrame(rows).set_index("memory")


# --- summaries -----------------------------------------------------------------------------------
FORMATION_KEYS = {"bigram acc": "cb_bigram_acc", "W_F bigram KL": "probe_wf_kl",
                  "W_O² output copy": "probe_wo2", "W_K² induction key": "probe_wk2",
                  "W_K¹ previous token": "probe_wk1", "in-context acc": "cb_icl_acc",
                  "induction attention": "attn_induction"}


def half_step(history: list[dict[str, float]], key: str) -> float:
    """First step at which ``key`` has covered half of its change from the first recorded value
    to its final value (NaN when absent or when it does not change)."""
    pts = [(r["step"], r[key]) for r in history if key in r and r[key] == r[key]]
    if len(pts) < 2 or pts[-1][1] == pts[0][1]:
        return float("nan")
    v0, v1 = pts[0][1], pts[-1][1]
    for step, v in pts:
        if (v - v0) / (v1 - v0) >= 0.5:
            return float(step)
    return float("nan")


def formation_table(history: list[dict[str, float]]) -> pd.DataFrame:
    """Per memory / metric: its first and final value and the half-way step, sorted by it (the
    order in which the pieces form)."""
    rows = []
    for label, key in FORMATION_KEYS.items():
        pts = [r[key] for r in history if key in r]
        if pts:
            rows.append({"memory / metric": label, "key": key, "first": pts[0],
                         "final": pts[-1], "half-way step": half_step(history, key)})
    return pd.DataFrame(rows).sort_values("half-way step").set_index("memory / metric")


@torch.no_grad()
def evaluate_sets(model: HookedTransformer, task: tasks.Task, n: int = 256,
                  seed: int = 0) -> dict[str, dict[str, float]]:
    """Task metrics (loss/acc, icl_*, bigram_*) on each of ``task.eval_sets`` (test, ood)."""
    sets = task.eval_sets(n, torch.Generator().manual_seed(seed + 4242))
    out = {}
    for name, batch in sets.items():
        batch = batch.to(model.cfg.device)
        out[name] = task.metrics(model(batch.tokens), batch)
    return out


def run_row(entry, task: tasks.Task, n: int = 256, seed: int = 0) -> dict[str, float]:
    """One table row for a trained zoo entry: final in-distribution and OOD metrics, the
    trainable/frozen parameter counts and the training wall time."""
    sets = evaluate_sets(entry.model, task, n, seed)
    row = {f"{k}": v for k, v in sets["test"].items() if k in ("icl_acc", "bigram_acc", "loss")}
    if "ood" in sets:
        row["ood_icl_acc"] = sets["ood"]["icl_acc"]
    row["trainable"] = entry.meta.get("trainable")
    row["frozen"] = entry.meta.get("frozen")
    row["seconds"] = entry.meta.get("seconds")
    return row


def _get(zoo, exp: Experiment, device, log):
    """Load ``exp`` from the zoo, preferring a run recorded with the probe callback (the
    notebook's main run has the same configuration as one sweep point), else train it."""
    tag = PROBE_TAG if (zoo.path(exp, PROBE_TAG) / "config.json").is_file() else ""
    return zoo.get_or_train(exp, device=device, tag=tag, progress=False, log=log)


def trigger_sweep(zoo, size: str, seed: int, ks=(1, 3, 5), modes=("fixed", "random"),
                  steps: int | None = None, n_ood_random: int = 16, device="auto",
                  n_eval: int = 256, log=print) -> pd.DataFrame:
    """Train the simplified model for each trigger mode and K (random triggers hold
    ``n_ood_random`` tokens out of training) and evaluate in-context accuracy on the training
    distribution ('test'), with triggers never used as triggers in training ('ood'), and on a
    set shared by all models ('non-top-K': random triggers among the tokens that are neither
    fixed triggers nor held out, i.e. OOD for fixed-trigger models only)."""
    rows = []
    for mode in modes:
        for k in ks:
            n_ood = n_ood_random if mode == "random" else 0
            exp = experiment(size, seed, trigger_mode=mode, n_triggers=k, n_ood=n_ood,
                             steps=steps)
            entry = _get(zoo, exp, device, log)
            results = evaluate_sets(entry.model, exp.task, n_eval, seed)
            # The same set for every model: triggers outside the top-K and outside the random
            # runs' held-out tokens (OOD for fixed triggers, in distribution for random ones).
            common = torch.ones(exp.task.d_vocab, dtype=torch.bool)
            common[exp.task.fixed_triggers] = False
            common[held_out_tokens(exp.task.pi_u, n_ood_random)] = False
            batch = exp.task.sample_from_pool(n_eval, torch.Generator().manual_seed(seed + 99),
                                              common).to(entry.model.cfg.device)
            with torch.no_grad():
                results["non-top-K"] = exp.task.metrics(entry.model(batch.tokens), batch)
            for name, m in results.items():
                rows.append({"triggers": mode, "K": k, "set": name, "icl_acc": m["icl_acc"],
                             "icl_loss": m["icl_loss"], "bigram_acc": m["bigram_acc"]})
    return pd.DataFrame(rows)


def freezing_comparison(zoo, size: str, seed: int, trigger_mode: str = "fixed",
                        n_triggers: int = 3, freezings=("paper", "learned_pos", "none"),
                        tied: bool = False, control: bool = True, steps: int | None = None,
                        device="auto", n_eval: int = 256, log=print) -> pd.DataFrame:
    """One row per training setup: the paper's freezing and the alternatives (and tied
    embeddings, and the fully trained 4-head control): final metrics, OOD in-context accuracy,
    memory probes, K-composition, trainable/frozen parameter counts and wall time."""
    from ..analysis import composition_scores, probes
    setups = [(f, False) for f in freezings] + ([("paper", True)] if tied else [])
    exps = {(f"simplified, freeze={f}" + (", tied" if t else "")):
            experiment(size, seed, trigger_mode=trigger_mode, n_triggers=n_triggers,
                       freezing=f, tied=t, steps=steps) for f, t in setups}
    if control:
        exps["control: 4 heads, pre-LN, all trained"] = experiment(
            size, seed, model="control", freezing="none", trigger_mode=trigger_mode,
            n_triggers=n_triggers, steps=steps)
    rows = {}
    for name, exp in exps.items():
        entry = _get(zoo, exp, device, log)
        task = exp.task
        row = run_row(entry, task, n_eval, seed)
        trig = task.fixed_triggers if trigger_mode == "fixed" else None
        row.update(probes.model_probes(entry.model, task.pi_b, trig))
        row["kcomp"] = float(composition_scores(entry.model, "K")[0, :, 1, :].max())
        rows[name] = row
    return pd.DataFrame(rows).T


# --- notebook helpers --------------------------------------------------------------------------
PROBE_TAG = "birth-probes-v1"  # zoo tag of runs whose history holds the probe callback's keys


def validate(preset: str, seed: int, device: str, trigger_mode: str = "fixed",
             n_triggers: int = 3) -> torch.device:
    """Check the notebook's parameters (a ValueError names the bad one) and resolve the device."""
    from ..devices import resolve_device
    experiment(preset, seed, trigger_mode=trigger_mode, n_triggers=n_triggers)
    return resolve_device(device)


def main_run(zoo, exp: Experiment, device="auto", log=print):
    """Train (or load) ``exp`` with the probe callback recording the dynamics in its history."""
    from ..analysis import probes
    return zoo.get_or_train(exp, device=device, tag=PROBE_TAG, progress=False, log=log,
                            callbacks=[probes.birth_callback(exp.task, seed=exp.train.seed)])


def before_step(history: list[dict[str, float]], key: str = "cb_icl_acc",
                fraction: float = 0.15) -> int:
    """The last recorded step at which ``key`` had covered at most ``fraction`` of its total
    rise (a point 'before the induction head forms'); the first recorded step otherwise."""
    pts = [(int(r["step"]), r[key]) for r in history if key in r]
    v0, v1 = pts[0][1], pts[-1][1]
    ok = [s for s, v in pts if v1 == v0 or (v - v0) / (v1 - v0) <= fraction]
    return ok[-1] if ok else pts[0][0]


def construction_kcomp(model: HookedTransformer, task: tasks.Task) -> float:
    """K-composition score ‖OV1 · QK2ᵀ‖_F / (‖OV1‖_F ‖QK2‖_F) that the hand-built W_K² would have
    with the model's layer-0 OV circuit (what a perfect induction key scores at these shapes)."""
    from ..analysis import probes
    trig = task.fixed_triggers if getattr(task, "trigger_mode", "") == "fixed" else None
    ov1 = model.OV[0, 0].AB.detach().cpu()
    qk2 = probes.construction(model, task.pi_b, trig)["W_K2 (induction key)"]
    return float((ov1 @ qk2.T).norm() / (ov1.norm() * qk2.norm()))


def extremes_table(zoo, size: str, seed: int, steps: int | None = None, device="auto",
                   n_eval: int = 256, log=print) -> pd.DataFrame:
    """The reviewers' two extremes next to the mixed data (random triggers, K=3): every token a
    trigger ('only_triggers': a random successor function per sequence) and a plain bigram chain
    ('no_triggers'). Final metrics and the memory probes (over all tokens)."""
    from ..analysis import probes
    rows = {}
    for variant in ("mixed", "only_triggers", "no_triggers"):
        exp = experiment(size, seed, trigger_mode="random", variant=variant, steps=steps)
        entry = _get(zoo, exp, device, log)
        row = evaluate_sets(entry.model, exp.task, n_eval, seed)["test"]
        row.update(probes.model_probes(entry.model, exp.task.pi_b))
        rows[variant] = row
    return pd.DataFrame(rows).T
